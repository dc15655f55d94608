//! Stream decoders, one per wire protocol. Each turns SSE events into calls on an [`Assembly`];
//! unknown event types and fields are ignored, so new provider features never break a stream. An
//! event whose data is not JSON is an error ([`ErrorKind::BadResponse`](crate::ErrorKind)), never
//! skipped: a skipped chunk would leave a hole in an answer stored as whole.

mod anthropic;
mod gemini;
mod openai_chat;
mod responses;

use crate::assemble::Assembly;
use crate::error::LlmError;
use crate::provider::Protocol;

/// Decodes one protocol's SSE events.
pub(crate) trait Decoder: Send {
    /// Handles one event. `event` is the SSE event name (`message` when none was given).
    fn event(&mut self, event: &str, data: &str, out: &mut Assembly) -> Result<(), LlmError>;
}

/// A decoder for `protocol`; `provider` names the provider in error messages.
pub(crate) fn decoder(protocol: Protocol, provider: &str) -> Box<dyn Decoder> {
    let provider = provider.to_string();
    match protocol {
        Protocol::OpenAiChat => Box::new(openai_chat::OpenAiChat::new(provider)),
        Protocol::OpenAiResponses => Box::new(responses::Responses::new(provider)),
        Protocol::Anthropic => Box::new(anthropic::Anthropic::new(provider)),
        Protocol::Gemini => Box::new(gemini::Gemini::new(provider)),
    }
}

/// An event's data as JSON; `None` for data that is only white space (nothing to decode).
pub(crate) fn json(provider: &str, data: &str) -> Result<Option<serde_json::Value>, LlmError> {
    let data = data.trim();
    if data.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(data)
        .map(Some)
        .map_err(|_| LlmError::malformed_event(provider, data))
}

/// Reads a JSON number field as u64.
pub(crate) fn count(value: &serde_json::Value, pointer: &str) -> Option<u64> {
    value.pointer(pointer).and_then(|v| v.as_u64())
}
