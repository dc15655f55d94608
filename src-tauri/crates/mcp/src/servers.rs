//! The configured servers of a run: connected in parallel at start (each with a timeout), their
//! state (connected with tool count, failed with the error and stderr tail, disabled), their
//! tools as registry tools (`server__tool`), reconnection on the next use after a crash, and
//! shutdown.

use crate::client::{Connection, Endpoint, McpFailure, Notice, RemoteTool};
use crate::names::tool_name;
use async_trait::async_trait;
use codewright_protocol::{Action, DecisionKind, ToolCategory, ToolContent};
use codewright_store::{McpServerRow, McpTransport};
use codewright_tools::{CallContext, Tool, ToolOutput};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Mutex};

/// How long one tool call may go without progress.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

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
pub type Secrets<'a> = &'a dyn Fn(&str, &str) -> Option<String>;

struct Live {
    name: String,
    endpoint: Endpoint,
    roots: Vec<PathBuf>,
    connection: Mutex<Option<Connection>>,
    notices: mpsc::UnboundedSender<Notice>,
}

impl Live {
    async fn connect(&self) -> Result<(), McpFailure> {
        let c = Connection::connect(
            &self.endpoint,
            self.roots.clone(),
            self.notices.clone(),
            crate::client::CONNECT_TIMEOUT,
        )
        .await?;
        *self.connection.lock().await = Some(c);
        Ok(())
    }
}

/// A run's MCP servers.
pub struct McpServers {
    servers: Vec<(Arc<Live>, ServerState, Vec<RemoteTool>)>,
    disabled: Vec<String>,
}

/// The endpoint of a configured server, with its secrets filled in.
pub fn endpoint(
    row: &McpServerRow,
    secrets: Secrets,
    env: &HashMap<String, String>,
    cwd: Option<PathBuf>,
) -> Result<Endpoint, String> {
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for key in &row.secrets {
        let value = secrets(&row.name, key).ok_or_else(|| {
            format!(
                "the secret {key} of MCP server {} is not in the keyring; set it again with `codewright-cli mcp add` (or in the environment as {key})",
                row.name
            )
        })?;
        values.insert(key.clone(), value);
    }
    Ok(match &row.transport {
        McpTransport::Stdio { command, args } => {
            let mut all = env.clone();
            all.extend(row.env.clone());
            all.extend(
                values
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
        McpTransport::Http { url } | McpTransport::Sse { url } => {
            let mut headers = row.headers.clone();
            headers.extend(values);
            Endpoint::Http {
                url: url.clone(),
                headers,
            }
        }
    })
}

impl McpServers {
    /// Connects the enabled servers (all at once). `root` is the project: stdio servers start
    /// there and it is offered as the root.
    pub async fn start(
        rows: &[McpServerRow],
        secrets: Secrets<'_>,
        env: &HashMap<String, String>,
        root: PathBuf,
        notices: mpsc::UnboundedSender<Notice>,
    ) -> McpServers {
        let mut disabled = Vec::new();
        let mut lives = Vec::new();
        let mut failed = Vec::new();
        for row in rows {
            if !row.enabled {
                disabled.push(row.name.clone());
                continue;
            }
            if matches!(row.transport, McpTransport::Sse { .. }) {
                failed.push((row.name.clone(), "the legacy HTTP+SSE transport is not supported yet; use the server's streamable HTTP endpoint".to_string()));
                continue;
            }
            match endpoint(row, secrets, env, Some(root.clone())) {
                Ok(endpoint) => lives.push(Arc::new(Live {
                    name: row.name.clone(),
                    endpoint,
                    roots: vec![root.clone()],
                    connection: Mutex::new(None),
                    notices: notices.clone(),
                })),
                Err(e) => failed.push((row.name.clone(), e)),
            }
        }
        let results = futures_util::future::join_all(lives.iter().map(|live| async move {
            live.connect().await?;
            let guard = live.connection.lock().await;
            let c = guard.as_ref().expect("just connected");
            let tools = c.tools().await?;
            Ok::<_, McpFailure>((c.server.clone(), tools))
        }))
        .await;
        let mut servers = Vec::new();
        for (live, result) in lives.into_iter().zip(results) {
            match result {
                Ok(((server, version), tools)) => servers.push((
                    live,
                    ServerState::Connected {
                        server,
                        version,
                        tools: tools.len(),
                    },
                    tools,
                )),
                Err(e) => servers.push((
                    live,
                    ServerState::Failed {
                        error: e.to_string(),
                    },
                    vec![],
                )),
            }
        }
        let mut out = McpServers { servers, disabled };
        for (name, error) in failed {
            out.servers.push((
                Arc::new(Live {
                    name,
                    endpoint: Endpoint::Http {
                        url: String::new(),
                        headers: BTreeMap::new(),
                    },
                    roots: vec![],
                    connection: Mutex::new(None),
                    notices: notices.clone(),
                }),
                ServerState::Failed { error },
                vec![],
            ));
        }
        out
    }

    /// Every server and its state, by name.
    pub fn states(&self) -> Vec<(String, ServerState)> {
        let mut out: Vec<(String, ServerState)> = self
            .servers
            .iter()
            .map(|(live, state, _)| (live.name.clone(), state.clone()))
            .chain(
                self.disabled
                    .iter()
                    .map(|n| (n.clone(), ServerState::Disabled)),
            )
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The connected servers' tools, as registry tools named `server__tool`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut taken = HashSet::new();
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for (live, _, tools) in &self.servers {
            for remote in tools {
                out.push(Arc::new(McpTool {
                    name: tool_name(&live.name, &remote.name, &mut taken),
                    description: format!("[MCP server {}] {}", live.name, remote.description),
                    live: live.clone(),
                    remote: remote.clone(),
                }));
            }
        }
        out
    }

    /// Closes every connection (stdio servers: stdin closed, then SIGTERM, then SIGKILL).
    pub async fn shutdown(self) {
        for (live, _, _) in self.servers {
            if let Some(c) = live.connection.lock().await.take() {
                c.close().await;
            }
        }
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
        let mut guard = self.live.connection.lock().await;
        // A server that crashed is started again on the next use.
        if guard.as_ref().is_none_or(|c| c.is_closed()) {
            drop(guard);
            if let Err(e) = self.live.connect().await {
                return ToolOutput::error(format!(
                    "MCP server {} is not available: {e}",
                    self.live.name
                ));
            }
            guard = self.live.connection.lock().await;
        }
        let Some(connection) = guard.as_ref() else {
            return ToolOutput::error(format!("MCP server {} is not connected", self.live.name));
        };
        match connection
            .call(&self.remote.name, input, CALL_TIMEOUT, &cx.cancel)
            .await
        {
            Ok((_, outcome)) => {
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
            Err(e) => {
                if connection.is_closed() {
                    *guard = None;
                }
                ToolOutput::error(format!(
                    "MCP server {} could not run {}: {e}. It will be restarted on the next call.",
                    self.live.name, self.remote.name
                ))
            }
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
