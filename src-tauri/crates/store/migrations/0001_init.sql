-- Projects (opened folders) and tasks (conversations), plus the change feed that lets every
-- process see what every other process wrote.

CREATE TABLE projects (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL CHECK (length(trim(name)) > 0),
    description TEXT    NOT NULL DEFAULT '',
    root_path   TEXT    NOT NULL UNIQUE,
    context     TEXT    NOT NULL DEFAULT '',
    rules       TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE tasks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id    INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title         TEXT    NOT NULL CHECK (length(trim(title)) > 0),
    status        TEXT    NOT NULL DEFAULT 'idle',
    settings      TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    message_count INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost          REAL    NOT NULL DEFAULT 0,
    context_usage REAL    NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX tasks_by_project ON tasks(project_id, updated_at DESC);

-- The change feed: one row per insert/update/delete, written by triggers so no writer can forget.
CREATE TABLE changes (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    entity    TEXT    NOT NULL CHECK (entity IN ('project', 'task')),
    entity_id INTEGER NOT NULL,
    parent_id INTEGER,
    deleted   INTEGER NOT NULL DEFAULT 0
);

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
