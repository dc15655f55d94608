//! OpenAI Chat Completions bodies (also every OpenAI-compatible server).

use super::{attachment_text, inline_image, ChatRequest};
use crate::provider::Provider;
use codewright_protocol::{Part, Role, ToolContent};
use serde_json::{json, Value};

pub(crate) fn body(provider: &Provider, r: &ChatRequest) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &r.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in &r.messages {
        match m.role {
            Role::System => messages.push(json!({"role": "system", "content": m.text()})),
            Role::User => messages.push(json!({"role": "user", "content": user_content(&m.parts)})),
            Role::Assistant => {
                let text = m.text();
                // A failed turn can leave an assistant message with nothing to send (or only
                // thinking): an empty assistant message is an error for most servers.
                if text.is_empty() && m.tool_calls().next().is_none() {
                    continue;
                }
                let calls: Vec<Value> = m
                    .tool_calls()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": super::arguments_text(c.arguments)}}))
                    .collect();
                // `""`, not `null`, beside tool calls: OpenAI takes either, but some compatible
                // servers (llama-cpp-python) refuse `null` with a 500.
                let mut msg = json!({"role": "assistant", "content": text});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                messages.push(msg);
            }
            Role::Tool => {
                // One tool message per result; images (which tool messages cannot carry) follow
                // in a user message.
                let mut images = Vec::new();
                for part in &m.parts {
                    if let Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                        ..
                    } = part
                    {
                        let mut text = String::new();
                        for c in content {
                            match c {
                                ToolContent::Text { text: t } => text.push_str(t),
                                ToolContent::Image { mime, data } => {
                                    images.push(json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}}));
                                }
                            }
                        }
                        if *is_error && !text.starts_with("Error") {
                            text = format!("Error: {text}");
                        }
                        messages.push(
                            json!({"role": "tool", "tool_call_id": call_id, "content": text}),
                        );
                    }
                }
                if !images.is_empty() {
                    let mut content = vec![
                        json!({"type": "text", "text": "Images returned by the tool calls above:"}),
                    ];
                    content.extend(images);
                    messages.push(json!({"role": "user", "content": content}));
                }
            }
        }
    }
    let mut body = json!({
        "model": r.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    // OpenAI's own endpoint wants max_completion_tokens; compatible servers know max_tokens.
    let limit_key = if provider.base_url.starts_with("https://api.openai.com") {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit_key] = json!(r.max_output_tokens);
    let s = r.sampling;
    for (key, value) in [
        ("temperature", s.temperature.map(Value::from)),
        ("top_p", s.top_p.map(Value::from)),
        ("seed", s.seed.map(Value::from)),
    ] {
        if let Some(value) = value {
            body[key] = value;
        }
    }
    if let Some(schema) = &r.answer_schema {
        body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": schema}});
    }
    if !r.tools.is_empty() {
        body["tools"] = Value::Array(
            r.tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
                .collect(),
        );
    }
    body
}

/// A user message's content: a plain string when it is only text, else typed parts.
fn user_content(parts: &[Part]) -> Value {
    let mut items = Vec::new();
    for part in parts {
        match part {
            Part::Text { text } => items.push(json!({"type": "text", "text": text})),
            Part::Attachment(a) => match inline_image(a) {
                Some((mime, data)) => {
                    items.push(json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}}))
                }
                None => items.push(json!({"type": "text", "text": attachment_text(a)})),
            },
            _ => {}
        }
    }
    if items.iter().all(|i| i["type"] == "text") {
        let texts: Vec<&str> = items.iter().filter_map(|i| i["text"].as_str()).collect();
        return Value::String(texts.join("\n\n"));
    }
    Value::Array(items)
}
