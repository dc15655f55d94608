//! The handle a front end holds on a running task: stop it, steer it, answer what it asks, wait
//! for it.

use crate::approvals::{Pending, Refusal};
use crate::status::Tracker;
use codewright_protocol::{AgentState, ApprovalRequest, Message, Question, RunOutcome, TaskId};
use codewright_store::Store;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// A running task: stop it, steer it, answer its approvals, wait for it.
pub struct TaskHandle {
    pub(crate) task: TaskId,
    pub(crate) cancel: CancellationToken,
    pub(crate) steer: Arc<Mutex<Steer>>,
    pub(crate) store: Arc<Mutex<Store>>,
    pub(crate) pending: Arc<Pending>,
    /// Weak: the tracker holds the run's event sender, which must close when the run ends.
    pub(crate) tracker: std::sync::Weak<Tracker>,
    pub(crate) join: tokio::task::JoinHandle<RunOutcome>,
}

impl TaskHandle {
    pub fn task(&self) -> TaskId {
        self.task
    }

    /// Stops the run: streaming ends (what arrived is kept), running tools are killed, waiting
    /// approvals are resolved as rejected, and every unanswered call gets a result.
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// Queues the user's message (text, or [`Message::user`] with attachments) for the model;
    /// it is delivered at the next turn boundary (before the next request). `Err` gives it back
    /// when the run has already ended: start a new run with it. A queued message is kept in the
    /// store before this returns: one still queued when a run stops or fails is put in the task,
    /// and one queued when the process died is delivered by the task's next run, so none is ever
    /// lost.
    pub fn steer(&self, message: impl Into<Message>) -> Result<(), Box<Message>> {
        let mut steer = self.steer.lock().expect("steer lock");
        let message = message.into();
        if steer.closed {
            return Err(Box::new(message));
        }
        // (Should the store refuse, the message is still delivered from memory.)
        let id = self
            .store
            .lock()
            .expect("store lock")
            .queue_message(self.task, &message)
            .ok();
        steer.queue.push_back(Queued { id, message });
        Ok(())
    }

    /// Answers an approval request: refused if it no longer waits (answered elsewhere, the run
    /// ended) or if the decision is not one it offered; then nothing changes.
    pub fn decide(&self, id: u64, decision: codewright_protocol::Decision) -> Result<(), Refusal> {
        self.pending.decide(id, decision)
    }

    /// Answers a question: refused if it no longer waits.
    pub fn answer(&self, id: u64, answer: Option<String>) -> Result<(), Refusal> {
        self.pending.answer(id, answer)
    }

    /// The approval requests and questions waiting for the user now, oldest first.
    pub fn waiting(&self) -> (Vec<ApprovalRequest>, Vec<Question>) {
        self.pending.waiting()
    }

    /// Where the run is now.
    pub fn state(&self) -> AgentState {
        self.tracker
            .upgrade()
            .map_or(AgentState::Idle, |tracker| tracker.get())
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.join.is_finished()
    }

    /// Waits for the run to end.
    pub async fn wait(self) -> RunOutcome {
        self.join.await.unwrap_or(RunOutcome::Failed)
    }
}

/// Messages sent while a task runs, waiting for the next turn boundary; closed when the run
/// ends, so a late one is handed back instead of lost.
#[derive(Default)]
pub(crate) struct Steer {
    pub(crate) queue: VecDeque<Queued>,
    pub(crate) closed: bool,
}

/// A message waiting for a turn boundary, and its row in the store's queue (see
/// [`Store::queue_message`]).
pub(crate) struct Queued {
    pub(crate) id: Option<i64>,
    pub(crate) message: Message,
}
