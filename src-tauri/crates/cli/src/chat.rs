//! `chat`: one streamed completion without tools, printed as it arrives and, with `--task`,
//! stored in the task as it streams (see `Host::chat`).

use crate::error::Result;
use codewright_host::chat::Unanswered;
use codewright_host::{Host, HostError};
use codewright_llm::Delta;
use codewright_protocol::{StopReason, TaskId};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;
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

/// Runs `chat`; returns the exit code (0 answered, 130 stopped with Ctrl-C, like `exec`).
pub fn chat(host: Host, args: ChatArgs, json: bool) -> Result<ExitCode> {
    let runtime = crate::runtime(None)?;
    let cancel = CancellationToken::new();
    let result = runtime.block_on(async {
        let on_ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let mut on_delta = |delta: &Delta| match delta {
            Delta::Text(t) => print(&if json {
                format!("{}\n", json!({"type": "text", "text": t}))
            } else {
                t.clone()
            }),
            Delta::Thinking(t) => {
                if json {
                    print(&format!("{}\n", json!({"type": "thinking", "text": t})));
                } else {
                    eprint!("{t}");
                }
            }
            Delta::Usage(u) => {
                if json {
                    print(&format!("{}\n", json!({"type": "usage", "usage": u})));
                }
            }
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
            }
            Delta::ToolCallStarted { .. } | Delta::ToolCallArguments { .. } | Delta::Idle => {}
        };
        host.chat(
            args.model.as_deref(),
            args.task,
            &args.prompt,
            &cancel,
            &mut on_delta,
        )
        .await
    });

    match result {
        Ok(answer) => {
            let message = &answer.message;
            let usage = message.usage.unwrap_or_default();
            let stop = message.stop_reason.unwrap_or(StopReason::EndTurn);
            if json {
                print(&format!(
                    "{}\n",
                    json!({"type": "done", "stopReason": stop, "usage": usage, "cost": answer.cost})
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
                    answer.model,
                    tokens,
                    if answer.priced && message.usage.is_some() {
                        format!(" · ${:.4}", answer.cost)
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
        Err(Unanswered {
            error,
            stopped,
            partial_text,
            asked,
        }) => {
            // Text already printed gets its line ended; nothing else goes to stdout.
            let failed = HostError::new(
                error.kind,
                format!(
                    "{}{}",
                    error.message,
                    crate::exec::hint(&host, error.kind, args.task, args.model.as_deref())
                ),
            );
            if json {
                let event = match (stopped, asked) {
                    (true, _) => json!({"type": "stopped"}),
                    (false, true) => {
                        json!({"type": "error", "kind": error.kind, "message": error.message})
                    }
                    // It never asked (no model, no key): the error is all there is to say.
                    (false, false) => return Err(failed),
                };
                print(&format!("{event}\n"));
                if !stopped {
                    eprintln!("codewright-cli: {}", failed.message.replace('\n', " "));
                    return Ok(ExitCode::FAILURE);
                }
            } else if partial_text {
                print("\n");
            }
            if stopped {
                if !json {
                    eprintln!("[stopped]");
                }
                return Ok(ExitCode::from(130));
            }
            Err(failed)
        }
    }
}
