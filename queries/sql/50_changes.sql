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
-- a drop's `previous_version_id` is the version current when it was dropped. `sequence_number` is
-- that of the metadata file whose commit made the change (NULL for a drop, or when no indexed file
-- logged it last): of changes to a view at one time, the greater came later.
-- Times are epoch ms (`changed_ms`) and TIMESTAMPTZ (`changed_at`, NULL past year 9999: a writer that put
-- microseconds where milliseconds go). Names are the view's latest, dotted. `engine` and
-- `dialects` are the version's; the metadata does not say who changed properties or dropped a view.
CREATE OR REPLACE MACRO epoch_ms_time(ms) AS
CASE WHEN ms BETWEEN -62135596800000 AND 253402300799999 THEN make_timestamptz(ms * 1000) END;

CREATE OR REPLACE VIEW change_events AS
WITH events AS (
    -- Each view's own changes, derived with its spans, names included (viewlineage.sinks.audit).
    SELECT view_id, view, catalog, namespace, changed_ms, kind, version_id, previous_version_id, sequence_number,
           changed_properties, property_summary, relisted, engine, dialects, NULL AS replaced_by
    FROM view_changes
    UNION ALL
    -- Its files left in place, another view took its place (replaced_views): dropped by then.
    SELECT r.view_id, path_name(l.catalog, l.name_path), l.catalog, namespace_name(l.name_path), r.replaced_ms,
           'dropped', NULL, l.version_id, NULL, NULL, NULL, false, NULL, NULL, r.replaced_by
    FROM replaced_views() r JOIN view_spans l ON l.view_id = r.view_id AND l.until_ms = 9223372036854775807
    WHERE l.dropped_ms IS NULL
)
SELECT changed_ms, epoch_ms_time(changed_ms) AS changed_at, view_id, view, catalog, namespace, kind, version_id,
       previous_version_id, sequence_number, changed_properties, engine, dialects,
       CASE kind
           WHEN 'created' THEN 'created at version ' || version_id
           WHEN 'first-known' THEN 'version ' || version_id || ' current: the earliest known, as the metadata '
                                   || 'files of what came before were deleted'
           WHEN 'replaced' THEN 'version ' || version_id || ' replaced version ' || previous_version_id
                                || coalesce('; ' || property_summary, '')
           WHEN 'rolled-back' THEN 'version ' || version_id || ' current again, after version ' || previous_version_id
                                || coalesce('; ' || property_summary, '')
           WHEN 'property-only' THEN property_summary || '; version ' || version_id || ' kept'
           WHEN 'dropped' THEN 'dropped at version ' || coalesce(previous_version_id::VARCHAR, '(none)')
                || CASE WHEN replaced_by IS NOT NULL
                        THEN ', by the time view ' || replaced_by || ' was created at its path (its files left in place)'
                        ELSE ': its newest metadata file was removed' END
                || CASE WHEN relisted THEN ' (found gone by a re-list: then or before)' ELSE '' END
       END AS summary
FROM events;
