//! Keeping the conversation inside the model's context window. When the next request would not
//! fit (window − reserve, so the summary request itself always fits), the older messages are
//! summarized in fixed sections and the model sees the summary plus the recent messages. The
//! boundary never separates a tool call from its result. Originals stay in the store, marked
//! compacted; a later compaction updates the previous summary.

use codewright_llm::{ChatRequest, ModelInfo};
use codewright_protocol::{
    AttachmentKind, Compaction, Message, MessageRecord, Part, Role, TaskId, ToolContent, ToolSpec,
    Usage,
};
use codewright_store::Store;

/// How the summary is introduced to the model.
pub(crate) const SUMMARY_PREFIX: &str =
    "[The earlier part of this conversation was compacted. Summary of it:]";

/// What the summary must contain.
pub(crate) const INSTRUCTIONS: &str = "You compact the history of a coding session so the work can continue with less context. Write the summary in exactly these sections, as Markdown headings, each filled in (\"none\" if empty):\n## Goal\n## Constraints and preferences\n## Progress\n### Done\n### In progress\n## Key decisions\n## Next steps\n## Files touched\n## Critical context\nBe specific: file paths, function names, commands, error messages, the user's exact requests. Do not call tools.";

/// Characters of one tool result or message text kept in the transcript.
const MAX_PART_CHARS: usize = 2000;

/// Tokens kept as recent messages, at most.
fn keep_budget(info: &ModelInfo) -> u64 {
    (info.context_window / 4).min(20_000)
}

/// Tokens kept free for the answer: the model's output limit, at most a quarter of the window
/// (a 4k model that may write 512 tokens keeps 512; a 200k one keeps at most 32,000).
pub(crate) fn answer_reserve(info: &ModelInfo) -> u64 {
    info.max_output.min(32_000).min(info.context_window / 4)
}

/// Tokens kept free for what the estimates miss (4 characters a token is rough): an eighth of the
/// window, at most 4,096.
pub(crate) fn margin(info: &ModelInfo) -> u64 {
    (info.context_window / 8).min(4_096)
}

/// Tokens kept free for the answer and for what the estimates miss: scales with the window, so
/// a 4k window is not all reserve (it was: 512 + 4,096 left nothing, and every turn compacted).
pub(crate) fn reserve(info: &ModelInfo) -> u64 {
    answer_reserve(info) + margin(info)
}

/// Above this many context tokens, compact before the next request.
pub(crate) fn threshold(info: &ModelInfo) -> u64 {
    info.context_window.saturating_sub(reserve(info))
}

/// A rough token count for content no provider has counted yet (4 characters a token).
pub(crate) fn estimate(messages: &[Message]) -> u64 {
    let chars: usize = messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|p| match p {
            Part::Text { text } => text.len(),
            Part::Thinking { text, .. } => text.len(),
            Part::ToolCall {
                name, arguments, ..
            } => name.len() + arguments.len(),
            Part::ToolResult { content, .. } => content
                .iter()
                .map(|c| match c {
                    ToolContent::Text { text } => text.len(),
                    ToolContent::Image { .. } => 4 * 1_000,
                })
                .sum(),
            // An image costs the model about as much whatever its file size (~1,600 tokens).
            Part::Attachment(a) if a.kind == AttachmentKind::Image => 4 * 1_600,
            Part::Attachment(a) => a.data.as_ref().map_or(200, |d| d.len() / 2),
        })
        .sum();
    (chars / 4) as u64 + 4 * messages.len() as u64
}

/// A rough token count of what goes with every request besides the messages: the system prompt
/// (with AGENTS.md, and the tools' descriptions for models that call tools as text) and the
/// tools' schemas.
pub(crate) fn overhead(system: &str, tools: &[ToolSpec]) -> u64 {
    let schemas: usize = tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
        .sum();
    ((system.len() + schemas) / 4) as u64
}

/// The tools as the model is told about them: in full, or [compact](ToolSpec::compact) when in
/// full they would take more than an eighth of its window (13 tools are ~2,200 tokens: over half
/// of a 4k local model's window).
pub(crate) fn tool_specs(specs: &[ToolSpec], info: &ModelInfo) -> Vec<ToolSpec> {
    if info.context_window > 0 && overhead("", specs) > info.context_window / 8 {
        specs.iter().map(ToolSpec::compact).collect()
    } else {
        specs.to_vec()
    }
}

/// Usage estimated for a request and its answer, for servers that do not report it.
pub(crate) fn estimate_usage(request: &ChatRequest, answer: &Message) -> Usage {
    Usage {
        input: estimate(&request.messages)
            + overhead(request.system.as_deref().unwrap_or(""), &request.tools),
        output: estimate(std::slice::from_ref(answer)),
        estimated: true,
        ..Usage::default()
    }
}

/// The messages the model sees, and what is known of their size.
pub(crate) struct View {
    pub messages: Vec<Message>,
    /// Tokens the provider counted for the prefix ending at `counted_len` messages (the last
    /// answer since the latest compaction, with its usage).
    pub counted: Option<(usize, u64)>,
}

impl View {
    /// Context tokens the next request would use: the provider's count (which covers the
    /// system prompt and the tools), plus estimates for what came after it; without a count, an
    /// estimate of the messages plus `overhead` (see [`overhead`]).
    pub fn tokens(&self, overhead: u64) -> u64 {
        match self.counted {
            Some((len, tokens)) => tokens + estimate(self.messages.get(len..).unwrap_or_default()),
            None => estimate(&self.messages) + overhead,
        }
    }

    /// Appends an answer the provider counted (`tokens`: its whole context plus the answer).
    pub fn push_answer(&mut self, answer: Message, tokens: Option<u64>) {
        self.messages.push(answer);
        if let Some(tokens) = tokens {
            self.counted = Some((self.messages.len(), tokens));
        }
    }
}

/// Messages worth sending: empty answers (a stream that died before anything arrived) say
/// nothing and some providers refuse them.
pub(crate) fn visible(records: Vec<MessageRecord>) -> Vec<MessageRecord> {
    records
        .into_iter()
        .filter(|r| !(r.message.role == Role::Assistant && r.message.parts.is_empty()))
        .collect()
}

/// The task's messages as the model sees them: the latest summary, then what it did not cover.
pub(crate) fn view(store: &Store, task: TaskId) -> Result<View, crate::AgentError> {
    let latest = store.latest_compaction(task)?;
    let records: Vec<MessageRecord> = visible(store.history(task)?)
        .into_iter()
        .filter(|r| latest.as_ref().is_none_or(|c| r.seq >= c.first_kept_seq))
        .collect();
    let mut messages = Vec::with_capacity(records.len() + 1);
    if let Some(c) = &latest {
        messages.push(Message::user(format!("{SUMMARY_PREFIX}\n\n{}", c.summary)));
    }
    let offset = messages.len();
    let since = latest.as_ref().map_or(0, |c| c.created_at);
    let counted = records.iter().enumerate().rev().find_map(|(i, r)| {
        let usage = r.message.usage?;
        (r.message.role == Role::Assistant && r.updated_at >= since).then(|| {
            (
                offset + i + 1,
                usage.input + usage.cache_read + usage.cache_write + usage.output,
            )
        })
    });
    messages.extend(records.into_iter().map(|r| r.message));
    Ok(View { messages, counted })
}

/// Where the kept part starts: the oldest message such that the kept part stays within the
/// budget, moved back so it never starts at a tool result. `None`: nothing to summarize.
pub(crate) fn boundary(records: &[MessageRecord], info: &ModelInfo) -> Option<usize> {
    let budget = keep_budget(info);
    let mut kept = 0u64;
    let mut start = records.len();
    while start > 0 {
        let size = estimate(std::slice::from_ref(&records[start - 1].message));
        if kept + size > budget && start < records.len() {
            break;
        }
        kept += size;
        start -= 1;
    }
    // Never start at tool results: their calls must stay with them.
    while start > 0 && start < records.len() && records[start].message.role == Role::Tool {
        start -= 1;
    }
    // Keep at least the last message; summarize at least one.
    let start = start.min(records.len().saturating_sub(1));
    (start > 0).then_some(start)
}

/// The summary request: the previous summary and the messages to fold in, as a transcript.
pub(crate) fn transcript(
    previous: Option<&str>,
    records: &[MessageRecord],
    max_chars: usize,
) -> String {
    let cut = |s: &str| -> String {
        if s.len() > MAX_PART_CHARS {
            let head: String = s.chars().take(MAX_PART_CHARS).collect();
            format!("{head} […]")
        } else {
            s.to_string()
        }
    };
    let mut lines: Vec<String> = Vec::new();
    for r in records {
        for part in &r.message.parts {
            let line = match (r.message.role, part) {
                (Role::User, Part::Text { text }) => format!("USER: {}", cut(text)),
                (_, Part::Text { text }) => format!("ASSISTANT: {}", cut(text)),
                (
                    _,
                    Part::ToolCall {
                        name, arguments, ..
                    },
                ) => format!("TOOL CALL {name}: {}", cut(arguments)),
                (
                    _,
                    Part::ToolResult {
                        content, is_error, ..
                    },
                ) => {
                    let text: String = content
                        .iter()
                        .map(ToolContent::as_text)
                        .collect::<Vec<_>>()
                        .join("\n");
                    format!(
                        "TOOL RESULT{}: {}",
                        if *is_error { " (error)" } else { "" },
                        cut(&text)
                    )
                }
                _ => continue,
            };
            lines.push(line);
        }
    }
    // Oldest lines go first when the transcript is too long for the summary request (the
    // previous summary counts too); the newest line always goes, cut to fit if it must: a
    // summary request with nothing to summarize would get an invented summary.
    let max_chars = max_chars.saturating_sub(previous.map_or(0, str::len));
    let mut total: usize = lines.iter().map(|l| l.len() + 1).sum();
    let mut skip = 0;
    while total > max_chars && skip + 1 < lines.len() {
        total -= lines[skip].len() + 1;
        skip += 1;
    }
    if let Some(last) = lines.last_mut().filter(|l| l.len() > max_chars) {
        let head: String = last.chars().take(max_chars.max(200)).collect();
        *last = format!("{head} […]");
    }
    let mut out = String::new();
    if let Some(previous) = previous {
        out.push_str(
            "The previous summary (update it with what follows; keep what is still true):\n\n",
        );
        out.push_str(previous);
        out.push_str("\n\n");
    }
    if skip > 0 {
        out.push_str(&format!("[{skip} older entries left out for length]\n"));
    }
    out.push_str("The conversation to summarize:\n\n");
    out.push_str(&lines[skip..].join("\n"));
    out
}

/// What a compaction will write.
pub(crate) struct Plan {
    pub previous: Option<Compaction>,
    pub to_summarize: Vec<MessageRecord>,
    pub first_kept_seq: i64,
    pub tokens_before: u64,
}

/// Decides what to summarize; `None` when there is too little history to compact.
pub(crate) fn plan(
    store: &Store,
    task: TaskId,
    info: &ModelInfo,
    overhead: u64,
) -> Result<Option<Plan>, String> {
    let before = view(store, task)?.tokens(overhead);
    let previous = store.latest_compaction(task).map_err(|e| e.to_string())?;
    let records: Vec<MessageRecord> = visible(store.history(task).map_err(|e| e.to_string())?)
        .into_iter()
        .filter(|r| previous.as_ref().is_none_or(|c| r.seq >= c.first_kept_seq))
        .collect();
    let Some(at) = boundary(&records, info) else {
        return Ok(None);
    };
    let first_kept_seq = records[at].seq;
    let mut to_summarize = records;
    to_summarize.truncate(at);
    Ok(Some(Plan {
        previous,
        to_summarize,
        first_kept_seq,
        tokens_before: before,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewright_protocol::{MessageId, TaskId};

    fn record(seq: i64, message: Message) -> MessageRecord {
        MessageRecord {
            id: MessageId(seq),
            task_id: TaskId(1),
            seq,
            message,
            complete: true,
            created_at: 0,
            updated_at: 0,
            compacted: false,
        }
    }

    #[test]
    fn tools_are_described_compactly_when_in_full_they_take_an_eighth_of_the_window() {
        let spec = ToolSpec {
            name: "read_file".into(),
            description: format!("Read a file. {}", "More words on how. ".repeat(20)),
            input_schema: serde_json::json!({"type": "object", "properties": {"path": {"type": "string", "description": "The path. Relative to the project."}}}),
        };
        let specs = vec![spec.clone(); 12];
        let mut info = codewright_llm::ModelInfo::unknown("m@p");
        info.context_window = 128_000;
        assert_eq!(tool_specs(&specs, &info), specs);
        info.context_window = 8_000;
        let compact = tool_specs(&specs, &info);
        assert_eq!(compact[0], spec.compact());
        assert_eq!(compact[0].description, "Read a file.");
        assert!(overhead("", &compact) * 2 < overhead("", &specs));
    }

    #[test]
    fn the_boundary_never_separates_a_call_from_its_result() {
        let call = Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "c1".into(),
                name: "write_file".into(),
                arguments: "z".repeat(100_000),
                truncated: false,
                signature: None,
            }],
        );
        let result = Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: "c1".into(),
                content: vec![ToolContent::Text { text: "ok".into() }],
                is_error: false,
                detail: None,
            }],
        );
        let records = vec![
            record(1, Message::user("x".repeat(1_000))),
            record(2, call),
            record(3, result),
            record(4, Message::user("short")),
        ];
        let info = codewright_llm::resolve_model("m@p", &[]);
        // The 20k-token budget holds the last user message and the small result, not the 25k-token
        // call: the boundary would fall between the call and its result, so it moves to the call.
        let at = boundary(&records, &info).unwrap();
        assert_eq!(at, 1);
        assert_eq!(records[at].message.role, Role::Assistant);
        // Too little to summarize.
        assert_eq!(boundary(&records[3..], &info), None);
    }

    #[test]
    fn a_small_window_keeps_room_for_the_conversation() {
        let mut info = codewright_llm::resolve_model("m@p", &[]);
        // A 4k local model writing 512 tokens: 512 + 4,096 reserved left 0, and every turn
        // compacted.
        info.context_window = 4_096;
        info.max_output = 512;
        assert_eq!(reserve(&info), 512 + 512);
        assert_eq!(threshold(&info), 3_072);
        // A large window keeps what it kept.
        info.context_window = 200_000;
        info.max_output = 64_000;
        assert_eq!(reserve(&info), 32_000 + 4_096);
    }

    #[test]
    fn a_summary_request_always_carries_what_it_summarizes() {
        let records = vec![
            record(1, Message::user("first ".repeat(300))),
            record(2, Message::user("second ".repeat(300))),
            record(3, Message::user("newest ".repeat(400))),
        ];
        // Room for one line and a half: the oldest go, the newest stays whole.
        let text = transcript(None, &records, 3_000);
        assert!(text.contains("2 older entries left out"), "{text}");
        assert!(text.contains(&"newest ".repeat(280)), "{text}");
        // No room at all (a previous summary fills it): the newest line still goes, cut.
        let text = transcript(Some(&"s".repeat(5_000)), &records, 3_000);
        assert!(text.contains("USER: newest newest"), "{text}");
        assert!(text.len() < 5_000 + 1_000, "{}", text.len());
    }
}
