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
use serde::Serialize;
use std::time::Duration;
use tauri::State;

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
