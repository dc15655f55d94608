//! The request a small model is sent while the user's check fails (issue 34): the task and the
//! files it was shown, then the files it changed as they are now and the check's latest output,
//! then whatever it has looked up since — not every answer it wrote before — and last, asked
//! for the cause in words before the file ([`CAUSE_FIRST`]). A 1.5B model shown
//! its own failed attempts copies them: recorded on pangram and grains, it answered a failing
//! test with the same empty fence, or the same wrong function, three times in a row. The task
//! keeps the whole conversation; only what is sent is shorter (and its opening, the same each
//! time, stays in a local server's prompt cache).

use codewright_llm::Sampling;
use codewright_protocol::{Message, Part, Role, ToolContent};
use std::path::Path;

/// The last message of the request for a fix, a short one of its own: the cause first, in
/// words, then the file. Sampled on acronym one test short (2026-11-30, Qwen2.5-Coder-1.5B on
/// llama.cpp, 24 samples each): the request without it gave a passing file 1 time in 24 (the file
/// mostly copied as it was); with it as a turn of its own 7 in 24 (3 in 12 in an earlier run);
/// with the same words in the request's one message, 1 and 2 in 24. So it is a turn of its own
/// where the model's template takes two user turns in a row (`ModelInfo::user_turns_in_a_row`),
/// else joined to the message before. BENCHMARKS.md, "The cause in words first".
pub const CAUSE_FIRST: &str = "Before you write any code, say in one or two sentences which test input still fails and exactly what your code does wrong with it. Then write the whole corrected file: its path on a line by itself, then its content in one fenced code block.";

/// A changed file longer than this (bytes) is not shown whole: the model reads it itself.
const MAX_SHOWN: usize = 16 * 1024;

/// What a check's result says when it ran again with nothing changed since it failed.
pub fn fails_as_before(command: &str) -> String {
    format!("`{command}` fails as it did before: nothing has changed since it last ran (its output is above). Change the code first: write the whole corrected file, its path on a line by itself, then its content in one fenced code block.")
}

/// Where the user's last message and the files read for it with it end (an index into
/// `messages`).
fn opening(messages: &[Message]) -> Option<usize> {
    let asked = messages.iter().rposition(|m| m.role == Role::User)?;
    // The files shown with the task (read for the model before its first answer).
    Some(match messages.get(asked + 1..asked + 3) {
        Some([reads, results])
            if reads.role == Role::Assistant
                && results.role == Role::Tool
                && !reads.parts.is_empty()
                && reads
                    .parts
                    .iter()
                    .all(|p| matches!(p, Part::ToolCall { name, .. } if name == crate::attach::READ_FILE)) =>
        {
            asked + 2
        }
        _ => asked,
    })
}

/// What a small model that went round in circles (the same calls failing the same way three
/// times) is sent once instead of being stopped: the task and the files read for it, then
/// [`START_AGAIN`] — none of its answers since, but the files they changed as they are now
/// (`root` is the project). Recorded on leap: told by the tools that it had read the stub
/// already, a 1.5B model asked for it again three times, each time shown its own last request;
/// the same model, given the task afresh, writes the file.
pub fn start_again(messages: &[Message], root: &Path) -> Option<Vec<Message>> {
    let opening = opening(messages)?;
    let mut words = String::new();
    for (path, content) in changed_files(&messages[opening + 1..], root) {
        words.push_str(&format!(
            "You changed {path} since; it is now:\n````\n{}````\n\n",
            ended(&content)
        ));
    }
    words.push_str(START_AGAIN);
    Some(
        messages[..=opening]
            .iter()
            .cloned()
            .chain(std::iter::once(Message::user(words)))
            .collect(),
    )
}

/// The request that asks a small model for the work afresh: the user's message and the files
/// shown with it, as they were first sent, and nothing since — a new sample of its first answer
/// (which a local server answers from its prompt cache, at the cost of the answer alone).
/// Recorded on acronym: its first file passed 6 of 9 tests, and sent back three times with the
/// failures it wrote that file again unchanged each time; of eight first answers sampled afresh
/// from the same request, one passed all nine. `None` before the user's message.
pub fn afresh(messages: &[Message]) -> Option<Vec<Message>> {
    Some(messages[..=opening(messages)?].to_vec())
}

/// How the `nth` request for the work afresh is sampled: at a temperature of at least
/// [`FRESH_TEMPERATURE`] and with a seed of its own, so that it is a new answer — a model set to
/// (or a server started with) temperature 0 or a fixed seed writes the same first answer again
/// otherwise (seen in the window with `--temp 0`: the same wrong file four times afresh). The
/// model's own seed, when it has one, moved on by `nth` (the same answers run after run, as
/// the user asked); else a random one.
pub fn fresh_sampling(set: Sampling, nth: u32) -> Sampling {
    use std::hash::{BuildHasher, Hasher};
    let random = || {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(nth);
        // (Within an int32: Gemini's seed is one.)
        hasher.finish() as u32 & i32::MAX as u32
    };
    Sampling {
        temperature: Some(
            set.temperature
                .map_or(FRESH_TEMPERATURE, |t| t.max(FRESH_TEMPERATURE)),
        ),
        seed: Some(
            set.seed
                .map_or_else(random, |seed| seed.wrapping_add(nth) & i32::MAX as u32),
        ),
        ..set
    }
}

/// The least temperature an answer asked for afresh is sampled at (llama.cpp's and Ollama's
/// default).
pub const FRESH_TEMPERATURE: f64 = 0.8;

/// The last words of a request that starts a small model again ([`start_again`]).
pub const START_AGAIN: &str = "Everything you need is above: do not read or list files again. Write the change now: the file's path on a line by itself, then its whole new content in one fenced code block.";

/// The messages to send instead of `messages` while the check commands `failing` fail (see the
/// module's doc), or `None` when there is no failing result of theirs to show since the user's
/// last message. `root` is the project, where the changed files are read; `sent_back` says
/// the model's last answer ended its work without a change (it is not among those sent);
/// `best` is the version of its work that did best so far, shown instead of the files now
/// when they do worse, or when `put_back` says that version was put back in the files since
/// (then the checks' latest output is the worse attempt's, and not shown).
pub fn request(
    messages: &[Message],
    root: &Path,
    failing: &[String],
    sent_back: bool,
    best: Option<&Best>,
    put_back: bool,
) -> Option<Vec<Message>> {
    let opening = opening(messages)?;
    let since = &messages[opening + 1..];
    // Each failing check's latest output, and where its result is.
    let mut outputs: Vec<(String, String)> = Vec::new();
    let mut last = None;
    for command in failing {
        let ids: Vec<&str> = since
            .iter()
            .flat_map(|m| m.tool_calls())
            .filter(|c| ran(c.name, c.arguments).as_deref() == Some(command.as_str()))
            .map(|c| c.id)
            .collect();
        let as_before = fails_as_before(command);
        let found = since.iter().enumerate().rev().find_map(|(i, m)| {
            m.parts.iter().find_map(|p| match p {
                Part::ToolResult {
                    call_id, content, ..
                } if ids.contains(&call_id.as_str()) => {
                    let text = ToolContent::joined_text(content);
                    (text != as_before).then_some((i, text))
                }
                _ => None,
            })
        });
        let (i, text) = found?;
        last = last.max(Some(i));
        outputs.push((command.clone(), text));
    }
    let last = last?;
    let mut focus = String::new();
    let now = outputs
        .iter()
        .map(|(_, o)| score(o))
        .try_fold(0u64, |sum, s| s.map(|s| sum.saturating_add(s)));
    match best.filter(|b| put_back || now.is_some_and(|now| now > b.score)) {
        // Worse than an earlier version: that version is what it starts from again.
        Some(best) => {
            focus.push_str(if best.on_disk(root) {
                "Your last change made more of the checks fail than an earlier version of yours did, so that earlier version is back in the file. Start again from it; here it is, with what still failed then.\n\n"
            } else {
                "Your last change made more of the checks fail than an earlier version of yours did. Start again from that earlier version; here it is, with what still failed then.\n\n"
            });
            for (path, content) in &best.files {
                focus.push_str(&format!(
                    "{path} was then:\n````\n{}````\n\n",
                    ended(content)
                ));
            }
            // A file changed only after that version was then as it was at the start.
            for (path, content) in changed_files(since, root) {
                if best.files.iter().all(|(kept, _)| *kept != path) {
                    focus.push_str(&format!(
                        "{path} was then as it was before your changes; it is now:\n````\n{}````\n\n",
                        ended(&content)
                    ));
                }
            }
            for (command, output) in &best.outputs {
                let output = output.trim_end();
                focus.push_str(&format!(
                    "`{command}` failed then:\n````\n{output}\n````\n\n"
                ));
            }
        }
        None => {
            // The files it changed, as they are now.
            for (path, content) in changed_files(since, root) {
                focus.push_str(&format!(
                    "{path} is now:\n````\n{}````\n\n",
                    ended(&content)
                ));
            }
            for (command, output) in &outputs {
                let output = output.trim_end();
                focus.push_str(&format!("`{command}` fails:\n````\n{output}\n````\n\n"));
            }
        }
    }
    // What it looked up since the failure (its calls and their results), not what it said,
    // nor its runs of the failing check again.
    let mut kept: Vec<String> = Vec::new();
    let mut ran_again = false;
    let mut after: Vec<Message> = Vec::new();
    for message in &since[last + 1..] {
        let mut message = message.clone();
        message.parts.retain(|p| match p {
            Part::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                let check = ran(name, arguments).is_some_and(|c| failing.contains(&c));
                if check {
                    ran_again = true;
                } else {
                    kept.push(id.clone());
                }
                !check
            }
            Part::ToolResult { call_id, .. } => kept.contains(call_id),
            _ => message.role != Role::Tool,
        });
        let useful = match message.role {
            Role::Tool => !message.parts.is_empty(),
            _ => message.tool_calls().next().is_some(),
        };
        if useful {
            after.push(message);
        }
    }
    if sent_back {
        focus.push_str("Your last answer changed no file. ");
    }
    if ran_again {
        focus.push_str("Run again with nothing changed, it fails the same way. ");
    }
    focus.push_str("So the task is not done yet. Find the cause in that output, then write the whole corrected file: its path on a line by itself, then its whole new content in one fenced code block.");
    Some(
        messages[..=opening]
            .iter()
            .cloned()
            .chain(std::iter::once(Message::user(focus)))
            .chain(after)
            .chain(std::iter::once(Message::user(CAUSE_FIRST)))
            .collect(),
    )
}

/// The files the calls in `messages` changed, with their content now (those that are text and
/// not too long to show). A call that failed (refused, or an edit that did not apply) changed
/// nothing.
fn changed_files(messages: &[Message], root: &Path) -> Vec<(String, String)> {
    let failed: Vec<&str> = messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult {
                call_id,
                is_error: true,
                ..
            } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut changed: Vec<String> = Vec::new();
    for call in messages.iter().flat_map(|m| m.tool_calls()) {
        if call.name != crate::written::WRITE_FILE && call.name != crate::written::EDIT_FILE
            || failed.contains(&call.id)
        {
            continue;
        }
        let path = serde_json::from_str::<serde_json::Value>(call.arguments)
            .ok()
            .and_then(|a| a["path"].as_str().map(String::from));
        if let Some(path) = path.filter(|p| !changed.contains(p)) {
            changed.push(path);
        }
    }
    changed
        .into_iter()
        .filter_map(|path| {
            let content = crate::written::current(root, &path, MAX_SHOWN)?;
            Some((path, content))
        })
        .collect()
}

/// `content` ending with a line break, as a fenced block needs.
fn ended(content: &str) -> String {
    match content.ends_with('\n') || content.is_empty() {
        true => content.to_string(),
        false => format!("{content}\n"),
    }
}

/// The version of a small model's work that did best against the user's checks so far in a
/// run: how badly they failed ([`score`]), the files it had changed, as they were, and the
/// checks' output then. A 1.5B model's next attempt is often worse than its last (recorded on
/// raindrops: 1 test of 18 failing, then 4, then 14); shown its best again, it starts from there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Best {
    score: u64,
    files: Vec<(String, String)>,
    outputs: Vec<(String, String)>,
}

impl Best {
    /// Keeps the work as it is now in `best` when its checks' `outputs` (each command's output,
    /// just run, failing) say it did better than the best so far, or it is the first said.
    /// Returns the best version when the work now does worse than it: what to put back.
    pub fn record(
        best: &mut Option<Best>,
        messages: &[Message],
        root: &Path,
        outputs: Vec<(String, String)>,
    ) -> Option<Best> {
        let now = outputs
            .iter()
            .map(|(_, o)| score(o))
            .try_fold(0u64, |sum, s| s.map(|s| sum.saturating_add(s)))?;
        if let Some(kept) = best.as_ref().filter(|b| b.score <= now) {
            return (kept.score < now).then(|| kept.clone());
        }
        let since = opening(messages).map_or(0, |o| o + 1);
        let files = changed_files(&messages[since..], root);
        if !files.is_empty() {
            *best = Some(Best {
                score: now,
                files,
                outputs,
            });
        }
        None
    }

    /// The files it had changed (path in the project, content then).
    pub fn files(&self) -> &[(String, String)] {
        &self.files
    }

    /// Whether its checks said one test alone failed: a near pass, where a new sample of the
    /// request for the fix is worth more than a fresh start (BENCHMARKS.md, "One test short").
    pub fn one_short(&self) -> bool {
        self.score == 1
    }

    /// The checks that failed for it (the others passed).
    pub fn failing(&self) -> impl Iterator<Item = &str> {
        self.outputs.iter().map(|(command, _)| command.as_str())
    }

    /// Whether the files in `root` are as this version had them.
    fn on_disk(&self, root: &Path) -> bool {
        self.files.iter().all(|(path, content)| {
            crate::written::current(root, path, MAX_SHOWN).as_ref() == Some(content)
        })
    }
}

/// How badly a check's output says it failed, when it says so in a summary line as pytest,
/// cargo test and jest write it (`3 failed, 1 passed`, `2 failed;`): its failed tests, with an
/// error (a test file that could not be collected, a syntax error) worse than any number of them.
pub fn score(output: &str) -> Option<u64> {
    output.lines().rev().find_map(|line| {
        // unittest's own summary: `FAILED (failures=2, errors=1)`.
        if line.trim_start().starts_with("FAILED (") {
            let count = |key: &str| {
                line.split(key)
                    .nth(1)
                    .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            return Some(count("failures=").saturating_add(count("errors=").saturating_mul(1_000)));
        }
        let words: Vec<&str> = line
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let mut found = None::<u64>;
        for pair in words.windows(2) {
            let Ok(n) = pair[0].parse::<u64>() else {
                continue;
            };
            let weight = match pair[1] {
                "failed" => 1,
                "error" | "errors" => 1_000,
                _ => continue,
            };
            found = Some(found.unwrap_or(0).saturating_add(n.saturating_mul(weight)));
        }
        found
    })
}

/// The command a call of `name` with `arguments` runs, if it is a `bash` call.
fn ran(name: &str, arguments: &str) -> Option<String> {
    let arguments: serde_json::Value = serde_json::from_str(arguments).ok()?;
    (name == crate::written::BASH)
        .then(|| arguments["command"].as_str().map(|c| c.trim().to_string()))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, arguments: serde_json::Value) -> Part {
        Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
            truncated: false,
            signature: None,
        }
    }

    fn result(id: &str, text: &str, is_error: bool) -> Part {
        Part::ToolResult {
            call_id: id.into(),
            content: vec![ToolContent::Text { text: text.into() }],
            is_error,
            detail: None,
        }
    }

    fn assistant(parts: Vec<Part>) -> Message {
        Message::new(Role::Assistant, parts)
    }

    fn tool(parts: Vec<Part>) -> Message {
        Message::new(Role::Tool, parts)
    }

    const CHECK: &str = "python3 -m pytest -q";

    #[test]
    fn the_task_its_files_the_file_now_and_the_failure_are_sent_not_the_attempts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pangram.py"),
            "def is_pangram(s):\n    return False\n",
        )
        .unwrap();
        let messages = vec![
            Message::user("Implement the stub in pangram.py."),
            assistant(vec![call("r1", "read_file", json!({"path": "pangram.py"}))]),
            tool(vec![result("r1", "     1\tdef is_pangram(s):", false)]),
            assistant(vec![
                Part::Text {
                    text: "pangram.py\n```python\n...\n```".into(),
                },
                call(
                    "w1",
                    "write_file",
                    json!({"path": "pangram.py", "content": "x"}),
                ),
                call("c1", "bash", json!({"command": CHECK})),
            ]),
            tool(vec![
                result("w1", "Edited pangram.py", false),
                result("c1", ".F.F  2 failed", true),
            ]),
            // Recorded: the empty fence it answered with, then the same check again.
            assistant(vec![Part::Text {
                text: "```\njson\n```".into(),
            }]),
            assistant(vec![call("c2", "bash", json!({"command": CHECK}))]),
            tool(vec![result("c2", &fails_as_before(CHECK), true)]),
            // A read it made since: kept.
            assistant(vec![call(
                "r2",
                "read_file",
                json!({"path": "pangram_test.py"}),
            )]),
            tool(vec![result("r2", "class PangramTest", false)]),
        ];
        let sent = request(
            &messages,
            dir.path(),
            &[CHECK.to_string()],
            false,
            None,
            false,
        )
        .unwrap();
        assert_eq!(sent[..3], messages[..3]);
        assert_eq!(sent[3].role, Role::User);
        let focus = sent[3].text();
        assert!(
            focus.starts_with("pangram.py is now:\n````\ndef is_pangram(s):\n    return False\n````\n\n`python3 -m pytest -q` fails:\n````\n.F.F  2 failed\n````"),
            "{focus}"
        );
        assert!(
            focus.ends_with("Run again with nothing changed, it fails the same way. So the task is not done yet. Find the cause in that output, then write the whole corrected file: its path on a line by itself, then its whole new content in one fenced code block."),
            "{focus}"
        );
        // What it looked up since, then the cause asked for first, in a message of its own.
        assert_eq!(sent[4..6], messages[8..]);
        assert_eq!(sent[6], Message::user(CAUSE_FIRST));
        assert_eq!(sent.len(), 7);
        // Sent back after an answer that changed nothing, it is told so.
        let sent = request(
            &messages[..6],
            dir.path(),
            &[CHECK.to_string()],
            true,
            None,
            false,
        )
        .unwrap();
        assert_eq!(sent.len(), 5);
        assert!(sent[3]
            .text()
            .contains("Your last answer changed no file. So"));
        assert_eq!(sent[4], Message::user(CAUSE_FIRST));
        // Nothing has failed since the task was asked: nothing to focus on.
        assert_eq!(
            request(
                &messages[..4],
                dir.path(),
                &[CHECK.to_string()],
                false,
                None,
                false
            ),
            None
        );
    }

    #[test]
    fn a_checks_failures_are_read_from_its_summary() {
        assert_eq!(
            score("..F.\n===== 14 failed, 4 passed in 0.04s ====="),
            Some(14)
        );
        assert_eq!(
            score("FAILED a.py::t - x\n1 failed, 2 passed, 1 error in 1s"),
            Some(1_001)
        );
        assert_eq!(
            score("test result: FAILED. 3 passed; 2 failed; 0 ignored"),
            Some(2)
        );
        assert_eq!(score("ERROR collecting\n1 error in 0.1s"), Some(1_000));
        assert_eq!(score("Segmentation fault"), None);
        assert_eq!(
            score("Ran 5 tests\n\nFAILED (failures=2, errors=1)"),
            Some(1_002)
        );
        assert_eq!(score("FAILED (failures=3)"), Some(3));
        assert_eq!(
            score("99999999999999999999 failed"),
            None,
            "not a number it can hold"
        );
        assert_eq!(score("18446744073709551615 errors"), Some(u64::MAX));
    }

    /// A model started again is shown the files it changed since the task was given, as they
    /// are now — not only their first reads — and none of its answers.
    #[test]
    fn starting_again_shows_the_files_changed_since() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("leap.py"), "half\n").unwrap();
        let messages = vec![
            Message::user("Implement leap.py."),
            assistant(vec![call(
                "w",
                "write_file",
                json!({"path": "leap.py", "content": "half\n"}),
            )]),
            tool(vec![result("w", "Edited leap.py", false)]),
            assistant(vec![call("r", "read_file", json!({"path": "nope.py"}))]),
            tool(vec![result("r", "no such file", true)]),
            // A write refused changed nothing: not named.
            assistant(vec![call(
                "t",
                "write_file",
                json!({"path": "leap_test.py", "content": "# Instructions\n"}),
            )]),
            tool(vec![result(
                "t",
                "Not written: this content would remove …",
                true,
            )]),
        ];
        std::fs::write(dir.path().join("leap_test.py"), "import unittest\n").unwrap();
        let sent = start_again(&messages, dir.path()).unwrap();
        assert_eq!(sent.len(), 2, "{sent:?}");
        let words = sent[1].text();
        assert!(
            words.starts_with("You changed leap.py since; it is now:\n````\nhalf\n````"),
            "{words}"
        );
        assert!(words.ends_with(START_AGAIN), "{words}");
        assert!(!words.contains("leap_test.py"), "{words}");
    }

    /// Recorded on raindrops: 1 of 18 failing, then 4 — the next request starts from the
    /// version with one.
    #[test]
    fn work_that_does_worse_is_sent_back_to_its_best_version() {
        let dir = tempfile::tempdir().unwrap();
        let write = |content: &str| std::fs::write(dir.path().join("rain.py"), content).unwrap();
        let attempt = |n: usize, failing: &str| {
            vec![
                assistant(vec![
                    call(
                        &format!("w{n}"),
                        "write_file",
                        json!({"path": "rain.py", "content": "x"}),
                    ),
                    call(&format!("c{n}"), "bash", json!({"command": CHECK})),
                ]),
                tool(vec![
                    result(&format!("w{n}"), "Edited rain.py", false),
                    result(&format!("c{n}"), failing, true),
                ]),
            ]
        };
        let mut messages = vec![Message::user("Implement rain.py.")];
        let mut best = None;
        write("good\n");
        messages.extend(attempt(1, "..F. 1 failed, 17 passed"));
        let outputs = vec![(CHECK.to_string(), "..F. 1 failed, 17 passed".to_string())];
        assert_eq!(
            Best::record(&mut best, &messages, dir.path(), outputs),
            None
        );
        write("worse\n");
        // A second file, changed only after the best version: named as it was then.
        std::fs::write(dir.path().join("util.py"), "broken\n").unwrap();
        messages.push(assistant(vec![call(
            "u",
            "write_file",
            json!({"path": "util.py", "content": "broken\n"}),
        )]));
        messages.push(tool(vec![result("u", "Edited util.py", false)]));
        messages.extend(attempt(2, "FFF. 4 failed, 14 passed"));
        let outputs = vec![(CHECK.to_string(), "FFF. 4 failed, 14 passed".to_string())];
        // Worse: the best version's files are what to put back.
        let worse = Best::record(&mut best, &messages, dir.path(), outputs).unwrap();
        assert_eq!(
            worse.files(),
            [("rain.py".to_string(), "good\n".to_string())]
        );
        assert_eq!(worse.failing().collect::<Vec<_>>(), [CHECK]);
        let kept = best.clone().unwrap();
        assert_eq!(kept.score, 1);
        assert_eq!(kept.files, [("rain.py".to_string(), "good\n".to_string())]);

        let sent = request(
            &messages,
            dir.path(),
            &[CHECK.to_string()],
            false,
            best.as_ref(),
            false,
        )
        .unwrap();
        let focus = sent[1].text();
        assert!(
            focus.contains("rain.py was then:\n````\ngood\n````"),
            "{focus}"
        );
        assert!(
            focus.contains("failed then:\n````\n..F. 1 failed, 17 passed"),
            "{focus}"
        );
        assert!(!focus.contains("worse"), "{focus}");
        // (Not put back on disk here: it is not said to be.)
        assert!(!focus.contains("back in the file"), "{focus}");
        assert!(
            focus.contains(
                "util.py was then as it was before your changes; it is now:\n````\nbroken\n````"
            ),
            "{focus}"
        );
        // Better again: what is now is shown.
        write("better\n");
        messages.extend(attempt(3, "0 failed, 18 passed... 0 failed"));
        let sent = request(
            &messages,
            dir.path(),
            &[CHECK.to_string()],
            false,
            best.as_ref(),
            false,
        )
        .unwrap();
        assert!(
            sent[1]
                .text()
                .starts_with("rain.py is now:\n````\nbetter\n"),
            "{}",
            sent[1].text()
        );
        // Put back since (with several checks, the latest output may even score lower): the
        // best version and what failed then, not the worse attempt's output.
        write("good\n");
        messages.extend(attempt(4, "..F. 0 failed... but another check broke"));
        let sent = request(
            &messages,
            dir.path(),
            &[CHECK.to_string()],
            false,
            best.as_ref(),
            true,
        )
        .unwrap();
        let focus = sent[1].text();
        assert!(focus.contains("back in the file"), "{focus}");
        assert!(
            focus.contains("failed then:\n````\n..F. 1 failed, 17 passed"),
            "{focus}"
        );
        assert!(!focus.contains("another check broke"), "{focus}");
    }

    #[test]
    fn an_answer_asked_afresh_is_a_new_sample() {
        let greedy = Sampling {
            temperature: Some(0.0),
            seed: Some(42),
            top_p: Some(0.9),
            ..Sampling::default()
        };
        let fresh = fresh_sampling(greedy, 2);
        assert_eq!(
            (fresh.temperature, fresh.seed, fresh.top_p),
            (Some(0.8), Some(44), Some(0.9))
        );
        let warm = Sampling {
            temperature: Some(1.1),
            ..Sampling::default()
        };
        assert_eq!(fresh_sampling(warm, 1).temperature, Some(1.1));
    }
}
