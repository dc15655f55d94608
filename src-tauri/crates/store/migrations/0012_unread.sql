-- A task that finishes (done or failed) is unread until someone looks at it: the app clears the
-- mark when the task's window is open or opened. The main window lists what needs the user (an
-- approval waiting, an unread result) across every project, through the index below.

ALTER TABLE tasks ADD COLUMN unread INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_needing_you ON tasks (project_id) WHERE unread = 1 OR status = 'awaiting_approval';
