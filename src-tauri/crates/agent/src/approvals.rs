//! The approver of a running task: every request and question becomes an event, and waits for
//! the front end to answer through the task's handle. A stop drops the wait (the tools crate
//! turns that into "rejected: stopped"); the request is then resolved as rejected, so front ends
//! close its dialog.

use crate::Events;
use async_trait::async_trait;
use codewright_protocol::{AgentEvent, AgentState, ApprovalRequest, Decision, Question};
use codewright_tools::Approver;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// Requests waiting for an answer, by id.
#[derive(Default)]
pub(crate) struct Pending {
    approvals: Mutex<HashMap<u64, oneshot::Sender<Decision>>>,
    questions: Mutex<HashMap<u64, oneshot::Sender<Option<String>>>>,
}

impl Pending {
    /// Answers an approval request; false if no such request waits.
    pub fn decide(&self, id: u64, decision: Decision) -> bool {
        match self.approvals.lock().expect("approvals lock").remove(&id) {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    /// Answers a question; false if no such question waits.
    pub fn answer(&self, id: u64, answer: Option<String>) -> bool {
        match self.questions.lock().expect("questions lock").remove(&id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }
}

pub(crate) struct EventApprover {
    pub events: Events,
    pub pending: std::sync::Arc<Pending>,
}

#[async_trait]
impl Approver for EventApprover {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        let (tx, rx) = oneshot::channel();
        let (task_id, id) = (request.task_id, request.id);
        self.pending
            .approvals
            .lock()
            .expect("approvals lock")
            .insert(id, tx);
        let _ = self.events.send(AgentEvent::State {
            task_id,
            state: AgentState::AwaitingApproval,
        });
        let _ = self.events.send(AgentEvent::ApprovalRequested { request });
        // If the wait is dropped (a stop), the request leaves the map, so a late answer finds
        // nothing, and is resolved as rejected.
        let guard = Forget {
            pending: &self.pending,
            events: &self.events,
            task_id,
            id,
        };
        let decision = rx.await.unwrap_or(Decision::Reject { feedback: None });
        drop(guard);
        let _ = self.events.send(AgentEvent::ApprovalResolved {
            task_id,
            id,
            decision: decision.clone(),
        });
        let _ = self.events.send(AgentEvent::State {
            task_id,
            state: AgentState::RunningTools,
        });
        decision
    }

    async fn answer(&self, question: Question) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        self.pending
            .questions
            .lock()
            .expect("questions lock")
            .insert(question.id, tx);
        let id = question.id;
        let _ = self.events.send(AgentEvent::QuestionAsked { question });
        let pending = &self.pending;
        let _forget = Defer(move || {
            pending
                .questions
                .lock()
                .expect("questions lock")
                .remove(&id);
        });
        rx.await.ok().flatten()
    }
}

/// Runs its function when dropped.
struct Defer<F: FnMut()>(F);

impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// Resolves an approval request whose wait was dropped (the task stopped) as rejected.
struct Forget<'a> {
    pending: &'a Pending,
    events: &'a Events,
    task_id: codewright_protocol::TaskId,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let waiting = self
            .pending
            .approvals
            .lock()
            .expect("approvals lock")
            .remove(&self.id);
        if waiting.is_some() {
            let _ = self.events.send(AgentEvent::ApprovalResolved {
                task_id: self.task_id,
                id: self.id,
                decision: Decision::Reject {
                    feedback: Some("the user stopped the task".into()),
                },
            });
        }
    }
}
