-- A restore checkpoint made by a review's Revert says which file it put back (its path in the
-- project), so the task lists it as "Undo revert of <file>", not as a restore of a turn. NULL: a
-- restore of turns.

ALTER TABLE checkpoints ADD COLUMN reverted TEXT;
