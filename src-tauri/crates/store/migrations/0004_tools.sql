-- What tools need to keep: the task's plan, the rules a project saved ("always allow"), and the
-- checkpoints that make every turn's file changes undoable. File contents live content-addressed
-- in the data folder (checkpoints/blobs); these tables index them.

ALTER TABLE tasks ADD COLUMN todos TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(todos));

CREATE TABLE permission_rules (
    id         INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    tool       TEXT    NOT NULL CHECK (length(tool) > 0),
    pattern    TEXT    NOT NULL,
    action     TEXT    NOT NULL CHECK (action IN ('allow', 'ask', 'deny')),
    created_at INTEGER NOT NULL,
    UNIQUE (project_id, tool, pattern)
);

CREATE TABLE checkpoints (
    id         INTEGER PRIMARY KEY,
    task_id    INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    turn       INTEGER NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('turn', 'restore')),
    created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX checkpoints_one_per_turn ON checkpoints(task_id, turn) WHERE kind = 'turn';

CREATE TABLE checkpoint_files (
    checkpoint_id INTEGER NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
    path          TEXT    NOT NULL,  -- absolute
    blob          TEXT,              -- BLAKE3 of the content before the change; NULL: did not exist
    mode          INTEGER,           -- Unix permission bits of the file before the change
    PRIMARY KEY (checkpoint_id, path)
) WITHOUT ROWID;
CREATE INDEX checkpoint_files_by_blob ON checkpoint_files(blob);
