//! The configured servers of a run: connected in parallel at start (each with a timeout), their
//! state (connected with tool count, failed with the error and stderr tail, disabled), their
//! tools as registry tools (`server__tool`, progress reported to the tool panel), kept current on
//! `tools/list_changed`, reconnection on the next use after a crash, and shutdown.

use crate::client::{
    Connection, Endpoint, McpFailure, Notice, OnProgress, ProgressUpdate, PromptInfo, RemoteTool,
};
use crate::names::tool_name;
use async_trait::async_trait;
use codewright_protocol::{Action, DecisionKind, ToolCategory, ToolContent};
use codewright_store::{McpServerRow, McpTransport};
use codewright_tools::{CallContext, Progress, Tool, ToolOutput};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Mutex};

/// How long one tool call may go without progress, unless its server has its own.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// A call's progress reaches the tool panel at most this often.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Where a server stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    Connected {
        server: String,
        version: String,
        tools: usize,
    },
    Failed {
        error: String,
    },
    Disabled,
}

/// Reads secret values (`mcp:<server>:<key>` in the keyring, or the environment).
pub type Secrets<'a> = &'a (dyn Fn(&str, &str) -> Option<String> + Sync);

/// The secret values a server was given (its env variables and headers from the keyring), taken
/// out of whatever it sends back — results, progress, errors, its stderr — before that reaches a
/// model, the store or a window: a server that prints its environment or echoes its token
/// leaks nothing. Values shorter than [`SECRET_MIN`] characters are left (they would match
/// ordinary text).
#[derive(Clone, Debug, Default)]
pub struct Redactor(Arc<Vec<(String, String)>>);

/// The shortest secret value a [`Redactor`] takes out.
pub const SECRET_MIN: usize = 8;

impl Redactor {
    /// Takes out these secrets (name, value): the longest first, so that a secret that holds
    /// another is taken out whole.
    fn new(mut secrets: Vec<(String, String)>) -> Redactor {
        secrets.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
        Redactor(Arc::new(secrets))
    }

    /// `text` with every secret value replaced by `[secret NAME]`.
    pub fn redact(&self, text: &str) -> String {
        self.0
            .iter()
            .filter(|(_, value)| value.len() >= SECRET_MIN && text.contains(value.as_str()))
            .fold(text.to_string(), |text, (name, value)| {
                text.replace(value.as_str(), &format!("[secret {name}]"))
            })
    }
}

/// One configured server of a run: how to reach it, its connection (made again on the next use
/// after a crash), its tools and state.
struct Live {
    name: String,
    /// `None` when the configuration itself failed (a secret missing): never connected.
    endpoint: Option<Endpoint>,
    /// Takes the secrets it was given out of what it sends back.
    redactor: Redactor,
    roots: Vec<PathBuf>,
    connection: Mutex<Option<Arc<Connection>>>,
    tools: StdMutex<Vec<RemoteTool>>,
    /// Its prompts (none when it has none or cannot list them).
    prompts: StdMutex<Vec<PromptInfo>>,
    state: StdMutex<ServerState>,
    /// Receives the names of servers whose tools changed (weak: the registry's tools hold this
    /// `Live`, and must not keep the watcher alive once the servers are gone).
    changed: mpsc::WeakUnboundedSender<String>,
    /// Set by [`McpServers::shutdown`]: no new connections after it.
    closed: AtomicBool,
    /// How long a call may go without an answer or a progress notice.
    call_timeout: Duration,
}

impl Live {
    /// The live connection, connecting (again) when there is none or it closed.
    async fn connection(&self) -> Result<Arc<Connection>, McpFailure> {
        let mut guard = self.connection.lock().await;
        if let Some(c) = guard.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(McpFailure {
                message: "the run that used this server has ended".into(),
                stderr_tail: String::new(),
            });
        }
        let Some(endpoint) = &self.endpoint else {
            return Err(McpFailure {
                message: "the server is not configured correctly".into(),
                stderr_tail: String::new(),
            });
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let c = Arc::new(
            Connection::connect(
                endpoint,
                self.roots.clone(),
                tx,
                crate::client::CONNECT_TIMEOUT,
            )
            .await?,
        );
        let (name, changed) = (self.name.clone(), self.changed.clone());
        // Ends when the connection closes (its notice sender goes) or the servers are gone.
        tokio::spawn(async move {
            while let Some(Notice::ToolsChanged) = rx.recv().await {
                match changed.upgrade() {
                    Some(changed) if changed.send(name.clone()).is_ok() => {}
                    _ => break,
                }
            }
        });
        *guard = Some(c.clone());
        Ok(c)
    }

    /// Lists the server's tools again (connecting if needed) and records its state.
    async fn refresh(&self) -> Result<(), McpFailure> {
        let result = async {
            let c = self.connection().await?;
            let tools = c.tools().await?;
            // A server without prompts may refuse to list them: that is no prompts.
            *self.prompts.lock().expect("prompts lock") = c.prompts().await.unwrap_or_default();
            Ok::<_, McpFailure>((c.server.clone(), tools))
        }
        .await;
        let mut state = self.state.lock().expect("state lock");
        match result {
            Ok(((server, version), tools)) => {
                *state = ServerState::Connected {
                    server,
                    version,
                    tools: tools.len(),
                };
                *self.tools.lock().expect("tools lock") = tools;
                Ok(())
            }
            Err(e) => {
                *state = ServerState::Failed {
                    error: self.redactor.redact(&e.to_string()),
                };
                self.tools.lock().expect("tools lock").clear();
                Err(e)
            }
        }
    }

    /// Forgets a connection that closed, so the next use starts the server again.
    async fn forget_if_closed(&self) {
        let mut guard = self.connection.lock().await;
        if guard.as_ref().is_some_and(|c| c.is_closed()) {
            *guard = None;
        }
    }
}

/// A run's MCP servers.
pub struct McpServers {
    servers: Vec<Arc<Live>>,
    disabled: Vec<String>,
    /// The one strong sender of the servers' change notices: dropped with the servers, which
    /// ends the watcher.
    _changed: mpsc::UnboundedSender<String>,
    changes: StdMutex<Option<mpsc::UnboundedReceiver<String>>>,
}

/// The endpoint of a configured server, with its secrets filled in, and what takes those secrets
/// out of what the server sends back.
pub fn endpoint(
    row: &McpServerRow,
    secrets: Secrets,
    env: &HashMap<String, String>,
    cwd: Option<PathBuf>,
) -> Result<(Endpoint, Redactor), String> {
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for key in &row.secrets {
        let value = secrets(&row.name, key).ok_or_else(|| {
            format!(
                "the secret {key} of MCP server {} is not in the keyring; set it again (or in the environment as {key})",
                row.name
            )
        })?;
        values.insert(key.clone(), value);
    }
    let with_secrets = |mut headers: BTreeMap<String, String>| {
        headers.extend(values.clone());
        headers
    };
    let redactor = Redactor::new(values.clone().into_iter().collect());
    let endpoint = match &row.transport {
        McpTransport::Stdio { command, args } => {
            let mut all = env.clone();
            all.extend(row.env.clone());
            all.extend(
                values
                    .clone()
                    .into_iter()
                    .filter(|(k, _)| !row.headers.contains_key(k)),
            );
            Endpoint::Stdio {
                command: command.clone(),
                args: args.clone(),
                env: all,
                cwd,
            }
        }
        McpTransport::Http { url } => Endpoint::Http {
            url: url.clone(),
            headers: with_secrets(row.headers.clone()),
        },
        McpTransport::Sse { url } => Endpoint::Sse {
            url: url.clone(),
            headers: with_secrets(row.headers.clone()),
        },
    };
    Ok((endpoint, redactor))
}

impl McpServers {
    /// Connects the enabled servers (all at once, each within [`crate::client::CONNECT_TIMEOUT`])
    /// and lists their tools. `root` is the project: stdio servers start there and it is offered
    /// as the root. A server that fails is reported in [`McpServers::states`], not fatal.
    pub async fn start(
        rows: &[McpServerRow],
        secrets: Secrets<'_>,
        env: &HashMap<String, String>,
        root: PathBuf,
    ) -> McpServers {
        let (changed, changes) = mpsc::unbounded_channel();
        let mut disabled = Vec::new();
        let mut servers = Vec::new();
        for row in rows {
            if !row.enabled {
                disabled.push(row.name.clone());
                continue;
            }
            let (endpoint, redactor, state) = match endpoint(row, secrets, env, Some(root.clone()))
            {
                Ok((e, redactor)) => (Some(e), redactor, ServerState::Disabled),
                Err(error) => (None, Redactor::default(), ServerState::Failed { error }),
            };
            servers.push(Arc::new(Live {
                name: row.name.clone(),
                endpoint,
                redactor,
                roots: vec![root.clone()],
                connection: Mutex::new(None),
                tools: StdMutex::new(Vec::new()),
                prompts: StdMutex::new(Vec::new()),
                state: StdMutex::new(state),
                changed: changed.downgrade(),
                closed: AtomicBool::new(false),
                call_timeout: row
                    .call_timeout_secs
                    .map_or(CALL_TIMEOUT, |s| Duration::from_secs(s.into())),
            }));
        }
        futures_util::future::join_all(
            servers
                .iter()
                .filter(|live| live.endpoint.is_some())
                .map(|live| live.refresh()),
        )
        .await;
        McpServers {
            servers,
            disabled,
            _changed: changed,
            changes: StdMutex::new(Some(changes)),
        }
    }

    /// Every server and its state, by name.
    pub fn states(&self) -> Vec<(String, ServerState)> {
        let mut out: Vec<(String, ServerState)> = self
            .servers
            .iter()
            .map(|live| {
                (
                    live.name.clone(),
                    live.state.lock().expect("state lock").clone(),
                )
            })
            .chain(
                self.disabled
                    .iter()
                    .map(|n| (n.clone(), ServerState::Disabled)),
            )
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The connected servers' prompts, with the name of the server of each.
    pub fn prompts(&self) -> Vec<(String, PromptInfo)> {
        self.servers
            .iter()
            .flat_map(|live| {
                let prompts = live.prompts.lock().expect("prompts lock").clone();
                prompts.into_iter().map(|p| {
                    let description = live.redactor.redact(&p.description);
                    (live.name.clone(), PromptInfo { description, ..p })
                })
            })
            .collect()
    }

    /// The connected servers' tools, as registry tools named `server__tool`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut taken = HashSet::new();
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for live in &self.servers {
            for remote in live.tools.lock().expect("tools lock").iter() {
                out.push(Arc::new(McpTool {
                    name: tool_name(&live.name, &remote.name, &mut taken),
                    description: live.redactor.redact(&format!(
                        "[MCP server {}] {}",
                        live.name, remote.description
                    )),
                    live: live.clone(),
                    remote: remote.clone(),
                }));
            }
        }
        out
    }

    /// Keeps the tools current: whenever a server says its tools changed (`tools/list_changed`),
    /// they are listed again and `on_change` gets every server's tools. Runs until the servers
    /// are dropped; only the first call watches.
    pub fn watch(self: &Arc<Self>, on_change: impl Fn(Vec<Arc<dyn Tool>>) + Send + 'static) {
        let Some(mut changes) = self.changes.lock().expect("changes lock").take() else {
            return;
        };
        let servers = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(name) = changes.recv().await {
                let mut names = HashSet::from([name]);
                while let Ok(more) = changes.try_recv() {
                    names.insert(more);
                }
                let Some(servers) = servers.upgrade() else {
                    break;
                };
                for live in servers.servers.iter().filter(|l| names.contains(&l.name)) {
                    let _ = live.refresh().await;
                }
                on_change(servers.tools());
            }
        });
    }

    /// Closes every connection (stdio servers: stdin closed, then SIGTERM, then SIGKILL). Their
    /// tools stay in registries but cannot start a server again.
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.servers.iter().map(|live| async move {
            live.closed.store(true, Ordering::SeqCst);
            if let Some(c) = live.connection.lock().await.take() {
                c.close().await;
            }
        }))
        .await;
    }
}

/// A server's tool in the registry.
struct McpTool {
    name: String,
    description: String,
    live: Arc<Live>,
    remote: RemoteTool,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        self.remote.input_schema.clone()
    }
    fn category(&self) -> ToolCategory {
        if self.remote.read_only {
            ToolCategory::Read
        } else {
            ToolCategory::Execute
        }
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        if let Err(e) = cx
            .authorize_call(
                self.category(),
                Action::Call {
                    input: input.clone(),
                },
                format!("Call {} on MCP server {}", self.remote.name, self.live.name),
                &[
                    DecisionKind::Approve,
                    DecisionKind::ApproveAlways,
                    DecisionKind::Reject,
                ],
            )
            .await
        {
            return e;
        }
        let output = self.call(input, cx).await;
        let redactor = &self.live.redactor;
        ToolOutput {
            content: output
                .content
                .into_iter()
                .map(|c| match c {
                    ToolContent::Text { text } => ToolContent::Text {
                        text: redactor.redact(&text),
                    },
                    other => other,
                })
                .collect(),
            ..output
        }
    }
}

impl McpTool {
    /// Calls the tool on its server (starting the server again if it crashed).
    async fn call(&self, input: Value, cx: &CallContext) -> ToolOutput {
        // A server that crashed is started again here, on the next use.
        let connection = match self.live.connection().await {
            Ok(c) => c,
            Err(e) => {
                return ToolOutput::error(format!(
                    "MCP server {} is not available: {e}",
                    self.live.name
                ))
            }
        };
        let progress = cx
            .progress
            .clone()
            .map(|report| Throttled::new(report, self.live.redactor.clone()));
        let outcome = connection
            .call(
                &self.remote.name,
                input,
                self.live.call_timeout,
                &cx.cancel,
                progress.as_ref().map(Throttled::listener),
            )
            .await;
        if let Some(progress) = progress {
            progress.flush();
        }
        match outcome {
            Ok(outcome) => {
                let content = outcome.content.iter().map(content_of).collect::<Vec<_>>();
                ToolOutput {
                    content: if content.is_empty() {
                        vec![ToolContent::Text {
                            text: "(no content)".into(),
                        }]
                    } else {
                        content
                    },
                    is_error: outcome.is_error,
                    detail: None,
                }
            }
            Err(e) if cx.cancel.is_cancelled() => ToolOutput::error(e.to_string()),
            Err(e) => {
                self.live.forget_if_closed().await;
                let next = if connection.is_closed() {
                    " The server stopped; it will be started again on the next call."
                } else {
                    ""
                };
                ToolOutput::error(format!(
                    "MCP server {} could not run {}: {e}.{next}",
                    self.live.name, self.remote.name
                ))
            }
        }
    }
}

/// Progress for the tool panel, one line per update, at most one every [`PROGRESS_INTERVAL`]: the
/// first at once, then the newest of each interval at its end, and the last one when the call
/// ends (a server may send thousands a second; the panel shows where the call stands).
#[derive(Clone)]
struct Throttled {
    report: Progress,
    redactor: Redactor,
    state: Arc<StdMutex<Throttle>>,
}

#[derive(Default)]
struct Throttle {
    shown: Option<Instant>,
    waiting: Option<String>,
}

impl Throttled {
    fn new(report: Progress, redactor: Redactor) -> Throttled {
        Throttled {
            report,
            redactor,
            state: Arc::default(),
        }
    }

    fn listener(&self) -> OnProgress {
        let this = self.clone();
        Arc::new(move |update: ProgressUpdate| {
            let line = this.redactor.redact(&format!("{update}\n"));
            let mut t = this.state.lock().expect("throttle lock");
            match t.shown.map(|at| at.elapsed()) {
                Some(since) if since < PROGRESS_INTERVAL => {
                    if t.waiting.replace(line).is_none() {
                        let this = this.clone();
                        tokio::spawn(async move {
                            let mut wait = PROGRESS_INTERVAL - since;
                            // Due an interval after the last line shown, whenever that was.
                            loop {
                                tokio::time::sleep(wait).await;
                                let t = this.state.lock().expect("throttle lock");
                                let since = t.shown.map_or(PROGRESS_INTERVAL, |at| at.elapsed());
                                if t.waiting.is_none() || since >= PROGRESS_INTERVAL {
                                    break;
                                }
                                wait = PROGRESS_INTERVAL - since;
                            }
                            this.flush();
                        });
                    }
                }
                _ => {
                    // A line still waiting (its timer is late) is older than this one: dropped,
                    // so lines stay in order and at most one goes out per interval.
                    t.waiting = None;
                    t.shown = Some(Instant::now());
                    drop(t);
                    (this.report)(&line);
                }
            }
        })
    }

    /// Reports the update still waiting, if any.
    fn flush(&self) {
        let mut t = self.state.lock().expect("throttle lock");
        if let Some(line) = t.waiting.take() {
            t.shown = Some(Instant::now());
            drop(t);
            (self.report)(&line);
        }
    }
}

/// MCP content as tool content: text, images, and resources (their text, or what they are).
fn content_of(c: &Value) -> ToolContent {
    match c["type"].as_str() {
        Some("image") => ToolContent::Image {
            mime: c["mimeType"].as_str().unwrap_or("image/png").to_string(),
            data: c["data"].as_str().unwrap_or("").to_string(),
        },
        Some("resource") => {
            let r = &c["resource"];
            let text = r["text"].as_str().map(String::from).unwrap_or_else(|| {
                format!(
                    "[binary resource, {}]",
                    r["mimeType"].as_str().unwrap_or("unknown type")
                )
            });
            ToolContent::Text {
                text: format!("{}\n{text}", r["uri"].as_str().unwrap_or("")),
            }
        }
        Some("resource_link") => ToolContent::Text {
            text: format!(
                "[resource] {} {}",
                c["uri"].as_str().unwrap_or(""),
                c["name"].as_str().unwrap_or("")
            ),
        },
        _ => ToolContent::Text {
            text: c["text"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| c.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::Redactor;

    #[test]
    fn secrets_are_taken_out_and_short_values_left() {
        let redactor = Redactor::new(vec![
            ("TOKEN".into(), "abcdefgh12".into()),
            ("PIN".into(), "1234".into()),
            ("BEARER".into(), "Bearer abcdefgh12".into()),
        ]);
        assert_eq!(
            redactor.redact("t=abcdefgh12 pin=1234 again abcdefgh12; Bearer abcdefgh12"),
            "t=[secret TOKEN] pin=1234 again [secret TOKEN]; [secret BEARER]"
        );
        assert_eq!(Redactor::default().redact("abcdefgh12"), "abcdefgh12");
    }
}
