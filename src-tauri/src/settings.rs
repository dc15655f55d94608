//! The main window's settings page and first-run setup: providers, their keys and the model
//! roles. Thin calls into `codewright_host::settings`; no command ever returns a key. Only the
//! main window's capability grants these commands.

use crate::commands::{CommandError, Result};
use crate::AppState;
use codewright_host::models::{self, ModelChoice};
use codewright_host::settings::{
    self, FieldError, KeySaved, LocalServer, ModelRole, OsKeyring, ProviderForm, ProviderStatus,
    Readiness, TestOutcome,
};
use codewright_host::{mcp, project, rules};
use codewright_protocol::{PermissionRule, ProjectId, SavedRule};
use serde::Serialize;
use std::time::Duration;
use tauri::{AppHandle, Runtime, State, WebviewWindow};
use tauri_plugin_dialog::DialogExt;

/// How long the first-run page waits for a local model server to answer on its usual port.
const LOCAL_WAIT: Duration = Duration::from_millis(800);

/// What the settings page shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub readiness: Readiness,
    pub providers: Vec<ProviderStatus>,
    pub models: Vec<ModelChoice>,
    /// The model each role names itself (`None`: it falls back, small → main).
    pub roles: Vec<(ModelRole, Option<String>)>,
}

#[tauri::command]
pub fn settings_overview(state: State<'_, AppState>) -> Result<Settings> {
    let store = state.store()?;
    let mut roles = Vec::new();
    for role in ModelRole::ALL {
        let own = models::model_for(&store, role)?.filter(|(_, from)| *from == role);
        roles.push((role, own.map(|(id, _)| id)));
    }
    Ok(Settings {
        readiness: settings::readiness(&store, &OsKeyring)?,
        providers: settings::provider_statuses(&store, &OsKeyring)?,
        models: models::choices(&store)?,
        roles,
    })
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
    let store = state.store().map_err(|e| FieldError {
        field: "name",
        message: e.message,
    })?;
    let saved = settings::save_provider(&store, &form)?;
    state.changed();
    Ok(saved.name)
}

#[tauri::command]
pub fn remove_provider(state: State<'_, AppState>, name: String) -> Result<()> {
    settings::remove_provider(&*state.store()?, &name)?;
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
    Ok(settings::set_key(
        &*state.store()?,
        &OsKeyring,
        &provider,
        &key,
    )?)
}

#[tauri::command]
pub fn remove_provider_key(state: State<'_, AppState>, provider: String) -> Result<bool> {
    Ok(settings::remove_key(
        &*state.store()?,
        &OsKeyring,
        &provider,
    )?)
}

/// Sends MODEL@PROVIDER one short request with its provider's key, and says what happened.
#[tauri::command]
pub async fn test_model(state: State<'_, AppState>, model: String) -> Result<TestOutcome> {
    // The store is not held across the request.
    let provider = models::provider_of(&*state.store()?, &model)?;
    Ok(settings::test_model(&OsKeyring, &provider, &model).await?)
}

#[tauri::command]
pub fn set_model_role(
    state: State<'_, AppState>,
    role: ModelRole,
    model: Option<String>,
) -> std::result::Result<(), CommandError> {
    settings::set_role(&*state.store()?, role, model.as_deref())?;
    Ok(())
}

// ---- MCP servers ------------------------------------------------------------------------------

/// The configured MCP servers (secret values never included: only their names).
#[tauri::command]
pub fn mcp_servers(state: State<'_, AppState>) -> Result<Vec<mcp::ServerView>> {
    Ok(mcp::server_views(&*state.store()?)?)
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
    let view = mcp::add_server(&*state.store().map_err(unusable)?, &OsKeyring, &form)?;
    state.host().map_err(unusable)?.mcp_changed();
    Ok(view)
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
    let store = state.store().map_err(|e| file(e.message))?;
    let report = mcp::import_servers(&store, &OsKeyring, &text, project_id)
        .map_err(|e| file(format!("{path}: {e}.")))?;
    state.host().map_err(|e| file(e.message))?.mcp_changed();
    Ok(report)
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
    mcp::remove_server(&*state.store()?, &OsKeyring, &name)?;
    state.host()?.mcp_changed();
    Ok(())
}

#[tauri::command]
pub fn set_mcp_server_enabled(
    state: State<'_, AppState>,
    name: String,
    enabled: bool,
) -> Result<()> {
    state.store()?.set_mcp_enabled(&name, enabled)?;
    state.host()?.mcp_changed();
    Ok(())
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
    let view = mcp::set_call_timeout(&*state.store().map_err(unusable)?, &name, &seconds)?;
    state.host().map_err(unusable)?.mcp_changed();
    Ok(view)
}

/// Connects to a server once: its tools and prompts, or why it failed (with the tail of its
/// stderr).
#[tauri::command]
pub async fn check_mcp_server(
    state: State<'_, AppState>,
    name: String,
) -> Result<mcp::ServerCheck> {
    // The store is not held while connecting.
    let check = mcp::check_server(&*state.store()?, &name)?;
    Ok(check.await)
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
        rules: rules::rules(&*state.store()?, project_id)?,
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
    let store = state.store().map_err(|e| FieldError {
        field: "tool",
        message: e.message,
    })?;
    rules::add_rule(&store, project_id, &rule)
}

#[tauri::command]
pub fn remove_rule(state: State<'_, AppState>, id: i64) -> Result<()> {
    Ok(rules::remove_rule(&*state.store()?, id)?)
}

// ---- project settings -------------------------------------------------------------------------

#[tauri::command]
pub fn project_settings(
    state: State<'_, AppState>,
    project_id: ProjectId,
) -> Result<project::ProjectForm> {
    Ok(project::project_form(&*state.store()?, project_id)?)
}

/// Saves a project's settings whole; a wrong field is named in the error.
#[tauri::command]
pub fn save_project_settings(
    state: State<'_, AppState>,
    project_id: ProjectId,
    form: project::ProjectForm,
) -> std::result::Result<(), FieldError> {
    let store = state.store().map_err(|e| FieldError {
        field: "context",
        message: e.message,
    })?;
    project::save_project(&store, project_id, &form)?;
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
    Ok(settings::app_settings(&*state.store()?))
}

/// Saves the app's settings whole; a wrong field is named. How many tasks may run at once
/// applies from the next start.
#[tauri::command]
pub fn save_app_settings(
    state: State<'_, AppState>,
    settings: settings::AppSettings,
) -> std::result::Result<(), FieldError> {
    let store = state.store().map_err(|e| FieldError {
        field: "maxRunning",
        message: e.message,
    })?;
    settings::save_app_settings(&store, &settings)
}

// ---- models -------------------------------------------------------------------------------------

#[tauri::command]
pub fn model_catalog(state: State<'_, AppState>) -> Result<Vec<settings::CatalogEntry>> {
    Ok(settings::catalog(&*state.store()?)?)
}

/// Adds or changes a model (its limits and prices); a wrong field is named.
#[tauri::command]
pub fn save_model(
    state: State<'_, AppState>,
    form: settings::ModelForm,
) -> std::result::Result<String, FieldError> {
    let store = state.store().map_err(|e| FieldError {
        field: "id",
        message: e.message,
    })?;
    Ok(settings::save_model(&store, &form)?.id)
}

#[tauri::command]
pub fn remove_model(state: State<'_, AppState>, id: String) -> Result<bool> {
    Ok(settings::remove_model(&*state.store()?, &id)?)
}
