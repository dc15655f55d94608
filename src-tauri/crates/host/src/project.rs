//! A project's settings as a person edits them on a settings screen: what the agent is told
//! about the project (its context and rules, both in the system prompt), the mode of a task that
//! has none of its own, the sandbox for commands, and web access to local addresses.

use crate::settings::FieldError;
use crate::store_error;
use crate::HostError;
use codewright_protocol::{PermissionMode, ProjectId};
use codewright_store::Store;
use serde::{Deserialize, Serialize};

/// The longest context or rules text (characters): both go into every request's prompt.
pub const INSTRUCTIONS_MAX: usize = 20_000;

/// A project's settings, as shown and as saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectForm {
    pub context: String,
    pub rules: String,
    pub default_mode: PermissionMode,
    pub sandbox: bool,
    pub allow_private_network: bool,
    /// Use the agents, commands and skills the project's folder defines.
    pub trusted: bool,
    /// New tasks work in a git worktree of their own.
    #[serde(default)]
    pub worktrees: bool,
    /// Run in each new worktree before its task does anything else; empty: nothing.
    #[serde(default)]
    pub worktree_set_up: String,
}

/// The longest set-up command (characters).
pub const SET_UP_MAX: usize = 2_000;

/// The project's settings now.
pub fn project_form(store: &Store, id: ProjectId) -> Result<ProjectForm, HostError> {
    let project = store.project(id).map_err(store_error)?;
    let settings = store.project_settings(id).map_err(store_error)?;
    Ok(ProjectForm {
        context: project.context,
        rules: project.rules,
        default_mode: settings.default_mode.unwrap_or_default(),
        sandbox: settings.sandbox,
        allow_private_network: settings.allow_private_network,
        trusted: settings.trusted,
        worktrees: settings.worktrees,
        worktree_set_up: settings.worktree_set_up,
    })
}

/// Checks `form` whole and saves it; nothing is saved if a field is wrong.
pub fn save_project(store: &Store, id: ProjectId, form: &ProjectForm) -> Result<(), FieldError> {
    let wrong = |field: &'static str, message: String| FieldError { field, message };
    for (field, text) in [("context", &form.context), ("rules", &form.rules)] {
        let length = text.chars().count();
        if length > INSTRUCTIONS_MAX {
            return Err(wrong(
                field,
                format!("This is {length} characters; keep it under {INSTRUCTIONS_MAX}: it goes into every request to the model. Put long documents in the project (AGENTS.md) instead."),
            ));
        }
    }
    let set_up = form.worktree_set_up.chars().count();
    if set_up > SET_UP_MAX {
        return Err(wrong(
            "worktreeSetUp",
            format!("This is {set_up} characters; keep it under {SET_UP_MAX}. For more, put the steps in a script in the project and run that."),
        ));
    }
    if form.default_mode == PermissionMode::Yolo {
        return Err(wrong(
            "defaultMode",
            "Yolo runs everything without asking, so it is chosen per task, after a confirmation — not for every task of a project.".into(),
        ));
    }
    let unusable = |e: codewright_store::StoreError| wrong("context", e.to_string());
    let mut settings = store.project_settings(id).map_err(unusable)?;
    settings.default_mode = Some(form.default_mode);
    settings.sandbox = form.sandbox;
    settings.allow_private_network = form.allow_private_network;
    settings.trusted = form.trusted;
    settings.worktrees = form.worktrees;
    settings.worktree_set_up = form.worktree_set_up.trim().to_string();
    store
        .set_project_settings(id, &settings)
        .map_err(unusable)?;
    store
        .set_project_instructions(id, form.context.trim(), form.rules.trim())
        .map_err(unusable)?;
    Ok(())
}

/// Whether the user trusts a project, and what its folder defines that trust would let in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrust {
    pub trusted: bool,
    pub defines: codewright_extensions::ProjectDefines,
    /// The project defines something its trust would let in, and is not trusted: ask.
    pub ask: bool,
}

/// Whether project `id` is trusted and what its folder defines (agents, commands, skills).
pub fn project_trust(store: &Store, id: ProjectId) -> Result<ProjectTrust, HostError> {
    let project = store.project(id).map_err(store_error)?;
    let trusted = store.project_settings(id).map_err(store_error)?.trusted;
    let defines = codewright_extensions::project_defines(std::path::Path::new(&project.root_path));
    Ok(ProjectTrust {
        ask: !trusted && !defines.is_empty(),
        trusted,
        defines,
    })
}

/// Trusts project `id` (its own agents, commands and skills are used from the next run), or
/// takes the trust back.
pub fn set_project_trusted(store: &Store, id: ProjectId, trusted: bool) -> Result<(), HostError> {
    let mut settings = store.project_settings(id).map_err(store_error)?;
    settings.trusted = trusted;
    store
        .set_project_settings(id, &settings)
        .map_err(store_error)
}

impl crate::Host {
    /// The project's settings as its settings screen shows them.
    pub fn project_form(&self, id: ProjectId) -> Result<ProjectForm, HostError> {
        project_form(&self.inner.store(), id)
    }

    pub fn save_project(&self, id: ProjectId, form: &ProjectForm) -> Result<(), FieldError> {
        save_project(&self.inner.store(), id, form)
    }
}
