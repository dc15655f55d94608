-- A model whose answers are constrained to a JSON schema (a local server's grammar): one call of
-- an offered tool or a final answer, nothing else. Off unless the user turns it on.

ALTER TABLE models ADD COLUMN constrained INTEGER NOT NULL DEFAULT 0;
