//! A model in process, for tests that drive a run step by step without a server: each request a
//! run makes is handed to the test ([`FakeModel::next_request`]), which reads what was sent and
//! answers piece by piece ([`FakeRequest`]) — the answer goes through the same decoding,
//! assembly and streaming as a real provider's (OpenAI Chat Completions events). Give a client
//! the fake with [`crate::Client::with_fake`]; the provider it is called for must speak
//! [`crate::Protocol::OpenAiChat`].

use crate::LlmError;
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// The model. Cheap to clone: clones share the requests.
#[derive(Clone)]
pub struct FakeModel {
    sent: UnboundedSender<FakeRequest>,
    requests: Arc<tokio::sync::Mutex<UnboundedReceiver<FakeRequest>>>,
    count: Arc<Mutex<usize>>,
}

impl std::fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeModel")
            .field("requests", &*self.count.lock().expect("count lock"))
            .finish()
    }
}

impl Default for FakeModel {
    fn default() -> Self {
        FakeModel::new()
    }
}

/// One request a run made: what it sent, and the answer's stream, written by the test.
#[derive(Debug)]
pub struct FakeRequest {
    /// The request body as the provider would get it.
    pub body: Value,
    /// The model it was made for (its name at the provider).
    pub model: String,
    answer: UnboundedSender<Result<Bytes, LlmError>>,
}

impl FakeModel {
    pub fn new() -> FakeModel {
        let (sent, requests) = unbounded_channel();
        FakeModel {
            sent,
            requests: Arc::new(tokio::sync::Mutex::new(requests)),
            count: Arc::default(),
        }
    }

    /// The next request a run makes (waits until one does).
    pub async fn next_request(&self) -> FakeRequest {
        self.requests
            .lock()
            .await
            .recv()
            .await
            .expect("the fake model's sender lives as long as the model")
    }

    /// How many requests were made so far.
    pub fn requests(&self) -> usize {
        *self.count.lock().expect("count lock")
    }

    /// Takes a request (from the client): its answer is the stream returned.
    pub(crate) fn ask(
        &self,
        model: &str,
        body: &Value,
    ) -> UnboundedReceiver<Result<Bytes, LlmError>> {
        let (answer, stream) = unbounded_channel();
        *self.count.lock().expect("count lock") += 1;
        let _ = self.sent.send(FakeRequest {
            body: body.clone(),
            model: model.to_string(),
            answer,
        });
        stream
    }
}

impl FakeRequest {
    /// The text of the last message sent (the user's prompt, or the last tool result).
    pub fn last_text(&self) -> String {
        let last = &self.body["messages"].as_array().and_then(|m| m.last());
        match last.map(|m| &m["content"]) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        }
    }

    /// Sends one event of the answer, as a server writes it (`data: …`).
    pub fn event(&self, data: &Value) {
        let _ = self
            .answer
            .send(Ok(Bytes::from(format!("data: {data}\n\n"))));
    }

    /// Sends a piece of the answer's text.
    pub fn text(&self, text: &str) {
        self.event(&json!({"choices": [{"index": 0, "delta": {"content": text}}]}));
    }

    /// Sends a whole tool call (the `index`-th of the answer).
    pub fn tool_call(&self, index: usize, id: &str, name: &str, arguments: &Value) {
        self.event(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
            "index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}
        }]}}]}));
    }

    /// Ends the answer: `stop` after text, `tool_calls` after calls.
    pub fn finish(self, reason: &str) {
        self.event(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}));
        self.event(&json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}));
        let _ = self
            .answer
            .send(Ok(Bytes::from_static(b"data: [DONE]\n\n")));
    }

    /// Fails the answer with `error` where it got to.
    pub fn fail(self, error: LlmError) {
        let _ = self.answer.send(Err(error));
    }
}
