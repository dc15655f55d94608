//! Each project's MCP servers, as the agent's tools: the enabled ones (global and the project's)
//! are started when a task of the project first runs, with their secrets from the keyring and,
//! for stdio servers, the login shell's environment without secrets ([`EnvFilter`]); they stop
//! with the host.

use crate::settings::FieldError;
use crate::store_error;
use crate::HostError;
use codewright_llm::credentials::{OsKeyring, SecretStore};
pub use codewright_mcp::ServerState;
use codewright_mcp::{Connection, Endpoint, McpServers, Redactor};
use codewright_protocol::{ErrorKind, ProjectId, TaskId};
use codewright_store::Store;
pub use codewright_store::{McpServerRow, McpTransport};
use codewright_tools::EnvFilter;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

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
        .or_else(|| codewright_tools::env_var(key))
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
        .map_err(store_error)?
        .into_iter()
        .filter(|r| r.project.is_none_or(|p| p == project))
        .collect())
}

/// Connects the enabled ones of `rows` (in parallel), rooted at the project, with the
/// environment `filter` gives. A server that fails is in the result with its error, not an error
/// of the whole.
pub async fn start(rows: &[McpServerRow], root: &Path, filter: &EnvFilter) -> McpServers {
    // The login shell may take seconds, the first time: not on the caller's thread (a run waits
    // for the servers where the user sees it, and a stop must be heard meanwhile).
    let enabled: Vec<McpServerRow> = rows.iter().filter(|r| r.enabled).cloned().collect();
    let env = if enabled.is_empty() {
        HashMap::new()
    } else {
        let filter = filter.clone();
        tokio::task::spawn_blocking(move || environment_for(enabled.iter(), &filter))
            .await
            .expect("reading the environment does not panic")
    };
    McpServers::start(rows, &read_secret, &env, root.to_path_buf()).await
}

// ---- prompts as slash commands (`/server:prompt`) ---------------------------------------------

/// The project's enabled MCP server called `name`, if there is one.
pub fn prompt_server(
    store: &Store,
    project: ProjectId,
    name: &str,
) -> Result<Option<McpServerRow>, HostError> {
    Ok(servers_for(store, project)?
        .into_iter()
        .find(|r| r.enabled && r.name == name))
}

/// The text of the prompt `prompt` of the project's MCP server `row` (see [`prompt_server`]), its
/// arguments filled in from `arguments`: words ("quoted words" stay together), in the order the
/// prompt lists its arguments; the last one gets what is left over. The store is read now; the
/// returned future connects once, asks, and disconnects. What the server sends back has the
/// secrets it was given taken out.
pub fn prompt_text(
    store: &Store,
    project: ProjectId,
    row: &McpServerRow,
    prompt: &str,
    arguments: &str,
) -> Result<impl std::future::Future<Output = Result<String, HostError>> + Send + 'static, HostError>
{
    // Started as a run of the project starts it: in its folder, with its environment.
    let root = PathBuf::from(store.project(project).map_err(store_error)?.root_path);
    let env = environment_for(std::iter::once(row), &EnvFilter::read(store, Some(project)));
    let (endpoint, redactor) = codewright_mcp::endpoint(row, &read_secret, &env, Some(root))
        .map_err(|e| HostError::new(ErrorKind::Setup, e))?;
    let (server, prompt) = (row.name.clone(), prompt.to_string());
    let words = codewright_extensions::commands::split_words(arguments);
    Ok(async move {
        let unavailable = |e: String| {
            HostError::new(
                ErrorKind::Setup,
                redactor.redact(&format!("MCP server {server} is not available: {e}")),
            )
        };
        let connection = Connection::once(&endpoint)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        let result = async {
            let prompts = connection
                .prompts()
                .await
                .map_err(|e| unavailable(e.to_string()))?;
            let Some(info) = prompts.iter().find(|p| p.name == prompt) else {
                let names: Vec<String> = prompts
                    .iter()
                    .map(|p| format!("/{server}:{}", p.name))
                    .collect();
                return Err(HostError::new(
                    ErrorKind::NotFound,
                    if names.is_empty() {
                        format!("MCP server {server} offers no prompts.")
                    } else {
                        format!(
                            "MCP server {server} has no prompt {prompt}; its prompts are {}.",
                            names.join(", ")
                        )
                    },
                ));
            };
            // Words for a prompt without arguments go along after it, as for a custom command.
            let extra = (info.arguments.is_empty() && !words.is_empty()).then(|| words.join(" "));
            let filled = fill(&server, info, words)?;
            let text = connection
                .get_prompt(&prompt, filled)
                .await
                .map_err(|e| unavailable(e.to_string()))?;
            let text = match extra {
                Some(extra) => format!("{text}\n\nARGUMENTS: {extra}"),
                None => text,
            };
            Ok(redactor.redact(&text))
        }
        .await;
        connection.close().await;
        result
    })
}

/// A prompt's arguments from the words typed after its name.
fn fill(
    server: &str,
    info: &codewright_mcp::PromptInfo,
    mut words: Vec<String>,
) -> Result<std::collections::BTreeMap<String, String>, HostError> {
    let args = &info.arguments;
    if args.is_empty() {
        return Ok(Default::default());
    }
    if words.len() > args.len() {
        let rest = words.split_off(args.len() - 1).join(" ");
        words.push(rest);
    }
    let missing: Vec<&str> = args
        .iter()
        .skip(words.len())
        .filter(|a| a.required)
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(HostError::new(
            ErrorKind::BadInput,
            format!(
                "/{server}:{} needs {}: type /{server}:{} {}",
                info.name,
                missing.join(" and "),
                info.name,
                prompt_hint(info)
            ),
        ));
    }
    Ok(args.iter().map(|a| a.name.clone()).zip(words).collect())
}

/// What to type after a prompt's name: `<city> [state]`.
pub fn prompt_hint(info: &codewright_mcp::PromptInfo) -> String {
    info.arguments
        .iter()
        .map(|a| {
            if a.required {
                format!("<{}>", a.name)
            } else {
                format!("[{}]", a.name)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

// ---- configuring servers (the CLI's `mcp` commands and the app's settings page) -------------

/// A configured server as a settings screen shows it. Secret values are never in it: only the
/// names of the variables and headers whose values the keyring keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerView {
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    /// What it runs (stdio, as a shell would read it) or where it is (http, sse).
    pub target: String,
    pub env: BTreeMap<String, String>,
    pub headers: BTreeMap<String, String>,
    pub secrets: Vec<String>,
    pub enabled: bool,
    /// `None`: every project's.
    pub project: Option<ProjectId>,
    /// Seconds a call may go without an answer or progress; `None`: the default.
    pub call_timeout_secs: Option<u32>,
}

impl ServerView {
    fn of(row: McpServerRow) -> ServerView {
        let (transport, target) = match &row.transport {
            McpTransport::Stdio { command, args } => (
                "stdio",
                shlex::try_join(
                    std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)),
                )
                .unwrap_or_else(|_| format!("{command} {}", args.join(" "))),
            ),
            McpTransport::Http { url } => ("http", url.clone()),
            McpTransport::Sse { url } => ("sse", url.clone()),
        };
        ServerView {
            name: row.name,
            transport,
            target,
            env: row.env,
            headers: row.headers,
            secrets: row.secrets,
            enabled: row.enabled,
            project: row.project,
            call_timeout_secs: row.call_timeout_secs,
        }
    }
}

/// Every configured server, by name.
pub fn server_views(store: &Store) -> Result<Vec<ServerView>, HostError> {
    Ok(store
        .mcp_servers()
        .map_err(store_error)?
        .into_iter()
        .map(ServerView::of)
        .collect())
}

/// A server as a person typed it on a settings screen.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerForm {
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: String,
    /// For stdio: the command line that starts it, quoted as in a shell.
    pub command: String,
    /// For http and sse.
    pub url: String,
    /// For stdio: one `NAME=value` per line.
    pub env: String,
    /// For http and sse: one `Name: value` (or `Name=value`) per line.
    pub headers: String,
    /// `None`: every project's.
    pub project: Option<ProjectId>,
    /// Seconds a call may wait for an answer, as typed; empty: the default.
    pub call_timeout: String,
}

/// The longest call timeout a server can be given: an hour.
pub const CALL_TIMEOUT_MAX: u32 = 3600;

/// A call timeout as typed (`""`: the default, two minutes).
pub fn call_timeout(text: &str) -> Result<Option<u32>, FieldError> {
    let text = text.trim().trim_end_matches('s').trim_end();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<u32>() {
        Ok(seconds) if (1..=CALL_TIMEOUT_MAX).contains(&seconds) => Ok(Some(seconds)),
        _ => Err(field(
            "callTimeout",
            format!(
                "Give the seconds a call may wait for an answer, from 1 to {CALL_TIMEOUT_MAX}, or leave it empty for {} s.",
                codewright_mcp::servers::CALL_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// Sets how long a call to the server `name` may wait for an answer; `text` as typed (empty:
/// the default). Runs started from then on use it.
pub fn set_call_timeout(store: &Store, name: &str, text: &str) -> Result<ServerView, FieldError> {
    let seconds = call_timeout(text)?;
    store
        .set_mcp_call_timeout(name, seconds)
        .map_err(|e| field("callTimeout", e.to_string()))?;
    store
        .mcp_servers()
        .map_err(|e| field("callTimeout", e.to_string()))?
        .into_iter()
        .find(|s| s.name == name)
        .map(ServerView::of)
        .ok_or_else(|| {
            field(
                "callTimeout",
                format!("There is no MCP server named {name}."),
            )
        })
}

fn field(field: &'static str, message: impl Into<String>) -> FieldError {
    FieldError {
        field,
        message: message.into(),
    }
}

/// `NAME=value` lines (and `Name: value` when `colon`); blank lines are skipped.
fn lines(
    text: &str,
    colon: bool,
    name: &'static str,
) -> Result<BTreeMap<String, String>, FieldError> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let split = match (
            line.split_once('='),
            colon.then(|| line.split_once(':')).flatten(),
        ) {
            (Some(eq), Some(c)) => Some(if c.0.len() < eq.0.len() { c } else { eq }),
            (eq, c) => eq.or(c),
        };
        let Some((key, value)) = split.filter(|(k, _)| {
            let k = k.trim();
            !k.is_empty() && !k.contains(char::is_whitespace)
        }) else {
            let form = if colon { "Name: value" } else { "NAME=value" };
            return Err(field(
                name,
                format!("Line {} (“{}”) is not {form}.", i + 1, line.trim()),
            ));
        };
        out.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(out)
}

/// Where `program` is: itself if it names a path, else the first match on `path` (a `PATH`).
fn find_program(program: &str, path: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

/// Checks `form` whole and adds the server: values of variables and headers that look secret
/// (`*KEY*`, `*TOKEN*`, …) go to the keyring, the rest to the store. Nothing is saved if any
/// field is wrong. A command is looked for on the `PATH` the server would start with.
pub fn add_server(
    store: &Store,
    keys: &dyn SecretStore,
    form: &ServerForm,
) -> Result<ServerView, FieldError> {
    let name = form.name.trim();
    if name.is_empty() {
        return Err(field(
            "name",
            "Give the server a name; its tools are called NAME__tool.",
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        || name.chars().count() > 40
    {
        return Err(field(
            "name",
            "Use up to 40 letters, digits, - or _ (no spaces): the model sees it in every tool's name.",
        ));
    }
    let call_timeout_secs = call_timeout(&form.call_timeout)?;
    let taken = store
        .mcp_servers()
        .map_err(|e| field("name", e.to_string()))?;
    if taken.iter().any(|s| s.name == name) {
        return Err(field(
            "name",
            format!("There is already a server named {name}; choose another name, or remove that one first."),
        ));
    }
    let (transport, env, headers) = match form.transport.as_str() {
        "stdio" => {
            let words = shlex::split(form.command.trim())
                .ok_or_else(|| field("command", "The command has a quote that is not closed."))?;
            let Some((program, args)) = words.split_first() else {
                return Err(field(
                    "command",
                    "Type the command that starts the server, e.g. npx -y @modelcontextprotocol/server-everything",
                ));
            };
            let env = lines(&form.env, false, "env")?;
            let path = codewright_tools::EnvFilter::read(store, form.project)
                .environment()
                .remove("PATH")
                .or_else(|| std::env::var("PATH").ok());
            if find_program(program, path.as_deref()).is_none() {
                return Err(field(
                    "command",
                    if program.contains('/') {
                        format!("There is no program at {program} (or it cannot be run).")
                    } else {
                        format!("No program called {program} was found on this computer (in PATH); install it, or give its full path.")
                    },
                ));
            }
            let transport = McpTransport::Stdio {
                command: program.clone(),
                args: args.to_vec(),
            };
            (transport, env, BTreeMap::new())
        }
        "http" | "sse" => {
            let url = form.url.trim().to_string();
            codewright_llm::provider::check_base_url(&url).map_err(|_| {
                field(
                    "url",
                    format!("“{url}” is not a web address: it must start with http:// or https://, e.g. http://localhost:3000/mcp"),
                )
            })?;
            let headers = lines(&form.headers, true, "headers")?;
            let transport = if form.transport == "sse" {
                McpTransport::Sse { url }
            } else {
                McpTransport::Http { url }
            };
            (transport, BTreeMap::new(), headers)
        }
        _ => {
            return Err(field(
                "transport",
                "Choose how Codewright talks to it: a command (stdio), or a URL (HTTP or SSE).",
            ))
        }
    };
    let row = McpServerRow {
        id: 0,
        name: name.to_string(),
        transport,
        env,
        headers,
        secrets: Vec::new(),
        enabled: true,
        project: form.project,
        call_timeout_secs,
    };
    let (row, secrets) = split_secrets(row);
    let which = if row_is_stdio(&row) { "env" } else { "headers" };
    save_server(store, keys, row, secrets).map_err(|e| field(which, e))
}

fn row_is_stdio(row: &McpServerRow) -> bool {
    matches!(row.transport, McpTransport::Stdio { .. })
}

/// Takes the secret-looking values out of a row's env and headers.
pub fn split_secrets(mut row: McpServerRow) -> (McpServerRow, Vec<(String, String)>) {
    let mut secrets = Vec::new();
    for map in [&mut row.env, &mut row.headers] {
        let keys: Vec<String> = map
            .keys()
            .filter(|k| codewright_mcp::import::is_secret(k))
            .cloned()
            .collect();
        for k in keys {
            let v = map.remove(&k).expect("listed");
            secrets.push((k, v));
        }
    }
    (row, secrets)
}

/// Saves a server (replacing one of the same name), its secret values going to the keyring.
pub fn save_server(
    store: &Store,
    keys: &dyn SecretStore,
    mut row: McpServerRow,
    secrets: Vec<(String, String)>,
) -> Result<ServerView, HostError> {
    for (key, value) in secrets {
        keys.set(&secret_account(&row.name, &key), &value).map_err(|e| {
            HostError::new(ErrorKind::Setup, format!("The value of {key} is a secret, and the system keyring cannot keep it ({e}). Set {key} in the environment instead and leave it out here."))
        })?;
        if !row.secrets.contains(&key) {
            row.secrets.push(key);
        }
    }
    store.save_mcp_server(&row)?;
    Ok(ServerView::of(row))
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    /// Saved (a server of the same name is replaced).
    pub added: Vec<String>,
    pub skipped: Vec<Skipped>,
}

/// A server an import left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub name: String,
    pub why: String,
}

/// Imports the servers of a Claude Desktop / Cursor / `.mcp.json` file's text, for `project` (or
/// every project). `Err` (`BadInput`): the text is not such a file, and nothing was saved.
pub fn import_servers(
    store: &Store,
    keys: &dyn SecretStore,
    text: &str,
    project: Option<ProjectId>,
) -> Result<ImportReport, HostError> {
    let found = codewright_mcp::import::parse(text)
        .map_err(|e| HostError::new(ErrorKind::BadInput, e.to_string()))?;
    let mut report = ImportReport {
        skipped: found
            .skipped
            .into_iter()
            .map(|(name, why)| Skipped { name, why })
            .collect(),
        ..ImportReport::default()
    };
    for (mut row, secrets) in found.servers {
        row.project = project;
        let name = row.name.clone();
        match save_server(store, keys, row, secrets) {
            Ok(_) => report.added.push(name),
            Err(e) => report.skipped.push(Skipped {
                name,
                why: e.message,
            }),
        }
    }
    Ok(report)
}

/// Removes a server and its secrets from the keyring.
pub fn remove_server(store: &Store, keys: &dyn SecretStore, name: &str) -> Result<(), HostError> {
    let row = store
        .mcp_servers()
        .map_err(store_error)?
        .into_iter()
        .find(|s| s.name == name);
    store.remove_mcp_server(name).map_err(store_error)?;
    for key in row.map(|r| r.secrets).unwrap_or_default() {
        let _ = keys.delete(&secret_account(name, &key));
    }
    Ok(())
}

/// How to reach a configured server now: its secrets read, and for a stdio server the
/// environment it starts with; with what takes those secrets out of what it sends back.
pub fn endpoint_of(store: &Store, row: &McpServerRow) -> Result<(Endpoint, Redactor), HostError> {
    let env = environment_for(std::iter::once(row), &EnvFilter::read(store, row.project));
    codewright_mcp::endpoint(row, &read_secret, &env, None)
        .map_err(|e| HostError::new(ErrorKind::Mcp, e))
}

/// The server called `name` (`NotFound` when there is none).
fn server_named(store: &Store, name: &str) -> Result<McpServerRow, HostError> {
    store
        .mcp_servers()
        .map_err(store_error)?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            HostError::new(
                ErrorKind::NotFound,
                format!("there is no MCP server named {name}"),
            )
        })
}

/// What connecting to a server found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum ServerCheck {
    Connected {
        server: String,
        version: String,
        tools: Vec<ToolSummary>,
        prompts: Vec<String>,
    },
    /// The error, with the tail of the server's stderr when it wrote any.
    Failed { error: String },
}

/// A tool of a server, for a list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSummary {
    pub name: String,
    /// Its description's first line.
    pub description: String,
    pub read_only: bool,
}

/// Connects to the server `name` once, lists its tools and prompts, and disconnects. The store
/// is read now; the returned future does the rest (it may take seconds).
pub fn check_server(
    store: &Store,
    name: &str,
) -> Result<impl std::future::Future<Output = ServerCheck> + Send + 'static, HostError> {
    let row = server_named(store, name)?;
    let endpoint = endpoint_of(store, &row);
    Ok(async move {
        let (endpoint, redactor) = match endpoint {
            Ok(e) => e,
            Err(error) => {
                return ServerCheck::Failed {
                    error: error.message,
                }
            }
        };
        let failed = |error: String| ServerCheck::Failed {
            error: redactor.redact(&error),
        };
        let connection = match Connection::once(&endpoint).await {
            Ok(c) => c,
            Err(e) => return failed(e.to_string()),
        };
        let tools = connection.tools().await;
        let prompts = connection.prompts().await;
        connection.close().await;
        match tools {
            Ok(tools) => ServerCheck::Connected {
                server: connection.server.0.clone(),
                version: connection.server.1.clone(),
                tools: tools
                    .into_iter()
                    .map(|t| ToolSummary {
                        description: redactor.redact(t.description.lines().next().unwrap_or("")),
                        name: t.name,
                        read_only: t.read_only,
                    })
                    .collect(),
                // A server without prompts may refuse to list them: that is no prompts.
                prompts: prompts
                    .unwrap_or_default()
                    .into_iter()
                    .map(|p| p.name)
                    .collect(),
            },
            Err(e) => failed(e.to_string()),
        }
    })
}

/// An MCP server as `/mcp` lists it (no settings, no secrets).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskServer {
    pub name: String,
    pub transport: &'static str,
    pub enabled: bool,
}

/// The MCP servers, through the host: every change reaches the runs started from then on
/// ([`crate::Host::mcp_changed`]).
impl crate::Host {
    /// Every configured server (secret values never included: only their names).
    pub fn mcp_servers(&self) -> Result<Vec<McpServerRow>, HostError> {
        Ok(self.inner.store().mcp_servers()?)
    }

    /// The configured servers as the settings page shows them.
    pub fn mcp_server_views(&self) -> Result<Vec<ServerView>, HostError> {
        server_views(&self.inner.store())
    }

    /// The servers a task's runs use (every project's and its project's own), for `/mcp`.
    pub fn task_mcp_servers(&self, task: TaskId) -> Result<Vec<TaskServer>, HostError> {
        let store = self.inner.store();
        let project = store.task(task)?.project_id;
        Ok(server_views(&store)?
            .into_iter()
            .filter(|s| s.project.is_none_or(|p| p == project))
            .map(|s| TaskServer {
                name: s.name,
                transport: s.transport,
                enabled: s.enabled,
            })
            .collect())
    }

    /// Adds a server from the settings page's form.
    pub fn add_mcp_server(&self, form: &ServerForm) -> Result<ServerView, FieldError> {
        let view = add_server(&self.inner.store(), &OsKeyring, form)?;
        self.mcp_changed();
        Ok(view)
    }

    /// Adds or replaces a server; values that look secret go to the keyring.
    pub fn save_mcp_server(&self, row: McpServerRow) -> Result<ServerView, HostError> {
        let (row, secrets) = split_secrets(row);
        let view = save_server(&self.inner.store(), &OsKeyring, row, secrets)?;
        self.mcp_changed();
        Ok(view)
    }

    /// Imports the servers of a Claude Desktop / Cursor / `.mcp.json` file's `text`.
    pub fn import_mcp_servers(
        &self,
        text: &str,
        project: Option<ProjectId>,
    ) -> Result<ImportReport, HostError> {
        let report = import_servers(&self.inner.store(), &OsKeyring, text, project)?;
        self.mcp_changed();
        Ok(report)
    }

    /// Removes a server and its secrets.
    pub fn remove_mcp_server(&self, name: &str) -> Result<(), HostError> {
        self.mcp_server(name)?;
        remove_server(&self.inner.store(), &OsKeyring, name)?;
        self.mcp_changed();
        Ok(())
    }

    pub fn set_mcp_enabled(&self, name: &str, enabled: bool) -> Result<(), HostError> {
        self.inner.store().set_mcp_enabled(name, enabled)?;
        self.mcp_changed();
        Ok(())
    }

    /// Sets how long a call may wait (`text` as typed; empty: the default).
    pub fn set_mcp_call_timeout(&self, name: &str, text: &str) -> Result<ServerView, FieldError> {
        let view = set_call_timeout(&self.inner.store(), name, text)?;
        self.mcp_changed();
        Ok(view)
    }

    /// The server called `name` (`NotFound` when there is none).
    pub fn mcp_server(&self, name: &str) -> Result<McpServerRow, HostError> {
        server_named(&self.inner.store(), name)
    }

    /// Connects to a server once: its tools and prompts, or why it failed (the store is not
    /// held meanwhile).
    pub async fn check_mcp_server(&self, name: &str) -> Result<ServerCheck, HostError> {
        let check = check_server(&self.inner.store(), name)?;
        Ok(check.await)
    }

    /// Connects to the server `name`; with what takes its secrets out of what it sends back.
    pub async fn connect_mcp(&self, name: &str) -> Result<(Connection, Redactor), HostError> {
        let row = self.mcp_server(name)?;
        let (endpoint, redactor) = endpoint_of(&self.inner.store(), &row)?;
        let connection = Connection::once(&endpoint).await.map_err(|e| {
            HostError::new(
                ErrorKind::Mcp,
                redactor.redact(&format!("{}: {e}", row.name)),
            )
        })?;
        Ok((connection, redactor))
    }

    /// Starts every configured server once and reports where each got to.
    pub async fn mcp_states(&self) -> Result<Vec<(String, ServerState)>, HostError> {
        let (rows, env) = {
            let store = self.inner.store();
            let rows = store.mcp_servers()?;
            let env = environment_for(
                rows.iter().filter(|r| r.enabled),
                &EnvFilter::read(&store, None),
            );
            (rows, env)
        };
        let servers = McpServers::start(&rows, &read_secret, &env, std::env::temp_dir()).await;
        let states = servers.states();
        servers.shutdown().await;
        Ok(states)
    }
}
