-- A sub-agent's task: the job a task's agent handed to another agent (the `agent` tool), with
-- its own conversation. It belongs to its parent (deleted with it) and to the parent's call that
-- started it; lists of tasks show only tasks without a parent.

ALTER TABLE tasks ADD COLUMN parent_id INTEGER REFERENCES tasks(id) ON DELETE CASCADE;
ALTER TABLE tasks ADD COLUMN parent_call TEXT;
CREATE INDEX tasks_by_parent ON tasks(parent_id) WHERE parent_id IS NOT NULL;
