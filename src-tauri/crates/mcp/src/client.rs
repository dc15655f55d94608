//! One connection to an MCP server, through `rmcp` (kept behind this small API so its churn stays
//! here): connect over stdio, streamable HTTP or legacy SSE ([`crate::sse`]), list tools, call a
//! tool with a timeout, cancellation and progress, report that the server's tools changed, shut
//! down.
//!
//! Roots and logging are deprecated in the newest protocol revision, but servers in use today
//! (the filesystem server asks for `roots/list`) still rely on them.
#![allow(deprecated)]

use crate::stdio::StdioTransport;
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientConfig, ClientRequest,
    ListRootsResult, ProgressNotificationParam,
};
use rmcp::service::{
    ClientInitializeError, NotificationContext, Peer, PeerRequestOptions, RequestContext,
    RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long connecting (start-up + initialize) may take, by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long listing a server's prompts, or getting one, may take.
const PROMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of a stdio server's stderr kept for error reports.
const STDERR_TAIL: usize = 4096;

/// What a server tells a connection unasked.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// The server's tools changed: list them again.
    ToolsChanged,
}

/// One progress notification of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

impl std::fmt::Display for ProgressUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.total {
            Some(total) => write!(f, "progress {} of {}", self.progress, total)?,
            None => write!(f, "progress {}", self.progress)?,
        }
        match &self.message {
            Some(m) => write!(f, ": {m}"),
            None => Ok(()),
        }
    }
}

/// Receives a call's progress notifications.
pub type OnProgress = Arc<dyn Fn(ProgressUpdate) + Send + Sync>;

/// How to reach a server.
#[derive(Debug, Clone)]
pub enum Endpoint {
    Stdio {
        command: String,
        args: Vec<String>,
        env: HashMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport (protocol 2024-11-05).
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// Progress notifications routed to the calls they belong to. One that arrives before its call
/// registered (the server answered faster than the call got its token back) waits in `early`.
#[derive(Default)]
struct ProgressRoutes {
    listeners: HashMap<String, OnProgress>,
    early: VecDeque<(String, ProgressUpdate)>,
}

/// Progress notifications kept for calls that have not registered yet.
const EARLY_PROGRESS: usize = 64;

#[derive(Clone)]
struct Handler {
    info: ClientConfig,
    roots: Vec<PathBuf>,
    notices: mpsc::UnboundedSender<Notice>,
    progress: Arc<Mutex<ProgressRoutes>>,
}

/// A progress token as a map key (servers echo it as a number or a string).
fn token_key(token: &Value) -> String {
    match token {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        let roots: Vec<Value> = self
            .roots
            .iter()
            .map(|p| {
                // Percent-encoded: a folder named "my app" or "项目" is still a valid URI.
                let uri = url::Url::from_file_path(p)
                    .map(String::from)
                    .unwrap_or_else(|()| format!("file://{}", p.display()));
                json!({"uri": uri,
                       "name": p.file_name().map(|n| n.to_string_lossy().into_owned())})
            })
            .collect();
        serde_json::from_value(json!({ "roots": roots }))
            .map_err(|e| McpError::internal_error(e.to_string(), None))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.notices.send(Notice::ToolsChanged);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let value = serde_json::to_value(&params).unwrap_or_default();
        let token = token_key(&value["progressToken"]);
        let update = ProgressUpdate {
            progress: value["progress"].as_f64().unwrap_or(0.0),
            total: value["total"].as_f64(),
            message: value["message"].as_str().map(String::from),
        };
        let listener = {
            let mut routes = self.progress.lock().expect("progress lock");
            let listener = routes.listeners.get(&token).cloned();
            if listener.is_none() {
                if routes.early.len() == EARLY_PROGRESS {
                    routes.early.pop_front();
                }
                routes.early.push_back((token, update.clone()));
            }
            listener
        };
        if let Some(listener) = listener {
            listener(update);
        }
    }
}

/// Unregisters a call's progress listener when the call ends, however it ends.
struct ProgressGuard {
    routes: Arc<Mutex<ProgressRoutes>>,
    token: String,
}

impl ProgressGuard {
    fn register(routes: &Arc<Mutex<ProgressRoutes>>, token: String, listener: OnProgress) -> Self {
        let early: Vec<ProgressUpdate> = {
            let mut r = routes.lock().expect("progress lock");
            r.listeners.insert(token.clone(), listener.clone());
            let (mine, others) = r.early.drain(..).partition(|(t, _)| *t == token);
            r.early = others;
            mine.into_iter()
                .map(|(_, u): (String, ProgressUpdate)| u)
                .collect()
        };
        for update in early {
            listener(update);
        }
        ProgressGuard {
            routes: routes.clone(),
            token,
        }
    }
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        if let Ok(mut r) = self.routes.lock() {
            r.listeners.remove(&self.token);
        }
    }
}

/// A server's tool, as it described it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
}

/// A tool call's outcome, as plain JSON content (`{"type": "text" | "image" | "resource", …}`).
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    pub content: Vec<Value>,
    pub is_error: bool,
}

/// A live connection.
pub struct Connection {
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    progress: Arc<Mutex<ProgressRoutes>>,
    /// The server's name and version, as it said.
    pub server: (String, String),
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

/// A prompt a server offers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptInfo {
    pub name: String,
    pub description: String,
    /// In the order the server lists them: a command's words fill them in that order.
    pub arguments: Vec<PromptArgument>,
}

/// An argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    pub name: String,
    pub required: bool,
}

/// Why a connection or call failed, with the server's last stderr lines when there are any.
#[derive(Debug, Clone, PartialEq)]
pub struct McpFailure {
    pub message: String,
    pub stderr_tail: String,
}

impl std::fmt::Display for McpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.stderr_tail.trim().is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(
                f,
                "{} — the server's last output: {}",
                self.message,
                self.stderr_tail.trim()
            )
        }
    }
}

fn tail_text(buf: &Mutex<VecDeque<u8>>) -> String {
    let buf = buf.lock().expect("stderr lock");
    let (a, b) = buf.as_slices();
    let mut bytes = a.to_vec();
    bytes.extend_from_slice(b);
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Connection {
    /// Connects for a one-off question (its tools, its prompts, one call): no roots offered,
    /// its notices ignored, within [`CONNECT_TIMEOUT`].
    pub async fn once(endpoint: &Endpoint) -> Result<Connection, McpFailure> {
        let (tx, _rx) = mpsc::unbounded_channel();
        Connection::connect(endpoint, vec![], tx, CONNECT_TIMEOUT).await
    }

    /// Connects and initializes. `roots` are offered to servers that ask (`roots/list`).
    pub async fn connect(
        endpoint: &Endpoint,
        roots: Vec<PathBuf>,
        notices: mpsc::UnboundedSender<Notice>,
        timeout: Duration,
    ) -> Result<Connection, McpFailure> {
        let info: ClientConfig = serde_json::from_value(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": true}},
            "clientInfo": {"name": "codewright", "version": env!("CARGO_PKG_VERSION")}
        }))
        .expect("a valid client config");
        let progress = Arc::new(Mutex::new(ProgressRoutes::default()));
        let handler = Handler {
            info,
            roots,
            notices,
            progress: progress.clone(),
        };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let fail = |message: String, stderr: &Arc<Mutex<VecDeque<u8>>>| McpFailure {
            message,
            stderr_tail: tail_text(stderr),
        };
        let service = match endpoint {
            Endpoint::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().envs(env).kill_on_drop(true);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                // The server dies with Codewright, even a `kill -9` of it: the parent-death
                // signal, set on the thread that outlives it (see `codewright_tools::reaper`).
                // What the server starts itself is not covered; a stdio server ends when its
                // stdin closes, which happens then too.
                codewright_tools::reaper::die_with_us(cmd.as_std_mut());
                let runtime = tokio::runtime::Handle::current();
                let (transport, err) = codewright_tools::reaper::spawn(move || {
                    // tokio registers the child and its pipes with the runtime.
                    let _runtime = runtime.enter();
                    let piped = std::process::Stdio::piped;
                    let mut child = cmd.stdin(piped()).stdout(piped()).stderr(piped()).spawn()?;
                    let err = child.stderr.take();
                    Ok((StdioTransport::new(child)?, err))
                })
                .map_err(|e| McpFailure {
                    message: if e.kind() == std::io::ErrorKind::NotFound {
                        format!("cannot start `{command}`: the command was not found (is it installed and on PATH?)")
                    } else {
                        format!("cannot start `{command}`: {e}")
                    },
                    stderr_tail: String::new(),
                })?;
                let reader = err.map(|mut err| {
                    let tail = stderr.clone();
                    tokio::spawn(async move {
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = err.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            let mut t = tail.lock().expect("stderr lock");
                            t.extend(&buf[..n]);
                            let excess = t.len().saturating_sub(STDERR_TAIL);
                            t.drain(..excess);
                        }
                    })
                });
                let served = match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => Ok(service),
                    Err(_) => Err(format!("the server did not answer initialize within {} s (a server that writes anything but MCP messages to stdout, or waits for input, never does)", timeout.as_secs())),
                    Ok(Err(
                        ClientInitializeError::ConnectionClosed(_)
                        | ClientInitializeError::TransportError { .. },
                    )) => Err("the server exited before it answered initialize".to_string()),
                    Ok(Err(e)) => Err(format!("the server failed during initialize: {e}")),
                };
                match served {
                    Ok(service) => service,
                    Err(message) => {
                        // The server is gone (or killed with its transport); what it wrote to
                        // stderr may still be in the pipe. Read it to the end before reporting,
                        // bounded in case a child of the server keeps the pipe open.
                        if let Some(reader) = reader {
                            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
                        }
                        return Err(fail(message, &stderr));
                    }
                }
            }
            Endpoint::Http { url, headers } => {
                let mut config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str());
                let mut others = headers.clone();
                let auth = others
                    .keys()
                    .find(|k| k.eq_ignore_ascii_case("authorization"))
                    .cloned();
                if let Some(auth) = auth.and_then(|k| others.remove(&k)) {
                    config = config.auth_header(auth.trim_start_matches("Bearer ").to_string());
                }
                config.custom_headers = crate::sse::header_map(&others)
                    .map_err(|e| fail(e, &stderr))?
                    .into_iter()
                    .filter_map(|(k, v)| Some((k?, v)))
                    .collect();
                let transport =
                    StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
                tokio::time::timeout(timeout, handler.serve(transport))
                    .await
                    .map_err(|_| {
                        fail(
                            format!(
                                "{url} did not answer initialize within {} s",
                                timeout.as_secs()
                            ),
                            &stderr,
                        )
                    })?
                    .map_err(|e| fail(format!("{url} failed during initialize: {e}"), &stderr))?
            }
            Endpoint::Sse { url, headers } => {
                let started = tokio::time::Instant::now();
                let late = || {
                    fail(
                        format!(
                            "{url} did not answer initialize within {} s",
                            timeout.as_secs()
                        ),
                        &stderr,
                    )
                };
                let transport =
                    tokio::time::timeout(timeout, crate::sse::LegacySse::connect(url, headers))
                        .await
                        .map_err(|_| late())?
                        .map_err(|e| fail(e, &stderr))?;
                tokio::time::timeout(
                    timeout.saturating_sub(started.elapsed()),
                    handler.serve(transport),
                )
                .await
                .map_err(|_| late())?
                .map_err(|e| fail(format!("{url} failed during initialize: {e}"), &stderr))?
            }
        };
        let peer_info = service.peer_info();
        let server = peer_info
            .and_then(|i| serde_json::to_value(&*i).ok())
            .map(|v| {
                (
                    v["serverInfo"]["name"].as_str().unwrap_or("").to_string(),
                    v["serverInfo"]["version"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .unwrap_or_default();
        Ok(Connection {
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            progress,
            server,
            stderr,
        })
    }

    /// The server's last stderr output (stdio servers).
    pub fn stderr_tail(&self) -> String {
        tail_text(&self.stderr)
    }

    /// Every tool the server offers (all pages).
    pub async fn tools(&self) -> Result<Vec<RemoteTool>, McpFailure> {
        let tools = self
            .peer
            .list_all_tools()
            .await
            .map_err(|e| self.failure(format!("listing tools failed: {e}")))?;
        Ok(tools
            .into_iter()
            .map(|t| {
                let v = serde_json::to_value(&t).unwrap_or_default();
                RemoteTool {
                    name: v["name"].as_str().unwrap_or("").to_string(),
                    description: v["description"].as_str().unwrap_or("").to_string(),
                    input_schema: match &v["inputSchema"] {
                        Value::Object(_) => v["inputSchema"].clone(),
                        _ => json!({"type": "object"}),
                    },
                    read_only: v["annotations"]["readOnlyHint"].as_bool().unwrap_or(false),
                }
            })
            .collect())
    }

    /// The server's prompt names (they become slash commands later).
    pub async fn prompts(&self) -> Result<Vec<PromptInfo>, McpFailure> {
        // Asked only of a server that says it has prompts, and not for long: a run's start
        // waits for it.
        let offered = self
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        if !offered {
            return Ok(Vec::new());
        }
        let prompts = tokio::time::timeout(PROMPT_TIMEOUT, self.peer.list_all_prompts())
            .await
            .map_err(|_| {
                self.failure(format!(
                    "the server did not list its prompts within {} s",
                    PROMPT_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| self.failure(format!("listing prompts failed: {e}")))?;
        Ok(prompts
            .into_iter()
            .map(|p| PromptInfo {
                description: p.description.clone().unwrap_or_default(),
                arguments: p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| PromptArgument {
                        required: a.required.unwrap_or(false),
                        name: a.name,
                    })
                    .collect(),
                name: p.name,
            })
            .collect())
    }

    /// The messages of the prompt `name` filled in with `arguments`, as one text (each message's
    /// text, and the text of resources it embeds, in order).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<String, McpFailure> {
        let params = serde_json::from_value(json!({"name": name, "arguments": arguments}))
            .map_err(|e| self.failure(e.to_string()))?;
        let result = tokio::time::timeout(PROMPT_TIMEOUT, self.peer.get_prompt(params))
            .await
            .map_err(|_| {
                self.failure(format!(
                    "the server did not give the prompt {name} within {} s",
                    PROMPT_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| {
                self.failure(format!("the server could not give the prompt {name}: {e}"))
            })?;
        let value = serde_json::to_value(&result).unwrap_or_default();
        let texts: Vec<&str> = value["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| {
                m["content"]["text"]
                    .as_str()
                    .or_else(|| m["content"]["resource"]["text"].as_str())
            })
            .collect();
        Ok(texts.join("\n\n"))
    }

    /// Calls a tool; `on_progress` receives the server's progress notifications for it, and
    /// `timeout` restarts with each. A stop (`cancel`) sends `notifications/cancelled`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
        cancel: &CancellationToken,
        on_progress: Option<OnProgress>,
    ) -> Result<CallOutcome, McpFailure> {
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(
                    self.failure(format!("tool arguments must be a JSON object, not {other}"))
                )
            }
        };
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": tool,
            "arguments": arguments,
        }))
        .map_err(|e| self.failure(e.to_string()))?;
        let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(params));
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        options.reset_timeout_on_progress = true;
        let peer = self.peer.clone();
        let handle = peer
            .send_cancellable_request(request, options)
            .await
            .map_err(|e| self.failure(format!("the call could not be sent: {e}")))?;
        let _progress = on_progress.map(|listener| {
            let token =
                token_key(&serde_json::to_value(&handle.progress_token).unwrap_or_default());
            ProgressGuard::register(&self.progress, token, listener)
        });
        let id = handle.id.clone();
        let response = tokio::select! {
            r = handle.await_response() => r,
            _ = cancel.cancelled() => {
                let param: CancelledNotificationParam = serde_json::from_value(json!({
                    "requestId": id,
                    "reason": "the user stopped the task",
                }))
                .expect("a valid cancel notification");
                let _ = peer.notify_cancelled(param).await;
                return Err(self.failure("stopped by the user; the server was told to cancel the call".into()));
            }
        };
        let response = response.map_err(|e| {
            self.failure(match e {
                // The server's own words (or ours, for an answer too large to take).
                rmcp::ServiceError::McpError(e) => format!("the server answered: {}", e.message),
                rmcp::ServiceError::Timeout { timeout } => format!(
                    "the server did not answer within {} s (the call timeout set for this server, counted again from each progress notice it sends); the call was cancelled",
                    timeout.as_secs()
                ),
                // The request was dropped but the connection lives on: over HTTP, rmcp drops
                // an event larger than it takes (as large as a message over stdio may be).
                rmcp::ServiceError::TransportClosed if !self.peer.is_transport_closed() => format!(
                    "the server's answer broke off before it was complete; an answer larger than the {} MB accepted in one message does that, so ask for less",
                    crate::stdio::MAX_MESSAGE / (1024 * 1024)
                ),
                e => format!("the call failed: {e}"),
            })
        })?;
        let value = serde_json::to_value(&response).unwrap_or_default();
        Ok(CallOutcome {
            content: value["content"].as_array().cloned().unwrap_or_default(),
            is_error: value["isError"].as_bool().unwrap_or(false),
        })
    }

    /// Whether the connection is gone (the server exited or the transport closed).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Closes the connection; a stdio server gets its stdin closed, then SIGTERM, then SIGKILL
    /// (and is killed at once if that takes more than 5 s). Calls still running fail.
    pub async fn close(&self) {
        if let Some(service) = self.service.lock().await.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
        }
    }

    fn failure(&self, message: String) -> McpFailure {
        McpFailure {
            message,
            stderr_tail: self.stderr_tail(),
        }
    }
}
