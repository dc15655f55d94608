//! Anthropic Messages bodies.

use super::{arguments_object, attachment_text, inline_image, ChatRequest};
use codewright_protocol::{Part, Role, ToolContent};
use serde_json::{json, Value};

pub(crate) fn body(r: &ChatRequest) -> Value {
    // Anthropic has no system or tool role: system text goes up top, tool results are user
    // content, and consecutive messages of one role are merged.
    let mut system: Vec<String> = r.system.iter().cloned().collect();
    let mut messages: Vec<Value> = Vec::new();
    for m in &r.messages {
        let role = match m.role {
            Role::System => {
                system.push(m.text());
                continue;
            }
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
        };
        let blocks: Vec<Value> = m.parts.iter().filter_map(block).collect();
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                last["content"]
                    .as_array_mut()
                    .expect("content is an array")
                    .extend(blocks);
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let mut body = json!({
        "model": r.model,
        "max_tokens": r.max_output_tokens,
        "messages": messages,
        "stream": true,
    });
    if !system.is_empty() {
        body["system"] = json!([{"type": "text", "text": system.join("\n\n")}]);
    }
    if !r.tools.is_empty() {
        body["tools"] = Value::Array(
            r.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema})).collect(),
        );
    }
    if let Some(budget) = r.thinking_budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    } else {
        // (Anthropic refuses both beside extended thinking.)
        if let Some(t) = r.sampling.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(p) = r.sampling.top_p {
            body["top_p"] = json!(p);
        }
    }
    body
}

fn block(part: &Part) -> Option<Value> {
    Some(match part {
        Part::Text { text } if text.is_empty() => return None,
        Part::Text { text } => json!({"type": "text", "text": text}),
        Part::Thinking {
            redacted: Some(data),
            ..
        } => json!({"type": "redacted_thinking", "data": data}),
        // Thinking without a signature cannot be sent back (Anthropic rejects it): drop it.
        Part::Thinking {
            signature: None, ..
        } => return None,
        Part::Thinking {
            text,
            signature: Some(sig),
            ..
        } => json!({"type": "thinking", "thinking": text, "signature": sig}),
        Part::ToolCall {
            id,
            name,
            arguments,
            ..
        } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": arguments_object(arguments)})
        }
        Part::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => {
            let content: Vec<Value> = content
                .iter()
                .map(|c| match c {
                    ToolContent::Text { text } => json!({"type": "text", "text": text}),
                    ToolContent::Image { mime, data } => {
                        json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
                    }
                })
                .collect();
            json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error})
        }
        Part::Attachment(a) => match inline_image(a) {
            Some((mime, data)) => {
                json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
            }
            None => json!({"type": "text", "text": attachment_text(a)}),
        },
    })
}
