-- A project's settings (JSON, see `ProjectSettings`): whether commands run in the sandbox, whether
-- web_fetch may reach loopback and private addresses.

ALTER TABLE projects ADD COLUMN settings TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(settings));
