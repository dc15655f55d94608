-- Sampling settings a user gave a model, sent with every request to it; NULL leaves the
-- server's own default. The seed is sent only where the protocol has one.

ALTER TABLE models ADD COLUMN temperature REAL;
ALTER TABLE models ADD COLUMN top_p REAL;
ALTER TABLE models ADD COLUMN seed INTEGER;
