//! OpenAI Chat Completions streams, and the many servers that speak it (DeepSeek, Groq, xAI,
//! OpenRouter, vLLM, llama.cpp, Ollama, LM Studio…).

use super::{count, json, Decoder};
use crate::assemble::{Assembly, UsageUpdate};
use crate::error::LlmError;
use codewright_protocol::StopReason;
use serde_json::Value;

pub(crate) struct OpenAiChat {
    provider: String,
}

impl OpenAiChat {
    pub fn new(provider: String) -> Self {
        OpenAiChat { provider }
    }
}

fn stop_reason(finish: &str) -> StopReason {
    match finish {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

impl Decoder for OpenAiChat {
    fn event(&mut self, event: &str, data: &str, out: &mut Assembly) -> Result<(), LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            out.complete();
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        if event == "error" {
            return Err(LlmError::from_stream_event(&self.provider, data));
        }
        let Some(chunk) = json(&self.provider, data)? else {
            return Ok(());
        };
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(LlmError::from_stream_event(&self.provider, data));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            // prompt_tokens includes cached tokens; ours counts them separately.
            let cached = count(usage, "/prompt_tokens_details/cached_tokens")
                .or_else(|| count(usage, "/prompt_cache_hit_tokens"))
                .unwrap_or(0);
            out.usage(UsageUpdate {
                input: count(usage, "/prompt_tokens").map(|p| p.saturating_sub(cached)),
                // Most servers count reasoning inside completion_tokens; xAI counts it beside
                // (total = prompt + completion + reasoning). Output is what is billed as output.
                output: count(usage, "/completion_tokens").map(|c| {
                    let prompt = count(usage, "/prompt_tokens").unwrap_or(0);
                    let total = count(usage, "/total_tokens").unwrap_or(0);
                    c.max(total.saturating_sub(prompt))
                }),
                cache_read: Some(cached),
                cache_write: None,
                reasoning: count(usage, "/completion_tokens_details/reasoning_tokens"),
            });
        }
        // n > 1 interleaves choices: follow choice 0 only.
        let Some(choice) = chunk
            .get("choices")
            .and_then(|c| c.as_array())
            .and_then(|c| {
                c.iter()
                    .find(|c| c.get("index").and_then(|i| i.as_u64()).unwrap_or(0) == 0)
            })
        else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            // DeepSeek says reasoning_content, Groq and others reasoning: take one, never both.
            let reasoning = delta
                .get("reasoning_content")
                .or_else(|| delta.get("reasoning"));
            if let Some(t) = reasoning.and_then(|t| t.as_str()) {
                out.thinking(t);
            }
            if let Some(t) = delta.get("content").and_then(|t| t.as_str()) {
                out.text(t);
            }
            let calls = delta.get("tool_calls").and_then(|c| c.as_array());
            for (position, call) in calls.into_iter().flatten().enumerate() {
                // Servers that omit `index` send whole calls: their position is their index.
                let index = call
                    .get("index")
                    .and_then(|i| i.as_u64())
                    .unwrap_or(position as u64);
                let slot = format!("tool:{index}");
                if !out.has_slot(&slot) {
                    let id = call
                        .get("id")
                        .and_then(|i| i.as_str())
                        .map(str::to_owned)
                        .unwrap_or_else(|| format!("call_{index}"));
                    let name = call
                        .pointer("/function/name")
                        .and_then(|n| n.as_str())
                        .unwrap_or("");
                    out.tool_start(&slot, &id, name);
                }
                match call.pointer("/function/arguments") {
                    Some(Value::String(args)) => out.tool_args(&slot, args),
                    // Some servers send the arguments as an object in one piece.
                    Some(args @ Value::Object(_)) => out.tool_args(&slot, &args.to_string()),
                    _ => {}
                }
            }
        }
        if let Some(finish) = choice.get("finish_reason").and_then(|f| f.as_str()) {
            out.stop(stop_reason(finish));
        }
        Ok(())
    }
}
