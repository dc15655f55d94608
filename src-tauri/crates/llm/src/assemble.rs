//! Builds the canonical [`Message`] from a provider's stream, whatever its protocol, and reports
//! each increment as a [`Delta`] for whoever is watching (the UI, the CLI).

use crate::error::{ErrorKind, LlmError};
use codewright_protocol::{
    omitted_arguments, Message, Part, Role, StopReason, Usage, MAX_CALL_ARGUMENTS,
};
use std::collections::HashMap;

/// The error for a stream from `source` (a provider's name) that stopped before the response
/// was whole.
pub(crate) fn ended_early(source: &str) -> LlmError {
    LlmError::new(
        ErrorKind::StreamEndedEarly,
        format!("{source}'s response stream ended early, before the model finished (the connection closed before the stream's last event); try again."),
    )
}

/// One increment of a streaming response.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    Text(String),
    Thinking(String),
    ToolCallStarted {
        id: String,
        name: String,
    },
    ToolCallArguments {
        id: String,
        arguments: String,
    },
    Usage(Usage),
    /// Nothing arrived for [`IDLE_TICK`]: a chance to save what has (the parts are passed too).
    Idle,
    /// An attempt failed before anything arrived (`error` says why) and the request is sent again
    /// after `wait`: retry number `attempt` of at most `max_retries` (timeouts get fewer, see
    /// [`RetryPolicy`](crate::RetryPolicy)). Show it, or the user only sees a silence.
    Retry {
        attempt: u32,
        max_retries: u32,
        wait: std::time::Duration,
        error: LlmError,
    },
}

/// How long a stream may be silent before [`Delta::Idle`] is reported (and again after each
/// further silence of that length).
pub const IDLE_TICK: std::time::Duration = std::time::Duration::from_millis(250);

/// Usage fields a provider reported; `None` leaves the current value alone.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct UsageUpdate {
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
    pub reasoning: Option<u64>,
}

/// The response being assembled.
#[derive(Debug, Default)]
pub struct Assembly {
    parts: Vec<Part>,
    /// Protocol-specific keys (a content block index, a tool call index, an item id) → part index.
    slots: HashMap<String, usize>,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    /// A terminal event was seen: the response is whole.
    complete: bool,
    deltas: Vec<Delta>,
    /// Calls (by part index) whose arguments went past [`MAX_CALL_ARGUMENTS`]: how many bytes
    /// arrived in all. Nothing more of them is kept or passed on.
    oversized: HashMap<usize, u64>,
}

impl Assembly {
    /// The increments since the last call.
    pub fn take_deltas(&mut self) -> Vec<Delta> {
        std::mem::take(&mut self.deltas)
    }

    /// The parts so far (for persisting a response while it streams).
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Whether anything has been received that a retry would duplicate.
    pub fn has_content(&self) -> bool {
        self.parts.iter().any(|p| match p {
            Part::Text { text } => !text.is_empty(),
            Part::Thinking { text, redacted, .. } => !text.is_empty() || redacted.is_some(),
            _ => true,
        })
    }

    pub(crate) fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        match self.parts.last_mut() {
            Some(Part::Text { text }) => text.push_str(delta),
            _ => self.parts.push(Part::Text {
                text: delta.to_string(),
            }),
        }
        self.deltas.push(Delta::Text(delta.to_string()));
    }

    pub(crate) fn thinking(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        match self.parts.last_mut() {
            Some(Part::Thinking {
                text,
                redacted: None,
                signature: None,
            }) => text.push_str(delta),
            _ => self.parts.push(Part::Thinking {
                text: delta.to_string(),
                signature: None,
                redacted: None,
            }),
        }
        self.deltas.push(Delta::Thinking(delta.to_string()));
    }

    /// Starts a text part tied to `slot` (a block that later deltas address by index).
    pub(crate) fn open_text(&mut self, slot: &str, initial: &str) {
        self.slots.insert(slot.to_string(), self.parts.len());
        self.parts.push(Part::Text {
            text: String::new(),
        });
        self.text_at(slot, initial);
    }

    pub(crate) fn open_thinking(&mut self, slot: &str, initial: &str) {
        self.slots.insert(slot.to_string(), self.parts.len());
        self.parts.push(Part::Thinking {
            text: String::new(),
            signature: None,
            redacted: None,
        });
        self.thinking_at(slot, initial);
    }

    pub(crate) fn redacted_thinking(&mut self, data: &str) {
        self.parts.push(Part::Thinking {
            text: String::new(),
            signature: None,
            redacted: Some(data.to_string()),
        });
    }

    pub(crate) fn text_at(&mut self, slot: &str, delta: &str) {
        if let Some(Part::Text { text }) = self.slot_mut(slot) {
            text.push_str(delta);
            if !delta.is_empty() {
                self.deltas.push(Delta::Text(delta.to_string()));
            }
        }
    }

    pub(crate) fn thinking_at(&mut self, slot: &str, delta: &str) {
        if let Some(Part::Thinking { text, .. }) = self.slot_mut(slot) {
            text.push_str(delta);
            if !delta.is_empty() {
                self.deltas.push(Delta::Thinking(delta.to_string()));
            }
        }
    }

    /// Attaches a provider signature. With a `slot` (Anthropic: one block, possibly several
    /// deltas) it is appended to that block's. Without one (an opaque blob per reasoning item or
    /// part) it is set on the last thinking part, or starts a new one if that part already has
    /// its own: separate blobs are never glued together.
    pub(crate) fn signature(&mut self, slot: Option<&str>, sig: &str) {
        if let Some(at) = slot.and_then(|s| self.slots.get(s).copied()) {
            if let Some(Part::Thinking { signature, .. }) = self.parts.get_mut(at) {
                signature.get_or_insert_with(String::new).push_str(sig);
            }
            return;
        }
        let last = self
            .parts
            .iter()
            .rposition(|p| matches!(p, Part::Thinking { .. }));
        match last.and_then(|i| self.parts.get_mut(i)) {
            Some(Part::Thinking {
                signature: signature @ None,
                ..
            }) => *signature = Some(sig.to_string()),
            _ => self.parts.push(Part::Thinking {
                text: String::new(),
                signature: Some(sig.to_string()),
                redacted: None,
            }),
        }
    }

    /// Starts a tool call at `slot`; a second start for the same slot is ignored.
    pub(crate) fn tool_start(&mut self, slot: &str, id: &str, name: &str) {
        if self.slots.contains_key(slot) {
            return;
        }
        self.slots.insert(slot.to_string(), self.parts.len());
        self.parts.push(Part::ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: String::new(),
            truncated: false,
            signature: None,
        });
        self.deltas.push(Delta::ToolCallStarted {
            id: id.to_string(),
            name: name.to_string(),
        });
    }

    pub(crate) fn has_slot(&self, slot: &str) -> bool {
        self.slots.contains_key(slot)
    }

    pub(crate) fn tool_args(&mut self, slot: &str, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let Some(&at) = self.slots.get(slot) else {
            return;
        };
        if let Some(total) = self.oversized.get_mut(&at) {
            *total += delta.len() as u64;
            return;
        }
        if let Some(Part::ToolCall { id, arguments, .. }) = self.parts.get_mut(at) {
            if arguments.len() + delta.len() > MAX_CALL_ARGUMENTS {
                // Over the limit: let go of what was kept; only the count goes on.
                let total = (arguments.len() + delta.len()) as u64;
                *arguments = String::new();
                self.oversized.insert(at, total);
                return;
            }
            arguments.push_str(delta);
            let id = id.clone();
            self.deltas.push(Delta::ToolCallArguments {
                id,
                arguments: delta.to_string(),
            });
        }
    }

    /// Replaces the arguments of the call at `slot` with the provider's final version.
    pub(crate) fn tool_args_final(&mut self, slot: &str, full: &str) {
        let Some(&at) = self.slots.get(slot) else {
            return;
        };
        if full.len() > MAX_CALL_ARGUMENTS {
            self.oversized.insert(at, full.len() as u64);
        }
        if let Some(Part::ToolCall { arguments, .. }) = self.parts.get_mut(at) {
            *arguments = if full.len() > MAX_CALL_ARGUMENTS {
                String::new()
            } else {
                full.to_string()
            };
        }
    }

    /// Attaches an opaque provider signature to the call at `slot`.
    pub(crate) fn tool_signature(&mut self, slot: &str, sig: &str) {
        if let Some(Part::ToolCall { signature, .. }) = self.slot_mut(slot) {
            *signature = Some(sig.to_string());
        }
    }
    pub(crate) fn usage(&mut self, update: UsageUpdate) {
        let usage = self.usage.get_or_insert_with(Usage::default);
        let set = |field: &mut u64, value: Option<u64>| {
            if let Some(v) = value {
                *field = v;
            }
        };
        set(&mut usage.input, update.input);
        set(&mut usage.output, update.output);
        set(&mut usage.cache_read, update.cache_read);
        set(&mut usage.cache_write, update.cache_write);
        set(&mut usage.reasoning, update.reasoning);
        self.deltas.push(Delta::Usage(*usage));
    }

    pub(crate) fn stop(&mut self, reason: StopReason) {
        self.stop = Some(reason);
    }

    pub(crate) fn complete(&mut self) {
        self.complete = true;
    }

    /// Whether the protocol's terminal event arrived (`[DONE]`, `message_stop`,
    /// `response.completed`): nothing of the answer is left to come.
    pub(crate) fn is_complete(&self) -> bool {
        self.complete
    }

    /// Whether the response is whole: a terminal event or a stop reason arrived.
    pub fn is_whole(&self) -> bool {
        self.complete || self.stop.is_some()
    }

    fn slot_mut(&mut self, slot: &str) -> Option<&mut Part> {
        let at = *self.slots.get(slot)?;
        self.parts.get_mut(at)
    }

    /// The finished message. A stream that ended before a terminal event (and before a stop
    /// reason) is an error; tool calls whose arguments are not valid JSON after a `max_tokens`
    /// stop are marked truncated, never to be executed; missing arguments become `{}`.
    pub fn finish(mut self, model: &str) -> Result<Message, LlmError> {
        if !self.is_whole() {
            return Err(ended_early(model));
        }
        let has_calls = self
            .parts
            .iter()
            .any(|p| matches!(p, Part::ToolCall { .. }));
        let stop = self.stop.unwrap_or(if has_calls {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        self.mark_truncated(stop == StopReason::MaxTokens);
        self.parts
            .retain(|p| !matches!(p, Part::Text { text } if text.is_empty()));
        Ok(Message {
            role: Role::Assistant,
            parts: self.parts,
            usage: self.usage,
            model: Some(model.to_string()),
            stop_reason: Some(stop),
            error: None,
        })
    }

    /// Settles every tool call's arguments: a call whose arguments are not valid JSON, or the last
    /// call of a response cut off by the output limit with no arguments yet, is `truncated` and
    /// must never run; other calls without arguments get `{}`.
    fn mark_truncated(&mut self, cut_off: bool) {
        let last_call = self
            .parts
            .iter()
            .rposition(|p| matches!(p, Part::ToolCall { .. }));
        for (i, part) in self.parts.iter_mut().enumerate() {
            if let Part::ToolCall {
                arguments,
                truncated,
                ..
            } = part
            {
                if let Some(total) = self.oversized.get(&i) {
                    *arguments = omitted_arguments(*total);
                    *truncated = true;
                    continue;
                }
                let empty = arguments.trim().is_empty();
                if cut_off && Some(i) == last_call && empty {
                    *truncated = true;
                } else if empty {
                    *arguments = "{}".to_string();
                } else if serde_json::from_str::<serde_json::Value>(arguments).is_err() {
                    *truncated = true;
                }
            }
        }
    }

    /// What was received before a failure, for keeping (never for sending back as is): calls
    /// that were still being written are marked truncated.
    pub fn into_partial(mut self, model: &str, stop: StopReason) -> Message {
        self.mark_truncated(true);
        self.parts
            .retain(|p| !matches!(p, Part::Text { text } if text.is_empty()));
        Message {
            role: Role::Assistant,
            parts: self.parts,
            usage: self.usage,
            model: Some(model.to_string()),
            stop_reason: Some(stop),
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments streamed in small pieces past the limit: nothing past it is kept or passed on,
    /// the call is never run, and what is kept says how much there was.
    #[test]
    fn a_call_over_the_argument_limit_keeps_only_its_size() {
        let mut a = Assembly::default();
        a.tool_start("0", "c1", "write_file");
        a.tool_start("1", "c2", "read_file");
        let piece = "x".repeat(64 * 1024);
        a.tool_args("0", "{\"path\": \"a\", \"content\": \"");
        for _ in 0..40 {
            a.tool_args("0", &piece);
        }
        a.tool_args("0", "\"}");
        a.tool_args("1", "{\"path\": \"b\"}");
        let passed: usize = a
            .take_deltas()
            .iter()
            .map(|d| match d {
                Delta::ToolCallArguments { arguments, .. } => arguments.len(),
                _ => 0,
            })
            .sum();
        assert!(
            passed <= MAX_CALL_ARGUMENTS + 100,
            "{passed} bytes passed on"
        );
        a.stop(StopReason::ToolUse);
        a.complete();
        let message = a.finish("m").unwrap();
        match &message.parts[..] {
            [Part::ToolCall {
                arguments,
                truncated: true,
                ..
            }, Part::ToolCall {
                arguments: small,
                truncated: false,
                ..
            }] => {
                assert_eq!(
                    codewright_protocol::omitted_bytes(arguments),
                    Some(40 * 64 * 1024 + 28)
                );
                assert_eq!(small, "{\"path\": \"b\"}");
            }
            other => panic!("{other:?}"),
        }
    }
}
