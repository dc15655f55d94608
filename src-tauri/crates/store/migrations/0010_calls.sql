-- Where each tool call of a task's latest answer got to before its results were stored together:
-- asking the user, running, or finished (with its result). After a crash, a resumed run asks
-- again what was only waiting for the user, keeps what finished, and says which calls may have
-- run. A task's rows are cleared once the answer's results are stored.

CREATE TABLE calls (
    task_id    INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    call_id    TEXT    NOT NULL,
    state      TEXT    NOT NULL CHECK (state IN ('asking', 'running', 'finished')),
    result     TEXT    CHECK (result IS NULL OR json_valid(result)),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, call_id)
) WITHOUT ROWID;
