//! `chat`: one streamed completion without tools, printed as it arrives and, with `--task`,
//! stored in the task as it streams (a crash loses at most one write interval).

use codewright_host::models::{custom_models, provider};
use codewright_llm::catalog::{parse_model_id, resolve_model};
use codewright_llm::credentials::{find_key, OsKeyring};
use codewright_llm::request::build_body;
use codewright_llm::{ChatRequest, Client, Delta, ErrorKind, ModelRole, RetryPolicy};
use codewright_protocol::{Message, Part, Role, StopReason, TaskId};
use codewright_store::{Store, UsageEvent};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

#[derive(clap::Args)]
pub struct ChatArgs {
    /// The model, as MODEL@PROVIDER (see `models list`); default: the main model
    /// (`models role main MODEL@PROVIDER`).
    #[arg(long, value_name = "MODEL@PROVIDER")]
    model: Option<String>,
    /// Continue this task: its messages are sent first, and the exchange is stored in it.
    #[arg(long, value_name = "ID")]
    task: Option<TaskId>,
    /// What to ask.
    prompt: String,
}

fn print(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
}

/// The task's whole history, oldest first.
fn history(store: &Store, task: TaskId) -> Result<Vec<Message>, String> {
    let mut all = Vec::new();
    let mut before = None;
    loop {
        let page = store
            .messages(task, before, 500)
            .map_err(|e| e.to_string())?;
        let Some(last) = page.last() else { break };
        before = Some(last.seq);
        all.extend(page.into_iter().map(|r| r.message));
    }
    all.reverse();
    Ok(all)
}

/// Runs `chat`; returns the exit code (0 answered, 130 stopped with Ctrl-C, like `exec`).
pub fn chat(store: Store, args: ChatArgs, json: bool) -> Result<ExitCode, String> {
    if args.prompt.trim().is_empty() {
        return Err("the prompt is empty; say what you want to ask".into());
    }
    let model_id = match args.model.clone() {
        Some(id) => id,
        None => codewright_host::models::model_for(&store, ModelRole::Main)?.map(|(m, _)| m).ok_or(
            "no model given and no main model set: pass --model MODEL@PROVIDER, or set one with \
             `codewright-cli models role main MODEL@PROVIDER`",
        )?,
    };
    let (model_name, provider_name) = parse_model_id(&model_id)?;
    let provider = provider(&store, provider_name)?;
    let info = resolve_model(&model_id, &custom_models(&store)?);
    let (key, _) = find_key(&OsKeyring, &provider, codewright_tools::env_var).map_err(|e| {
        format!(
            "{e} (keep one with `codewright-cli auth set {}`)",
            provider.name
        )
    })?;

    let mut messages = match args.task {
        Some(task) => history(&store, task)?,
        None => Vec::new(),
    };
    let prompt = Message::user(args.prompt.clone());
    if let Some(task) = args.task {
        store
            .append_message(task, &prompt)
            .map_err(|e| e.to_string())?;
    }
    messages.push(prompt);
    let request = ChatRequest {
        model: model_name.to_string(),
        system: None,
        messages,
        tools: Vec::new(),
        max_output_tokens: info.max_output.min(32_000) as u32,
        thinking_budget: None,
        sampling: info.sampling,
    };
    let body = build_body(&provider, &request);
    let mut streaming = match args.task {
        Some(task) => Some(
            store
                .start_streaming(task, &model_id)
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let store = Mutex::new(store);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let cancel = CancellationToken::new();
    let result = runtime.block_on(async {
        let on_ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let mut on_delta = |delta: &Delta, parts: &[Part]| {
            let size = match delta {
                Delta::Text(t) => {
                    print(&if json {
                        format!("{}\n", json!({"type": "text", "text": t}))
                    } else {
                        t.clone()
                    });
                    t.len()
                }
                Delta::Thinking(t) => {
                    if json {
                        print(&format!("{}\n", json!({"type": "thinking", "text": t})));
                    } else {
                        eprint!("{t}");
                    }
                    t.len()
                }
                Delta::Usage(u) => {
                    if json {
                        print(&format!("{}\n", json!({"type": "usage", "usage": u})));
                    }
                    0
                }
                Delta::ToolCallStarted { name, .. } => name.len().max(1),
                Delta::ToolCallArguments { arguments, .. } => arguments.len(),
                // A silent stream: whatever is unwritten gets written once it is due.
                Delta::Idle => 0,
                Delta::Retry {
                    attempt,
                    max_retries,
                    wait,
                    error,
                } => {
                    if json {
                        print(&format!(
                            "{}\n",
                            json!({"type": "retry", "attempt": attempt, "maxRetries": max_retries,
                                "waitMs": wait.as_millis() as u64, "message": error.message})
                        ));
                    } else {
                        eprintln!(
                            "codewright-cli: {} Trying again in {:.1} s (retry {attempt} of at most {max_retries}).",
                            error.message,
                            wait.as_secs_f64()
                        );
                    }
                    0
                }
            };
            if let Some(stream) = streaming.as_mut() {
                let store = store.lock().unwrap_or_else(|p| p.into_inner());
                if let Err(e) = stream.update(&store, parts, size) {
                    eprintln!("codewright-cli: could not save the answer so far: {e}");
                }
            }
        };
        Client::new(RetryPolicy::default())
            .stream(
                &provider,
                key.as_deref(),
                model_name,
                &body,
                &cancel,
                &mut on_delta,
            )
            .await
    });
    let store = store.into_inner().unwrap_or_else(|p| p.into_inner());

    match result {
        Ok(mut message) => {
            // Stored under the id it was asked for, not the server's echo of a bare name.
            message.model = Some(model_id.clone());
            let usage = message.usage.unwrap_or_default();
            let cost = info.pricing.cost(&usage);
            if let Some(stream) = streaming {
                let event = UsageEvent {
                    model: model_id.clone(),
                    provider: provider.name.clone(),
                    usage,
                    cost,
                };
                stream
                    .finish(&store, &message, Some(&event))
                    .map_err(|e| e.to_string())?;
            }
            let stop = message.stop_reason.unwrap_or(StopReason::EndTurn);
            if json {
                print(&format!(
                    "{}\n",
                    json!({"type": "done", "stopReason": stop, "usage": usage, "cost": cost})
                ));
            } else {
                print("\n");
                // Zeros would be a lie: some local servers never report usage.
                let tokens = if message.usage.is_some() {
                    format!(
                        "{} in / {} out tokens",
                        usage.input + usage.cache_read + usage.cache_write,
                        usage.output
                    )
                } else {
                    "usage not reported by the server".to_string()
                };
                eprintln!(
                    "[{} · {}{}{}]",
                    model_id,
                    tokens,
                    if info.known && message.usage.is_some() {
                        format!(" · ${cost:.4}")
                    } else {
                        String::new()
                    },
                    if stop == StopReason::MaxTokens {
                        " · stopped at the output limit"
                    } else {
                        ""
                    },
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            let stopped = failure.error.kind == ErrorKind::Cancelled;
            // Text already printed gets its line ended; nothing else goes to stdout.
            let printed = failure
                .partial
                .as_ref()
                .is_some_and(|m| !m.text().is_empty());
            if let Some(stream) = streaming {
                // Keep whatever arrived, marked with why it stopped (and the error, to read later).
                let mut partial = failure
                    .partial
                    .unwrap_or_else(|| Message::new(Role::Assistant, Vec::new()));
                partial.model = Some(model_id.clone());
                if stopped {
                    partial.stop_reason = Some(StopReason::Aborted);
                } else {
                    partial.stop_reason = Some(StopReason::Error);
                    partial.error = Some(failure.error.message.clone());
                }
                stream
                    .finish(&store, &partial, None)
                    .map_err(|e| e.to_string())?;
            }
            if json {
                let event = if stopped {
                    json!({"type": "stopped"})
                } else {
                    json!({"type": "error", "kind": format!("{:?}", failure.error.kind), "message": failure.error.message})
                };
                print(&format!("{event}\n"));
            } else if printed {
                print("\n");
            }
            if stopped {
                if !json {
                    eprintln!("[stopped]");
                }
                return Ok(ExitCode::from(130));
            }
            Err(failure.error.message)
        }
    }
}
