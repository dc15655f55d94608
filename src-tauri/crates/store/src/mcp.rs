//! MCP server configurations (no secret values: those live in the keyring, by name).

use crate::{now_ms, Result, Store, StoreError};
use codewright_protocol::ProjectId;
use rusqlite::{params, Row};
use std::collections::BTreeMap;

/// How Codewright talks to an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking over stdin/stdout.
    Stdio { command: String, args: Vec<String> },
    /// Streamable HTTP.
    Http { url: String },
    /// The legacy HTTP+SSE transport (protocol 2024-11-05).
    Sse { url: String },
}

/// A configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerRow {
    pub id: i64,
    /// Unique; tools appear as `name__tool`.
    pub name: String,
    pub transport: McpTransport,
    /// Environment for a stdio server (non-secret values).
    pub env: BTreeMap<String, String>,
    /// HTTP headers (non-secret values).
    pub headers: BTreeMap<String, String>,
    /// Env or header names whose values are in the keyring (`mcp:<name>:<key>`).
    pub secrets: Vec<String>,
    pub enabled: bool,
    /// `None`: available in every project.
    pub project: Option<ProjectId>,
    /// Seconds a call may go without an answer or a progress notice; `None`: the default.
    pub call_timeout_secs: Option<u32>,
}

const COLUMNS: &str =
    "id, name, transport, command, args, env, url, headers, secrets, enabled, project_id, call_timeout_s";

fn from_row(r: &Row) -> rusqlite::Result<McpServerRow> {
    let kind: String = r.get(2)?;
    let json = |i: usize| -> rusqlite::Result<String> { r.get(i) };
    let args: Vec<String> = serde_json::from_str(&json(4)?).unwrap_or_default();
    let url: Option<String> = r.get(6)?;
    let transport = match kind.as_str() {
        "stdio" => McpTransport::Stdio {
            command: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            args,
        },
        "sse" => McpTransport::Sse {
            url: url.unwrap_or_default(),
        },
        _ => McpTransport::Http {
            url: url.unwrap_or_default(),
        },
    };
    Ok(McpServerRow {
        id: r.get(0)?,
        name: r.get(1)?,
        transport,
        env: serde_json::from_str(&json(5)?).unwrap_or_default(),
        headers: serde_json::from_str(&json(7)?).unwrap_or_default(),
        secrets: serde_json::from_str(&json(8)?).unwrap_or_default(),
        enabled: r.get(9)?,
        project: r.get::<_, Option<i64>>(10)?.map(ProjectId),
        call_timeout_secs: r.get(11)?,
    })
}

impl Store {
    /// Every configured MCP server, by name.
    pub fn mcp_servers(&self) -> Result<Vec<McpServerRow>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM mcp_servers ORDER BY name"))?;
        let rows = stmt.query_map([], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Adds a server, or replaces the one with the same name. Returns its id.
    pub fn save_mcp_server(&self, s: &McpServerRow) -> Result<i64> {
        if s.name.trim().is_empty() {
            return Err(StoreError::Invalid("an MCP server needs a name".into()));
        }
        let (kind, command, args, url) = match &s.transport {
            McpTransport::Stdio { command, args } => {
                ("stdio", Some(command.as_str()), args.clone(), None)
            }
            McpTransport::Http { url } => ("http", None, vec![], Some(url.as_str())),
            McpTransport::Sse { url } => ("sse", None, vec![], Some(url.as_str())),
        };
        Ok(self.conn.query_row(
            "INSERT INTO mcp_servers (name, transport, command, args, env, url, headers, secrets, enabled, project_id, created_at, call_timeout_s)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT(name) DO UPDATE SET transport = ?2, command = ?3, args = ?4, env = ?5, url = ?6,
                 headers = ?7, secrets = ?8, enabled = ?9, project_id = ?10, call_timeout_s = ?12
             RETURNING id",
            params![
                s.name,
                kind,
                command,
                json(&args),
                json(&s.env),
                url,
                json(&s.headers),
                json(&s.secrets),
                s.enabled,
                s.project.map(|p| p.0),
                now_ms(),
                s.call_timeout_secs
            ],
            |r| r.get(0),
        )?)
    }

    /// Removes a server by name.
    pub fn remove_mcp_server(&self, name: &str) -> Result<()> {
        if self
            .conn
            .execute("DELETE FROM mcp_servers WHERE name = ?1", [name])?
            == 0
        {
            return Err(StoreError::Invalid(format!(
                "there is no MCP server named '{name}'; see `codewright-cli mcp list`"
            )));
        }
        Ok(())
    }

    /// Sets how long a call to a server may go without an answer (`None`: the default).
    pub fn set_mcp_call_timeout(&self, name: &str, seconds: Option<u32>) -> Result<()> {
        if self.conn.execute(
            "UPDATE mcp_servers SET call_timeout_s = ?2 WHERE name = ?1",
            params![name, seconds],
        )? == 0
        {
            return Err(StoreError::Invalid(format!(
                "there is no MCP server named '{name}'; see `codewright-cli mcp list`"
            )));
        }
        Ok(())
    }

    /// Turns a server on or off.
    pub fn set_mcp_enabled(&self, name: &str, enabled: bool) -> Result<()> {
        if self.conn.execute(
            "UPDATE mcp_servers SET enabled = ?2 WHERE name = ?1",
            params![name, enabled],
        )? == 0
        {
            return Err(StoreError::Invalid(format!(
                "there is no MCP server named '{name}'; see `codewright-cli mcp list`"
            )));
        }
        Ok(())
    }
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain maps and lists serialize")
}
