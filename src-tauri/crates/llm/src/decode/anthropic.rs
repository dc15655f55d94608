//! Anthropic Messages streams (and Anthropic-compatible servers).

use super::{count, json, Decoder};
use crate::assemble::{Assembly, UsageUpdate};
use crate::error::LlmError;
use codewright_protocol::StopReason;
use serde_json::Value;

pub(crate) struct Anthropic {
    provider: String,
}

impl Anthropic {
    pub fn new(provider: String) -> Self {
        Anthropic { provider }
    }
}

fn usage(u: &Value) -> UsageUpdate {
    UsageUpdate {
        input: count(u, "/input_tokens"),
        output: count(u, "/output_tokens"),
        cache_read: count(u, "/cache_read_input_tokens"),
        cache_write: count(u, "/cache_creation_input_tokens"),
        reasoning: None,
    }
}

impl Decoder for Anthropic {
    fn event(&mut self, event: &str, data: &str, out: &mut Assembly) -> Result<(), LlmError> {
        if event == "error" && serde_json::from_str::<Value>(data.trim()).is_err() {
            // An error event whose data is plain text: still the provider's error.
            return Err(LlmError::from_stream_event(&self.provider, data));
        }
        let Some(v) = json(&self.provider, data)? else {
            return Ok(());
        };
        // The JSON's own type is authoritative; the SSE event name may be missing.
        let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or(event);
        let slot = |v: &Value| {
            format!(
                "block:{}",
                v.get("index").and_then(|i| i.as_u64()).unwrap_or(0)
            )
        };
        match kind {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    out.usage(usage(u));
                }
            }
            "content_block_start" => {
                let block = &v["content_block"];
                let slot = slot(&v);
                match block.get("type").and_then(|t| t.as_str()).unwrap_or("") {
                    "text" => out.open_text(&slot, block["text"].as_str().unwrap_or("")),
                    "thinking" => {
                        out.open_thinking(&slot, block["thinking"].as_str().unwrap_or(""))
                    }
                    "redacted_thinking" => {
                        out.redacted_thinking(block["data"].as_str().unwrap_or(""))
                    }
                    "tool_use" => {
                        out.tool_start(
                            &slot,
                            block["id"].as_str().unwrap_or(""),
                            block["name"].as_str().unwrap_or(""),
                        );
                    }
                    // Server-side tools (web search…) and future block types: not ours to run.
                    _ => {}
                }
            }
            "content_block_delta" => {
                let slot = slot(&v);
                let delta = &v["delta"];
                match delta.get("type").and_then(|t| t.as_str()).unwrap_or("") {
                    "text_delta" => out.text_at(&slot, delta["text"].as_str().unwrap_or("")),
                    "thinking_delta" => {
                        out.thinking_at(&slot, delta["thinking"].as_str().unwrap_or(""))
                    }
                    "signature_delta" => {
                        out.signature(Some(&slot), delta["signature"].as_str().unwrap_or(""))
                    }
                    "input_json_delta" => {
                        out.tool_args(&slot, delta["partial_json"].as_str().unwrap_or(""))
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(|r| r.as_str()) {
                    out.stop(match reason {
                        "tool_use" => StopReason::ToolUse,
                        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
                        "refusal" => StopReason::ContentFilter,
                        _ => StopReason::EndTurn,
                    });
                }
                if let Some(u) = v.get("usage") {
                    out.usage(usage(u));
                }
            }
            "message_stop" => out.complete(),
            "error" => return Err(LlmError::from_stream_event(&self.provider, data)),
            _ => {} // ping, content_block_stop, unknown
        }
        Ok(())
    }
}
