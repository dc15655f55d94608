//! A task's run lock: one run writes a task's conversation at a time, in any window or process.

use crate::AgentError;
use codewright_protocol::{ErrorKind, TaskId, TaskStatus};
use codewright_store::Store;

/// A task held for one run (or a restore): an advisory lock on `<home>/locks/task-<id>.lock`,
/// released when dropped or when the process dies, so two runs never write one conversation at
/// once, in any window or process.
pub struct TaskLock {
    pub(crate) task: TaskId,
    _file: std::fs::File,
}

/// Marks interrupted the tasks whose stored status says a run is going but whose lock nobody
/// holds: Codewright quit or crashed while they ran. What their answers got to is indexed for
/// search. `home` is the data folder.
pub fn mark_interrupted(store: &Store, home: &std::path::Path) {
    for task in store.unfinished_tasks().unwrap_or_default() {
        if let Ok(_lock) = hold_task(home, task) {
            let _ = store.set_task_status(task, TaskStatus::Interrupted);
            let _ = store.index_interrupted(task);
        }
    }
}

/// Takes the task's lock under the data folder `home`: `Busy` while another run (here or in
/// another process) holds it.
pub(crate) fn hold_task(home: &std::path::Path, task: TaskId) -> Result<TaskLock, AgentError> {
    let setup = |m: String| AgentError::new(ErrorKind::Setup, m);
    let dir = home.join("locks");
    std::fs::create_dir_all(&dir).map_err(|e| {
        setup(format!(
            "cannot create the lock folder {}: {e}",
            dir.display()
        ))
    })?;
    let path = dir.join(format!("task-{}.lock", task.0));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| setup(format!("cannot open the task lock {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(TaskLock { task, _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(AgentError::new(
            ErrorKind::Busy,
            format!(
                "task {} is already running (in another window or process); stop that run or wait for it to finish, then send the message again",
                task.0
            ),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(setup(format!(
            "cannot lock the task ({}): {e}",
            path.display()
        ))),
    }
}
