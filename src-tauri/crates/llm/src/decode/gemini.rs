//! Google Gemini `streamGenerateContent?alt=sse` streams. Each event is a whole
//! `GenerateContentResponse`; function calls arrive complete (no ids: we number them).

use super::{count, json, Decoder};
use crate::assemble::{Assembly, UsageUpdate};
use crate::error::LlmError;
use codewright_protocol::StopReason;
use serde_json::Value;

pub(crate) struct Gemini {
    provider: String,
    calls: usize,
}

impl Gemini {
    pub fn new(provider: String) -> Self {
        Gemini { provider, calls: 0 }
    }
}

impl Decoder for Gemini {
    fn event(&mut self, _event: &str, data: &str, out: &mut Assembly) -> Result<(), LlmError> {
        let Some(v) = json(&self.provider, data)? else {
            return Ok(());
        };
        if v.get("error").is_some() {
            return Err(LlmError::from_stream_event(&self.provider, data));
        }
        if let Some(u) = v.get("usageMetadata") {
            let cached = count(u, "/cachedContentTokenCount").unwrap_or(0);
            let thoughts = count(u, "/thoughtsTokenCount").unwrap_or(0);
            let candidates = count(u, "/candidatesTokenCount");
            out.usage(UsageUpdate {
                input: count(u, "/promptTokenCount").map(|p| p.saturating_sub(cached)),
                // When thinking uses up the limit, candidatesTokenCount is left out.
                output: (candidates.is_some() || thoughts > 0)
                    .then(|| candidates.unwrap_or(0) + thoughts),
                cache_read: Some(cached),
                cache_write: None,
                reasoning: Some(thoughts),
            });
        }
        let Some(candidate) = v.pointer("/candidates/0") else {
            return Ok(());
        };
        for part in candidate
            .pointer("/content/parts")
            .and_then(|p| p.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(call) = part.get("functionCall") {
                self.calls += 1;
                let slot = format!("call:{}", self.calls);
                let id = call
                    .get("id")
                    .and_then(|i| i.as_str())
                    .map(str::to_owned)
                    // Gemini's calls have no ids; ours must be unique across the whole task.
                    .unwrap_or_else(|| format!("gemini_{:x}_{}", fastrand::u64(..), self.calls));
                out.tool_start(&slot, &id, call["name"].as_str().unwrap_or(""));
                out.tool_args(
                    &slot,
                    &call
                        .get("args")
                        .cloned()
                        .unwrap_or(Value::Object(Default::default()))
                        .to_string(),
                );
            } else if let Some(text) = part.get("text").and_then(|t| t.as_str()) {
                if part.get("thought").and_then(|t| t.as_bool()) == Some(true) {
                    out.thinking(text);
                } else {
                    out.text(text);
                }
            }
            if let Some(sig) = part.get("thoughtSignature").and_then(|s| s.as_str()) {
                // A call's signature belongs to the call (Gemini requires it back with it);
                // any other part's to the thinking.
                if part.get("functionCall").is_some() {
                    out.tool_signature(&format!("call:{}", self.calls), sig);
                } else {
                    out.signature(None, sig);
                }
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(|r| r.as_str()) {
            out.stop(match reason {
                "MAX_TOKENS" => StopReason::MaxTokens,
                "MALFORMED_FUNCTION_CALL" => {
                    return Err(LlmError::new(
                        crate::error::ErrorKind::Provider,
                        format!(
                            "{} wrote a malformed function call; try again",
                            self.provider
                        ),
                    ));
                }
                "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
                    StopReason::ContentFilter
                }
                _ if self.calls > 0 => StopReason::ToolUse,
                _ => StopReason::EndTurn,
            });
        }
        Ok(())
    }
}
