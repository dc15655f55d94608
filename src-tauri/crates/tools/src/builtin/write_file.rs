//! `write_file`, and the one path every file change takes: propose hunks, get approval (all,
//! some hunks, or an edited version), checkpoint, write atomically, report what was written.

use super::{resolve_path, MAX_FILE_BYTES};
use crate::paths::ResolvedPath;
use crate::session::Ask;
use crate::{
    apply_hunks, hunks, parse_input, schema_of, CallContext, Grant, Subject, Tool, ToolOutput,
};
use async_trait::async_trait;
use codewright_protocol::{Action, DecisionKind, ToolCategory, ToolDetail, EDITABLE_BYTES};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

pub struct WriteFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// Path of the file, relative to the project root. Missing folders are created.
    path: String,
    /// The whole new content of the file.
    content: String,
}

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "Create a file, or replace the whole content of a file you have read in this task. Prefer edit_file for changes to existing files. The user may approve only part of the change; the result says exactly what was written."
    }
    fn input_schema(&self) -> Value {
        schema_of::<Input>()
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    async fn run(&self, input: Value, cx: &CallContext) -> ToolOutput {
        let input: Input = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let path = match resolve_path(cx, &input.path, true).await {
            Ok(p) => p,
            Err(e) => return e,
        };
        let old = match current(cx, &path) {
            Ok(old) => old,
            Err(e) => return e,
        };
        if old.is_some() && cx.session.last_seen(&path.real).is_none() {
            return ToolOutput::error(format!(
                "{} already exists and you have not read it in this task; read it first (read_file), then edit it with edit_file or write it again",
                path.display
            ));
        }
        if let Some(old) = &old {
            if let Err(e) = unchanged_since_read(cx, &path, old) {
                return e;
            }
        }
        apply_change(cx, &path, old, input.content.into_bytes(), None).await
    }
}

/// The file's current bytes, `None` when it does not exist.
pub(crate) fn current(
    cx: &CallContext,
    path: &ResolvedPath,
) -> Result<Option<Vec<u8>>, ToolOutput> {
    let _ = cx;
    // (Along the checked path, as it will be written: never what a link swapped in leads to.)
    let file = match codewright_nofollow::open(&path.real) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(super::io_error(&path.display, &e)),
    };
    match file.metadata() {
        Ok(m) if m.is_dir() => Err(ToolOutput::error(format!("{} is a folder", path.display))),
        Ok(m) if !m.is_file() => Err(ToolOutput::error(format!(
            "{} is not a regular file (a named pipe, a socket or a device); it is not written",
            path.display
        ))),
        Ok(m) if m.len() > MAX_FILE_BYTES => Err(ToolOutput::error(format!(
            "{} is {}; files over {} are not edited by the agent",
            path.display,
            super::human_bytes(m.len()),
            super::human_bytes(MAX_FILE_BYTES)
        ))),
        Ok(m) => {
            let mut bytes = Vec::with_capacity(m.len() as usize);
            std::io::Read::read_to_end(&mut { file }, &mut bytes)
                .map(|_| Some(bytes))
                .map_err(|e| super::io_error(&path.display, &e))
        }
        Err(e) => Err(super::io_error(&path.display, &e)),
    }
}

/// Refuses when the file differs from what the agent last read or wrote.
pub(crate) fn unchanged_since_read(
    cx: &CallContext,
    path: &ResolvedPath,
    bytes: &[u8],
) -> Result<(), ToolOutput> {
    match cx.session.last_seen(&path.real) {
        None => Err(ToolOutput::error(format!(
            "you have not read {} in this task; read it first (read_file), then edit it",
            path.display
        ))),
        Some(seen) if seen.hash != blake3::hash(bytes) => Err(ToolOutput::error(format!(
            "{} changed on disk since you last read it (the user or a command edited it); read it again, then redo the edit",
            path.display
        ))),
        Some(_) => Ok(()),
    }
}

/// Proposes `old → new` for approval and writes what was approved. `note` says how an edit
/// matched, when not exactly.
pub(crate) async fn apply_change(
    cx: &CallContext,
    path: &ResolvedPath,
    old: Option<Vec<u8>>,
    new: Vec<u8>,
    note: Option<String>,
) -> ToolOutput {
    let created = old.is_none();
    let old_bytes = old.unwrap_or_default();
    if !created && old_bytes == new {
        return ToolOutput::error(format!(
            "this would not change {}: the new content is the same as the old",
            path.display
        ));
    }
    let texts = match (std::str::from_utf8(&old_bytes), std::str::from_utf8(&new)) {
        (Ok(o), Ok(n)) => Some((o.to_string(), n.to_string())),
        _ => None,
    };
    let proposal = match &texts {
        Some((o, n)) => hunks(o, n),
        None => hunks(
            &String::from_utf8_lossy(&old_bytes),
            &String::from_utf8_lossy(&new),
        ),
    };
    let mut decisions = vec![
        DecisionKind::Approve,
        DecisionKind::ApproveAlways,
        DecisionKind::Reject,
    ];
    // The user may change the proposal only where they can see all of it.
    let editable = texts
        .as_ref()
        .filter(|(_, n)| n.len() <= EDITABLE_BYTES)
        .map(|(_, n)| n.clone());
    if texts.is_some() && !created && proposal.len() > 1 {
        decisions.push(DecisionKind::ApproveHunks);
    }
    if editable.is_some() {
        decisions.push(DecisionKind::ApproveEdited);
    }
    let (added, removed) = proposal
        .iter()
        .flat_map(|h| &h.lines)
        .fold((0, 0), |(a, r), l| match l.kind {
            codewright_protocol::LineKind::Added => (a + 1, r),
            codewright_protocol::LineKind::Removed => (a, r + 1),
            codewright_protocol::LineKind::Context => (a, r),
        });
    let summary = if created {
        format!("Create {} ({added} lines)", path.display)
    } else {
        format!(
            "Edit {} ({} hunk{}, +{added} −{removed})",
            path.display,
            proposal.len(),
            if proposal.len() == 1 { "" } else { "s" }
        )
    };
    let grant = match cx
        .authorize(Ask {
            category: ToolCategory::Write,
            subject: Subject::Paths(vec![path]),
            action: Action::Edit {
                path: path.display.clone(),
                created,
                hunks: proposal.clone(),
                content: editable,
            },
            summary,
            decisions: &decisions,
            force_ask: None,
        })
        .await
    {
        Ok(g) => g,
        Err(e) => return e,
    };
    let all: Vec<usize> = (0..proposal.len()).collect();
    let (content, applied, edited_by_user) = match grant {
        Grant::All => (new, all.clone(), false),
        Grant::Hunks(mut selected) => {
            selected.retain(|i| *i < proposal.len());
            selected.sort_unstable();
            selected.dedup();
            let (o, n) = texts.as_ref().expect("hunks are offered for text only");
            (apply_hunks(o, n, &selected).into_bytes(), selected, false)
        }
        Grant::Edited(content) => (content.into_bytes(), all.clone(), true),
    };
    let rejected: Vec<usize> = all
        .iter()
        .copied()
        .filter(|i| !applied.contains(i))
        .collect();
    let detail = |applied: Vec<usize>, rejected: Vec<usize>| ToolDetail::Diff {
        path: path.display.clone(),
        created,
        hunks: proposal.clone(),
        applied,
        rejected,
    };
    if applied.is_empty() && !proposal.is_empty() {
        return ToolOutput::error(format!(
            "The user rejected every hunk of this change to {}; the file was not changed.",
            path.display
        ))
        .with_detail(detail(vec![], rejected));
    }
    // The approval may have taken minutes: the file must still be what the proposal was made from.
    let now = match current(cx, path) {
        Ok(now) => now,
        Err(e) => return e,
    };
    if now.as_deref().unwrap_or_default() != old_bytes.as_slice() || now.is_some() == created {
        return ToolOutput::error(format!(
            "{} changed on disk while the change waited for approval; nothing was written. Read it again and redo the edit.",
            path.display
        ));
    }
    let session = &cx.session;
    if let Err(e) = session
        .checkpoints
        .before_change(session.task, session.turn(), &path.real)
    {
        return ToolOutput::error(format!(
            "{e}; nothing was written, because the change could not be made undoable"
        ));
    }
    // Along the checked path, never through a link swapped in since, and never making the
    // project's folder again if it was deleted meanwhile.
    let keep = if path.inside {
        session.root.as_path()
    } else {
        Path::new("/")
    };
    if let Err(e) = codewright_nofollow::write(&path.real, &content, None, keep) {
        return ToolOutput::error(format!("cannot write {}: {e}", path.display));
    }
    session.remember(&path.real, &content);

    let lines = content.iter().filter(|b| **b == b'\n').count();
    let mut text = if created {
        format!("Created {} ({lines} lines).", path.display)
    } else if rejected.is_empty() {
        format!(
            "Edited {} ({} hunk{}).",
            path.display,
            applied.len(),
            if applied.len() == 1 { "" } else { "s" }
        )
    } else {
        let list = |v: &[usize]| {
            v.iter()
                .map(|i| {
                    let h = &proposal[*i];
                    format!(
                        "#{} (old lines {}–{})",
                        i + 1,
                        h.old_start,
                        h.old_start + h.old_lines.max(1) - 1
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "Edited {} partially: the user applied hunk {} and rejected hunk {} of {}. The rejected parts of the file are unchanged; read the file again before editing it further.",
            path.display,
            list(&applied),
            list(&rejected),
            proposal.len()
        )
    };
    if edited_by_user {
        text.push_str(" The user edited the proposed content before approving it; read the file to see what was written.");
    }
    if let Some(note) = note {
        text.push_str(&format!(" ({note})"));
    }
    ToolOutput::text(text).with_detail(detail(applied, rejected))
}
