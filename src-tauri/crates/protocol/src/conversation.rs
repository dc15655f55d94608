//! The invariant every provider request and every resume relies on: each tool call has exactly
//! one result, in the tool message(s) right after the assistant message that made it. A history
//! that breaks it (a crash mid-tool, a stop, a lost result) makes every later request fail, so
//! this one function repairs it — by answering, never by deleting calls.

use crate::{Message, Part, Role, ToolContent};
use std::collections::HashSet;

/// What [`answer_every_call`] changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Repairs {
    /// Ids of calls that had no result and got a synthetic error result.
    pub answered: Vec<String>,
    /// Results dropped because their call is not in the assistant message before them, or
    /// because the call was already answered.
    pub dropped_results: usize,
}

/// The result given to a call that never got one.
pub fn interrupted_result(call_id: &str, reason: &str) -> Part {
    Part::ToolResult {
        call_id: call_id.to_string(),
        content: vec![ToolContent::Text {
            text: reason.to_string(),
        }],
        is_error: true,
        detail: None,
    }
}

/// Returns `history` with every tool call answered exactly once. Calls without a result get an
/// error result saying `reason` (e.g. "interrupted: the task was stopped before this tool ran");
/// results are kept in call order; orphan and duplicate results are dropped.
pub fn answer_every_call(history: &[Message], reason: &str) -> (Vec<Message>, Repairs) {
    let mut out: Vec<Message> = Vec::with_capacity(history.len() + 1);
    let mut repairs = Repairs::default();
    let mut i = 0;
    while i < history.len() {
        let message = &history[i];
        i += 1;
        if message.role == Role::Tool {
            // A tool message not right after an assistant message with calls: every result in
            // it is an orphan.
            let kept: Vec<Part> = message
                .parts
                .iter()
                .filter(|p| !matches!(p, Part::ToolResult { .. }))
                .cloned()
                .collect();
            repairs.dropped_results += message.parts.len() - kept.len();
            if !kept.is_empty() {
                out.push(Message {
                    parts: kept,
                    ..message.clone()
                });
            }
            continue;
        }
        out.push(message.clone());
        let calls: Vec<&str> = message.tool_calls().map(|c| c.id).collect();
        if message.role != Role::Assistant || calls.is_empty() {
            continue;
        }
        // Gather the results in the tool messages that follow.
        let mut results: Vec<Part> = Vec::new();
        let mut other_parts: Vec<Part> = Vec::new();
        let mut template: Option<&Message> = None;
        let mut seen: HashSet<&str> = HashSet::new();
        while i < history.len() && history[i].role == Role::Tool {
            template.get_or_insert(&history[i]);
            for part in &history[i].parts {
                match part {
                    Part::ToolResult { call_id, .. } => {
                        if calls.contains(&call_id.as_str()) && seen.insert(call_id.as_str()) {
                            results.push(part.clone());
                        } else {
                            repairs.dropped_results += 1;
                        }
                    }
                    other => other_parts.push(other.clone()),
                }
            }
            i += 1;
        }
        let mut ordered = Vec::with_capacity(calls.len() + other_parts.len());
        for call in &calls {
            let found = results
                .iter()
                .position(|r| matches!(r, Part::ToolResult { call_id, .. } if call_id == call));
            match found {
                Some(at) => ordered.push(results.swap_remove(at)),
                None => {
                    repairs.answered.push(call.to_string());
                    ordered.push(interrupted_result(call, reason));
                }
            }
        }
        ordered.extend(other_parts);
        let mut tool = template
            .cloned()
            .unwrap_or_else(|| Message::new(Role::Tool, Vec::new()));
        tool.parts = ordered;
        out.push(tool);
    }
    (out, repairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Part {
        Part::ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
            truncated: false,
            signature: None,
        }
    }
    fn result(id: &str) -> Part {
        Part::ToolResult {
            call_id: id.into(),
            content: vec![ToolContent::Text { text: "ok".into() }],
            is_error: false,
            detail: None,
        }
    }
    fn assistant(parts: Vec<Part>) -> Message {
        Message::new(Role::Assistant, parts)
    }
    fn tool(parts: Vec<Part>) -> Message {
        Message::new(Role::Tool, parts)
    }
    const WHY: &str = "interrupted: the task was stopped before this tool ran";

    #[test]
    fn a_complete_history_is_unchanged() {
        let history = vec![
            Message::user("hi"),
            assistant(vec![
                Part::Text {
                    text: "reading".into(),
                },
                call("a"),
                call("b"),
            ]),
            tool(vec![result("a"), result("b")]),
            assistant(vec![Part::Text {
                text: "done".into(),
            }]),
        ];
        let (fixed, repairs) = answer_every_call(&history, WHY);
        assert_eq!(fixed, history);
        assert_eq!(repairs, Repairs::default());
    }

    #[test]
    fn dangling_calls_are_answered_never_deleted() {
        let history = vec![
            Message::user("go"),
            assistant(vec![call("a"), call("b")]),
            tool(vec![result("b")]),
        ];
        let (fixed, repairs) = answer_every_call(&history, WHY);
        assert_eq!(repairs.answered, vec!["a".to_string()]);
        assert_eq!(fixed[1], history[1], "the calls are kept");
        assert_eq!(
            fixed[2].parts,
            vec![interrupted_result("a", WHY), result("b")]
        );
        // With no tool message at all (stopped before any ran), one is inserted.
        let (fixed, repairs) =
            answer_every_call(&[assistant(vec![call("x")]), Message::user("next")], WHY);
        assert_eq!(repairs.answered, vec!["x".to_string()]);
        assert_eq!(fixed.len(), 3);
        assert_eq!(fixed[1].role, Role::Tool);
        assert_eq!(fixed[2], Message::user("next"));
    }

    #[test]
    fn orphan_and_duplicate_results_are_dropped_and_results_follow_call_order() {
        let history = vec![
            tool(vec![result("ghost")]),
            assistant(vec![call("a"), call("b")]),
            tool(vec![result("b"), result("a")]),
            tool(vec![result("a"), result("zzz")]),
        ];
        let (fixed, repairs) = answer_every_call(&history, WHY);
        assert_eq!(repairs.dropped_results, 3);
        assert!(repairs.answered.is_empty());
        assert_eq!(fixed.len(), 2);
        assert_eq!(fixed[1].parts, vec![result("a"), result("b")]);
        // Idempotent.
        assert_eq!(answer_every_call(&fixed, WHY).0, fixed);
    }
}
