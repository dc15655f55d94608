//! Providers, keys and model roles as a person edits them: what a settings screen shows (never a
//! key), validated changes that are saved whole or not at all, a connection test, and what is
//! already there on a first run (keys in the environment or the keyring, local model servers).
//! The CLI's `providers`, `models role` and `auth` commands go through the same functions.

use crate::models::{all_providers, main_model, provider, provider_of};
use crate::store_error;
use crate::HostError;
use codewright_llm::catalog::{builtin_models, parse_model_id};
use codewright_llm::credentials::{find_key, KeyError, KeySource, SecretStore};
use codewright_llm::probe::{list_models, test_connection};
use codewright_llm::{builtin_providers, Protocol, Provider};

pub use codewright_llm::credentials::OsKeyring;
pub use codewright_llm::probe::TestOutcome;
pub use codewright_llm::ModelRole;
use codewright_protocol::ErrorKind;
use codewright_store::{ProviderRow, Store};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Where a provider's key comes from. The key itself never leaves the keyring or the
/// environment except in a request to its provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "camelCase")]
pub enum KeyStatus {
    /// Kept in the system keyring.
    Keyring,
    /// Read from this environment variable.
    Env { var: String },
    /// A local server that needs no key.
    NotNeeded,
    /// No key anywhere. `keyring` says why the keyring could not be asked, when it could not.
    Missing {
        var: Option<String>,
        keyring: Option<String>,
    },
}

/// A provider as a settings screen shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStatus {
    pub name: String,
    pub protocol: Protocol,
    pub base_url: String,
    pub api_key_env: Option<String>,
    /// Its own waits, in seconds, if it has any (see [`ProviderForm`]).
    pub first_byte_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    /// The user added it (or changed a built-in one), so it can be edited and removed.
    pub custom: bool,
    pub key: KeyStatus,
    /// Catalog models of this provider, for a model picker.
    pub models: Vec<String>,
}

/// Where `provider`'s key comes from, asking the keyring and the environment.
pub fn key_status(keys: &dyn SecretStore, provider: &Provider) -> KeyStatus {
    match find_key(keys, provider, codewright_tools::env_var) {
        Ok((_, KeySource::Keyring)) => KeyStatus::Keyring,
        Ok((_, KeySource::Env(var))) => KeyStatus::Env { var },
        Ok((_, KeySource::NotNeeded)) => KeyStatus::NotNeeded,
        Err(_) => KeyStatus::Missing {
            var: provider.api_key_env.clone(),
            keyring: keys.get(&provider.name).err().map(|e| e.to_string()),
        },
    }
}

/// Every provider, built-in and custom, with where its key comes from.
pub fn provider_statuses(
    store: &Store,
    keys: &dyn SecretStore,
) -> Result<Vec<ProviderStatus>, HostError> {
    let custom: Vec<String> = store
        .custom_providers()
        .map_err(store_error)?
        .into_iter()
        .map(|p| p.name)
        .collect();
    let catalog = builtin_models();
    Ok(all_providers(store)?
        .into_iter()
        .map(|p| ProviderStatus {
            key: key_status(keys, &p),
            custom: custom.contains(&p.name),
            models: catalog
                .iter()
                .filter(|m| m.provider() == p.name)
                .map(|m| m.id.clone())
                .collect(),
            first_byte_timeout_secs: p.first_byte_timeout.map(|d| d.as_secs()),
            idle_timeout_secs: p.idle_timeout.map(|d| d.as_secs()),
            name: p.name,
            protocol: p.protocol,
            base_url: p.base_url,
            api_key_env: p.api_key_env,
        })
        .collect())
}

/// A provider as the user typed it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderForm {
    pub name: String,
    /// `openai`, `openai-responses`, `anthropic` or `gemini`.
    pub protocol: String,
    pub base_url: String,
    /// The environment variable that holds the key when the keyring has none.
    pub api_key_env: Option<String>,
    /// How long it may take to start answering, and to pause between two chunks (`None`: the
    /// default for a hosted or a local server). Whole seconds from a settings screen.
    #[serde(default, rename = "firstByteTimeoutSecs", deserialize_with = "seconds")]
    pub first_byte_timeout: Option<Duration>,
    #[serde(default, rename = "idleTimeoutSecs", deserialize_with = "seconds")]
    pub idle_timeout: Option<Duration>,
}

fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.map(Duration::from_secs))
}

/// A change refused because of one field: which one, and why, in words for that field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// For a front end that shows no form (the CLI): the field's message, as bad input.
impl From<FieldError> for crate::HostError {
    fn from(e: FieldError) -> crate::HostError {
        crate::HostError::new(codewright_protocol::ErrorKind::BadInput, e.message)
    }
}

fn field(field: &'static str, message: impl Into<String>) -> FieldError {
    FieldError {
        field,
        message: message.into(),
    }
}

/// Checks `form` whole and saves it as a custom provider (replacing one of the same name, or a
/// built-in one); nothing is saved if any field is wrong.
pub fn save_provider(store: &Store, form: &ProviderForm) -> Result<Provider, FieldError> {
    let name = form.name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        return Err(field(
            "name",
            format!(
                "'{name}' is not a valid provider name: use lowercase letters, digits, - and _"
            ),
        ));
    }
    let protocol =
        Protocol::parse(form.protocol.trim()).map_err(|e| field("protocol", e.to_string()))?;
    let url = form.base_url.trim();
    codewright_llm::provider::check_base_url(url).map_err(|e| field("baseUrl", e.to_string()))?;
    let env = form
        .api_key_env
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty());
    if let Some(var) = env {
        if !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || var.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(field(
                "apiKeyEnv",
                format!("'{var}' is not an environment variable name: use letters, digits and _, e.g. MY_API_KEY"),
            ));
        }
    }
    for (name, wait) in [
        ("firstByteTimeoutSecs", form.first_byte_timeout),
        ("idleTimeoutSecs", form.idle_timeout),
    ] {
        if wait.is_some_and(|d| d.is_zero()) {
            return Err(field(
                name,
                "Give a number of seconds above 0, or leave it empty for the default.",
            ));
        }
    }
    let p = Provider::new(name, protocol, url, env)
        .with_timeouts(form.first_byte_timeout, form.idle_timeout);
    let ms = |d: Option<Duration>| d.map(|d| d.as_millis() as i64);
    store
        .save_provider(&ProviderRow {
            name: p.name.clone(),
            protocol: p.protocol.as_str().into(),
            base_url: p.base_url.clone(),
            api_key_env: p.api_key_env.clone(),
            first_byte_timeout_ms: ms(p.first_byte_timeout),
            idle_timeout_ms: ms(p.idle_timeout),
        })
        .map_err(|e| field("name", e.to_string()))?;
    Ok(p)
}

/// Removes a custom provider (a changed built-in one goes back to what it was).
pub fn remove_provider(store: &Store, name: &str) -> Result<(), HostError> {
    store.remove_provider(name).map_err(store_error)
}

/// What saving a key did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeySaved {
    /// Spaces or line breaks around the pasted key were taken off.
    pub trimmed: bool,
}

/// Keeps `key` for `provider` in the keyring. Spaces and line breaks around it (a paste) are
/// taken off, and said so; a key with spaces inside is refused, since no provider issues one.
pub fn set_key(
    store: &Store,
    keys: &dyn SecretStore,
    provider_name: &str,
    key: &str,
) -> Result<KeySaved, HostError> {
    let p = provider(store, provider_name)?;
    let trimmed = key.trim();
    if trimmed.is_empty() {
        return Err(HostError::new(
            ErrorKind::BadInput,
            "the key is empty: paste the key the provider gave you",
        ));
    }
    if trimmed.chars().any(char::is_whitespace) {
        return Err(HostError::new(
            ErrorKind::BadInput,
            "the key has spaces or line breaks inside it: paste only the key itself",
        ));
    }
    keys.set(&p.name, trimmed)
        .map_err(|e| HostError::new(e.kind(), keyring_hint(&p, e)))?;
    Ok(KeySaved {
        trimmed: trimmed.len() != key.len(),
    })
}

/// Removes `provider`'s key from the keyring; `false` if it had none there.
pub fn remove_key(
    store: &Store,
    keys: &dyn SecretStore,
    provider_name: &str,
) -> Result<bool, HostError> {
    let p = provider(store, provider_name)?;
    keys.delete(&p.name)
        .map_err(|e| HostError::new(e.kind(), keyring_hint(&p, e)))
}

/// The keyring's own reason, and the way around it.
fn keyring_hint(p: &Provider, why: KeyError) -> String {
    match &p.api_key_env {
        Some(var) => format!(
            "{why} To use {} without it, set {var} in the environment Codewright starts in.",
            p.name
        ),
        None => why.to_string(),
    }
}

/// Tests `model_id` (MODEL@PROVIDER) of `provider` with the key it would use now. Takes no
/// store: the request may take seconds.
pub async fn test_model(
    keys: &dyn SecretStore,
    provider: &Provider,
    model_id: &str,
) -> Result<TestOutcome, HostError> {
    let (model, _) = parse_model_id(model_id).map_err(HostError::from)?;
    let key = find_key(keys, provider, codewright_tools::env_var)?.0;
    Ok(test_connection(provider, key.as_deref(), model).await)
}

/// Chooses `model` (MODEL@PROVIDER) for `role`, or clears the role (it then falls back).
pub fn set_role(store: &Store, role: ModelRole, model: Option<&str>) -> Result<(), HostError> {
    if let Some(id) = model {
        provider_of(store, id)?;
    }
    let value = model.map(|m| serde_json::Value::String(m.to_string()));
    store
        .set_setting(&role.setting_key(), value.as_ref())
        .map_err(store_error)
}

/// A local model server that answered on its usual port, with the models it has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalServer {
    /// The built-in provider for it (`ollama`, `lmstudio`).
    pub provider: String,
    pub base_url: String,
    pub models: Vec<String>,
}

/// Whether a task can run now, and if not, what is missing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// The main model, when one is chosen.
    pub main_model: Option<String>,
    /// Why no task can run yet, in words for a first-run screen; `None` when one can.
    pub missing: Option<String>,
}

/// Whether the main model is chosen and its provider has a key.
pub fn readiness(store: &Store, keys: &dyn SecretStore) -> Result<Readiness, HostError> {
    let main = main_model(store)?;
    let missing = match &main {
        None => Some("No model is chosen yet.".to_string()),
        Some(id) => match provider_of(store, id) {
            Err(e) => Some(format!(
                "The main model {id} cannot be used: {}.",
                e.message
            )),
            Ok(p) => match key_status(keys, &p) {
                KeyStatus::Missing { .. } => Some(format!("{} has no key yet.", p.name)),
                _ => None,
            },
        },
    };
    Ok(Readiness {
        main_model: main,
        missing,
    })
}

/// The local servers that answer now (Ollama where its `OLLAMA_HOST` says, else on 11434; LM
/// Studio on 1234), each asked at once and given `timeout`.
pub async fn local_servers(timeout: Duration) -> Vec<LocalServer> {
    let local: Vec<Provider> = builtin_providers()
        .into_iter()
        .filter(|p| p.is_local())
        .collect();
    // Asked at once: the slowest answer (or timeout) is all the wait.
    let asked: Vec<_> = local
        .into_iter()
        .map(|p| tokio::spawn(async move { (list_models(&p, None, timeout).await, p) }))
        .collect();
    let mut found = Vec::new();
    for asking in asked {
        if let Ok((Some(models), p)) = asking.await {
            found.push(LocalServer {
                models: models
                    .into_iter()
                    .map(|m| format!("{m}@{}", p.name))
                    .collect(),
                provider: p.name,
                base_url: p.base_url,
            });
        }
    }
    found
}

/// The app's settings (the CLI reads only `max_subagents`, which `exec` shares).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AppSettings {
    /// How many tasks may run at once; the others wait, queued. Read when the app starts.
    pub max_running: usize,
    /// How many sub-agents (the `agent` tool) may work at once, across tasks; the others wait.
    /// Read when the app (or `exec`) starts.
    pub max_subagents: usize,
    /// Desktop notifications, each only while the task's window is not in front: an approval
    /// or a question waits, a run finished, a run failed.
    pub notify_approval: bool,
    pub notify_finished: bool,
    pub notify_failed: bool,
}

impl Default for AppSettings {
    fn default() -> AppSettings {
        AppSettings {
            max_running: codewright_agent::AgentConfig::default().max_running,
            max_subagents: codewright_agent::AgentConfig::default().max_subagents,
            notify_approval: true,
            notify_finished: true,
            notify_failed: true,
        }
    }
}

/// The most tasks that may run at once.
pub const MAX_RUNNING_LIMIT: usize = 16;
/// The most sub-agents that may work at once.
pub const MAX_SUBAGENTS_LIMIT: usize = 8;
const APP_SETTINGS: &str = "app";

/// The app's settings (the defaults where none are saved, or what is saved cannot be read).
pub fn app_settings(store: &Store) -> AppSettings {
    store
        .setting(APP_SETTINGS)
        .ok()
        .flatten()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// Saves the app's settings whole; a wrong field is named.
pub fn save_app_settings(store: &Store, settings: &AppSettings) -> Result<(), FieldError> {
    if !(1..=MAX_RUNNING_LIMIT).contains(&settings.max_running) {
        return Err(field(
            "maxRunning",
            format!("Choose from 1 to {MAX_RUNNING_LIMIT} tasks at once."),
        ));
    }
    if !(1..=MAX_SUBAGENTS_LIMIT).contains(&settings.max_subagents) {
        return Err(field(
            "maxSubagents",
            format!("Choose from 1 to {MAX_SUBAGENTS_LIMIT} sub-agents at once."),
        ));
    }
    let value = serde_json::to_value(settings).expect("settings serialize");
    store
        .set_setting(APP_SETTINGS, Some(&value))
        .map_err(|e| field("maxRunning", e.to_string()))
}

/// A model as the settings page lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    #[serde(flatten)]
    pub model: codewright_llm::ModelInfo,
    /// The user added or changed it (it can be removed).
    pub custom: bool,
}

/// The catalog's models and the user's own (which win), by provider, then name.
pub fn catalog(store: &Store) -> Result<Vec<CatalogEntry>, HostError> {
    let custom = crate::models::custom_models(store)?;
    let mut all: Vec<CatalogEntry> = builtin_models()
        .into_iter()
        .filter(|b| !custom.iter().any(|c| c.id == b.id))
        .map(|model| CatalogEntry {
            model,
            custom: false,
        })
        .collect();
    all.extend(custom.into_iter().map(|model| CatalogEntry {
        model,
        custom: true,
    }));
    all.sort_by(|a, b| {
        (a.model.provider(), a.model.name()).cmp(&(b.model.provider(), b.model.name()))
    });
    Ok(all)
}

/// A model as a person describes it; what is left out keeps the catalog's figure (or the
/// defaults for a model the catalog does not know).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelForm {
    /// MODEL@PROVIDER.
    pub id: String,
    pub context_window: Option<u64>,
    pub max_output: Option<u64>,
    pub tools: Option<bool>,
    pub images: Option<bool>,
    /// US dollars per million tokens.
    pub input_price: Option<f64>,
    pub output_price: Option<f64>,
    /// Sampling sent with every request to the model; left out, the server's default. Unlike
    /// the figures above, a setting left out is cleared (no catalog model has one).
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// A whole number from 0 to 4,294,967,295 (a number as typed, checked here).
    pub seed: Option<f64>,
    /// Answers constrained to one tool call or a final answer by the server's grammar (a local
    /// llama.cpp server's `response_format`); left out, off.
    #[serde(default)]
    pub constrained: bool,
}

/// Checks `form` whole and saves the model (replacing the user's entry of the same id).
pub fn save_model(
    store: &Store,
    form: &ModelForm,
) -> Result<codewright_llm::ModelInfo, FieldError> {
    let id = form.id.trim();
    let (_, provider_name) = parse_model_id(id).map_err(|_| {
        field(
            "id",
            "Write it as MODEL@PROVIDER, e.g. qwen2.5-coder:7b@ollama.",
        )
    })?;
    let server = provider(store, provider_name).map_err(|e| field("id", e.message))?;
    let custom = crate::models::custom_models(store).map_err(|e| field("id", e.message))?;
    let base = codewright_llm::resolve_model(id, &custom);
    // A local server's model described without its window keeps it unknown, so that the server
    // is asked for it (a default of 128k would hide a small model's window: its prompt, tools
    // and help are chosen by it).
    let ask_server = form.context_window.is_none()
        && server.is_local()
        && (!base.known || base.context_window == crate::models::WINDOW_FROM_SERVER);
    if ask_server {
        if let Some(max_output) = form.max_output.filter(|&m| m == 0) {
            return Err(field(
                "maxOutput",
                format!("The longest answer must be at least 1 token, not {max_output}."),
            ));
        }
    }
    let context_window = if ask_server {
        crate::models::WINDOW_FROM_SERVER
    } else {
        form.context_window.unwrap_or(base.context_window)
    };
    if !ask_server && !(16..=100_000_000).contains(&context_window) {
        return Err(field(
            "contextWindow",
            "The context window is the number of tokens the model reads at most (a 4k model: 4096).",
        ));
    }
    let max_output = if ask_server {
        form.max_output.unwrap_or(crate::models::WINDOW_FROM_SERVER)
    } else {
        form.max_output
            .unwrap_or(base.max_output.min(context_window / 2))
    };
    if !ask_server && (max_output == 0 || max_output >= context_window) {
        return Err(field(
            "maxOutput",
            format!("The longest answer must be at least 1 token and less than the context window ({context_window})."),
        ));
    }
    for (name, price) in [
        ("inputPrice", form.input_price),
        ("outputPrice", form.output_price),
    ] {
        if price.is_some_and(|p| !p.is_finite() || p < 0.0) {
            return Err(field(
                name,
                "A price is US dollars per million tokens, 0 or more.",
            ));
        }
    }
    if form.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
        return Err(field(
            "temperature",
            "The temperature is from 0 (the same answer each time) to 2 (the most varied).",
        ));
    }
    if form.top_p.is_some_and(|p| !(p > 0.0 && p <= 1.0)) {
        return Err(field(
            "topP",
            "Top-p is a share of the likeliest words, more than 0 and at most 1.",
        ));
    }
    // The grammar is asked of the server in the OpenAI chat request's `response_format`, as
    // llama.cpp's servers take it; any other server would be sent no tools and no grammar.
    if form.constrained && !(server.is_local() && server.protocol == Protocol::OpenAiChat) {
        return Err(field(
            "constrained",
            format!("Constrained answers are for a model on a local server that speaks the OpenAI chat protocol (llama.cpp's llama-server, llama-cpp-python); {provider_name} is not one. Leave it off for this model."),
        ));
    }
    let seed = match form.seed {
        None => None,
        Some(s) if s.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&s) => Some(s as u32),
        Some(_) => {
            return Err(field(
                "seed",
                "The seed is a whole number from 0 to 4294967295.",
            ))
        }
    };
    let row = codewright_store::ModelRow {
        id: id.to_string(),
        context_window,
        max_output,
        tools: form.tools.unwrap_or(base.tools),
        images: form.images.unwrap_or(base.images),
        thinking: base.thinking,
        input_price: form.input_price.unwrap_or(base.pricing.input),
        output_price: form.output_price.unwrap_or(base.pricing.output),
        cache_read_price: base.pricing.cache_read,
        cache_write_price: base.pricing.cache_write,
        temperature: form.temperature,
        top_p: form.top_p,
        seed,
        constrained: form.constrained,
    };
    store
        .save_model(&row)
        .map_err(|e| field("id", e.to_string()))?;
    let custom = crate::models::custom_models(store).map_err(|e| field("id", e.message))?;
    Ok(codewright_llm::resolve_model(id, &custom))
}

/// Removes the user's entry of a model; `false` if it had none.
pub fn remove_model(store: &Store, id: &str) -> Result<bool, HostError> {
    store.remove_model(id).map_err(store_error)
}

/// What the settings page shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    pub readiness: Readiness,
    pub providers: Vec<ProviderStatus>,
    pub models: Vec<crate::models::ModelChoice>,
    /// The model each role names itself (`None`: it falls back, small → main).
    pub roles: Vec<(ModelRole, Option<String>)>,
}

/// Providers, keys, model roles and the app's settings, through the host (keys in the OS
/// keyring, the environment as a fallback).
impl crate::Host {
    /// Everything the settings page shows.
    pub fn settings_overview(&self) -> Result<Overview, HostError> {
        let store = self.inner.store();
        let mut roles = Vec::new();
        for role in ModelRole::ALL {
            let own = crate::models::model_for(&store, role)?.filter(|(_, from)| *from == role);
            roles.push((role, own.map(|(id, _)| id)));
        }
        Ok(Overview {
            readiness: readiness(&store, &OsKeyring)?,
            providers: provider_statuses(&store, &OsKeyring)?,
            models: crate::models::choices(&store)?,
            roles,
        })
    }

    /// Whether a model and its key are set up, and what to do if not.
    pub fn readiness(&self) -> Result<Readiness, HostError> {
        readiness(&self.inner.store(), &OsKeyring)
    }

    /// Every provider with where its key comes from.
    pub fn provider_statuses(&self) -> Result<Vec<ProviderStatus>, HostError> {
        provider_statuses(&self.inner.store(), &OsKeyring)
    }

    pub fn save_provider(&self, form: &ProviderForm) -> Result<Provider, FieldError> {
        save_provider(&self.inner.store(), form)
    }

    pub fn remove_provider(&self, name: &str) -> Result<(), HostError> {
        remove_provider(&self.inner.store(), name)
    }

    /// Keeps `key` for the provider in the keyring (see [`set_key`]).
    pub fn set_key(&self, provider: &str, key: &str) -> Result<KeySaved, HostError> {
        set_key(&self.inner.store(), &OsKeyring, provider, key)
    }

    /// Removes the provider's key from the keyring; `false` if it had none there.
    pub fn remove_key(&self, provider: &str) -> Result<bool, HostError> {
        remove_key(&self.inner.store(), &OsKeyring, provider)
    }

    /// Sends MODEL@PROVIDER one short request with its provider's key (the store is not held
    /// meanwhile).
    pub async fn test_model(&self, model: &str) -> Result<TestOutcome, HostError> {
        let provider = provider_of(&self.inner.store(), model)?;
        test_model(&OsKeyring, &provider, model).await
    }

    /// Chooses the model of a role; `None` clears it (it falls back).
    pub fn set_role(&self, role: ModelRole, model: Option<&str>) -> Result<(), HostError> {
        set_role(&self.inner.store(), role, model)
    }

    pub fn app_settings(&self) -> AppSettings {
        app_settings(&self.inner.store())
    }

    pub fn save_app_settings(&self, settings: &AppSettings) -> Result<(), FieldError> {
        save_app_settings(&self.inner.store(), settings)
    }

    /// The catalog's models and the user's own.
    pub fn catalog(&self) -> Result<Vec<CatalogEntry>, HostError> {
        catalog(&self.inner.store())
    }

    pub fn save_model(&self, form: &ModelForm) -> Result<codewright_llm::ModelInfo, FieldError> {
        save_model(&self.inner.store(), form)
    }

    /// Removes the user's entry for the model; `false` if there was none.
    pub fn remove_model(&self, id: &str) -> Result<bool, HostError> {
        remove_model(&self.inner.store(), id)
    }
}
