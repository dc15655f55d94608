//! OpenAI Responses API bodies.

use super::{attachment_text, inline_image, ChatRequest};
use codewright_protocol::{Part, Role, ToolContent};
use serde_json::{json, Value};

pub(crate) fn body(r: &ChatRequest) -> Value {
    let mut input = Vec::new();
    for m in &r.messages {
        match m.role {
            Role::System => input.push(
                json!({"role": "system", "content": [{"type": "input_text", "text": m.text()}]}),
            ),
            Role::User => {
                let content: Vec<Value> = m
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text { text } => Some(json!({"type": "input_text", "text": text})),
                        Part::Attachment(a) => Some(match inline_image(a) {
                            Some((mime, data)) => json!({"type": "input_image", "image_url": format!("data:{mime};base64,{data}")}),
                            None => json!({"type": "input_text", "text": attachment_text(a)}),
                        }),
                        _ => None,
                    })
                    .collect();
                input.push(json!({"role": "user", "content": content}));
            }
            Role::Assistant => {
                for part in &m.parts {
                    match part {
                        Part::Text { text } if !text.is_empty() => {
                            input.push(json!({"role": "assistant", "content": [{"type": "output_text", "text": text}]}))
                        }
                        Part::ToolCall { id, name, arguments, .. } => input.push(
                            json!({"type": "function_call", "call_id": id, "name": name, "arguments": super::arguments_text(arguments)}),
                        ),
                        // Reasoning the provider gave back encrypted (id and content, kept as the
                        // thinking part's opaque signature) returns as the same reasoning item.
                        Part::Thinking { text, signature: Some(sig), .. } => {
                            if let Ok(item) = serde_json::from_str::<Value>(sig) {
                                if let (Some(id), Some(enc)) = (item["id"].as_str(), item["encrypted_content"].as_str()) {
                                    let summary: Vec<Value> = if text.is_empty() {
                                        Vec::new()
                                    } else {
                                        vec![json!({"type": "summary_text", "text": text})]
                                    };
                                    input.push(json!({"type": "reasoning", "id": id, "encrypted_content": enc, "summary": summary}));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            Role::Tool => {
                for part in &m.parts {
                    if let Part::ToolResult {
                        call_id, content, ..
                    } = part
                    {
                        let output: Vec<Value> = content
                            .iter()
                            .map(|c| match c {
                                ToolContent::Text { text } => json!({"type": "input_text", "text": text}),
                                ToolContent::Image { mime, data } => {
                                    json!({"type": "input_image", "image_url": format!("data:{mime};base64,{data}")})
                                }
                            })
                            .collect();
                        input.push(json!({"type": "function_call_output", "call_id": call_id, "output": output}));
                    }
                }
            }
        }
    }
    let mut body = json!({
        "model": r.model,
        "input": input,
        "stream": true,
        "store": false,
        "max_output_tokens": r.max_output_tokens,
    });
    if let Some(t) = r.sampling.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(p) = r.sampling.top_p {
        body["top_p"] = json!(p);
    }
    if let Some(budget) = r.thinking_budget {
        // Reasoning models: ask for the effort the budget suggests, a summary to show, and the
        // encrypted reasoning so it can be sent back (requests are stateless: store=false).
        let effort = match budget {
            0..=4_095 => "low",
            4_096..=16_383 => "medium",
            _ => "high",
        };
        body["reasoning"] = json!({"effort": effort, "summary": "auto"});
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(system) = &r.system {
        body["instructions"] = json!(system);
    }
    if !r.tools.is_empty() {
        body["tools"] = Value::Array(
            r.tools
                .iter()
                .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema}))
                .collect(),
        );
    }
    body
}
