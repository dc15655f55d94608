//! One connection to an MCP server, through `rmcp` (kept behind this small API so its churn stays
//! here): connect over stdio or streamable HTTP, list tools, call a tool with a timeout and
//! cancellation, report notifications (tools changed, progress, log messages), shut down.
//!
//! Roots and logging are deprecated in the newest protocol revision, but servers in use today
//! (the filesystem server asks for `roots/list`) still rely on them.
#![allow(deprecated)]

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientConfig, ClientRequest,
    ListRootsResult, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
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
/// Bytes of a stdio server's stderr kept for error reports.
const STDERR_TAIL: usize = 4096;

/// Where a connection sends what the server tells it unasked.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// The server's tools changed: list them again.
    ToolsChanged,
    /// Progress of a request (`token` is the one the call was sent with).
    Progress {
        token: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// A log message from the server.
    Log { level: String, text: String },
}

/// How to reach a server.
#[derive(Debug, Clone)]
pub enum Endpoint {
    Stdio {
        command: String,
        args: Vec<String>,
        env: HashMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

#[derive(Clone)]
struct Handler {
    info: ClientConfig,
    roots: Vec<PathBuf>,
    notices: mpsc::UnboundedSender<Notice>,
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
                json!({"uri": format!("file://{}", p.display()),
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
        let token = match &value["progressToken"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = self.notices.send(Notice::Progress {
            token,
            progress: value["progress"].as_f64().unwrap_or(0.0),
            total: value["total"].as_f64(),
            message: value["message"].as_str().map(String::from),
        });
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let value = serde_json::to_value(&params).unwrap_or_default();
        let text = match &value["data"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = self.notices.send(Notice::Log {
            level: value["level"].as_str().unwrap_or("info").to_string(),
            text,
        });
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
    service: RunningService<RoleClient, Handler>,
    /// The server's name and version, as it said.
    pub server: (String, String),
    stderr: Arc<Mutex<VecDeque<u8>>>,
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
        let handler = Handler {
            info,
            roots,
            notices,
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
                let (transport, err) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| McpFailure {
                        message: if e.kind() == std::io::ErrorKind::NotFound {
                            format!("cannot start `{command}`: the command was not found (is it installed and on PATH?)")
                        } else {
                            format!("cannot start `{command}`: {e}")
                        },
                        stderr_tail: String::new(),
                    })?;
                if let Some(mut err) = err {
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
                    });
                }
                tokio::time::timeout(timeout, handler.serve(transport))
                    .await
                    .map_err(|_| fail(format!("the server did not answer initialize within {} s (a server that writes anything but MCP messages to stdout, or waits for input, never does)", timeout.as_secs()), &stderr))?
                    .map_err(|e| fail(format!("the server failed during initialize: {e}"), &stderr))?
            }
            Endpoint::Http { url, headers } => {
                let mut config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str());
                for (k, v) in headers {
                    if k.eq_ignore_ascii_case("authorization") {
                        config = config.auth_header(v.trim_start_matches("Bearer ").to_string());
                        continue;
                    }
                    let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| fail(format!("bad header name {k}: {e}"), &stderr))?;
                    let value = reqwest::header::HeaderValue::from_str(v)
                        .map_err(|e| fail(format!("bad value for header {k}: {e}"), &stderr))?;
                    config.custom_headers.insert(name, value);
                }
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
            service,
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
            .service
            .peer()
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
    pub async fn prompts(&self) -> Result<Vec<String>, McpFailure> {
        let prompts = self
            .service
            .peer()
            .list_all_prompts()
            .await
            .map_err(|e| self.failure(format!("listing prompts failed: {e}")))?;
        Ok(prompts.into_iter().map(|p| p.name.to_string()).collect())
    }

    /// Calls a tool. `progress_token` is what progress notices will carry. A stop sends
    /// `notifications/cancelled`; so does the timeout.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<(String, CallOutcome), McpFailure> {
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
        let peer = self.service.peer().clone();
        let handle = peer
            .send_cancellable_request(request, options)
            .await
            .map_err(|e| self.failure(format!("the call could not be sent: {e}")))?;
        let token = serde_json::to_value(&handle.progress_token)
            .map(|v| match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .unwrap_or_default();
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
        let response = response.map_err(|e| self.failure(format!("the call failed: {e}")))?;
        let value = serde_json::to_value(&response).unwrap_or_default();
        Ok((
            token,
            CallOutcome {
                content: value["content"].as_array().cloned().unwrap_or_default(),
                is_error: value["isError"].as_bool().unwrap_or(false),
            },
        ))
    }

    /// Whether the connection is gone (the server exited or the transport closed).
    pub fn is_closed(&self) -> bool {
        self.service.is_transport_closed()
    }

    /// Closes the connection; a stdio server gets its stdin closed, then SIGTERM, then SIGKILL.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
    }

    fn failure(&self, message: String) -> McpFailure {
        McpFailure {
            message,
            stderr_tail: self.stderr_tail(),
        }
    }
}
