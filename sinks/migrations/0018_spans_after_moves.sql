-- 0018_spans_after_moves: a view's copies in another directory (a moved directory's files, whose
-- documents still name the old one) hold it once no file in place is left unremoved, and of two
-- files of one commit the removed one holds first (viewlineage.sinks.spans). Views with a removed
-- file may hold otherwise now: their spans are derived again, as a writer opens the store.
INSERT INTO _stale_spans
SELECT DISTINCT view_id FROM view_files
WHERE location IN (SELECT location FROM removals)
  AND view_id NOT IN (SELECT view_id FROM _stale_spans);
