-- 0021_removals_after_commits: a removal dated before its file's last version-log entry (an
-- event's skewed or forged time: `eventTime` 2020 for a file of 2026) dropped the view before its
-- version was current, so it was current at no time. A removal now counts from that entry at the
-- earliest (viewlineage.sinks.spans): the spans of views with such a removal are derived again as a
-- writer opens the store.
INSERT INTO _stale_spans
SELECT DISTINCT f.view_id FROM removals r JOIN view_files f USING (location)
WHERE r.removed_ms < f.last_log_ms AND f.view_id NOT IN (SELECT view_id FROM _stale_spans);
