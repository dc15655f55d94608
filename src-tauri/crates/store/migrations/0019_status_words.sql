-- A task's status is stored in the words the events and the windows use (one vocabulary):
-- awaiting_approval → awaitingApproval, completed → done (a run's outcome is "done" too).

UPDATE tasks SET status = 'awaitingApproval' WHERE status = 'awaiting_approval';
UPDATE tasks SET status = 'done' WHERE status = 'completed';
DROP INDEX tasks_needing_you;
CREATE INDEX tasks_needing_you ON tasks (project_id) WHERE unread = 1 OR status = 'awaitingApproval';
