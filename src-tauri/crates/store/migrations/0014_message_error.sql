-- Why an answer was cut off by an error, as the user was told (a provider's error, a timeout), so
-- a task read later still says what happened. NULL for every other message.

ALTER TABLE messages ADD COLUMN error TEXT;
