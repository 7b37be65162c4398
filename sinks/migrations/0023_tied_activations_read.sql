-- 0023_tied_activations_read: of versions made current at one instant that no file settles, the
-- greater id holds, a guess: what the others read is kept with it as tied reads, so that `uses`
-- and `impact` match those reads `tied-file` instead of leaving them out (found by the thirteenth
-- adversarial trial). The spans of views with such ties are derived again as a writer opens the
-- store.
INSERT INTO _stale_spans
SELECT DISTINCT view_id FROM activations
WHERE view_id NOT IN (SELECT view_id FROM _stale_spans)
GROUP BY view_id, timestamp_ms HAVING count(DISTINCT version_id) > 1;
