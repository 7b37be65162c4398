-- Which copy of a version counts, and when each version was active. Times are epoch ms.

-- preferred_versions: one row per (view_id, version_id). Under a version conflict (one id, two
-- contents) the copy from the file with the highest sequence number, then the greatest location, wins.
CREATE OR REPLACE VIEW preferred_versions AS
SELECT * EXCLUDE (copy_rank) FROM (
    SELECT v.*, row_number() OVER (
        PARTITION BY v.view_id, v.version_id
        ORDER BY f.sequence_number DESC NULLS LAST, f.location DESC) AS copy_rank
    FROM versions v JOIN file_versions fv USING (version_hash) JOIN view_files f USING (location)
) WHERE copy_rank = 1;

-- activations: the union of the version logs of all of a view's files.
CREATE OR REPLACE VIEW activations AS
SELECT DISTINCT view_id, version_id, timestamp_ms FROM version_log;

-- current_versions(t): per view, the version named by the log entry with the greatest timestamp <= t.
CREATE OR REPLACE MACRO current_versions(t) AS TABLE
SELECT view_id, version_id, timestamp_ms AS activated_ms FROM (
    SELECT *, row_number() OVER (PARTITION BY view_id ORDER BY timestamp_ms DESC, version_id DESC) AS r
    FROM activations WHERE timestamp_ms <= t
) WHERE r = 1;

-- view_files_as_of(t): per view, the file whose state held at t: the latest committed at or before
-- t (ties: higher sequence number, greater location); the earliest file if none was committed yet.
CREATE OR REPLACE MACRO view_files_as_of(t) AS TABLE
SELECT * EXCLUDE (r) FROM (
    SELECT *, row_number() OVER (
        PARTITION BY view_id
        ORDER BY (commit_ms <= t) DESC, CASE WHEN commit_ms <= t THEN commit_ms END DESC NULLS LAST,
                 commit_ms, sequence_number DESC NULLS LAST, location DESC) AS r
    FROM view_files
) WHERE r = 1;

-- view_drops: a view is dropped when its newest file (latest commit, then highest sequence number)
-- is removed; dropped_ms is the earliest removal reported for that file.
CREATE OR REPLACE VIEW view_drops AS
SELECT f.view_id, f.location, min(r.removed_ms) AS dropped_ms
FROM (
    SELECT * FROM view_files
    QUALIFY row_number() OVER (
        PARTITION BY view_id ORDER BY commit_ms DESC NULLS LAST, sequence_number DESC NULLS LAST, location DESC) = 1
) f JOIN removals r USING (location)
GROUP BY f.view_id, f.location;

-- views_as_of(t): every view current at t with its version and the state of its file. A name is
-- held by the view whose file was committed last: a view dropped and re-created at the same path
-- is replaced by the new uuid from the new file's commit on. A view whose file in force at t was
-- removed by t is dropped and left out.
CREATE OR REPLACE MACRO views_as_of(t) AS TABLE
SELECT * EXCLUDE (name_rank) FROM (
    SELECT f.view_id, f.view_uuid, f.catalog, f.name, c.version_id, c.activated_ms, f.location AS file_location,
           f.properties, f.commit_ms, f.commit_source,
           row_number() OVER (PARTITION BY f.catalog, f.name ORDER BY f.commit_ms DESC, f.view_id) AS name_rank
    FROM current_versions(t) c JOIN view_files_as_of(t) f USING (view_id)
    WHERE NOT EXISTS (SELECT 1 FROM removals r WHERE r.location = f.location AND r.removed_ms <= t)
) WHERE name IS NULL OR name_rank = 1;
