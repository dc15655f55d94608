-- Messages join the change feed, so a window follows a task that another process (the CLI) runs:
-- new messages, streamed updates and the final write all reach it. The feed's CHECK names the
-- entities it accepts, so the table is rebuilt (SQLite cannot alter a CHECK); its triggers with it.

DROP TRIGGER projects_inserted;
DROP TRIGGER projects_updated;
DROP TRIGGER projects_deleted;
DROP TRIGGER tasks_inserted;
DROP TRIGGER tasks_updated;
DROP TRIGGER tasks_deleted;

CREATE TABLE changes_new (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    entity    TEXT    NOT NULL CHECK (entity IN ('project', 'task', 'message')),
    entity_id INTEGER NOT NULL,
    parent_id INTEGER,
    deleted   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO changes_new (seq, entity, entity_id, parent_id, deleted)
    SELECT seq, entity, entity_id, parent_id, deleted FROM changes;
DROP TABLE changes;
ALTER TABLE changes_new RENAME TO changes;

CREATE TRIGGER projects_inserted AFTER INSERT ON projects BEGIN
    INSERT INTO changes (entity, entity_id) VALUES ('project', new.id);
END;
CREATE TRIGGER projects_updated AFTER UPDATE ON projects BEGIN
    INSERT INTO changes (entity, entity_id) VALUES ('project', new.id);
END;
CREATE TRIGGER projects_deleted AFTER DELETE ON projects BEGIN
    INSERT INTO changes (entity, entity_id, deleted) VALUES ('project', old.id, 1);
END;
CREATE TRIGGER tasks_inserted AFTER INSERT ON tasks BEGIN
    INSERT INTO changes (entity, entity_id, parent_id) VALUES ('task', new.id, new.project_id);
END;
CREATE TRIGGER tasks_updated AFTER UPDATE ON tasks BEGIN
    INSERT INTO changes (entity, entity_id, parent_id) VALUES ('task', new.id, new.project_id);
END;
CREATE TRIGGER tasks_deleted AFTER DELETE ON tasks BEGIN
    INSERT INTO changes (entity, entity_id, parent_id, deleted) VALUES ('task', old.id, old.project_id, 1);
END;
CREATE TRIGGER messages_inserted AFTER INSERT ON messages BEGIN
    INSERT INTO changes (entity, entity_id, parent_id) VALUES ('message', new.id, new.task_id);
END;
-- Content only: marking thousands of messages compacted is not a change a window shows.
CREATE TRIGGER messages_updated AFTER UPDATE OF parts, complete, stop_reason, usage ON messages BEGIN
    INSERT INTO changes (entity, entity_id, parent_id) VALUES ('message', new.id, new.task_id);
END;
