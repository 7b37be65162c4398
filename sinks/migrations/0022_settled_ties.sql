-- 0022_settled_ties: of versions made current at one instant, the one the file that logged them
-- names current (its current-version-id) now holds, as the Iceberg spec has it; the greater id
-- only when no file says (found by the twelfth adversarial trial: a file logging versions 1 and 2
-- at one instant with current-version-id 1 held version 2). The spans of views with such ties are
-- derived again as a writer opens the store.
INSERT INTO _stale_spans
SELECT DISTINCT view_id FROM activations
WHERE view_id NOT IN (SELECT view_id FROM _stale_spans)
GROUP BY view_id, timestamp_ms HAVING count(DISTINCT version_id) > 1;
