//! The run's state, shared by the loop and its approver: every move goes through
//! [`next`](crate::state::next), is reported as an [`AgentEvent::State`], and the task's stored
//! status follows it, so a window of another process (or one opened later) sees queued, running
//! or needs approval without hearing the events.

use crate::state::{next, Step};
use crate::Events;
use codewright_protocol::{AgentEvent, AgentState, TaskId, TaskStatus};
use codewright_store::Store;
use std::sync::{Arc, Mutex};

pub(crate) struct Tracker {
    task: TaskId,
    events: Events,
    store: Arc<Mutex<Store>>,
    /// The state, and how many approvals wait (parallel calls may ask at once).
    inner: Mutex<(AgentState, usize)>,
}

impl Tracker {
    pub fn new(task: TaskId, events: Events, store: Arc<Mutex<Store>>, state: AgentState) -> Self {
        Tracker {
            task,
            events,
            store,
            inner: Mutex::new((state, 0)),
        }
    }

    pub fn get(&self) -> AgentState {
        self.inner.lock().expect("state lock").0
    }

    /// Moves by `step`; a step the machine does not allow is a bug (caught in debug builds).
    pub fn step(&self, step: Step) {
        let mut inner = self.inner.lock().expect("state lock");
        let to = next(inner.0, step).unwrap_or_else(|| {
            debug_assert!(false, "{:?} cannot {:?}", inner.0, step);
            AgentState::Idle
        });
        self.enter(&mut inner, to);
    }

    /// Waiting for a free slot, shown as queued.
    pub fn queued(&self) {
        let mut inner = self.inner.lock().expect("state lock");
        self.enter(&mut inner, AgentState::Queued);
    }

    pub fn approval_asked(&self) {
        let mut inner = self.inner.lock().expect("state lock");
        inner.1 += 1;
        if let Some(to) = next(inner.0, Step::ApprovalAsked) {
            self.enter(&mut inner, to);
        }
    }

    /// One approval was answered; the state leaves "awaiting approval" when none waits.
    pub fn approval_answered(&self) {
        let mut inner = self.inner.lock().expect("state lock");
        inner.1 = inner.1.saturating_sub(1);
        if inner.1 == 0 {
            if let Some(to) = next(inner.0, Step::ApprovalAnswered) {
                self.enter(&mut inner, to);
            }
        }
    }

    fn enter(&self, inner: &mut (AgentState, usize), to: AgentState) {
        if to == inner.0 {
            return;
        }
        inner.0 = to;
        let _ = self.events.send(AgentEvent::State {
            task_id: self.task,
            state: to,
        });
        let status = match to {
            AgentState::Queued => TaskStatus::Queued,
            AgentState::AwaitingApproval => TaskStatus::AwaitingApproval,
            AgentState::StartingServers
            | AgentState::Streaming
            | AgentState::RunningTools
            | AgentState::Compacting => TaskStatus::Running,
            // The run's end stores how it ended.
            AgentState::Idle => return,
        };
        let _ = self
            .store
            .lock()
            .expect("store lock")
            .set_task_status(self.task, status);
    }
}
