//! What a person does to a task's files by hand, outside a run: put back a checkpoint or a
//! turn's changes, or run one tool as the agent would. Each holds the task's run lock, so no run
//! (in this process or another) changes the same files meanwhile.

use crate::{store_error, Host, HostError};
use codewright_protocol::{Checkpoint, ErrorKind, PermissionMode, TaskId};
use codewright_tools::checkpoint::Restored;
use codewright_tools::{Approver, CallContext, Checkpoints, Registry, Session, SessionConfig};
use std::sync::Arc;

/// Which checkpoint to put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restore {
    /// A checkpoint by id (a restore's own checkpoint undoes it).
    Checkpoint(i64),
    /// What the task's turn `n` changed.
    Turn(i64),
}

/// How a tool run by hand runs.
#[derive(Debug, Clone, Copy)]
pub struct ByHand {
    pub mode: PermissionMode,
    /// The turn its checkpoint belongs to.
    pub turn: i64,
    /// Commands run under the Landlock sandbox.
    pub sandbox: bool,
}

impl Host {
    /// Puts back the files of a checkpoint; returns the checkpoint that undoes it. Refused
    /// while the task runs.
    pub fn restore(&self, task: TaskId, checkpoint: i64) -> Result<Checkpoint, HostError> {
        let restored = self.restore_files(task, Restore::Checkpoint(checkpoint))?;
        self.inner
            .store()
            .checkpoints(task)
            .map_err(store_error)?
            .into_iter()
            .find(|c| c.id == restored.undo_checkpoint)
            .ok_or_else(|| HostError::new(ErrorKind::Checkpoint, "the restore was not recorded"))
    }

    /// Puts back the files of a checkpoint or a turn: what was written back and removed.
    /// Refused while the task runs.
    pub fn restore_files(&self, task: TaskId, which: Restore) -> Result<Restored, HostError> {
        let _lock = self.hold(task, "the task is running; stop it before restoring files")?;
        let checkpoints = Checkpoints::new(&self.inner.home, self.inner.store.clone());
        match which {
            Restore::Checkpoint(id) => checkpoints.restore(task, id),
            Restore::Turn(turn) => checkpoints.restore_turn(task, turn),
        }
        .map_err(HostError::from)
    }

    /// Runs the tool `name` with `arguments` (a JSON object) in the task's project, as the
    /// agent would: its approvals asked of `approver`. Refused while the task runs.
    pub async fn run_tool(
        &self,
        task: TaskId,
        name: &str,
        arguments: &str,
        how: ByHand,
        approver: Arc<dyn Approver>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<codewright_tools::ToolOutput, HostError> {
        let _lock = self.hold(
            task,
            "the task is running; stop it before running a tool in it",
        )?;
        let (task, project, root) = {
            let store = self.inner.store();
            let task = store.task(task)?;
            let project = store.project(task.project_id)?;
            let root = store
                .task_folder(task.id)?
                .ok_or_else(|| crate::worktrees::discarded(task.id))?;
            (task, project, root)
        };
        let session = Session::new(
            SessionConfig {
                task: task.id,
                project: project.id,
                root,
                home: self.inner.home.clone(),
                mode: how.mode,
                sandbox: how.sandbox,
                allow_private_network: false,
                rules: vec![],
            },
            self.inner.store.clone(),
            approver,
        )
        .map_err(HostError::from)?;
        session.set_turn(how.turn);
        let cx = CallContext::new(session.clone(), name);
        let stop = cx.cancel.clone();
        let link = tokio::spawn(async move {
            cancel.cancelled().await;
            stop.cancel();
        });
        let output = Registry::builtin().call(name, arguments, &cx).await;
        link.abort();
        session.shutdown();
        Ok(output)
    }

    /// The task's run lock, or `busy` as the error while a run holds it. A lock let go a moment
    /// ago is waited for (up to half a second): a process started in that moment (a tool, a
    /// git) shares the lock's file until it has started its program, and what the user asked
    /// for must not fail for it.
    pub(crate) fn hold(
        &self,
        task: TaskId,
        busy: &str,
    ) -> Result<codewright_agent::TaskLock, HostError> {
        self.hold_soon(task).map_err(|e| match e.kind {
            ErrorKind::Busy => HostError::new(ErrorKind::Busy, busy),
            _ => e,
        })
    }

    /// The task's run lock, waited for up to half a second (see [`Host::hold`]); the agent's
    /// words when a run holds it.
    pub(crate) fn hold_soon(&self, task: TaskId) -> Result<codewright_agent::TaskLock, HostError> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
        loop {
            match self.inner.agent.hold(task) {
                Ok(lock) => return Ok(lock),
                Err(e) if e.kind == ErrorKind::Busy && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}
