//! Where each tool call of a task's latest answer got to, written as it happens (the answer's
//! results are stored together once every call is done). After a crash, a resumed run asks again
//! what was only waiting for the user, keeps what finished, and says which calls may have run.

use crate::{now_ms, Result, Store, StoreError};
use codewright_protocol::{Part, TaskId};
use rusqlite::params;
use std::collections::HashMap;

/// Where a tool call got to.
#[derive(Debug, Clone, PartialEq)]
pub enum CallState {
    /// Waiting for the user (an approval or a question): it has not run.
    Asking,
    /// Running, or allowed to run: it may have taken effect.
    Running,
    /// Done, with its result.
    Finished(Part),
}

impl Store {
    /// Records where a call got to.
    pub fn set_call_state(&self, task: TaskId, call_id: &str, state: &CallState) -> Result<()> {
        let (name, result) = match state {
            CallState::Asking => ("asking", None),
            CallState::Running => ("running", None),
            CallState::Finished(part) => (
                "finished",
                Some(serde_json::to_string(part).expect("parts serialize")),
            ),
        };
        self.conn.execute(
            "INSERT INTO calls (task_id, call_id, state, result, updated_at)
             SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?1)
             ON CONFLICT(task_id, call_id) DO UPDATE SET state = ?3, result = ?4, updated_at = ?5",
            params![task.0, call_id, name, result, now_ms()],
        )?;
        Ok(())
    }

    /// The calls of the task's latest answer that were recorded, by call id.
    pub fn call_states(&self, task: TaskId) -> Result<HashMap<String, CallState>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT call_id, state, result FROM calls WHERE task_id = ?1")?;
        let rows = stmt.query_map([task.0], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })?;
        let mut out = HashMap::new();
        for row in rows {
            let (id, state, result) = row?;
            let state = match (state.as_str(), result) {
                ("asking", _) => CallState::Asking,
                ("finished", Some(result)) => CallState::Finished(
                    serde_json::from_str(&result)
                        .map_err(|e| StoreError::Invalid(format!("a stored call result: {e}")))?,
                ),
                // A finished call whose result is missing cannot be trusted not to have run.
                _ => CallState::Running,
            };
            out.insert(id, state);
        }
        Ok(out)
    }

    /// Forgets the task's recorded calls (their results are stored in the conversation).
    pub fn clear_calls(&self, task: TaskId) -> Result<()> {
        self.conn
            .execute("DELETE FROM calls WHERE task_id = ?1", [task.0])?;
        Ok(())
    }

    /// Tasks with a call that was waiting for the user when its run ended, oldest first. Not
    /// sub-agents' tasks: they are never continued on their own (their parent's call is).
    pub fn tasks_asking(&self) -> Result<Vec<TaskId>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT c.task_id FROM calls c JOIN tasks t ON t.id = c.task_id
             WHERE c.state = 'asking' AND t.parent_id IS NULL ORDER BY c.task_id",
        )?;
        let rows = stmt.query_map([], |r| Ok(TaskId(r.get(0)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
