-- Messages the user sent to a running task, kept until the run delivers them at its next turn
-- boundary: acknowledged messages survive a crash of the process that was running the task, and
-- the next run of the task delivers them.

CREATE TABLE queued_messages (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    message    TEXT    NOT NULL CHECK (json_valid(message)),
    created_at INTEGER NOT NULL
);
CREATE INDEX queued_messages_by_task ON queued_messages(task_id, id);
