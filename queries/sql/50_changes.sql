-- change_events: one row per change to a view, across the warehouse, for audit dashboards:
--   created       its first version was made current (version-log time)
--   first-known   the earliest version its indexed files show was made current, but what came
--                 before was not kept: the log entry is not of version 1 and the view's first
--                 metadata file (sequence 0) is not indexed, so older files were deleted
--                 (Iceberg keeps the last `version.history.num-entries` log entries)
--   replaced      a version not current before was made current
--   rolled-back   a version current before was made current again
--   property-only a commit changed properties and kept the current version (file commit time;
--                 NULL when the file's commit time is unknown)
--   dropped       its newest metadata file was removed (the removal's time), or, its files left in
--                 place, another view was created at its path (that view's first commit: by then)
-- A replace or rollback whose commit also changed properties names them too (`changed_properties`);
-- a drop's `previous_version_id` is the version current when it was dropped.
-- Times are epoch ms (`changed_ms`) and TIMESTAMPTZ (`changed_at`, NULL past year 9999: a writer that put
-- microseconds where milliseconds go). Names are the view's latest, dotted. `engine` and
-- `dialects` are the version's; the metadata does not say who changed properties or dropped a view.
CREATE OR REPLACE MACRO epoch_ms_time(ms) AS
CASE WHEN ms BETWEEN -62135596800000 AND 253402300799999 THEN make_timestamptz(ms * 1000) END;

-- property_changes(now, before): what a commit did to a view's properties, said by key:
-- 'properties team, tier added; owner changed; comment removed' (NULL for nothing).
CREATE OR REPLACE MACRO property_changes(now, before) AS nullif('properties ' || concat_ws('; ',
    nullif(array_to_string(list_sort(list_filter(map_keys(now),
        lambda key: NOT list_contains(map_keys(before), key))), ', '), '') || ' added',
    nullif(array_to_string(list_sort(list_filter(map_keys(now),
        lambda key: list_contains(map_keys(before), key) AND now[key] IS DISTINCT FROM before[key])), ', '), '')
        || ' changed',
    nullif(array_to_string(list_sort(list_filter(map_keys(before),
        lambda key: NOT list_contains(map_keys(now), key))), ', '), '') || ' removed'), 'properties ');

CREATE OR REPLACE VIEW change_events AS
WITH latest AS (
    SELECT view_id, catalog, string_split(name_path, chr(31)) AS parts, path_name(catalog, name_path) AS view,
           dropped_ms, version_id AS last_version_id
    FROM view_spans WHERE until_ms = 9223372036854775807
),
activated AS (
    SELECT view_id, version_id, timestamp_ms AS at_ms,
           lag(version_id) OVER w AS previous_version_id,
           -- Whether this version was current before: ids need not grow with time (any writer
           -- may number its versions as it likes), so the order of ids says nothing.
           count(*) OVER (PARTITION BY view_id, version_id ORDER BY timestamp_ms
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) > 0 AS current_before
    FROM activations
    WINDOW w AS (PARTITION BY view_id ORDER BY timestamp_ms, version_id)
),
first_files AS (SELECT DISTINCT view_id FROM view_files WHERE sequence_number = 0),
misplaced AS (SELECT DISTINCT location FROM file_findings WHERE code = 'location-mismatch'),
removed AS (SELECT DISTINCT location FROM removals),
committed AS (
    -- view_commits for every view: the files that can hold it (placed_view_locations), in order.
    SELECT f.view_id, f.commit_ms, f.current_version_id, f.properties, f.last_log_ms, f.last_log_version_id,
           lag(f.current_version_id) OVER w AS previous_version_id,
           lag(f.properties) OVER w AS previous_properties,
           lag(f.last_log_ms) OVER w AS previous_log_ms,
           row_number() OVER w AS ordinal
    FROM view_files f
    WHERE f.location NOT IN (SELECT location FROM misplaced)
       OR NOT EXISTS (
           SELECT 1 FROM view_files g
           WHERE g.view_id = f.view_id AND g.location NOT IN (SELECT location FROM misplaced)
             AND g.location NOT IN (SELECT location FROM removed))
    WINDOW w AS (PARTITION BY f.view_id ORDER BY f.commit_ms NULLS FIRST, coalesce(f.sequence_number, -1), f.location)
),
changed AS (
    -- Each commit after a view's first, with the keys of the properties it set, changed or removed.
    SELECT *, list_sort(list_filter(
               list_distinct(map_keys(properties) || map_keys(coalesce(previous_properties, MAP {}))),
               lambda key: properties[key] IS DISTINCT FROM previous_properties[key])) AS changed_properties,
           property_changes(coalesce(properties, MAP {}), coalesce(previous_properties, MAP {})) AS property_summary
    FROM committed WHERE ordinal > 1
),
introduced AS (
    -- The properties changed by the commit that made a version current (its log's newest entry,
    -- which a later property-only commit carries over unchanged).
    SELECT view_id, last_log_version_id AS version_id, last_log_ms AS at_ms,
           nullif(any_value(changed_properties), []) AS changed_properties,
           any_value(property_summary) AS property_summary
    FROM changed WHERE last_log_ms IS DISTINCT FROM previous_log_ms GROUP BY ALL
),
replaced AS MATERIALIZED (SELECT * FROM replaced_views()),
events AS (
    SELECT a.view_id, a.at_ms,
           CASE WHEN a.previous_version_id IS NULL AND (a.version_id = 1 OR a.view_id IN (SELECT view_id FROM first_files))
                THEN 'created'
                WHEN a.previous_version_id IS NULL THEN 'first-known'
                WHEN a.current_before THEN 'rolled-back'
                ELSE 'replaced' END AS kind,
           a.version_id, a.previous_version_id, i.changed_properties, i.property_summary
    FROM activated a LEFT JOIN introduced i USING (view_id, version_id, at_ms)
    -- The version current already, logged again at another time (two files' logs that disagree:
    -- the finding log-rewritten): no change.
    WHERE a.previous_version_id IS DISTINCT FROM a.version_id
    UNION ALL
    SELECT view_id, commit_ms, 'property-only', current_version_id, previous_version_id, changed_properties,
           property_summary
    FROM changed
    WHERE current_version_id IS NOT DISTINCT FROM previous_version_id AND properties IS DISTINCT FROM previous_properties
    UNION ALL
    SELECT view_id, dropped_ms, 'dropped', NULL, last_version_id, NULL, NULL FROM latest WHERE dropped_ms IS NOT NULL
    UNION ALL
    -- Its files left in place, another view took its place (replaced_views): dropped by then.
    SELECT r.view_id, r.replaced_ms, 'dropped', NULL, l.last_version_id, NULL, NULL
    FROM replaced r JOIN latest l USING (view_id) WHERE l.dropped_ms IS NULL
),
relisted AS (
    -- Drops a re-list found (`reconcile`): the file went then or before, when no one followed.
    SELECT DISTINCT f.view_id, r.removed_ms FROM removals r JOIN view_files f USING (location)
    WHERE r.source = 'reconcile'
)
SELECT e.at_ms AS changed_ms, epoch_ms_time(e.at_ms) AS changed_at, e.view_id, l.view, l.catalog,
       array_to_string(list_transform(l.parts[:-2], lambda part: quoted_part(part)), '.') AS namespace,
       e.kind, e.version_id, e.previous_version_id, e.changed_properties, v.engine_name AS engine,
       (SELECT list(DISTINCT r.dialect ORDER BY r.dialect) FROM representations r
        WHERE r.version_hash = v.version_hash AND r.dialect IS NOT NULL) AS dialects,
       CASE e.kind
           WHEN 'created' THEN 'created at version ' || e.version_id
           WHEN 'first-known' THEN 'version ' || e.version_id || ' current: the earliest known, as the metadata '
                                   || 'files of what came before were deleted'
           WHEN 'replaced' THEN 'version ' || e.version_id || ' replaced version ' || e.previous_version_id
                                || coalesce('; ' || e.property_summary, '')
           WHEN 'rolled-back' THEN 'version ' || e.version_id || ' current again, after version ' || e.previous_version_id
                                || coalesce('; ' || e.property_summary, '')
           WHEN 'property-only' THEN e.property_summary || '; version ' || e.version_id || ' kept'
           WHEN 'dropped' THEN 'dropped at version ' || coalesce(e.previous_version_id::VARCHAR, '(none)')
                || CASE WHEN p.view_id IS NOT NULL
                        THEN ', by the time view ' || p.replaced_by || ' was created at its path (its files left in place)'
                        ELSE ': its newest metadata file was removed' END
                || CASE WHEN x.view_id IS NOT NULL THEN ' (found gone by a re-list: then or before)' ELSE '' END
       END AS summary
FROM events e
JOIN latest l USING (view_id)
LEFT JOIN relisted x ON x.view_id = e.view_id AND x.removed_ms = e.at_ms AND e.kind = 'dropped'
LEFT JOIN replaced p ON p.view_id = e.view_id AND p.replaced_ms = e.at_ms AND e.kind = 'dropped'
  AND l.dropped_ms IS NULL
LEFT JOIN preferred_versions v ON v.view_id = e.view_id AND v.version_id = e.version_id AND e.kind <> 'dropped';
