-- Tables as of t: which metadata file held, where each ref pointed, and what changed between two
-- snapshots. Times are epoch ms. Materialized views' freshness (`queries/mviews.py`) is built on these.

-- normalized_location(l): a location spelled as `normalize_location` spells it (no `file:`, `s3://`
-- for `s3a://` and `s3n://`), without a trailing slash: documents write their own location freely.
CREATE OR REPLACE MACRO normalized_location(l) AS
rtrim(regexp_replace(regexp_replace(l, '^file:(//)?', ''), '^s3[an]://', 's3://'), '/');

-- table_file_as_of(tid, t): the table's file whose state held at t (see file_state_key). As for
-- views (placed_view_locations), a copy elsewhere (its document's location names another
-- directory: a backup under a second root, dated by when it was copied) never holds the table
-- while a file in place that was not removed does.
CREATE OR REPLACE MACRO table_file_as_of(tid, t) AS TABLE
WITH files AS (
    SELECT *, normalized_location(table_location) = metadata_directory(location) AS in_place
    FROM table_files WHERE table_id = tid
)
SELECT * EXCLUDE (in_place) FROM files
ORDER BY in_place AND EXISTS (
             SELECT 1 FROM files live WHERE live.in_place AND live.location NOT IN (SELECT location FROM removals)
         ) DESC,
         file_state_key(commit_ms, sequence_number, location, true, t) DESC
LIMIT 1;

-- table_drop(tid): a table is dropped when its newest file (latest commit, then highest sequence
-- number) is removed (`DROP TABLE ... PURGE` deletes its files); dropped_ms is the earliest removal
-- of that file, or its last-updated-ms if that was later, and who reported it (as for views,
-- `view_drop`). No row otherwise.
CREATE OR REPLACE MACRO table_drop(tid) AS TABLE
SELECT tid AS table_id, r.location, greatest(min(r.removed_ms), any_value(f.last_updated_ms)) AS dropped_ms,
       arg_min(r.source, r.removed_ms) AS source
FROM removals r JOIN table_files f USING (location)
WHERE r.location = (SELECT location FROM table_file_as_of(tid, 1::BIGINT << 62)) GROUP BY r.location;

-- table_incarnations(tid): the other tables (other uuids) that held one of its names, as
-- view_incarnations: a table dropped and created again at its path is a new table.
CREATE OR REPLACE MACRO table_incarnations(tid) AS TABLE
WITH mine AS (SELECT DISTINCT catalog, name FROM table_names WHERE table_id = tid),
others AS (
    SELECT DISTINCT n.table_id FROM table_names n SEMI JOIN mine m
        ON n.catalog IS NOT DISTINCT FROM m.catalog AND n.name = m.name
    WHERE n.table_id <> tid
)
SELECT f.table_id, arg_max(f.catalog, f.commit_ms) AS catalog, arg_max(f.name, f.commit_ms) AS name,
       min(f.commit_ms) AS first_commit_ms, max(f.commit_ms) AS last_commit_ms
FROM table_files f WHERE f.table_id IN (SELECT table_id FROM others)
GROUP BY f.table_id
ORDER BY first_commit_ms, f.table_id;

-- ref_head_as_of(tid, ref_name, t): the snapshot a branch or tag pointed at, at t, and since when.
-- For main, the latest snapshot-log entry at or before t (the log is the union over every file,
-- so it outlives expired metadata files and records rollbacks); for other refs, or a table whose
-- files log nothing, the ref in the file committed last by t.
CREATE OR REPLACE MACRO ref_head_as_of(tid, ref_name, t) AS TABLE
WITH logged AS (
    SELECT snapshot_id, timestamp_ms AS since_ms, 'snapshot-log' AS source FROM snapshot_log
    WHERE table_id = tid AND ref_name = 'main' AND timestamp_ms <= t
    ORDER BY timestamp_ms DESC, snapshot_id DESC LIMIT 1
),
filed AS (
    SELECT r.snapshot_id, f.commit_ms AS since_ms, 'metadata-file' AS source
    FROM table_file_as_of(tid, t) f JOIN table_refs r USING (location)
    WHERE r.name = ref_name AND f.commit_ms <= t
)
SELECT * FROM logged
UNION ALL
SELECT * FROM filed WHERE NOT EXISTS (FROM logged);

-- snapshots_since(tid, head, recorded): the ancestry of snapshot `head`, newest first, down to the
-- child of `recorded` (depth 0 is head itself). reached_parent is the last row's parent: it equals
-- `recorded` when the chain reaches it, and is NULL where the chain ends (an expired or unseen
-- ancestor).
CREATE OR REPLACE MACRO snapshots_since(tid, head, recorded) AS TABLE
WITH RECURSIVE chain(snapshot_id, parent_snapshot_id, timestamp_ms, operation, depth) AS (
    SELECT snapshot_id, parent_snapshot_id, timestamp_ms, operation, 0
    FROM snapshots WHERE table_id = tid AND snapshot_id = head AND head <> recorded
    UNION ALL
    SELECT s.snapshot_id, s.parent_snapshot_id, s.timestamp_ms, s.operation, c.depth + 1
    FROM chain c JOIN snapshots s ON s.table_id = tid AND s.snapshot_id = c.parent_snapshot_id
    WHERE c.parent_snapshot_id <> recorded AND c.depth < 1000000  -- a corrupt cycle stops
)
SELECT DISTINCT ON (depth) * FROM chain ORDER BY depth;
