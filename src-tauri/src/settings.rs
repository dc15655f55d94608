//! The main window's settings page and first-run setup: providers, their keys and the model
//! roles. Thin calls into the host; no command ever returns a key. Only the
//! main window's capability grants these commands.

use crate::error::{CommandError, Result};
use crate::AppState;
use codewright_host::settings::{
    self, FieldError, KeySaved, LocalServer, ModelRole, Overview, ProviderForm, TestOutcome,
};
use codewright_host::{mcp, project, rules};
use codewright_protocol::{PermissionRule, ProjectId, SavedRule};
use serde::Serialize;
use std::time::Duration;
use tauri::{AppHandle, Runtime, State, WebviewWindow};
use tauri_plugin_dialog::DialogExt;

/// How long the settings page (and the first-run form) waits for a local model server to answer.
const LOCAL_WAIT: Duration = Duration::from_millis(800);

#[tauri::command]
pub fn settings_overview(state: State<'_, AppState>) -> Result<Overview> {
    Ok(state.host()?.settings_overview()?)
}

/// The local model servers answering on their usual ports, with their models.
#[tauri::command]
pub async fn local_servers() -> Vec<LocalServer> {
    settings::local_servers(LOCAL_WAIT).await
}

/// Saves a custom provider; a wrong field is named in the error (`field`, `message`).
#[tauri::command]
pub fn save_provider(
    state: State<'_, AppState>,
    form: ProviderForm,
) -> std::result::Result<String, FieldError> {
    let host = host_for(&state, "name")?;
    let saved = host.save_provider(&form)?;
    state.changed();
    Ok(saved.name)
}

#[tauri::command]
pub fn remove_provider(state: State<'_, AppState>, name: String) -> Result<()> {
    state.host()?.remove_provider(&name)?;
    Ok(())
}

/// Keeps a pasted key in the system keyring. The key goes in; nothing about it comes back but
/// whether it had spaces around it.
#[tauri::command]
pub fn set_provider_key(
    state: State<'_, AppState>,
    provider: String,
    key: String,
) -> Result<KeySaved> {
    Ok(state.host()?.set_key(&provider, &key)?)
}

#[tauri::command]
pub fn remove_provider_key(state: State<'_, AppState>, provider: String) -> Result<bool> {
    Ok(state.host()?.remove_key(&provider)?)
}

/// Sends MODEL@PROVIDER one short request with its provider's key, and says what happened.
#[tauri::command]
pub async fn test_model(state: State<'_, AppState>, model: String) -> Result<TestOutcome> {
    let host = state.host()?.clone();
    Ok(host.test_model(&model).await?)
}

#[tauri::command]
pub fn set_model_role(
    state: State<'_, AppState>,
    role: ModelRole,
    model: Option<String>,
) -> std::result::Result<(), CommandError> {
    state.host()?.set_role(role, model.as_deref())?;
    Ok(())
}

// ---- MCP servers ------------------------------------------------------------------------------

/// The configured MCP servers (secret values never included: only their names).
#[tauri::command]
pub fn mcp_servers(state: State<'_, AppState>) -> Result<Vec<mcp::ServerView>> {
    Ok(state.host()?.mcp_server_views()?)
}

/// Adds a server; a wrong field is named in the error (`field`, `message`). Runs started from
/// now on use it.
#[tauri::command]
pub fn add_mcp_server(
    state: State<'_, AppState>,
    form: mcp::ServerForm,
) -> std::result::Result<mcp::ServerView, FieldError> {
    let unusable = |e: CommandError| FieldError {
        field: "name",
        message: e.message,
    };
    state.host().map_err(unusable)?.add_mcp_server(&form)
}

/// Imports the servers of a Claude Desktop / Cursor / `.mcp.json` file, for `project_id` (or
/// every project). A file that cannot be read or is not such a file is an error on `file`.
#[tauri::command]
pub fn import_mcp_servers(
    state: State<'_, AppState>,
    path: String,
    project_id: Option<ProjectId>,
) -> std::result::Result<mcp::ImportReport, FieldError> {
    let file = |message: String| FieldError {
        field: "file",
        message,
    };
    let path = path.trim();
    if path.is_empty() {
        return Err(file("Choose the file to import, or type its path.".into()));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| file(format!("{path} could not be read: {e}.")))?;
    state
        .host()
        .map_err(|e| file(e.message))?
        .import_mcp_servers(&text, project_id)
        .map_err(|e| file(format!("{path}: {}.", e.message)))
}

/// Shows the native file chooser for an MCP configuration file; `None` if cancelled.
#[tauri::command]
pub async fn pick_mcp_config<R: Runtime>(
    app: AppHandle<R>,
    window: WebviewWindow<R>,
) -> Result<Option<String>> {
    let dialog = app
        .dialog()
        .file()
        .set_title("Choose an MCP configuration file")
        .add_filter("JSON", &["json"])
        .set_parent(&window);
    crate::commands::choose("file", move || dialog.blocking_pick_file()).await
}

#[tauri::command]
pub fn remove_mcp_server(state: State<'_, AppState>, name: String) -> Result<()> {
    Ok(state.host()?.remove_mcp_server(&name)?)
}

#[tauri::command]
pub fn set_mcp_server_enabled(
    state: State<'_, AppState>,
    name: String,
    enabled: bool,
) -> Result<()> {
    Ok(state.host()?.set_mcp_enabled(&name, enabled)?)
}

/// Sets how long a call to a server may wait for an answer (`seconds` as typed; empty: the
/// default); a wrong value is an error on `callTimeout`. Runs started from now on use it.
#[tauri::command]
pub fn set_mcp_call_timeout(
    state: State<'_, AppState>,
    name: String,
    seconds: String,
) -> std::result::Result<mcp::ServerView, FieldError> {
    let unusable = |e: CommandError| FieldError {
        field: "callTimeout",
        message: e.message,
    };
    state
        .host()
        .map_err(unusable)?
        .set_mcp_call_timeout(&name, &seconds)
}

/// Connects to a server once: its tools and prompts, or why it failed (with the tail of its
/// stderr).
#[tauri::command]
pub async fn check_mcp_server(
    state: State<'_, AppState>,
    name: String,
) -> Result<mcp::ServerCheck> {
    let host = state.host()?.clone();
    Ok(host.check_mcp_server(&name).await?)
}

// ---- approval rules ---------------------------------------------------------------------------

/// A project's saved rules, and the tool names a rule may name.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectRules {
    pub rules: Vec<SavedRule>,
    pub tools: Vec<String>,
}

#[tauri::command]
pub fn project_rules(state: State<'_, AppState>, project_id: ProjectId) -> Result<ProjectRules> {
    Ok(ProjectRules {
        rules: state.host()?.rules(project_id)?,
        tools: rules::tool_names(),
    })
}

/// Saves a rule; one that could never match is refused, naming the part (`tool`, `pattern`).
#[tauri::command]
pub fn add_rule(
    state: State<'_, AppState>,
    project_id: ProjectId,
    rule: PermissionRule,
) -> std::result::Result<SavedRule, FieldError> {
    let host = host_for(&state, "tool")?;
    host.add_rule(project_id, &rule)
}

#[tauri::command]
pub fn remove_rule(state: State<'_, AppState>, id: i64) -> Result<()> {
    Ok(state.host()?.remove_rule(id)?)
}

// ---- project settings -------------------------------------------------------------------------

#[tauri::command]
pub fn project_settings(
    state: State<'_, AppState>,
    project_id: ProjectId,
) -> Result<project::ProjectForm> {
    Ok(state.host()?.project_form(project_id)?)
}

/// Saves a project's settings whole; a wrong field is named in the error.
#[tauri::command]
pub fn save_project_settings(
    state: State<'_, AppState>,
    project_id: ProjectId,
    form: project::ProjectForm,
) -> std::result::Result<(), FieldError> {
    let host = host_for(&state, "context")?;
    host.save_project(project_id, &form)?;
    state.changed();
    Ok(())
}

/// Whether the user trusts a project, and what its folder defines (asked before it is used).
#[tauri::command]
pub fn project_trust(
    state: State<'_, AppState>,
    project_id: ProjectId,
) -> Result<project::ProjectTrust> {
    Ok(state.host()?.project_trust(project_id)?)
}

/// Trusts a project (its own agents, commands and skills are used from the next run), or not.
#[tauri::command]
pub fn set_project_trusted(
    state: State<'_, AppState>,
    project_id: ProjectId,
    trusted: bool,
) -> Result<()> {
    state.host()?.set_project_trusted(project_id, trusted)?;
    state.changed();
    Ok(())
}

// ---- the app ------------------------------------------------------------------------------------

#[tauri::command]
pub fn app_settings(state: State<'_, AppState>) -> Result<settings::AppSettings> {
    Ok(state.host()?.app_settings())
}

/// Saves the app's settings whole; a wrong field is named. How many tasks may run at once
/// applies from the next start.
#[tauri::command]
pub fn save_app_settings(
    state: State<'_, AppState>,
    settings: settings::AppSettings,
) -> std::result::Result<(), FieldError> {
    let host = host_for(&state, "maxRunning")?;
    host.save_app_settings(&settings)
}

// ---- models -------------------------------------------------------------------------------------

#[tauri::command]
pub fn model_catalog(state: State<'_, AppState>) -> Result<Vec<settings::CatalogEntry>> {
    Ok(state.host()?.catalog()?)
}

/// Adds or changes a model (its limits and prices); a wrong field is named.
#[tauri::command]
pub fn save_model(
    state: State<'_, AppState>,
    form: settings::ModelForm,
) -> std::result::Result<String, FieldError> {
    let host = host_for(&state, "id")?;
    Ok(host.save_model(&form)?.id)
}

#[tauri::command]
pub fn remove_model(state: State<'_, AppState>, id: String) -> Result<bool> {
    Ok(state.host()?.remove_model(&id)?)
}

/// The host, or why the data cannot be used as an error on the form's `field`.
fn host_for<'a>(
    state: &'a State<'_, AppState>,
    field: &'static str,
) -> std::result::Result<&'a codewright_host::Host, FieldError> {
    state.host().map_err(|e| FieldError {
        field,
        message: e.message,
    })
}
