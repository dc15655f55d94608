//! `tasks diff|commit|merge|discard|restore`: a task in a worktree of its own, reviewed and
//! carried to its base — each a host operation (the one the windows call too).

use crate::error::Result;
use crate::output::{table, to_json};
use codewright_host::worktrees::Merge;
use codewright_host::Host;
use codewright_protocol::TaskId;
use std::io::{BufRead, IsTerminal, Write};

/// Finishes what a crash or a hand left half done in the tasks' worktrees (as the app does when
/// it starts), saying what it found on stderr.
fn repair(host: &Host) {
    for note in host.repair_worktrees() {
        eprintln!("codewright-cli: {note}");
    }
}

/// `tasks diff ID [--stat]`.
pub fn diff(host: &Host, id: TaskId, stat: bool, json: bool) -> Result<String> {
    repair(host);
    if host.task(id)?.worktree.is_none() {
        return folder_diff(host, id, stat, json);
    }
    let review = host.task_changes(id)?;
    if json {
        return Ok(to_json(&review));
    }
    let changes = &review.changes;
    if changes.files.is_empty() {
        return Ok(format!(
            "Task {} has changed nothing yet (branch {}, from {}).\n",
            id.0, review.worktree.branch, review.worktree.base
        ));
    }
    if !stat {
        let mut out = changes.patch.clone();
        if changes.patch_cut {
            out.push_str("[the diff is cut here for its length; `--stat` lists every file]\n");
        }
        return Ok(out);
    }
    let mut out = stat_table(&changes.files);
    let (added, removed) = changes.totals();
    let status = &review.status;
    out.push_str(&format!(
        "{} files, +{added} −{removed}; branch {} is {} ahead and {} behind {}; {} not committed\n",
        changes.files.len(),
        review.worktree.branch,
        status.ahead,
        status.behind,
        review.worktree.base,
        status.uncommitted.len()
    ));
    Ok(out)
}

/// `tasks diff ID` of a task working in the project folder: each file it changed, as it was
/// before the task first changed it against the file now.
fn folder_diff(host: &Host, id: TaskId, stat: bool, json: bool) -> Result<String> {
    let review = host.folder_review(id)?;
    if json {
        return Ok(to_json(&review));
    }
    let files = review.files;
    if files.is_empty() {
        return Ok(format!(
            "Task {} has changed no file yet (it works in the project folder).\n",
            id.0
        ));
    }
    if !stat {
        return Ok(codewright_host::folder_changes::patch_of(&files));
    }
    let mut out = stat_table(&files);
    let (added, removed) = files.iter().fold((0, 0), |(a, r), f| {
        (a + f.added.unwrap_or(0), r + f.removed.unwrap_or(0))
    });
    let committed = match &review.uncommitted {
        Some(open) if !open.is_empty() => format!(", {} not committed", open.len()),
        Some(_) if review.committed.len() == files.len() => ", all committed".to_string(),
        Some(_) => ", nothing to commit".to_string(),
        None => String::new(),
    };
    out.push_str(&format!(
        "{} files, +{added} −{removed}{committed}, in the project folder (each file as it was before the task changed it, against it now)\n",
        files.len()
    ));
    Ok(out)
}

/// Files with the lines added and removed, one a row.
fn stat_table(files: &[codewright_host::worktrees::FileChange]) -> String {
    let count = |n: Option<u64>| n.map_or("binary".to_string(), |n| n.to_string());
    table(
        &["ADDED", "REMOVED", "FILE"],
        files.iter().map(|f| {
            vec![
                count(f.added),
                count(f.removed),
                match &f.old_path {
                    Some(old) => format!("{old} → {}", f.path),
                    None => f.path.clone(),
                },
            ]
        }),
    )
}

/// `tasks commit ID [-m MESSAGE]`.
pub fn commit(host: &Host, id: TaskId, message: Option<&str>, json: bool) -> Result<String> {
    repair(host);
    let committed = host.commit_task(id, message)?;
    Ok(match (json, &committed.commit) {
        (true, _) => to_json(&committed),
        (false, Some(commit)) => format!(
            "Committed {} on branch {}\n",
            &commit[..commit.len().min(12)],
            committed.branch
        ),
        (false, None) => format!("Nothing to commit on branch {}\n", committed.branch),
    })
}

/// `tasks merge ID [--ff-only|--no-ff]`.
pub fn merge(host: &Host, id: TaskId, ff_only: bool, no_ff: bool, json: bool) -> Result<String> {
    repair(host);
    let mode = match (ff_only, no_ff) {
        (true, _) => Merge::FastForward,
        (_, true) => Merge::MergeCommit,
        _ => Merge::Auto,
    };
    let merged = host.merge_task(id, mode)?;
    Ok(match json {
        true => to_json(&merged),
        false => format!(
            "Merged task {} into {} ({}); {} is at {}\n",
            id.0,
            merged.base,
            if merged.fast_forward {
                "a fast-forward"
            } else {
                "a merge commit"
            },
            merged.base,
            &merged.commit[..merged.commit.len().min(12)]
        ),
    })
}

/// `tasks discard ID [--yes]`: says what is there first, and asks on a terminal.
pub fn discard(host: &Host, id: TaskId, yes: bool, json: bool) -> Result<String> {
    repair(host);
    if !yes {
        let review = host.task_changes(id)?;
        let status = &review.status;
        let what = format!(
            "task {} has {} commit(s) on branch {} and {} file(s) not committed{}",
            id.0,
            status.ahead,
            review.worktree.branch,
            status.uncommitted.len(),
            match status.uncommitted.len() {
                0 => String::new(),
                _ => format!(" ({})", status.uncommitted.join(", ")),
            }
        );
        if !std::io::stdin().is_terminal() {
            return Err(crate::error::bad_input(format!(
                "{what}; nothing was discarded — run again with --yes (all of it is kept under refs/codewright/archive/{} until `tasks restore {}`)",
                id.0, id.0
            )));
        }
        eprint!("codewright-cli: {what}. Discard the worktree (its work is kept until `tasks restore {}`)? [y/N] ", id.0);
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Ok("Nothing was discarded.\n".into());
        }
    }
    let discarded = host.discard_task(id)?;
    Ok(match json {
        true => to_json(&discarded),
        false => format!(
            "Discarded task {}'s worktree; its work is kept under {} — `codewright-cli tasks restore {}` brings it back\n",
            id.0, discarded.archive_ref, id.0
        ),
    })
}

/// `tasks restore ID`.
pub fn restore(host: &Host, id: TaskId, json: bool) -> Result<String> {
    repair(host);
    let task = host.restore_task(id)?;
    let tree = task
        .worktree
        .as_ref()
        .expect("a restored task has its worktree");
    Ok(match json {
        true => to_json(&task),
        false => format!(
            "Restored task {} in {} on branch {}\n",
            id.0, tree.path, tree.branch
        ),
    })
}

/// `tasks pr ID [--title T] [--body B]`.
pub fn pull_request(
    host: &Host,
    id: TaskId,
    title: Option<String>,
    body: Option<String>,
    json: bool,
) -> Result<String> {
    repair(host);
    let (title, body) = match title {
        Some(title) => (title, body.unwrap_or_default()),
        None => {
            let runtime = crate::runtime(None)?;
            let draft = runtime.block_on(host.draft_pull_request(id))?;
            (draft.title, body.unwrap_or(draft.body))
        }
    };
    let url = host.open_pull_request(id, &title, &body)?;
    Ok(match json {
        true => to_json(&serde_json::json!({ "url": url, "title": title })),
        false => format!("Opened {url}\n"),
    })
}

/// The checks of the task's pull request: counts, and each failed check with its link.
pub fn checks(host: &Host, id: TaskId, json: bool) -> Result<String> {
    let checks = host.pull_request_checks(id)?;
    if json {
        return Ok(to_json(&checks));
    }
    let total = checks.passed + checks.failed + checks.pending + checks.skipped;
    let mut out = match total {
        0 => format!("{}: no checks reported\n", checks.url),
        _ => format!(
            "{}: {} passed, {} failed, {} pending, {} skipped\n",
            checks.url, checks.passed, checks.failed, checks.pending, checks.skipped
        ),
    };
    for failed in &checks.failing {
        out.push_str(&format!("  failed: {}  {}\n", failed.name, failed.link));
    }
    Ok(out)
}
