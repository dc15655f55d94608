-- What each task's agent last saw of each file it read or wrote (BLAKE3 of the content): a later
-- run of the task, even in another process, may edit a file read earlier, and an edit of a file
-- that changed on disk since is refused.

CREATE TABLE files_seen (
    task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    path    TEXT    NOT NULL,
    hash    BLOB    NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (task_id, path)
) WITHOUT ROWID;
