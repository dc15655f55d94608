//! A project's saved permission rules as a person edits them: listed, added (checked first, so a
//! rule that could never match is refused with the wrong part named), removed. Used by the CLI's
//! `rules` and the app's settings page.

use crate::settings::FieldError;
use crate::store_error;
use crate::HostError;
use codewright_protocol::{PermissionRule, ProjectId, SavedRule};
use codewright_store::Store;
use codewright_tools::Registry;

/// The built-in tools' names, which rules name (MCP tools are `server__tool`).
pub fn tool_names() -> Vec<String> {
    let mut names: Vec<String> = Registry::builtin()
        .specs()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    names.sort();
    names
}

/// The rules saved for a project, oldest first.
pub fn rules(store: &Store, project: ProjectId) -> Result<Vec<SavedRule>, HostError> {
    store.project(project).map_err(store_error)?;
    store.rules(project).map_err(store_error)
}

/// Saves a rule for a project (an equal tool + pattern gets the new action), after checking it
/// could match something: a tool that exists, a pattern of the kind its tool is matched by.
pub fn add_rule(
    store: &Store,
    project: ProjectId,
    rule: &PermissionRule,
) -> Result<SavedRule, FieldError> {
    let rule = PermissionRule {
        tool: rule.tool.trim().to_string(),
        pattern: rule.pattern.trim().to_string(),
        action: rule.action,
    };
    codewright_tools::check_rule(&rule, &tool_names())
        .map_err(|(field, message)| FieldError { field, message })?;
    let unusable = |e: codewright_store::StoreError| FieldError {
        field: "tool",
        message: e.to_string(),
    };
    store.project(project).map_err(unusable)?;
    store.save_rule(project, &rule).map_err(unusable)
}

/// Removes a saved rule.
pub fn remove_rule(store: &Store, id: i64) -> Result<(), HostError> {
    store.remove_rule(id).map_err(store_error)
}

impl crate::Host {
    /// The permission rules a project saved ("always allow").
    pub fn rules(&self, project: ProjectId) -> Result<Vec<SavedRule>, HostError> {
        rules(&self.inner.store(), project)
    }

    /// Saves a rule for a project, after checking it could match something.
    pub fn add_rule(
        &self,
        project: ProjectId,
        rule: &PermissionRule,
    ) -> Result<SavedRule, FieldError> {
        add_rule(&self.inner.store(), project, rule)
    }

    pub fn remove_rule(&self, id: i64) -> Result<(), HostError> {
        remove_rule(&self.inner.store(), id)
    }
}
