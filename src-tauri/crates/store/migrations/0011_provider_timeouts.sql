-- How long a custom provider may stay silent: before the first byte of an answer, and between two
-- chunks of it (milliseconds; NULL: the default for a hosted or a local server).

ALTER TABLE providers ADD COLUMN first_byte_timeout_ms INTEGER CHECK (first_byte_timeout_ms > 0);
ALTER TABLE providers ADD COLUMN idle_timeout_ms INTEGER CHECK (idle_timeout_ms > 0);
