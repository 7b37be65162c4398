-- 0020_tied_reads: a view whose file in force ties with another of its files (the same commit time
-- and sequence number: a competing commit, or its uuid in two directories) is held by one of them
-- on a guess (the greater location). What the other file's current version reads was not looked
-- at, so `uses` and `impact` missed a view whose other file reads the table. The spans carry those
-- reads now (viewlineage.sinks.spans), which `uses` counts as `tied-file` matches: only views with
-- such files are derived again as a writer opens the store.
ALTER TABLE view_spans ADD COLUMN tied_read_paths VARCHAR; -- what tied files' current versions read, as read_paths; NULL without ties
INSERT INTO _stale_spans
SELECT DISTINCT view_id FROM (
    SELECT view_id FROM view_files GROUP BY view_id, commit_ms, sequence_number HAVING count(*) > 1
)
WHERE view_id NOT IN (SELECT view_id FROM _stale_spans);
