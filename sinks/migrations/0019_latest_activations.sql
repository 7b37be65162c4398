-- 0019_latest_activations: an activation dated past the latest time queries ask at (2^62 ms: a
-- timestamp far out of range, such as 2^63 - 1) held from an instant no question reaches, so the
-- view had no version at any time. It holds from that latest time now (viewlineage.sinks.spans):
-- the spans of views with such an activation are derived again as a writer opens the store.
INSERT INTO _stale_spans
SELECT DISTINCT view_id FROM activations
WHERE timestamp_ms >= 4611686018427387904 AND view_id NOT IN (SELECT view_id FROM _stale_spans);
