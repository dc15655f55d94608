//! `providers`, `models` and `auth`: who Codewright can talk to, which models, and their keys.

use crate::error::{bad_input, Result};
use crate::output::{table, to_json};
use clap::Subcommand;
use codewright_host::settings::{self, KeyStatus, ProviderForm};
use codewright_host::Host;
use codewright_llm::credentials::OsKeyring;
use codewright_llm::{ModelRole, Provider};
use std::io::Read;

#[derive(Subcommand)]
pub enum ProvidersCommand {
    /// List built-in and custom providers, with where their key comes from.
    List,
    /// Add (or change) a custom provider.
    Add {
        name: String,
        /// Wire protocol: openai (Chat Completions and compatible servers), openai-responses,
        /// anthropic, gemini.
        #[arg(long)]
        protocol: String,
        /// Base URL, e.g. http://localhost:8000/v1 (with or without /v1).
        #[arg(long)]
        base_url: String,
        /// Environment variable that holds the key when the keyring has none.
        #[arg(long, value_name = "VAR")]
        api_key_env: Option<String>,
        /// Seconds the provider may take to start answering (default: 120, or 300 for a local
        /// server).
        #[arg(long, value_name = "SECS", value_parser = codewright_llm::parse_timeout)]
        first_byte_timeout: Option<std::time::Duration>,
        /// Seconds the provider may pause between two chunks of an answer (default: 120).
        #[arg(long, value_name = "SECS", value_parser = codewright_llm::parse_timeout)]
        idle_timeout: Option<std::time::Duration>,
    },
    /// Remove a custom provider.
    Rm { name: String },
}

#[derive(Subcommand)]
pub enum ModelsCommand {
    /// List known models with their limits and prices.
    List,
    /// Add or override a model: NAME@PROVIDER.
    Add {
        id: String,
        /// Context window in tokens.
        #[arg(long, value_name = "N")]
        context: Option<u64>,
        /// Longest answer in tokens.
        #[arg(long, value_name = "N")]
        max_output: Option<u64>,
        /// The model cannot call tools.
        #[arg(long)]
        no_tools: bool,
        /// The model takes images (without it, images are described to it by name).
        #[arg(long)]
        images: bool,
        /// US dollars per million input tokens.
        #[arg(long, value_name = "USD")]
        input_price: Option<f64>,
        /// US dollars per million output tokens.
        #[arg(long, value_name = "USD")]
        output_price: Option<f64>,
        /// Sampling temperature sent with every request (0–2); left out, the server's default.
        #[arg(long, value_name = "T")]
        temperature: Option<f64>,
        /// Top-p sent with every request (more than 0, at most 1).
        #[arg(long, value_name = "P")]
        top_p: Option<f64>,
        /// Seed sent with every request, where the protocol has one (OpenAI-compatible, Gemini).
        #[arg(long, value_name = "N")]
        seed: Option<u32>,
        /// Constrain answers to one tool call or a final answer, by a JSON schema the server
        /// enforces (llama.cpp's llama-server); calls are then written as JSON, no native tools.
        #[arg(long)]
        constrained: bool,
    },
    /// Show which model each role uses (main, small, compaction) and where it comes from.
    Roles,
    /// Choose the model for a role; without MODEL, clear it (it falls back).
    Role {
        /// main, small or compaction.
        role: String,
        /// MODEL@PROVIDER.
        model: Option<String>,
    },
}

#[derive(Subcommand)]
pub enum AuthCommand {
    /// Keep a provider's API key in the system keyring (the key is read from standard input).
    Set { provider: String },
    /// Remove a provider's key from the system keyring.
    Rm { provider: String },
}

fn key_status(p: &Provider) -> String {
    match settings::key_status(&OsKeyring, p) {
        KeyStatus::Keyring => "keyring".into(),
        KeyStatus::Env { var } => format!("${var}"),
        KeyStatus::NotNeeded => "not needed".into(),
        KeyStatus::Missing { var: Some(var), .. } => format!("missing (auth set, or ${var})"),
        KeyStatus::Missing { var: None, .. } => "missing".into(),
    }
}

pub fn providers(host: &Host, command: ProvidersCommand, json: bool) -> Result<String> {
    Ok(match command {
        ProvidersCommand::List => {
            let all = host.providers()?;
            if json {
                to_json(&all)
            } else {
                table(
                    &["NAME", "PROTOCOL", "BASE URL", "KEY"],
                    all.iter().map(|p| {
                        vec![
                            p.name.clone(),
                            p.protocol.as_str().into(),
                            p.base_url.clone(),
                            key_status(p),
                        ]
                    }),
                )
            }
        }
        ProvidersCommand::Add {
            name,
            protocol,
            base_url,
            api_key_env,
            first_byte_timeout,
            idle_timeout,
        } => {
            let p = host.save_provider(&ProviderForm {
                name,
                protocol,
                base_url,
                api_key_env,
                first_byte_timeout,
                idle_timeout,
            })?;
            if json {
                to_json(&p)
            } else {
                format!(
                    "Saved provider {} ({}, {})\n",
                    p.name,
                    p.protocol.as_str(),
                    p.base_url
                )
            }
        }
        ProvidersCommand::Rm { name } => {
            host.remove_provider(&name)?;
            if json {
                to_json(&serde_json::json!({"removed": name}))
            } else {
                format!("Removed provider {name}\n")
            }
        }
    })
}

pub fn models(host: &Host, command: ModelsCommand, json: bool) -> Result<String> {
    Ok(match command {
        ModelsCommand::List => {
            let all = host.catalog()?;
            if json {
                to_json(&all)
            } else {
                table(
                    &["MODEL", "CONTEXT", "MAX OUT", "TOOLS", "$/M IN", "$/M OUT"],
                    all.iter().map(|entry| {
                        let m = &entry.model;
                        // (A local model described without its window: its server says.)
                        let (window, limit) = if m.known {
                            (m.context_window.to_string(), m.max_output.to_string())
                        } else {
                            ("(server)".to_string(), "(server)".to_string())
                        };
                        vec![
                            m.id.clone(),
                            window,
                            limit,
                            if m.tools { "yes" } else { "no" }.into(),
                            format!("{:.2}", m.pricing.input),
                            format!("{:.2}", m.pricing.output),
                        ]
                    }),
                )
            }
        }
        ModelsCommand::Add {
            id,
            context,
            max_output,
            no_tools,
            images,
            input_price,
            output_price,
            temperature,
            top_p,
            seed,
            constrained,
        } => {
            let form = codewright_host::settings::ModelForm {
                id: id.clone(),
                context_window: context,
                max_output,
                tools: no_tools.then_some(false),
                images: images.then_some(true),
                input_price,
                output_price,
                temperature,
                top_p,
                seed: seed.map(f64::from),
                constrained,
            };
            let saved = host.save_model(&form)?;
            if json {
                to_json(&saved)
            } else if !saved.known {
                format!("Saved model {id} (its context window and answer limit are asked of its server)\n")
            } else {
                format!(
                    "Saved model {id} (context {}, max output {})\n",
                    saved.context_window, saved.max_output
                )
            }
        }
        ModelsCommand::Roles => {
            let mut rows = Vec::new();
            for role in ModelRole::ALL {
                let (model, from) = match host.model_for(role)? {
                    Some((m, r)) if r == role => (m, "set".to_string()),
                    Some((m, r)) => (m, format!("from {}", r.as_str())),
                    None => ("-".into(), "not set".into()),
                };
                rows.push((role, model, from));
            }
            if json {
                to_json(
                    &rows
                        .iter()
                        .map(|(r, m, f)| serde_json::json!({"role": r, "model": m, "source": f}))
                        .collect::<Vec<_>>(),
                )
            } else {
                table(
                    &["ROLE", "MODEL", "SOURCE"],
                    rows.into_iter()
                        .map(|(r, m, f)| vec![r.as_str().into(), m, f]),
                )
            }
        }
        ModelsCommand::Role { role, model } => {
            let role = ModelRole::parse(&role).map_err(|e| bad_input(e.to_string()))?;
            host.set_role(role, model.as_deref())?;
            match model {
                Some(m) => format!("The {} model is now {m}\n", role.as_str()),
                None => format!("Cleared the {} model; it falls back\n", role.as_str()),
            }
        }
    })
}

pub fn auth(host: &Host, command: AuthCommand) -> Result<String> {
    Ok(match command {
        AuthCommand::Set { provider: name } => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| bad_input(format!("cannot read the key from standard input: {e}")))?;
            let key = input.lines().next().unwrap_or("");
            if key.trim().is_empty() {
                return Err(bad_input(format!("no key on standard input; pipe it in, e.g. `codewright-cli auth set {name} < keyfile`")));
            }
            host.set_key(&name, key)?;
            format!("Saved the key for {name} in the system keyring\n")
        }
        AuthCommand::Rm { provider: name } => {
            if host.remove_key(&name)? {
                format!("Removed the key for {name} from the system keyring\n")
            } else {
                format!("The system keyring had no key for {name}\n")
            }
        }
    })
}
