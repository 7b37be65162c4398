-- 0015_rebuilds: a rebuild of every derived row (`reindex`) in progress. `reindex` clears the
-- derived tables and inserts the row in one transaction, re-derives in many, and deletes the row
-- when the last has committed. A store that holds the row is mid-rebuild: readers answer from the
-- replica published before it began (a rebuild publishes none) and say so, and a writer that
-- opens it completes the rebuild first.
CREATE TABLE _rebuild_started (
    started_ms BIGINT NOT NULL          -- when the rebuild cleared the derived rows
);
