-- A streamed answer was indexed for search again on every write (every 250 ms), each time whole:
-- the cost of a write grew with the answer (40 ms a write at 1.2 MB, three quarters of it the
-- index), so long answers streamed at once held the store longer and longer. Now an answer is
-- indexed as it grows only while it is short (64 K characters of parts), and whole once it is
-- complete (finished, stopped, or closed when a task a crash interrupted is continued; until
-- then a crashed long answer is found by its first part).
DROP TRIGGER messages_fts_update;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF parts, complete ON messages
WHEN new.complete = 1 OR length(new.parts) <= 65536 BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
    INSERT INTO messages_fts (rowid, text)
    SELECT new.id, coalesce(group_concat(json_extract(p.value, '$.text'), char(10)), '')
    FROM json_each(new.parts) AS p
    WHERE json_extract(p.value, '$.type') IN ('text', 'thinking');
END;
