//! The approver of a running task: every request and question becomes an event, and waits for
//! the front end to answer through the task's handle. A stop drops the wait (the tools crate
//! turns that into "rejected: stopped").

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
        // Removed from the map if the wait is dropped (a stop), so a late answer finds nothing.
        let guard = Forget {
            pending: &self.pending,
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
        let _ = self.events.send(AgentEvent::QuestionAsked { question });
        rx.await.ok().flatten()
    }
}

struct Forget<'a> {
    pending: &'a Pending,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.pending
            .approvals
            .lock()
            .expect("approvals lock")
            .remove(&self.id);
    }
}
