-- A task that works in a git worktree of its own: where it is, its branch, its base and whether
-- it is on disk or discarded (its work kept under an archive ref), as JSON (protocol
-- `TaskWorktree`). NULL: the task works in the project's folder.

ALTER TABLE tasks ADD COLUMN worktree TEXT;
