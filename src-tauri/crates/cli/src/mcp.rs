//! `mcp`: configure MCP servers (added by hand or imported from Claude Desktop / Cursor /
//! `.mcp.json` files), see their state and tools, call one tool. `exec` uses the enabled ones.

use crate::error::{bad_input, Result};
use crate::output::{table, to_json};
use crate::project_arg::{optional, ProjectArg};
use clap::Subcommand;
use codewright_host::mcp::{self, McpServerRow, McpTransport, ServerState};
use codewright_host::{Host, HostError};
use codewright_protocol::ErrorKind;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand)]
pub enum McpCommand {
    /// The configured servers and their state (each enabled one is connected to check).
    List,
    /// Add a server: `mcp add NAME -- COMMAND ARGS…` (stdio) or `mcp add NAME --url URL`.
    Add {
        name: String,
        /// The server's URL (streamable HTTP, or legacy SSE with --transport sse).
        #[arg(long)]
        url: Option<String>,
        #[arg(long, value_parser = ["http", "sse"], default_value = "http")]
        transport: String,
        /// An HTTP header, K=V (values of Authorization / *token* / *key* go to the keyring).
        #[arg(long = "header", value_name = "K=V")]
        headers: Vec<String>,
        /// An environment variable for a stdio server, K=V (secret-looking ones go to the keyring).
        #[arg(long = "env", value_name = "K=V")]
        env: Vec<String>,
        /// Only for this project, by id or folder (default: every project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
        /// Seconds a call may wait for an answer or progress (default: 120).
        #[arg(long, value_name = "SECS")]
        timeout: Option<String>,
        /// The command and its arguments (after --).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Import the servers of a Claude Desktop / Cursor / .mcp.json file.
    Import {
        file: PathBuf,
        /// Only for this project, by id or folder (default: every project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
    },
    /// The tools a server offers.
    Tools {
        name: String,
    },
    /// The prompts a server offers: `exec "/NAME:PROMPT ARGUMENTS"` sends one.
    Prompts {
        name: String,
    },
    /// Call one tool of a server with JSON arguments.
    Call {
        name: String,
        tool: String,
        #[arg(default_value = "{}")]
        arguments: String,
    },
    /// Stop using a server (kept, disabled) or use it again.
    Disable {
        name: String,
    },
    Enable {
        name: String,
    },
    /// How long a call may wait for an answer or progress (no SECS: the default, 120 s).
    Timeout {
        name: String,
        #[arg(value_name = "SECS")]
        seconds: Option<String>,
    },
    /// Remove a server (and its secrets from the keyring).
    Rm {
        name: String,
    },
}

fn pairs(list: &[String], what: &str) -> Result<BTreeMap<String, String>> {
    list.iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| bad_input(format!("{what} {kv:?} is not K=V")))
        })
        .collect()
}

/// What an MCP server's answer failed with, its secrets hidden.
fn mcp_error(redactor: &codewright_mcp::Redactor, e: impl std::fmt::Display) -> HostError {
    HostError::new(ErrorKind::Mcp, redactor.redact(&e.to_string()))
}

/// Runs an `mcp` command.
pub fn mcp(host: &Host, command: McpCommand, json: bool) -> Result<String> {
    // A command about one server names one that exists, or says how to see them.
    let named = match &command {
        McpCommand::Tools { name }
        | McpCommand::Prompts { name }
        | McpCommand::Call { name, .. }
        | McpCommand::Disable { name }
        | McpCommand::Enable { name }
        | McpCommand::Timeout { name, .. }
        | McpCommand::Rm { name } => Some(name),
        McpCommand::List | McpCommand::Add { .. } | McpCommand::Import { .. } => None,
    };
    if let Some(name) = named {
        host.mcp_server(name).map_err(|e| match e.kind {
            ErrorKind::NotFound => HostError::new(
                e.kind,
                format!("{}; see `codewright-cli mcp list`", e.message),
            ),
            _ => e,
        })?;
    }
    match command {
        McpCommand::List => {
            let rows = host.mcp_servers()?;
            if rows.is_empty() {
                return Ok("No MCP servers. Add one with `codewright-cli mcp add NAME -- COMMAND …` or import a config with `codewright-cli mcp import FILE`.\n".into());
            }
            let states = crate::runtime(Some(2))?.block_on(host.mcp_states())?;
            let status = |name: &str| -> String {
                match states.iter().find(|(n, _)| n == name).map(|(_, s)| s) {
                    Some(ServerState::Connected {
                        server,
                        version,
                        tools,
                    }) => format!("connected: {tools} tools ({server} {version})"),
                    Some(ServerState::Failed { error }) => format!("failed: {error}"),
                    Some(ServerState::Disabled) | None => "disabled".into(),
                }
            };
            if json {
                return Ok(to_json(
                    &rows
                        .iter()
                        .map(|r| json!({"name": r.name, "transport": describe(&r.transport), "enabled": r.enabled,
                                         "project": r.project, "status": status(&r.name)}))
                        .collect::<Vec<_>>(),
                ));
            }
            Ok(table(
                &["NAME", "TRANSPORT", "STATUS"],
                rows.iter()
                    .map(|r| vec![r.name.clone(), describe(&r.transport), status(&r.name)]),
            ))
        }
        McpCommand::Add {
            name,
            url,
            transport,
            headers,
            env,
            project,
            timeout,
            command,
        } => {
            let call_timeout_secs = mcp::call_timeout(timeout.as_deref().unwrap_or(""))?;
            let headers = pairs(&headers, "header")?;
            let env = pairs(&env, "env")?;
            let transport = match (url, command.split_first()) {
                (Some(_), Some(_)) => return Err(bad_input("give either --url or a command after --, not both")),
                (Some(url), None) if transport == "sse" => McpTransport::Sse { url },
                (Some(url), None) => McpTransport::Http { url },
                (None, Some((command, args))) => McpTransport::Stdio { command: command.clone(), args: args.to_vec() },
                (None, None) => return Err(bad_input("give the server's command after -- (mcp add NAME -- npx -y SERVER) or its --url")),
            };
            let row = McpServerRow {
                id: 0,
                name: name.clone(),
                transport,
                env,
                headers,
                secrets: vec![],
                enabled: true,
                project: optional(host, project.as_ref())?,
                call_timeout_secs,
            };
            host.save_mcp_server(row)?;
            Ok(format!(
                "Added MCP server {name}. Check it with: codewright-cli mcp tools {name}\n"
            ))
        }
        McpCommand::Import { file, project } => {
            let text = std::fs::read_to_string(&file).map_err(|e| {
                HostError::new(
                    ErrorKind::BadPath,
                    format!("cannot read {}: {e}", file.display()),
                )
            })?;
            let report = host
                .import_mcp_servers(&text, optional(host, project.as_ref())?)
                .map_err(|e| HostError {
                    message: format!("{}: {}", file.display(), e.message),
                    ..e
                })?;
            if json {
                return Ok(to_json(
                    &json!({"imported": report.added, "skipped": report.skipped}),
                ));
            }
            let mut out = format!(
                "Imported {} server(s) from {}: {}\n",
                report.added.len(),
                file.display(),
                report.added.join(", ")
            );
            for skipped in &report.skipped {
                out.push_str(&format!("Skipped {}: {}\n", skipped.name, skipped.why));
            }
            Ok(out)
        }
        McpCommand::Tools { name } => {
            let tools = crate::runtime(Some(2))?.block_on(async {
                let (c, redactor) = host.connect_mcp(&name).await?;
                let tools = c.tools().await.map_err(|e| mcp_error(&redactor, e));
                c.close().await;
                tools
            })?;
            if json {
                return Ok(to_json(&tools.iter().map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema, "readOnly": t.read_only})).collect::<Vec<_>>()));
            }
            Ok(table(
                &["TOOL", "DESCRIPTION"],
                tools.iter().map(|t| {
                    vec![
                        t.name.clone(),
                        t.description.lines().next().unwrap_or("").to_string(),
                    ]
                }),
            ))
        }
        McpCommand::Prompts { name } => {
            let prompts = crate::runtime(Some(2))?.block_on(async {
                let (c, redactor) = host.connect_mcp(&name).await?;
                let prompts = c.prompts().await.map_err(|e| mcp_error(&redactor, e));
                c.close().await;
                prompts
            })?;
            if json {
                return Ok(to_json(&prompts));
            }
            if prompts.is_empty() {
                return Ok(format!("MCP server {name} offers no prompts.\n"));
            }
            Ok(table(
                &["COMMAND", "DESCRIPTION"],
                prompts.iter().map(|p| {
                    let hint = codewright_host::mcp::prompt_hint(p);
                    vec![
                        format!("/{name}:{} {hint}", p.name).trim_end().to_string(),
                        p.description.lines().next().unwrap_or("").to_string(),
                    ]
                }),
            ))
        }
        McpCommand::Call {
            name,
            tool,
            arguments,
        } => {
            let args: serde_json::Value = serde_json::from_str(&arguments)
                .map_err(|e| bad_input(format!("the arguments are not valid JSON ({e})")))?;
            let (outcome, redactor) = crate::runtime(Some(2))?.block_on(async {
                let (c, redactor) = host.connect_mcp(&name).await?;
                let never = tokio_util::sync::CancellationToken::new();
                let r = c
                    .call(&tool, args, Duration::from_secs(120), &never, None)
                    .await
                    .map_err(|e| mcp_error(&redactor, e));
                c.close().await;
                r.map(|outcome| (outcome, redactor))
            })?;
            if json {
                return Ok(redactor.redact(&to_json(
                    &json!({"content": outcome.content, "isError": outcome.is_error}),
                )));
            }
            let text: Vec<String> = outcome
                .content
                .iter()
                .map(|c| {
                    c["text"]
                        .as_str()
                        .map(String::from)
                        .unwrap_or_else(|| format!("[{}]", c["type"].as_str().unwrap_or("content")))
                })
                .collect();
            let text = redactor.redact(&format!("{}\n", text.join("\n")));
            if outcome.is_error {
                Err(HostError::new(ErrorKind::Mcp, text.trim_end()))
            } else {
                Ok(text)
            }
        }
        McpCommand::Disable { name } => {
            host.set_mcp_enabled(&name, false)?;
            Ok(format!("Disabled MCP server {name}\n"))
        }
        McpCommand::Enable { name } => {
            host.set_mcp_enabled(&name, true)?;
            Ok(format!("Enabled MCP server {name}\n"))
        }
        McpCommand::Timeout { name, seconds } => {
            let server = host.set_mcp_call_timeout(&name, seconds.as_deref().unwrap_or(""))?;
            Ok(match server.call_timeout_secs {
                Some(s) => format!("Calls to MCP server {name} now wait up to {s} s\n"),
                None => format!(
                    "Calls to MCP server {name} now wait up to {} s (the default)\n",
                    codewright_mcp::servers::CALL_TIMEOUT.as_secs()
                ),
            })
        }
        McpCommand::Rm { name } => {
            host.remove_mcp_server(&name)?;
            Ok(format!("Removed MCP server {name}\n"))
        }
    }
}

fn describe(t: &McpTransport) -> String {
    match t {
        McpTransport::Stdio { command, args } => format!("stdio: {command} {}", args.join(" "))
            .trim_end()
            .to_string(),
        McpTransport::Http { url } => format!("http: {url}"),
        McpTransport::Sse { url } => format!("sse: {url}"),
    }
}
