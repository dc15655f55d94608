-- A sub-agent's task: the job a task's agent handed to another agent (the `agent` tool), with
-- its own conversation. It belongs to its parent (deleted with it) and to the parent's call that
-- started it; lists of tasks show only tasks without a parent.

ALTER TABLE tasks ADD COLUMN parent_id INTEGER REFERENCES tasks(id) ON DELETE CASCADE;
ALTER TABLE tasks ADD COLUMN parent_call TEXT;
CREATE INDEX tasks_by_parent ON tasks(parent_id) WHERE parent_id IS NOT NULL;

-- What a sub-agent spends is its parent's too, as it is spent (a crash loses none of it).
DROP TRIGGER usage_summed;
CREATE TRIGGER usage_summed AFTER INSERT ON usage_events WHEN new.task_id IS NOT NULL BEGIN
    -- A task's input total counts every input token: fresh, read from cache and written to it.
    UPDATE tasks SET input_tokens = input_tokens + new.input_tokens + new.cache_read_tokens + new.cache_write_tokens,
                     output_tokens = output_tokens + new.output_tokens,
                     cost = cost + new.cost,
                     updated_at = new.created_at
    WHERE id = new.task_id OR id = (SELECT parent_id FROM tasks WHERE id = new.task_id);
END;
