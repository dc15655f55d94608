//! Tasks: conversations with the agent, inside a project.

use crate::{names, now_ms, Result, Store, StoreError};
use codewright_protocol::{Message, ProjectId, Task, TaskId, TaskSettings, TaskStatus, Todo};
use rusqlite::{params, OptionalExtension, Row};

const COLUMNS: &str = "id, project_id, title, status, settings, message_count, input_tokens, \
                       output_tokens, cost, context_usage, created_at, updated_at, todos, unread, \
                       parent_id, parent_call, worktree";

fn from_row(row: &Row) -> rusqlite::Result<Task> {
    let status: String = row.get(3)?;
    let settings: String = row.get(4)?;
    Ok(Task {
        id: TaskId(row.get(0)?),
        project_id: ProjectId(row.get(1)?),
        title: row.get(2)?,
        // A status written by a newer build reads as idle rather than failing the whole list.
        status: TaskStatus::parse(&status).unwrap_or(TaskStatus::Idle),
        settings: serde_json::from_str::<TaskSettings>(&settings).unwrap_or_default(),
        message_count: row.get(5)?,
        input_tokens: row.get(6)?,
        output_tokens: row.get(7)?,
        cost: row.get(8)?,
        context_usage: row.get(9)?,
        created_at: row.get(10)?,
        updated_at: row.get(11)?,
        todos: serde_json::from_str(&row.get::<_, String>(12)?).unwrap_or_default(),
        unread: row.get(13)?,
        parent: match (
            row.get::<_, Option<i64>>(14)?,
            row.get::<_, Option<String>>(15)?,
        ) {
            (Some(task), Some(call)) => Some(codewright_protocol::ParentCall {
                task: TaskId(task),
                call,
            }),
            _ => None,
        },
        worktree: row
            .get::<_, Option<String>>(16)?
            .and_then(|json| serde_json::from_str(&json).ok()),
    })
}

impl Store {
    /// The tasks of a project, most recently updated first (not its sub-agents' tasks).
    pub fn tasks(&self, project: ProjectId) -> Result<Vec<Task>> {
        self.project(project)?;
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE project_id = ?1 AND parent_id IS NULL ORDER BY updated_at DESC, id DESC"
        ))?;
        let rows = stmt.query_map([project.0], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// One task.
    pub fn task(&self, id: TaskId) -> Result<Task> {
        self.find_task(id)?.ok_or(StoreError::NotFound {
            what: "task",
            id: id.0,
        })
    }

    pub(crate) fn find_task(&self, id: TaskId) -> Result<Option<Task>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))?;
        Ok(stmt.query_row([id.0], from_row).optional()?)
    }

    /// Starts a new, idle task in a project.
    pub fn add_task(&self, project: ProjectId, title: &str) -> Result<Task> {
        let title = names::clean("task title", title)?;
        let now = now_ms();
        let inserted = self.conn.execute(
            "INSERT INTO tasks (project_id, title, created_at, updated_at)
             SELECT id, ?2, ?3, ?3 FROM projects WHERE id = ?1",
            params![project.0, title, now],
        )?;
        if inserted == 0 {
            return Err(StoreError::NotFound {
                what: "project",
                id: project.0,
            });
        }
        self.task(TaskId(self.conn.last_insert_rowid()))
    }

    /// Starts a task with the user's first message, in one transaction: a crash leaves both or
    /// neither, never a task whose prompt is lost.
    pub fn add_task_with(&self, project: ProjectId, title: &str, first: &Message) -> Result<Task> {
        let tx = self.conn.unchecked_transaction()?;
        let task = self.add_task(project, title)?;
        self.append_message(task.id, first)?;
        tx.commit()?;
        Ok(task)
    }

    /// Starts a task that works in a git worktree of its own, recorded as `worktree` (made
    /// after this returns), with the user's first message if there is one — one transaction.
    pub fn add_task_in_worktree(
        &self,
        project: ProjectId,
        title: &str,
        first: Option<&Message>,
        worktree: &codewright_protocol::TaskWorktree,
    ) -> Result<Task> {
        let tx = self.conn.unchecked_transaction()?;
        let task = self.add_task(project, title)?;
        if let Some(first) = first {
            self.append_message(task.id, first)?;
        }
        let task = self.set_task_worktree(task.id, Some(worktree))?;
        tx.commit()?;
        Ok(task)
    }

    /// Starts a sub-agent's task: the job the call `call` of task `parent` handed to another
    /// agent, with that job as its first message and these `settings`, in the parent's project
    /// (one transaction). It is deleted with its parent, listed nowhere but
    /// [`Store::child_tasks`], and what it spends counts in its parent's totals too.
    pub fn add_child_task(
        &self,
        parent: TaskId,
        call: &str,
        title: &str,
        first: &Message,
        settings: &TaskSettings,
    ) -> Result<Task> {
        let project = self.task(parent)?.project_id;
        let tx = self.conn.unchecked_transaction()?;
        let task = self.add_task(project, title)?;
        self.conn.execute(
            "UPDATE tasks SET parent_id = ?1, parent_call = ?2, settings = ?3 WHERE id = ?4",
            params![
                parent.0,
                call,
                serde_json::to_string(settings).expect("settings serialize"),
                task.id.0
            ],
        )?;
        self.append_message(task.id, first)?;
        tx.commit()?;
        self.task(task.id)
    }

    /// The sub-agents' tasks of a task, oldest first (the last of one call is its newest).
    pub fn child_tasks(&self, parent: TaskId) -> Result<Vec<Task>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE parent_id = ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([parent.0], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Renames a task.
    pub fn rename_task(&self, id: TaskId, title: &str) -> Result<Task> {
        let title = names::clean("task title", title)?;
        let changed = self.conn.execute(
            "UPDATE tasks SET title = ?1, updated_at = ?2 WHERE id = ?3",
            params![title, now_ms(), id.0],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                what: "task",
                id: id.0,
            });
        }
        self.task(id)
    }

    /// Tasks whose stored status says a run is going (queued, running, awaiting approval): after
    /// a crash or a quit, some of them have no run any more.
    pub fn unfinished_tasks(&self) -> Result<Vec<TaskId>> {
        let live: Vec<String> = TaskStatus::all()
            .filter(|s| s.is_live())
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT id FROM tasks WHERE status IN ({})",
            live.join(", ")
        ))?;
        let ids = stmt.query_map([], |r| r.get(0).map(TaskId))?;
        Ok(ids.collect::<rusqlite::Result<_>>()?)
    }

    /// Sets the task's status (running, paused, …). A task that ends (done, not done or failed)
    /// becomes unread until [`Store::mark_task_read`].
    pub fn set_task_status(&self, id: TaskId, status: TaskStatus) -> Result<()> {
        let ended = matches!(
            status,
            TaskStatus::Done | TaskStatus::NotDone | TaskStatus::Failed
        );
        let changed = self.conn.execute(
            "UPDATE tasks SET status = ?1, updated_at = ?2, unread = (unread OR ?4)
             WHERE id = ?3 AND status != ?1",
            params![status.as_str(), now_ms(), id.0, ended],
        )?;
        if changed == 0 {
            self.task(id)?;
        }
        Ok(())
    }

    /// Clears the task's unread mark (someone has its window in view). Not an activity: the
    /// task keeps its place in the list.
    pub fn mark_task_read(&self, id: TaskId) -> Result<()> {
        let changed = self.conn.execute(
            "UPDATE tasks SET unread = 0 WHERE id = ?1 AND unread = 1",
            [id.0],
        )?;
        if changed == 0 {
            self.task(id)?;
        }
        Ok(())
    }

    /// Tasks of every project whose title holds `words` (each of them, in any case), the most
    /// recently active first.
    pub fn find_tasks(&self, words: &str, limit: usize) -> Result<Vec<Task>> {
        let words: Vec<String> = words.split_whitespace().map(str::to_lowercase).collect();
        // A scan of titles (a few ms for 100,000 tasks); `instr`, so `%` and `_` are just text.
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE parent_id IS NULL ORDER BY updated_at DESC, id DESC"
        ))?;
        let mut rows = stmt.query([])?;
        let mut found = Vec::new();
        while found.len() < limit {
            let Some(row) = rows.next()? else { break };
            let title: String = row.get(2)?;
            let title = title.to_lowercase();
            if words.iter().all(|w| title.contains(w.as_str())) {
                found.push(from_row(row)?);
            }
        }
        Ok(found)
    }

    /// The tasks of every project that need the user: an approval or a question waiting, or a
    /// result not yet seen.
    pub fn tasks_needing_you(&self) -> Result<Vec<Task>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE (unread = 1 OR status = 'awaitingApproval') AND parent_id IS NULL"
        ))?;
        let rows = stmt.query_map([], from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Records how full the model's context window is (0.0–1.0) after an answer.
    pub fn set_context_usage(&self, id: TaskId, share: f64) -> Result<()> {
        let changed = self.conn.execute(
            "UPDATE tasks SET context_usage = ?1 WHERE id = ?2 AND context_usage != ?1",
            params![share.clamp(0.0, 1.0), id.0],
        )?;
        if changed == 0 {
            self.task(id)?;
        }
        Ok(())
    }

    /// Sets one of the task's settings (its model, its mode), keeping the others.
    pub fn set_task_setting(
        &self,
        id: TaskId,
        key: &str,
        value: serde_json::Value,
    ) -> Result<Task> {
        let changed = self.conn.execute(
            r#"UPDATE tasks SET settings = json_set(settings, '$."' || ?1 || '"', json(?2)), updated_at = ?3
             WHERE id = ?4"#,
            params![key, value.to_string(), now_ms(), id.0],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                what: "task",
                id: id.0,
            });
        }
        self.task(id)
    }

    /// Replaces the task's plan.
    pub fn set_todos(&self, id: TaskId, todos: &[Todo]) -> Result<Task> {
        let json = serde_json::to_string(todos).expect("todos serialize");
        let changed = self.conn.execute(
            "UPDATE tasks SET todos = ?1, updated_at = ?2 WHERE id = ?3",
            params![json, now_ms(), id.0],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                what: "task",
                id: id.0,
            });
        }
        self.task(id)
    }

    /// The tasks that have a worktree of their own (discarded ones too).
    pub fn worktree_tasks(&self) -> Result<Vec<Task>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE worktree IS NOT NULL ORDER BY id"
        ))?;
        let tasks = stmt
            .query_map([], from_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(tasks)
    }

    /// Records the task's worktree (`None`: it works in the project's folder).
    pub fn set_task_worktree(
        &self,
        id: TaskId,
        worktree: Option<&codewright_protocol::TaskWorktree>,
    ) -> Result<Task> {
        let json = worktree.map(|w| serde_json::to_string(w).expect("worktrees serialize"));
        let changed = self.conn.execute(
            "UPDATE tasks SET worktree = ?1, updated_at = ?2 WHERE id = ?3",
            params![json, now_ms(), id.0],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                what: "task",
                id: id.0,
            });
        }
        self.task(id)
    }

    /// The folder the task works in: its worktree while it has one, else its project's folder;
    /// a sub-agent's task, its parent's.
    pub fn task_root(&self, id: TaskId) -> Result<std::path::PathBuf> {
        let owner = self.folder_owner(id)?;
        self.root_of(&owner)
    }

    /// [`Store::task_root`], but `None` while the task's worktree (or its parent's) is
    /// discarded: it has no folder of its own then, and the project's is not it.
    pub fn task_folder(&self, id: TaskId) -> Result<Option<std::path::PathBuf>> {
        let owner = self.folder_owner(id)?;
        if owner
            .worktree
            .as_ref()
            .is_some_and(|w| w.state != codewright_protocol::WorktreeState::Active)
        {
            return Ok(None);
        }
        self.root_of(&owner).map(Some)
    }

    /// The folder `owner` (a task that is no sub-agent's) works in.
    fn root_of(&self, owner: &Task) -> Result<std::path::PathBuf> {
        let project = self.project(owner.project_id)?;
        Ok(owner.root(std::path::Path::new(&project.root_path)))
    }

    /// The task whose folder `id` works in: itself, or a sub-agent's task's parent.
    fn folder_owner(&self, id: TaskId) -> Result<Task> {
        let mut task = self.task(id)?;
        for _ in 0..8 {
            let Some(parent) = &task.parent else { break };
            task = self.task(parent.task)?;
        }
        Ok(task)
    }

    /// Deletes a task (and, once they exist, its messages).
    pub fn remove_task(&self, id: TaskId) -> Result<()> {
        let changed = self
            .conn
            .execute("DELETE FROM tasks WHERE id = ?1", [id.0])?;
        if changed == 0 {
            return Err(StoreError::NotFound {
                what: "task",
                id: id.0,
            });
        }
        Ok(())
    }
}
