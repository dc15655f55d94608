//! Google Gemini `generateContent` bodies.

use super::{arguments_object, attachment_text, inline_image, ChatRequest};
use codewright_protocol::{Part, Role, ToolContent};
use serde_json::{json, Value};
use std::collections::HashMap;

pub(crate) fn body(r: &ChatRequest) -> Value {
    // functionResponse names the function, not the call: the names of the calls made by the
    // assistant message just before each tool message.
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut system: Vec<String> = r.system.iter().cloned().collect();
    let mut contents: Vec<Value> = Vec::new();
    for m in &r.messages {
        if m.role == Role::Assistant {
            names = m.tool_calls().map(|c| (c.id, c.name)).collect();
        }
        let role = match m.role {
            Role::System => {
                system.push(m.text());
                continue;
            }
            Role::User | Role::Tool => "user",
            Role::Assistant => "model",
        };
        let parts: Vec<Value> = m
            .parts
            .iter()
            .filter_map(|p| {
                Some(match p {
                    Part::Text { text } if !text.is_empty() => json!({"text": text}),
                    Part::ToolCall { name, arguments, signature, .. } => {
                        let mut part = json!({"functionCall": {"name": name, "args": arguments_object(arguments)}});
                        if let Some(sig) = signature {
                            part["thoughtSignature"] = json!(sig);
                        }
                        part
                    }
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                        ..
                    } => {
                        let text: String = content
                            .iter()
                            .filter_map(|c| match c {
                                ToolContent::Text { text } => Some(text.as_str()),
                                ToolContent::Image { .. } => None,
                            })
                            .collect();
                        let key = if *is_error { "error" } else { "content" };
                        json!({"functionResponse": {"name": names.get(call_id.as_str()).copied().unwrap_or(""), "response": {key: text}}})
                    }
                    Part::Attachment(a) => match inline_image(a) {
                        Some((mime, data)) => json!({"inlineData": {"mimeType": mime, "data": data}}),
                        None => json!({"text": attachment_text(a)}),
                    },
                    _ => return None,
                })
            })
            .collect();
        if parts.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some(last) if last["role"] == role => {
                last["parts"].as_array_mut().expect("parts").extend(parts)
            }
            _ => contents.push(json!({"role": role, "parts": parts})),
        }
    }
    let mut body = json!({
        "contents": contents,
        "generationConfig": {"maxOutputTokens": r.max_output_tokens},
    });
    let config = &mut body["generationConfig"];
    if let Some(t) = r.sampling.temperature {
        config["temperature"] = json!(t);
    }
    if let Some(p) = r.sampling.top_p {
        config["topP"] = json!(p);
    }
    if let Some(seed) = r.sampling.seed {
        config["seed"] = json!(seed);
    }
    if !system.is_empty() {
        body["systemInstruction"] = json!({"parts": [{"text": system.join("\n\n")}]});
    }
    if !r.tools.is_empty() {
        body["tools"] = json!([{"functionDeclarations": r.tools.iter().map(|t| json!({
            "name": t.name, "description": t.description, "parameters": t.input_schema
        })).collect::<Vec<_>>()}]);
    }
    if let Some(budget) = r.thinking_budget {
        body["generationConfig"]["thinkingConfig"] =
            json!({"thinkingBudget": budget, "includeThoughts": true});
    }
    body
}
