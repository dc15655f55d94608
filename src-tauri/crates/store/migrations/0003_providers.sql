-- Custom providers and model overrides the user added. No secrets here: keys live in the OS
-- keyring or the environment.

CREATE TABLE providers (
    name        TEXT    PRIMARY KEY CHECK (length(name) > 0),
    protocol    TEXT    NOT NULL,
    base_url    TEXT    NOT NULL,
    api_key_env TEXT,
    created_at  INTEGER NOT NULL
);

CREATE TABLE models (
    id                TEXT    PRIMARY KEY,  -- name@provider
    context_window    INTEGER NOT NULL,
    max_output        INTEGER NOT NULL,
    tools             INTEGER NOT NULL DEFAULT 1,
    images            INTEGER NOT NULL DEFAULT 0,
    thinking          INTEGER NOT NULL DEFAULT 0,
    input_price       REAL    NOT NULL DEFAULT 0,  -- US dollars per million tokens
    output_price      REAL    NOT NULL DEFAULT 0,
    cache_read_price  REAL    NOT NULL DEFAULT 0,
    cache_write_price REAL    NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL
);

-- User settings, one JSON value per key (model roles, …).
CREATE TABLE settings (
    key        TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL CHECK (json_valid(value)),
    updated_at INTEGER NOT NULL
);
