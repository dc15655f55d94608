//! The approver of a running task: every request and question becomes an event, and waits for
//! the front end to answer through the task's handle. An answer is checked against its request
//! (answered once; only decisions and "always allow" rules the request offered). A stop drops the
//! wait (the tools crate turns that into "rejected: stopped"); the request is then resolved as
//! rejected, so front ends close its dialog.

use crate::status::Tracker;
use crate::Events;
use async_trait::async_trait;
use codewright_protocol::{AgentEvent, ApprovalRequest, Decision, DecisionKind, Question, TaskId};
use codewright_store::{CallState, Store};
use codewright_tools::Approver;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Nothing with this id waits: it was answered (another window, a stale dialog) or the run
    /// ended.
    AlreadyAnswered,
    /// The answer is not one the request offered; says what was wrong.
    NotOffered(String),
}

/// What waits, by id (in the order it was asked), with where its answer goes.
type Waiting<T, A> = Mutex<BTreeMap<u64, (T, oneshot::Sender<A>)>>;

/// Requests waiting for an answer.
#[derive(Default)]
pub(crate) struct Pending {
    approvals: Waiting<ApprovalRequest, Decision>,
    questions: Waiting<Question, Option<String>>,
}

impl Pending {
    /// Answers an approval request, if it waits and the decision is one it offered.
    pub fn decide(&self, id: u64, decision: Decision) -> Result<(), Refusal> {
        let mut approvals = self.approvals.lock().expect("approvals lock");
        let (request, _) = approvals.get(&id).ok_or(Refusal::AlreadyAnswered)?;
        offered(request, &decision).map_err(Refusal::NotOffered)?;
        let (_, tx) = approvals.remove(&id).expect("checked above");
        tx.send(decision).map_err(|_| Refusal::AlreadyAnswered)
    }

    /// Answers a question, if it waits.
    pub fn answer(&self, id: u64, answer: Option<String>) -> Result<(), Refusal> {
        let (_, tx) = self
            .questions
            .lock()
            .expect("questions lock")
            .remove(&id)
            .ok_or(Refusal::AlreadyAnswered)?;
        tx.send(answer).map_err(|_| Refusal::AlreadyAnswered)
    }

    /// What waits for the user now, oldest first.
    pub fn waiting(&self) -> (Vec<ApprovalRequest>, Vec<Question>) {
        let approvals = self.approvals.lock().expect("approvals lock");
        let questions = self.questions.lock().expect("questions lock");
        (
            approvals.values().map(|(r, _)| r.clone()).collect(),
            questions.values().map(|(q, _)| q.clone()).collect(),
        )
    }
}

/// Whether `decision` is one `request` offered: its kind is listed, and "always allow" saves
/// only rules the request showed.
fn offered(request: &ApprovalRequest, decision: &Decision) -> Result<(), String> {
    let kind = match decision {
        // Refusing is always possible.
        Decision::Reject { .. } => return Ok(()),
        Decision::Approve => DecisionKind::Approve,
        Decision::ApproveAlways { .. } => DecisionKind::ApproveAlways,
        Decision::ApproveHunks { .. } => DecisionKind::ApproveHunks,
        Decision::ApproveEdited { .. } => DecisionKind::ApproveEdited,
    };
    if !request.decisions.contains(&kind) {
        return Err(format!("this request cannot be answered with {kind:?}"));
    }
    if let Decision::ApproveAlways { rules } = decision {
        if let Some(rule) = rules.iter().find(|r| !request.always.contains(r)) {
            return Err(format!(
                "the rule {} \"{}\" was not offered by this request",
                rule.tool, rule.pattern
            ));
        }
    }
    Ok(())
}

pub(crate) struct EventApprover {
    pub events: Events,
    pub pending: Arc<Pending>,
    pub tracker: Arc<Tracker>,
    /// Where waiting calls are recorded, so a run that ends while they wait (a crash) asks again.
    pub store: Arc<Mutex<Store>>,
}

impl EventApprover {
    fn record(&self, task: TaskId, call_id: &str, state: CallState) {
        let _ = self
            .store
            .lock()
            .expect("store lock")
            .set_call_state(task, call_id, &state);
    }
}

#[async_trait]
impl Approver for EventApprover {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        let task = request.task_id;
        self.decide_for(request, task).await
    }

    async fn answer(&self, question: Question) -> Option<String> {
        let task = question.task_id;
        self.answer_for(question, task).await
    }
}

impl EventApprover {
    /// Asks `request` in this approver's task (its window; `request.task_id` is that task),
    /// recording where the call got to in the task `caller` whose call it is (a sub-agent's own
    /// task, when it asks through its parent).
    pub(crate) async fn decide_for(&self, request: ApprovalRequest, caller: TaskId) -> Decision {
        let (tx, rx) = oneshot::channel();
        let (task_id, id) = (request.task_id, request.id);
        self.pending
            .approvals
            .lock()
            .expect("approvals lock")
            .insert(id, (request.clone(), tx));
        self.record(caller, &request.call_id, CallState::Asking);
        let call_id = request.call_id.clone();
        self.tracker.approval_asked();
        let _ = self.events.send(AgentEvent::ApprovalRequested { request });
        // If the wait is dropped (a stop), the request leaves the map, so a late answer finds
        // nothing, and is resolved as rejected.
        let guard = Forget { approver: self, id };
        let decision = rx.await.unwrap_or(Decision::Reject { feedback: None });
        drop(guard);
        if !matches!(decision, Decision::Reject { .. }) {
            self.record(caller, &call_id, CallState::Running);
        }
        let _ = self.events.send(AgentEvent::ApprovalResolved {
            task_id,
            id,
            call_id,
            decision: decision.clone(),
        });
        self.tracker.approval_answered();
        decision
    }

    /// Asks `question` in this approver's task, recording it in the task `caller` whose call
    /// it is (see [`EventApprover::decide_for`]).
    pub(crate) async fn answer_for(&self, question: Question, caller: TaskId) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        let (task_id, id) = (question.task_id, question.id);
        self.pending
            .questions
            .lock()
            .expect("questions lock")
            .insert(id, (question.clone(), tx));
        // A question waits for the user like an approval does.
        self.record(caller, &question.call_id, CallState::Asking);
        self.tracker.approval_asked();
        let _ = self.events.send(AgentEvent::QuestionAsked { question });
        let _answered = Defer(|| {
            self.pending
                .questions
                .lock()
                .expect("questions lock")
                .remove(&id);
            let _ = self
                .events
                .send(AgentEvent::QuestionAnswered { task_id, id });
            self.tracker.approval_answered();
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
    approver: &'a EventApprover,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let waiting = self
            .approver
            .pending
            .approvals
            .lock()
            .expect("approvals lock")
            .remove(&self.id);
        if let Some((request, _)) = waiting {
            let _ = self.approver.events.send(AgentEvent::ApprovalResolved {
                task_id: request.task_id,
                id: self.id,
                call_id: request.call_id,
                decision: Decision::Reject {
                    feedback: Some("the user stopped the task".into()),
                },
            });
            self.approver.tracker.approval_answered();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codewright_protocol::{Action, PermissionRule, RuleAction, TaskId};

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            id: 7,
            task_id: TaskId(1),
            call_id: "c".into(),
            tool: "bash".into(),
            summary: "Run cargo test".into(),
            action: Action::Command {
                command: "cargo test".into(),
                cwd: "/p".into(),
                sandboxed: false,
                background: false,
            },
            decisions: vec![
                DecisionKind::Approve,
                DecisionKind::ApproveAlways,
                DecisionKind::Reject,
            ],
            always: vec![rule("cargo test")],
            reason: "commands are asked".into(),
        }
    }

    fn rule(pattern: &str) -> PermissionRule {
        PermissionRule {
            tool: "bash".into(),
            pattern: pattern.into(),
            action: RuleAction::Allow,
        }
    }

    #[test]
    fn an_answer_is_taken_once_and_only_if_offered() {
        let pending = Pending::default();
        let (tx, mut rx) = oneshot::channel();
        pending.approvals.lock().unwrap().insert(7, (request(), tx));
        // A broader rule than the one shown, and a kind not offered, are refused and change nothing.
        let broader = Decision::ApproveAlways {
            rules: vec![rule("")],
        };
        assert!(matches!(
            pending.decide(7, broader),
            Err(Refusal::NotOffered(_))
        ));
        assert!(matches!(
            pending.decide(7, Decision::ApproveHunks { hunks: vec![0] }),
            Err(Refusal::NotOffered(_))
        ));
        assert_eq!(pending.waiting().0.len(), 1);
        let exact = Decision::ApproveAlways {
            rules: vec![rule("cargo test")],
        };
        assert_eq!(pending.decide(7, exact.clone()), Ok(()));
        assert_eq!(rx.try_recv().unwrap(), exact);
        assert_eq!(
            pending.decide(7, Decision::Approve),
            Err(Refusal::AlreadyAnswered)
        );
        assert!(pending.waiting().0.is_empty());
    }
}
