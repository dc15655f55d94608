//! Importing servers from the `mcpServers` JSON that Claude Desktop, Cursor and Claude Code
//! (`.mcp.json`) use — and VS Code's `servers` — so servers users already run work unchanged.

use codewright_store::{McpServerRow, McpTransport};
use serde_json::Value;
use std::collections::BTreeMap;

/// What an import found.
#[derive(Debug, Default, PartialEq)]
pub struct Imported {
    /// Servers to save, with the secret values to put in the keyring (`(key, value)`).
    pub servers: Vec<(McpServerRow, Vec<(String, String)>)>,
    /// Entries not imported: `(name, why)`.
    pub skipped: Vec<(String, String)>,
}

/// Names of env variables and headers whose values are secrets.
pub fn is_secret(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "AUTH",
        "CREDENTIAL",
        "COOKIE",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// Why a config file could not be imported at all (an entry that cannot be is
/// [`Imported::skipped`] instead).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("the file is not valid JSON ({0})")]
    NotJson(#[from] serde_json::Error),
    #[error("the file has no \"mcpServers\" (or \"servers\") object")]
    NoServers,
}

/// Parses a config file's text.
pub fn parse(text: &str) -> Result<Imported, ImportError> {
    let root: Value = serde_json::from_str(text)?;
    let servers = root
        .get("mcpServers")
        .or_else(|| root.get("servers"))
        .and_then(Value::as_object)
        .ok_or(ImportError::NoServers)?;
    let mut out = Imported::default();
    for (name, entry) in servers {
        match server(name, entry) {
            Ok(s) => out.servers.push(s),
            Err(why) => out.skipped.push((name.clone(), why)),
        }
    }
    Ok(out)
}

fn strings(v: Option<&Value>) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (k, v) in v.and_then(Value::as_object).into_iter().flatten() {
        let value = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return Err(format!("the value of {k} is not text")),
        };
        out.insert(k.clone(), value);
    }
    Ok(out)
}

fn server(name: &str, entry: &Value) -> Result<(McpServerRow, Vec<(String, String)>), String> {
    if name.trim().is_empty() {
        return Err("the server has no name".into());
    }
    let kind = entry
        .get("type")
        .or_else(|| entry.get("transport"))
        .and_then(Value::as_str);
    let transport = match (
        entry.get("command").and_then(Value::as_str),
        entry.get("url").and_then(Value::as_str),
    ) {
        (Some(command), _) if kind.is_none_or(|k| k == "stdio") => McpTransport::Stdio {
            command: command.to_string(),
            args: entry
                .get("args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| {
                            v.as_str()
                                .map(String::from)
                                .unwrap_or_else(|| v.to_string())
                        })
                        .collect()
                })
                .unwrap_or_default(),
        },
        (_, Some(url)) => match kind {
            None | Some("http") | Some("streamable-http") | Some("streamableHttp") => {
                McpTransport::Http {
                    url: url.to_string(),
                }
            }
            Some("sse") => McpTransport::Sse {
                url: url.to_string(),
            },
            Some(other) => return Err(format!("unknown transport type \"{other}\"")),
        },
        (Some(_), None) => {
            return Err(format!(
                "a command with transport type \"{}\"",
                kind.unwrap_or("")
            ))
        }
        (None, None) => return Err("neither a command nor a url".into()),
    };
    let mut env = strings(entry.get("env"))?;
    let mut headers = strings(entry.get("headers"))?;
    let mut secrets = Vec::new();
    let mut values = Vec::new();
    for map in [&mut env, &mut headers] {
        let keys: Vec<String> = map.keys().filter(|k| is_secret(k)).cloned().collect();
        for key in keys {
            let value = map.remove(&key).expect("listed above");
            secrets.push(key.clone());
            values.push((key, value));
        }
    }
    let enabled = !entry
        .get("disabled")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok((
        McpServerRow {
            id: 0,
            name: name.to_string(),
            transport,
            env,
            headers,
            secrets,
            enabled,
            project: None,
            call_timeout_secs: None,
        },
        values,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_desktop_cursor_and_vscode_shapes() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
            "github": {"command": "docker", "args": ["run", "ghcr.io/github/github-mcp-server"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "LOG": "1"}},
            "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}},
            "old": {"type": "sse", "url": "http://localhost:3001/sse"},
            "off": {"command": "uvx", "args": ["mcp-server-time"], "disabled": true},
            "broken": {"args": []},
            "weird": {"type": "websocket", "url": "ws://x"}
        }}"#;
        let got = parse(text).unwrap();
        let names: Vec<&str> = got.servers.iter().map(|s| s.0.name.as_str()).collect();
        assert_eq!(names, ["fs", "github", "off", "old", "remote"]);
        let github = &got.servers[1];
        assert_eq!(github.0.env.get("LOG").map(String::as_str), Some("1"));
        assert!(
            !github.0.env.contains_key("GITHUB_PERSONAL_ACCESS_TOKEN"),
            "secrets never in the row"
        );
        assert_eq!(
            github.1,
            [(
                "GITHUB_PERSONAL_ACCESS_TOKEN".to_string(),
                "ghp_x".to_string()
            )]
        );
        assert!(matches!(
            got.servers[3].0.transport,
            McpTransport::Sse { .. }
        ));
        assert_eq!(got.servers[4].0.secrets, ["Authorization"]);
        assert!(!got.servers[2].0.enabled);
        assert_eq!(got.skipped.len(), 2);
        assert!(got
            .skipped
            .iter()
            .any(|(n, why)| n == "broken" && why.contains("neither")));
        assert!(
            parse(r#"{"servers": {"a": {"command": "x"}}}"#)
                .unwrap()
                .servers
                .len()
                == 1
        );
        assert!(parse("not json").is_err());
        assert!(matches!(parse("{}"), Err(ImportError::NoServers)));
        assert!(parse("{}").unwrap_err().to_string().contains("mcpServers"));
    }
}
