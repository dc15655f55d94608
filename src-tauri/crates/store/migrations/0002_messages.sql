-- Messages of a task, what they cost, and full-text search over their text.

CREATE TABLE messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    role        TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    parts       TEXT    NOT NULL CHECK (json_valid(parts)),
    usage       TEXT    CHECK (usage IS NULL OR json_valid(usage)),
    model       TEXT,
    stop_reason TEXT,
    -- 0 while an assistant message is still streaming; stays 0 if the writer died mid-stream.
    complete    INTEGER NOT NULL DEFAULT 1,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (task_id, seq)
);

-- One row per provider response: the source of a task's token and cost totals.
CREATE TABLE usage_events (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id            INTEGER REFERENCES tasks(id) ON DELETE SET NULL,
    message_id         INTEGER REFERENCES messages(id) ON DELETE SET NULL,
    model              TEXT    NOT NULL,
    provider           TEXT    NOT NULL,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens   INTEGER NOT NULL DEFAULT 0,
    cost               REAL    NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL
);
CREATE INDEX usage_events_by_task ON usage_events(task_id);

-- Totals on the task move in the same transaction as the rows they sum.
CREATE TRIGGER messages_counted AFTER INSERT ON messages BEGIN
    UPDATE tasks SET message_count = message_count + 1, updated_at = new.updated_at WHERE id = new.task_id;
END;
CREATE TRIGGER messages_uncounted AFTER DELETE ON messages BEGIN
    UPDATE tasks SET message_count = message_count - 1 WHERE id = old.task_id;
END;
CREATE TRIGGER usage_summed AFTER INSERT ON usage_events WHEN new.task_id IS NOT NULL BEGIN
    -- A task's input total counts every input token: fresh, read from cache and written to it.
    UPDATE tasks SET input_tokens = input_tokens + new.input_tokens + new.cache_read_tokens + new.cache_write_tokens,
                     output_tokens = output_tokens + new.output_tokens,
                     cost = cost + new.cost,
                     updated_at = new.created_at
    WHERE id = new.task_id;
END;

-- Full-text search over the text and thinking of every message (kept by triggers).
CREATE VIRTUAL TABLE messages_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, text)
    SELECT new.id, coalesce(group_concat(json_extract(p.value, '$.text'), char(10)), '')
    FROM json_each(new.parts) AS p
    WHERE json_extract(p.value, '$.type') IN ('text', 'thinking');
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF parts ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    INSERT INTO messages_fts (rowid, text)
    SELECT new.id, coalesce(group_concat(json_extract(p.value, '$.text'), char(10)), '')
    FROM json_each(new.parts) AS p
    WHERE json_extract(p.value, '$.type') IN ('text', 'thinking');
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
END;
