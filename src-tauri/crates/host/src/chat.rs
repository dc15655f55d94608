//! One streamed completion without tools (`codewright-cli chat`). With a task, its messages are
//! sent first and the exchange is stored in it as it streams (a crash loses at most one write
//! interval), under the task's run lock: one run per task at a time, across windows and
//! processes, for a chat as for an agent run.

use crate::{Host, HostError};
use codewright_llm::request::build_body;
use codewright_llm::{ChatRequest, Client, Delta, RetryPolicy};
use codewright_protocol::{ErrorKind, Message, Part, Role, StopReason, TaskId};
use codewright_store::UsageEvent;
use tokio_util::sync::CancellationToken;

/// What a chat answered.
#[derive(Debug, Clone)]
pub struct Answer {
    pub message: Message,
    /// MODEL@PROVIDER, as it was asked for.
    pub model: String,
    /// US dollars, from the model's prices.
    pub cost: f64,
    /// The model's prices are known (a cost of an unknown model would be a made-up figure).
    pub priced: bool,
}

/// Why a chat gave no answer.
#[derive(Debug, Clone)]
pub struct Unanswered {
    pub error: HostError,
    /// Stopped by the caller (`cancel`), not failed.
    pub stopped: bool,
    /// Some text had arrived (and was passed on) before it ended.
    pub partial_text: bool,
    /// The provider was asked (else the error is Codewright's: no model, no key).
    pub asked: bool,
}

impl From<HostError> for Unanswered {
    fn from(error: HostError) -> Unanswered {
        Unanswered {
            error,
            stopped: false,
            partial_text: false,
            asked: false,
        }
    }
}

impl Host {
    /// Asks `model` (MODEL@PROVIDER; `None`: the main model) `prompt`, after `task`'s messages
    /// when given, passing each delta to `on_delta` as it arrives; `cancel` stops it.
    pub async fn chat(
        &self,
        model: Option<&str>,
        task: Option<TaskId>,
        prompt: &str,
        cancel: &CancellationToken,
        on_delta: &mut (dyn FnMut(&Delta) + Send),
    ) -> Result<Answer, Unanswered> {
        if prompt.trim().is_empty() {
            return Err(HostError::new(
                ErrorKind::BadInput,
                "the prompt is empty; say what you want to ask",
            )
            .into());
        }
        let resolved = crate::models::resolve(&self.inner.store(), model)?;
        let model_id = resolved.info.id.clone();
        let model_name = codewright_llm::catalog::parse_model_id(&model_id)
            .map(|(name, _)| name.to_string())
            .map_err(HostError::from)?;
        // Held until the answer is stored: no run of the task starts meanwhile, here or in
        // another process.
        let _lock = match task {
            Some(task) => Some(self.hold(task, "the task is running; wait for it, or stop it")?),
            None => None,
        };
        let prompt = Message::user(prompt.to_string());
        let (mut messages, mut streaming) = match task {
            Some(task) => {
                let store = self.inner.store();
                let history = store.history(task).map_err(HostError::from)?;
                store
                    .append_message(task, &prompt)
                    .map_err(HostError::from)?;
                let streaming = store
                    .start_streaming(task, &model_id)
                    .map_err(HostError::from)?;
                (
                    history.into_iter().map(|r| r.message).collect(),
                    Some(streaming),
                )
            }
            None => (Vec::new(), None),
        };
        messages.push(prompt);
        let request = ChatRequest {
            model: model_name.clone(),
            system: None,
            messages,
            tools: Vec::new(),
            max_output_tokens: resolved.info.max_output.min(32_000) as u32,
            thinking_budget: None,
            sampling: resolved.info.sampling,
            answer_schema: None,
        };
        let provider = resolved.provider;
        let body = build_body(&provider, &request);
        let store = self.inner.store.clone();
        let mut on_part = |delta: &Delta, parts: &[Part]| {
            on_delta(delta);
            let size = match delta {
                Delta::Text(t) | Delta::Thinking(t) => t.len(),
                Delta::ToolCallStarted { name, .. } => name.len().max(1),
                Delta::ToolCallArguments { arguments, .. } => arguments.len(),
                // A silent stream: whatever is unwritten gets written once it is due.
                Delta::Usage(_) | Delta::Idle | Delta::Retry { .. } => 0,
            };
            if let Some(stream) = streaming.as_mut() {
                let store = store.lock().unwrap_or_else(|p| p.into_inner());
                if let Err(e) = stream.update(&store, parts, size) {
                    eprintln!("codewright: could not save the answer so far: {e}");
                }
            }
        };
        let result = Client::new(RetryPolicy::default())
            .stream(
                &provider,
                resolved.key.as_deref(),
                &model_name,
                &body,
                cancel,
                &mut on_part,
            )
            .await;
        let store = self.inner.store();
        match result {
            Ok(mut message) => {
                // Stored under the id it was asked for, not the server's echo of a bare name.
                message.model = Some(model_id.clone());
                let usage = message.usage.unwrap_or_default();
                let cost = resolved.info.pricing.cost(&usage);
                if let Some(stream) = streaming {
                    let event = UsageEvent {
                        model: model_id.clone(),
                        provider: provider.name.clone(),
                        usage,
                        cost,
                    };
                    stream
                        .finish(&store, &message, Some(&event))
                        .map_err(HostError::from)?;
                }
                Ok(Answer {
                    message,
                    model: model_id,
                    cost,
                    priced: resolved.info.known,
                })
            }
            Err(failure) => {
                let stopped = failure.error.kind == codewright_llm::ErrorKind::Cancelled;
                let partial_text = failure
                    .partial
                    .as_ref()
                    .is_some_and(|m| !m.text().is_empty());
                if let Some(stream) = streaming {
                    // Kept whatever arrived, marked with why it stopped (and the error, to read
                    // later).
                    let mut partial = failure
                        .partial
                        .unwrap_or_else(|| Message::new(Role::Assistant, Vec::new()));
                    partial.model = Some(model_id.clone());
                    if stopped {
                        partial.stop_reason = Some(StopReason::Aborted);
                    } else {
                        partial.stop_reason = Some(StopReason::Error);
                        partial.error = Some(failure.error.message.clone());
                    }
                    stream
                        .finish(&store, &partial, None)
                        .map_err(HostError::from)?;
                }
                Err(Unanswered {
                    error: HostError::new(failure.error.kind.into(), failure.error.message),
                    stopped,
                    partial_text,
                    asked: true,
                })
            }
        }
    }
}
