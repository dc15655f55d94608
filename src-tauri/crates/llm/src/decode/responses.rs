//! OpenAI Responses API streams.

use super::{count, json, Decoder};
use crate::assemble::{Assembly, UsageUpdate};
use crate::error::LlmError;
use codewright_protocol::StopReason;
use serde_json::Value;

pub(crate) struct Responses {
    provider: String,
}

impl Responses {
    pub fn new(provider: String) -> Self {
        Responses { provider }
    }
}

/// Every event about an output item carries its `output_index` (ids are optional on some
/// servers), so that is the one key used for all of them.
fn item_slot(v: &Value) -> String {
    format!(
        "output:{}",
        v.get("output_index").and_then(|i| i.as_u64()).unwrap_or(0)
    )
}

impl Decoder for Responses {
    fn event(&mut self, event: &str, data: &str, out: &mut Assembly) -> Result<(), LlmError> {
        if event == "error" && serde_json::from_str::<Value>(data.trim()).is_err() {
            // An error event whose data is plain text: still the provider's error.
            return Err(LlmError::from_stream_event(&self.provider, data));
        }
        let Some(v) = json(&self.provider, data)? else {
            return Ok(());
        };
        let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or(event);
        match kind {
            "response.output_text.delta" => out.text(v["delta"].as_str().unwrap_or("")),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.thinking(v["delta"].as_str().unwrap_or(""))
            }
            "response.output_item.added" => {
                let item = &v["item"];
                if item.get("type").and_then(|t| t.as_str()) == Some("function_call") {
                    let id = item
                        .get("call_id")
                        .or_else(|| item.get("id"))
                        .and_then(|i| i.as_str())
                        .unwrap_or("");
                    out.tool_start(&item_slot(&v), id, item["name"].as_str().unwrap_or(""));
                    out.tool_args(&item_slot(&v), item["arguments"].as_str().unwrap_or(""));
                }
            }
            "response.function_call_arguments.delta" => {
                out.tool_args(&item_slot(&v), v["delta"].as_str().unwrap_or(""))
            }
            "response.function_call_arguments.done" => {
                if let Some(full) = v["arguments"].as_str() {
                    out.tool_args_final(&item_slot(&v), full);
                }
            }
            "response.output_item.done" => {
                let item = &v["item"];
                match item.get("type").and_then(|t| t.as_str()) {
                    // The finished item is the authority on a call's arguments.
                    Some("function_call") => {
                        if let Some(full) = item.get("arguments").and_then(|a| a.as_str()) {
                            out.tool_args_final(&item_slot(&v), full);
                        }
                    }
                    Some("reasoning") => {
                        // Kept opaque (id and encrypted content) so it can be sent back.
                        if let Some(enc) = item.get("encrypted_content").and_then(|e| e.as_str()) {
                            let id = item.get("id").and_then(|i| i.as_str()).unwrap_or("");
                            let opaque = serde_json::json!({"id": id, "encrypted_content": enc});
                            out.signature(None, &opaque.to_string());
                        }
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = &v["response"];
                if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
                    let cached = count(u, "/input_tokens_details/cached_tokens").unwrap_or(0);
                    out.usage(UsageUpdate {
                        input: count(u, "/input_tokens").map(|i| i.saturating_sub(cached)),
                        output: count(u, "/output_tokens"),
                        cache_read: Some(cached),
                        cache_write: None,
                        reasoning: count(u, "/output_tokens_details/reasoning_tokens"),
                    });
                }
                if kind == "response.incomplete" {
                    let reason = response
                        .pointer("/incomplete_details/reason")
                        .and_then(|r| r.as_str());
                    out.stop(if reason == Some("content_filter") {
                        StopReason::ContentFilter
                    } else {
                        StopReason::MaxTokens
                    });
                }
                out.complete();
            }
            "error" | "response.failed" => {
                return Err(LlmError::from_stream_event(&self.provider, data))
            }
            _ => {}
        }
        Ok(())
    }
}
