//! Who Codewright talks to and with which key: built-in and custom providers, the model catalog
//! with the user's models, the roles (main, small, compaction), and the [`Model`] a run uses.

use crate::store_error;
use crate::HostError;
use codewright_agent::Model;
use codewright_llm::catalog::{builtin_models, parse_model_id, resolve_model, ModelInfo, Pricing};
use codewright_llm::credentials::{find_key, OsKeyring};
use codewright_llm::{builtin_providers, ModelRole, Protocol, Provider};
use codewright_protocol::ErrorKind;
use codewright_store::Store;
use serde::Serialize;
use std::collections::HashMap;

/// The model the user chose for `role`, following fallbacks; `None` if none is set.
pub fn model_for(store: &Store, role: ModelRole) -> Result<Option<(String, ModelRole)>, HostError> {
    let mut chosen = Vec::new();
    for r in ModelRole::ALL {
        let value = store.setting(&r.setting_key()).map_err(store_error)?;
        chosen.push((r, value.and_then(|v| v.as_str().map(str::to_owned))));
    }
    Ok(role.resolve(|r| {
        chosen
            .iter()
            .find(|(c, _)| *c == r)
            .and_then(|(_, m)| m.clone())
    }))
}

/// The model id an agent file's `model` names: MODEL@PROVIDER as it is, a role (`small`) as the
/// model the user chose for it.
pub fn named_model_id(store: &Store, named: &str) -> Result<String, HostError> {
    if named.contains('@') {
        return Ok(named.to_string());
    }
    let role = ModelRole::parse(named).map_err(HostError::from)?;
    model_for(store, role)?.map(|(id, _)| id).ok_or_else(|| {
        HostError::new(
            ErrorKind::NoModel,
            format!("no model is chosen for the {named} role (Settings → Models for each role)"),
        )
    })
}

/// The main role's model, if one is set: what a task uses until it chooses its own.
pub fn main_model(store: &Store) -> Result<Option<String>, HostError> {
    Ok(model_for(store, ModelRole::Main)?.map(|(id, _)| id))
}

/// Built-in providers plus the user's, which replace built-ins of the same name.
pub fn all_providers(store: &Store) -> Result<Vec<Provider>, HostError> {
    let mut all = builtin_providers();
    for row in store.custom_providers().map_err(store_error)? {
        let protocol = Protocol::parse(&row.protocol).map_err(HostError::from)?;
        let ms = |v: Option<i64>| v.map(|ms| std::time::Duration::from_millis(ms.max(1) as u64));
        let provider = Provider::new(
            &row.name,
            protocol,
            &row.base_url,
            row.api_key_env.as_deref(),
        )
        .with_timeouts(ms(row.first_byte_timeout_ms), ms(row.idle_timeout_ms));
        all.retain(|p| p.name != provider.name);
        all.push(provider);
    }
    Ok(all)
}

/// A provider by name.
pub fn provider(store: &Store, name: &str) -> Result<Provider, HostError> {
    let all = all_providers(store)?;
    let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
    all.iter().find(|p| p.name == name).cloned().ok_or_else(|| {
        HostError::new(
            ErrorKind::UnknownModel,
            format!(
                "unknown provider '{name}'; known: {}. Add it as a custom provider first",
                names.join(", ")
            ),
        )
    })
}

/// The provider of MODEL@PROVIDER.
pub fn provider_of(store: &Store, model_id: &str) -> Result<Provider, HostError> {
    let (_, name) = parse_model_id(model_id).map_err(HostError::from)?;
    provider(store, name)
}

/// A user's model entry stores this (0) as its window, or its answer limit, when it was left
/// for the model's local server to say: [`fit_local_model`] asks it, as for a model nobody
/// described.
pub const WINDOW_FROM_SERVER: u64 = 0;

/// The models the user described (their entries win over the catalog's).
pub fn custom_models(store: &Store) -> Result<Vec<ModelInfo>, HostError> {
    Ok(store
        .custom_models()
        .map_err(store_error)?
        .into_iter()
        .map(|m| ModelInfo {
            // Described without its window: as an unknown model's, until its server says.
            known: m.context_window != WINDOW_FROM_SERVER,
            context_window: match m.context_window {
                WINDOW_FROM_SERVER => ModelInfo::unknown(&m.id).context_window,
                window => window,
            },
            max_output: match m.max_output {
                WINDOW_FROM_SERVER => ModelInfo::unknown(&m.id).max_output,
                limit => limit,
            },
            id: m.id,
            tools: m.tools,
            images: m.images,
            thinking: m.thinking,
            pricing: Pricing {
                input: m.input_price,
                output: m.output_price,
                cache_read: m.cache_read_price,
                cache_write: m.cache_write_price,
            },
            sampling: codewright_llm::Sampling {
                temperature: m.temperature,
                top_p: m.top_p,
                seed: m.seed,
                constrained: m.constrained,
            },
            // (Said by its server, when it is a local one whose window is not given here:
            // `fit_local_model`; else two user turns in a row are joined, as for any model.)
            user_turns_in_a_row: false,
        })
        .collect())
}

/// The model to run: `given` (MODEL@PROVIDER), else the main role's; with its provider and key.
pub fn resolve(store: &Store, given: Option<&str>) -> Result<Model, HostError> {
    let id = match given {
        Some(id) => id.to_string(),
        None => main_model(store)?.ok_or_else(|| {
            HostError::new(
                ErrorKind::NoModel,
                "no model is chosen for this task and no main model is set",
            )
        })?,
    };
    let provider = provider_of(store, &id)?;
    let info = resolve_model(&id, &custom_models(store)?);
    let (key, _) = find_key(&OsKeyring, &provider, codewright_tools::env_var)?;
    Ok(Model {
        info,
        provider,
        key,
    })
}

/// How long a local server's answer about its window is believed without asking again.
const WINDOW_ASKED_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
/// An older answer is still used (and asked again meanwhile) up to this age.
const WINDOW_KEPT_FOR: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// Where what local servers said is kept, in the data folder: each `exec` is a new process, and
/// asking costs five requests before the first one (issue 34).
pub const LOCAL_MODELS_FILE: &str = "local-models.json";

/// What a local server said about one of its models, and when (Unix seconds).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy)]
struct Said {
    at: u64,
    context_window: Option<u64>,
    tools: Option<bool>,
    #[serde(default)]
    user_turns_in_a_row: Option<bool>,
}

/// Gives a model of a local server that neither the catalog nor the user's entries know what
/// the server says of it ([`describe_local_model`](codewright_llm::probe::describe_local_model)):
/// the context window it runs with instead of an assumed 128k (a 4k llama.cpp or Ollama model
/// then gets compact tools and compaction that fits; its longest answer is kept to a quarter of
/// the window), tools given as text to a model that does not take them, and a request's last
/// words as a turn of their own where its chat template takes two user turns in a row. A server
/// that says nothing leaves the defaults.
///
/// The answers are kept in `home`'s [`LOCAL_MODELS_FILE`] per server and model: one under a
/// minute old is used as it is; an older one (up to a day) is used at once and asked again in
/// the background, so the next run has the server as it is now (a server restarted with another
/// window is seen from the run after; a window that became smaller meanwhile is handled as any
/// request too long for it is).
pub async fn fit_local_model(model: &mut Model, home: &std::path::Path) {
    if model.info.known || !model.provider.is_local() {
        return;
    }
    let key = format!(
        "{} {}",
        without_credentials(&model.provider.base_url),
        model.info.name()
    );
    let file = home.join(LOCAL_MODELS_FILE);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let kept = read_said(&file).get(&key).copied();
    let said = match kept {
        Some(said) if now.saturating_sub(said.at) < WINDOW_ASKED_EVERY.as_secs() => said,
        Some(said) if now.saturating_sub(said.at) < WINDOW_KEPT_FOR.as_secs() => {
            let model = model.clone();
            tokio::spawn(async move { ask_local_model(&model, &file, key).await });
            said
        }
        _ => ask_local_model(model, &file, key).await,
    };
    if let Some(window) = said.context_window {
        model.info.context_window = window;
        model.info.max_output = model.info.max_output.min(window / 4).max(1);
    }
    if let Some(tools) = said.tools {
        model.info.tools = tools;
    }
    if let Some(taken) = said.user_turns_in_a_row {
        model.info.user_turns_in_a_row = taken;
    }
}

/// Asks the server about `model` and keeps the answer in `file` under `key`.
async fn ask_local_model(model: &Model, file: &std::path::Path, key: String) -> Said {
    let answer = codewright_llm::probe::describe_local_model(
        &model.provider,
        model.key.as_deref(),
        model.info.name(),
        std::time::Duration::from_secs(2),
    )
    .await;
    // Another process may have written meanwhile: its other answers are kept (two writing at
    // once may lose one's answer, which is then only asked again). A server that says nothing
    // this time (busy past the timeout, a model not loaded yet) leaves what it said before.
    let mut all = read_said(file);
    let before = all.get(&key).copied();
    let said = Said {
        at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        context_window: answer
            .context_window
            .or(before.and_then(|b| b.context_window)),
        tools: answer.tools.or(before.and_then(|b| b.tools)),
        user_turns_in_a_row: answer
            .user_turns_in_a_row
            .or(before.and_then(|b| b.user_turns_in_a_row)),
    };
    all.insert(key, said);
    if let Ok(text) = serde_json::to_vec_pretty(&all) {
        // Each write its own file (tasks of one process ask at once), renamed into place.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = file.with_extension(format!("json.{}.{n}", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, file).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    said
}

/// What `file` keeps (nothing when it is missing or unreadable).
fn read_said(file: &std::path::Path) -> HashMap<String, Said> {
    std::fs::read(file)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// `url` without a `user:password@` part, which is not kept in a file.
fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host_end = rest.find('/').unwrap_or(rest.len());
            match rest[..host_end].rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{host}{}", &rest[host_end..]),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    }
}

/// The model that writes compaction summaries, when the compaction role names another than
/// `main`.
pub fn compaction_model(store: &Store, main: &Model) -> Result<Option<Model>, HostError> {
    match model_for(store, ModelRole::Compaction)? {
        Some((id, ModelRole::Compaction)) if id != main.info.id => {
            resolve(store, Some(&id)).map(Some).map_err(|e| {
                HostError::new(
                    e.kind,
                    format!("the compaction model {id} cannot be used: {}", e.message),
                )
            })
        }
        _ => Ok(None),
    }
}

/// A model a user can choose, for pickers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChoice {
    /// MODEL@PROVIDER.
    pub id: String,
    pub context_window: u64,
}

/// The catalog's models and the user's own, the user's first.
pub fn choices(store: &Store) -> Result<Vec<ModelChoice>, HostError> {
    let custom = custom_models(store)?;
    let builtin = builtin_models();
    let mut all: Vec<ModelChoice> = custom
        .iter()
        .chain(
            builtin
                .iter()
                .filter(|m| !custom.iter().any(|c| c.id == m.id)),
        )
        .map(|m| ModelChoice {
            id: m.id.clone(),
            context_window: m.context_window,
        })
        .collect();
    all.dedup_by(|a, b| a.id == b.id);
    Ok(all)
}

impl crate::Host {
    /// The models a person can choose, by provider.
    pub fn model_choices(&self) -> Result<Vec<ModelChoice>, HostError> {
        choices(&self.inner.store())
    }

    /// The model a role uses and the role it comes from (a role without one falls back).
    pub fn model_for(&self, role: ModelRole) -> Result<Option<(String, ModelRole)>, HostError> {
        model_for(&self.inner.store(), role)
    }

    /// The model (MODEL@PROVIDER) a run would use: `named`, else the task's own, else the main
    /// model; `None` when none is set.
    pub fn model_in_use(
        &self,
        task: Option<codewright_protocol::TaskId>,
        named: Option<&str>,
    ) -> Option<String> {
        if let Some(named) = named {
            return Some(named.to_string());
        }
        let store = self.inner.store();
        task.and_then(|task| store.task(task).ok())
            .and_then(|task| crate::options_of(&store, &task).model)
            .or_else(|| main_model(&store).ok().flatten())
    }

    /// Every provider, built-in and custom.
    pub fn providers(&self) -> Result<Vec<Provider>, HostError> {
        all_providers(&self.inner.store())
    }
}
