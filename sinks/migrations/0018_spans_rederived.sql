-- 0018_spans_rederived: two rules of the spans changed (viewlineage.sinks.spans). A view's copies
-- in another directory (a moved directory's files, whose documents still name the old one) hold it
-- once no file in place is left unremoved, and of two files of one commit the removed one holds
-- first. Under a version conflict, the file in force holds its own copy of the version (one uuid in
-- two directories shows each directory's SQL under its name). Views with a removed file or a
-- conflicting version may hold otherwise now: their spans are derived again as a writer opens the store.
INSERT INTO _stale_spans
SELECT DISTINCT view_id FROM (
    SELECT view_id FROM view_files WHERE location IN (SELECT location FROM removals)
    UNION ALL
    SELECT view_id FROM preferred_copies
)
WHERE view_id NOT IN (SELECT view_id FROM _stale_spans);
