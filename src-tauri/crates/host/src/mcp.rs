//! Each project's MCP servers, as the agent's tools: the enabled ones (global and the project's)
//! are started when a task of the project first runs, with their secrets from the keyring and,
//! for stdio servers, the login shell's environment without secrets ([`EnvFilter`]); they stop
//! with the host.

use crate::HostError;
use codewright_llm::credentials::{OsKeyring, SecretStore};
use codewright_mcp::McpServers;
use codewright_protocol::{ErrorKind, ProjectId};
use codewright_store::{McpServerRow, McpTransport, Store};
use codewright_tools::EnvFilter;
use std::collections::HashMap;
use std::path::Path;

/// The keyring account of a server's secret value (a header or an env variable).
pub fn secret_account(server: &str, key: &str) -> String {
    format!("mcp:{server}:{key}")
}

/// A server's secret value: from the keyring, else the environment variable of the same name.
pub fn read_secret(server: &str, key: &str) -> Option<String> {
    OsKeyring
        .get(&secret_account(server, key))
        .ok()
        .flatten()
        .or_else(|| std::env::var(key).ok())
}

/// The environment stdio servers start with (each server's own `env` and secrets are added to
/// it): the login shell's without secrets, as `filter` says (the login shell runs once, ~0.1 s) —
/// only when one of the servers about to start (`rows`) needs it.
pub fn environment_for<'a>(
    mut rows: impl Iterator<Item = &'a McpServerRow>,
    filter: &EnvFilter,
) -> HashMap<String, String> {
    if rows.any(|r| matches!(r.transport, McpTransport::Stdio { .. })) {
        filter.environment()
    } else {
        HashMap::new()
    }
}

/// The servers configured for a project: the global ones and its own.
pub fn servers_for(store: &Store, project: ProjectId) -> Result<Vec<McpServerRow>, HostError> {
    Ok(store
        .mcp_servers()
        .map_err(|e| HostError::new(ErrorKind::Store, e.to_string()))?
        .into_iter()
        .filter(|r| r.project.is_none_or(|p| p == project))
        .collect())
}

/// Connects the enabled ones of `rows` (in parallel), rooted at the project, with the
/// environment `filter` gives. A server that fails is in the result with its error, not an error
/// of the whole.
pub async fn start(rows: &[McpServerRow], root: &Path, filter: &EnvFilter) -> McpServers {
    let env = environment_for(rows.iter().filter(|r| r.enabled), filter);
    McpServers::start(rows, &read_secret, &env, root.to_path_buf()).await
}
