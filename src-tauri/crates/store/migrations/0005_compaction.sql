-- Compaction: the model sees a summary plus the recent messages; the originals stay, marked.

ALTER TABLE messages ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0;

CREATE TABLE compactions (
    id             INTEGER PRIMARY KEY,
    task_id        INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    summary        TEXT    NOT NULL,
    first_kept_seq INTEGER NOT NULL,  -- messages before it are summarized (and marked compacted)
    tokens_before  INTEGER NOT NULL,
    tokens_after   INTEGER NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX compactions_by_task ON compactions(task_id, id);
