-- MCP servers the user configured or imported. Secret values (API keys, tokens, env values marked
-- secret) are not here: only their names, the values live in the OS keyring.

CREATE TABLE mcp_servers (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE CHECK (length(name) > 0),
    transport   TEXT    NOT NULL CHECK (transport IN ('stdio', 'http', 'sse')),
    command     TEXT,                                   -- stdio
    args        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(args)),
    env         TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(env)),      -- name → value (non-secret)
    url         TEXT,                                   -- http / sse
    headers     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(headers)),  -- name → value (non-secret)
    secrets     TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(secrets)),  -- env/header names kept in the keyring
    enabled     INTEGER NOT NULL DEFAULT 1,
    project_id  INTEGER REFERENCES projects(id) ON DELETE CASCADE,          -- NULL: every project
    created_at  INTEGER NOT NULL
);
