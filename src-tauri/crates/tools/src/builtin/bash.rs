//! `bash`: run a command in the project, in the user's login-shell environment (without secrets:
//! [`crate::EnvFilter`]), optionally under the Landlock sandbox; and the
//! background-process tools (`process_list`, `process_output`, `process_kill`).

use super::output::{CommandOutput, PROGRESS_INTERVAL};
use super::process::{group_alive, spawn_shell, terminate_group, Started};
use crate::sandbox::{ruleset, sandbox_support, writable_paths, SandboxSupport};
use crate::session::Ask;
use crate::{parse_input, schema_of, CallContext, EnvFilter, Subject, Tool, ToolOutput};
use async_trait::async_trait;
use codewright_protocol::{Action, DecisionKind, ToolCategory, ToolDetail};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::time::{Duration, Instant};

pub struct Bash;

const DEFAULT_TIMEOUT_SECS: u64 = 300;
const MAX_TIMEOUT_SECS: u64 = 3600;
const DEFAULT_IDLE_SECS: u64 = 120;
/// After the shell exits, how long to wait for the rest of its output.
const DRAIN: Duration = Duration::from_millis(500);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The command line, run by bash in the project folder.
    command: String,
    /// Folder to run in, relative to the project root (default: the root).
    cwd: Option<String>,
    /// Kill the command after this many seconds (default 300).
    #[schemars(range(min = 1, max = 3600))]
    timeout: Option<u64>,
    /// Kill the command when it prints nothing for this many seconds (default 120).
    #[schemars(range(min = 1, max = 3600))]
    idle_timeout: Option<u64>,
    /// Start it in the background (servers, watchers) and return at once; read its output with
    /// process_output, stop it with process_kill.
    #[serde(default)]
    background: bool,
}

#[async_trait]
impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }
    fn description(&self) -> &str {
        "Run a shell command in the project folder (bash, the user's login environment, no terminal input). Returns the output (stdout and stderr together; the middle is cut when long) and the exit code. Long-running servers or watchers: background: true, then process_output / process_kill. Do not use it to read, search or edit files — the dedicated tools are faster and reviewable."
    }
    fn input_schema(&self) -> Value {
        schema_of::<Input>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Execute
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: Input = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let session = &cx.session;
        let cwd = match input.cwd.as_deref() {
            None => session.root.clone(),
            Some(dir) => match crate::paths::resolve(&session.root, dir) {
                Ok(p) if p.inside && p.real.is_dir() => p.real,
                Ok(p) if !p.inside => {
                    return ToolOutput::error(format!(
                        "cwd {} is outside the project; commands run inside it (use cd in the command if you must)",
                        p.display
                    ))
                }
                Ok(p) => return ToolOutput::error(format!("cwd {} is not a folder", p.display)),
                Err(e) => return ToolOutput::error(e),
            },
        };
        // The sandbox: prepared now, applied in the child.
        let (sandbox, force_ask) = if session.sandbox {
            match sandbox_support() {
                SandboxSupport::Full | SandboxSupport::Partial => {
                    match ruleset(&writable_paths(&session.root)) {
                        Ok(r) => (Some(r), None),
                        Err(e) => (None, Some(format!("the sandbox could not be set up ({e}), so the command would run unconfined"))),
                    }
                }
                SandboxSupport::Unavailable(why) => (
                    None,
                    Some(format!(
                        "the sandbox is unavailable ({why}), so the command would run unconfined"
                    )),
                ),
            }
        } else {
            (None, None)
        };
        let sandboxed = sandbox.is_some();
        let summary = format!(
            "Run{} `{}`{}",
            if input.background {
                " in the background"
            } else {
                ""
            },
            first_line(&input.command),
            if sandboxed { " (sandboxed)" } else { "" }
        );
        if let Err(e) = cx
            .authorize(Ask {
                category: ToolCategory::Execute,
                subject: Subject::Command(&input.command),
                action: Action::Command {
                    command: input.command.clone(),
                    // The whole path: the user sees exactly where it runs.
                    cwd: cwd.display().to_string(),
                    sandboxed,
                    background: input.background,
                },
                summary,
                decisions: &[
                    DecisionKind::Approve,
                    DecisionKind::ApproveAlways,
                    DecisionKind::Reject,
                ],
                force_ask,
            })
            .await
        {
            return e;
        }
        // Snapshot first, so what the command changes or deletes can be undone.
        let snapshot = if input.background {
            None
        } else {
            let (checkpoints, root) = (session.clone(), session.root.clone());
            match super::blocking(move || checkpoints.checkpoints.scan_tree(&root)).await {
                Ok(result) => Some(result),
                Err(e) => return e,
            }
        };
        let filter = EnvFilter::read(
            &session.store.lock().expect("store lock"),
            Some(session.project),
        );
        // The first call runs the login shell (up to 5 s): not on the runtime's threads.
        let env = match super::blocking(move || filter.environment()).await {
            Ok(env) => env,
            Err(e) => return e,
        };
        let started = match spawn_shell(&input.command, &cwd, &env, sandbox) {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(e),
        };
        if input.background {
            let id = session.processes.adopt(&input.command, started);
            return ToolOutput::text(format!(
                "Started background process {id}. Read its output with process_output (id {id}); stop it with process_kill."
            ))
            .with_detail(ToolDetail::Processes {
                processes: session.processes.list().into_iter().filter(|p| p.id == id).collect(),
            });
        }
        let timeout = Duration::from_secs(
            input
                .timeout
                .unwrap_or(DEFAULT_TIMEOUT_SECS)
                .min(MAX_TIMEOUT_SECS),
        );
        let idle = Duration::from_secs(
            input
                .idle_timeout
                .unwrap_or(DEFAULT_IDLE_SECS)
                .min(MAX_TIMEOUT_SECS),
        );
        let mut output =
            run_foreground(cx, &input.command, started, timeout, idle, sandboxed).await;
        let note = match snapshot {
            Some(Ok(tree)) => {
                let (s, turn) = (session.clone(), session.turn());
                let recorded = super::blocking(move || {
                    s.checkpoints
                        .record_tree_changes(s.task, turn, &s.root, &tree)
                })
                .await;
                match recorded {
                    Ok(Ok(_)) => None,
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(e) => Some(e.text_content()),
                }
            }
            Some(Err(why)) => Some(why.to_string()),
            None => None,
        };
        if let Some(why) = note {
            output.content.push(codewright_protocol::ToolContent::Text {
                text: format!(
                    "(Changes this command made to files cannot be undone from Codewright: {why}.)"
                ),
            });
        }
        output
    }
}

fn first_line(command: &str) -> String {
    let line = command.lines().next().unwrap_or("");
    let mut shown: String = line.chars().take(120).collect();
    if shown.len() < command.len() {
        shown.push('…');
    }
    shown
}

/// Waits for a foreground command, reporting its output as it arrives (at most every
/// [`PROGRESS_INTERVAL`], each report bounded), and builds the result from its bounded output.
async fn run_foreground(
    cx: &CallContext,
    command: &str,
    started: Started,
    timeout: Duration,
    idle: Duration,
    sandboxed: bool,
) -> ToolOutput {
    let begun = Instant::now();
    let Started {
        pid,
        output,
        output_ended: mut ended,
        exit: mut exit_rx,
    } = started;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut progress = tokio::time::interval(PROGRESS_INTERVAL);
    progress.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut exit: Option<Option<i32>> = None;
    let mut output_done = false;
    let mut stopped: Option<String> = None;
    let mut drain_until: Option<tokio::time::Instant> = None;
    while !(output_done && exit.is_some()) {
        let quiet_until = tokio::time::Instant::from_std(output.last_output()) + idle;
        tokio::select! {
            _ = &mut ended, if !output_done => output_done = true,
            _ = progress.tick() => report(cx, &output),
            code = &mut exit_rx, if exit.is_none() => {
                exit = Some(code.unwrap_or(None));
                // What the command left running in its group (`cmd &`) must not outlive it.
                if group_alive(pid) {
                    terminate_group(pid).await;
                }
                drain_until = Some(tokio::time::Instant::now() + DRAIN);
            }
            _ = tokio::time::sleep_until(drain_until.unwrap_or(deadline)), if drain_until.is_some() => {
                // A process that left the group still holds the output open: stop waiting.
                break;
            }
            _ = tokio::time::sleep_until(deadline), if exit.is_none() => {
                stopped = Some(format!("timed out after {} s", timeout.as_secs()));
                break;
            }
            _ = tokio::time::sleep_until(quiet_until), if exit.is_none() => {
                // Output may have arrived since `quiet_until` was computed.
                if output.last_output().elapsed() >= idle {
                    stopped = Some(format!("printed nothing for {} s (idle timeout)", idle.as_secs()));
                    break;
                }
            }
            _ = cx.cancel.cancelled(), if exit.is_none() => {
                stopped = Some("stopped by the user".into());
                break;
            }
        }
    }
    if stopped.is_some() {
        terminate_group(pid).await;
        if exit.is_none() {
            exit = tokio::time::timeout(Duration::from_secs(2), exit_rx)
                .await
                .ok()
                .and_then(Result::ok);
        }
        if !output_done {
            let _ = tokio::time::timeout(DRAIN, &mut ended).await;
        }
    }
    report(cx, &output);
    let all = output.all();
    let shown = all.text();
    let code = exit.flatten();
    let mut text = if shown.trim().is_empty() {
        "(no output)".to_string()
    } else {
        shown.clone()
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    match (&stopped, code) {
        (Some(why), _) => text.push_str(&format!(
            "[the command was killed: it {why}; its whole process group was stopped]"
        )),
        (None, Some(code)) => text.push_str(&format!("[exit code {code}]")),
        (None, None) => text.push_str("[the command was killed by a signal]"),
    }
    let is_error = stopped.is_some() || code != Some(0);
    let detail = ToolDetail::Command {
        command: command.to_string(),
        exit_code: code,
        output: shown,
        omitted_bytes: all.left_out(),
        timed_out: stopped.is_some(),
        sandboxed,
        duration_ms: begun.elapsed().as_millis() as u64,
    };
    ToolOutput {
        is_error,
        ..ToolOutput::text(text).with_detail(detail)
    }
}

/// Sends the output that arrived since the last report, if any (bounded).
fn report(cx: &CallContext, output: &CommandOutput) {
    let fresh = output.take_unread();
    if !fresh.is_empty() {
        cx.report(&fresh.latest());
    }
}

pub struct ProcessList;
pub struct ProcessOutput;
pub struct ProcessKill;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoInput {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProcessId {
    /// The id bash gave when it started the background process.
    id: u32,
}

fn unknown(id: u32) -> ToolOutput {
    ToolOutput::error(format!(
        "there is no background process {id} in this task; process_list shows them"
    ))
}

#[async_trait]
impl Tool for ProcessList {
    fn name(&self) -> &str {
        "process_list"
    }
    fn description(&self) -> &str {
        "List the background processes started with bash (background: true) in this task, running or finished."
    }
    fn input_schema(&self) -> Value {
        schema_of::<NoInput>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }
    async fn run(&self, _input: Value, cx: &CallContext) -> ToolOutput {
        let processes = cx.session.processes.list();
        let text = if processes.is_empty() {
            "no background processes".to_string()
        } else {
            processes
                .iter()
                .map(|p| match (p.running, p.exit_code) {
                    (true, _) => format!("{}  running  {}", p.id, p.command),
                    (false, Some(c)) => format!("{}  exited {c}  {}", p.id, p.command),
                    (false, None) => format!("{}  killed  {}", p.id, p.command),
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        ToolOutput::text(text).with_detail(ToolDetail::Processes { processes })
    }
}

#[async_trait]
impl Tool for ProcessOutput {
    fn name(&self) -> &str {
        "process_output"
    }
    fn description(&self) -> &str {
        "Read what a background process printed since the last time you read it, and whether it is still running."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ProcessId>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }
    fn concurrent(&self) -> bool {
        false
    }
    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: ProcessId = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let Some((output, info)) = cx.session.processes.read(input.id) else {
            return unknown(input.id);
        };
        let mut text = if output.is_empty() {
            "(no new output)\n".to_string()
        } else {
            output
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&match (info.running, info.exit_code) {
            (true, _) => format!("[process {} is running]", info.id),
            (false, Some(c)) => format!("[process {} exited with code {c}]", info.id),
            (false, None) => format!("[process {} was killed]", info.id),
        });
        ToolOutput::text(text).with_detail(ToolDetail::Processes {
            processes: vec![info],
        })
    }
}

#[async_trait]
impl Tool for ProcessKill {
    fn name(&self) -> &str {
        "process_kill"
    }
    fn description(&self) -> &str {
        "Stop a background process started with bash (and everything it started)."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ProcessId>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Execute
    }
    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: ProcessId = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        match cx.session.processes.kill(input.id).await {
            Some(info) => ToolOutput::text(format!("Stopped background process {}.", info.id))
                .with_detail(ToolDetail::Processes {
                    processes: vec![info],
                }),
            None => unknown(input.id),
        }
    }
}
