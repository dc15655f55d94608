//! The request body each protocol expects, built from the canonical conversation. The history is
//! first repaired with [`answer_every_call`], so no request ever carries a call without its result.

mod anthropic;
mod gemini;
mod openai_chat;
mod responses;

use crate::provider::{Protocol, Provider};
use base64::Engine;
use codewright_protocol::{answer_every_call, Attachment, AttachmentKind, Message, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Said in place of a result that never came.
pub const INTERRUPTED: &str = "interrupted: the task was stopped before this tool ran";

/// One request to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The provider's model name (without `@provider`).
    pub model: String,
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: u32,
    /// Extended thinking budget in tokens, for models that support it.
    pub thinking_budget: Option<u32>,
    pub sampling: Sampling,
    /// A JSON schema the answer must follow, for a server that constrains its output to one
    /// (llama.cpp's `response_format`); `None`: free text.
    pub answer_schema: Option<Value>,
}

/// How a model samples its answer, as the user set it for the model; `None` leaves the
/// server's default. Each protocol gets what it has: Anthropic and the Responses API have no
/// seed, and Anthropic takes neither with extended thinking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Sampling {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
    /// The answer is constrained by [`ChatRequest::answer_schema`] where the server can (a
    /// local server's grammar): the agent then writes its calls as JSON, offering no native tools.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub constrained: bool,
}

/// The JSON body for `request` in `provider`'s protocol.
pub fn build_body(provider: &Provider, request: &ChatRequest) -> Value {
    let (messages, _) = answer_every_call(&request.messages, INTERRUPTED);
    let request = ChatRequest {
        messages,
        ..request.clone()
    };
    match provider.protocol {
        Protocol::OpenAiChat => openai_chat::body(provider, &request),
        Protocol::OpenAiResponses => responses::body(&request),
        Protocol::Anthropic => anthropic::body(&request),
        Protocol::Gemini => gemini::body(&request),
    }
}

/// How an attachment that is not an inline image reaches the model: as text naming it.
pub(crate) fn attachment_text(a: &Attachment) -> String {
    let kind = match a.kind {
        AttachmentKind::Image => "image",
        AttachmentKind::File => "file",
        AttachmentKind::Snippet => "snippet",
    };
    match (&a.path, &a.data, a.kind) {
        (_, Some(data), AttachmentKind::Snippet | AttachmentKind::File)
            if a.mime.starts_with("text/") =>
        {
            let text = base64::engine::general_purpose::STANDARD
                .decode(data)
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            format!("Attached {kind} {}:\n```\n{text}\n```", a.name)
        }
        (Some(path), _, _) => format!(
            "Attached {kind}: {} ({path}, {} bytes, {})",
            a.name, a.size, a.mime
        ),
        _ => format!("Attached {kind}: {} ({} bytes, {})", a.name, a.size, a.mime),
    }
}

/// An inline image attachment as (mime, base64).
pub(crate) fn inline_image(a: &Attachment) -> Option<(&str, &str)> {
    match (a.kind, &a.data) {
        (AttachmentKind::Image, Some(data)) => Some((a.mime.as_str(), data.as_str())),
        _ => None,
    }
}

/// The arguments of a call as JSON text that parses to an object: a call cut off mid-arguments
/// (output limit, a stop, a crash) would otherwise make servers that parse history reject it.
pub(crate) fn arguments_text(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(_)) => arguments.to_string(),
        _ => "{}".to_string(),
    }
}

/// The arguments of a call as a JSON object (providers that want an object, not text).
pub(crate) fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Default::default()),
    }
}
