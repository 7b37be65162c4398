"""Audit rows (migration 0025), derived from the stored rows with each view's spans: the changes to
the view (`view_changes`, read by `change_events`), its findings that compare its files, its
versions or its representations (`view_findings`, read by `findings`), and the view that took its
place at its path, if one did (`view_replacements`, read by `replaced_views`).

They were derived by every question, from the whole store: Activity and Health read them on every
call, and at 10^6 files that took seconds and gigabytes. A view's changes and findings depend only
on its own rows, so `spans` re-derives them for the views it touches, in the same transaction:
whatever order files and removals came in, they are what a derivation from all the rows gives.
Which view took a view's place depends on every view at its path: theirs are derived again too.
What compares names across paths (names shared with another view or a table) is derived by the
question (queries/sql).

Names and messages are spelled by the query macros (`path_name`, `namespace_name`), which every
writer installs before it writes (viewlineage.sinks.schema.install_queries); a view's rows are
derived again whenever its name can change (a file of it comes or goes)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from viewlineage.sinks.schema import OPEN_MS

TABLES = ("view_changes", "view_findings", "view_replacements")
FILLED_BY = ("0025_audit_rows",)
"""Migrations after which the store derives these tables from the rows already there."""
REBUILD_CHUNK = 256
"""Views derived per statement when every view's rows are (a migration): as many as a chunk of
stale spans (`spans.STALE_CHUNK`), looked up by key, so a statement's memory does not grow with
the store."""


_VIEW_CHANGES = f"""
INSERT INTO view_changes
WITH touched_files AS MATERIALIZED (
    SELECT view_id, location, sequence_number, commit_ms, current_version_id, properties, last_log_ms,
           last_log_version_id
    FROM view_files WHERE view_id IN (SELECT view_id FROM _touched)
),
latest AS (
    SELECT view_id, catalog, path_name(catalog, name_path) AS view, namespace_name(name_path) AS namespace,
           dropped_ms, version_id AS last_version_id
    FROM view_spans
    WHERE view_id IN (SELECT view_id FROM _touched) AND until_ms = {OPEN_MS}
),
activated AS (
    SELECT view_id, version_id, timestamp_ms AS at_ms,
           lag(version_id) OVER w AS previous_version_id,
           -- Whether this version was current before: ids need not grow with time (any writer
           -- may number its versions as it likes), so the order of ids says nothing.
           count(*) OVER (PARTITION BY view_id, version_id ORDER BY timestamp_ms
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) > 0 AS current_before
    FROM activations WHERE view_id IN (SELECT view_id FROM _touched)
    WINDOW w AS (PARTITION BY view_id ORDER BY timestamp_ms, version_id)
),
first_files AS (SELECT DISTINCT view_id FROM touched_files WHERE sequence_number = 0),
misplaced AS (
    SELECT DISTINCT location FROM file_findings
    WHERE code = 'location-mismatch' AND location IN (SELECT location FROM touched_files)
),
removed AS (SELECT DISTINCT location FROM removals WHERE location IN (SELECT location FROM touched_files)),
committed AS (
    -- The files that can hold the view (placed_view_locations), in order.
    SELECT f.view_id, f.commit_ms, f.sequence_number, f.current_version_id, f.properties, f.last_log_ms,
           f.last_log_version_id, lag(f.current_version_id) OVER w AS previous_version_id,
           lag(f.properties) OVER w AS previous_properties,
           lag(f.last_log_ms) OVER w AS previous_log_ms,
           row_number() OVER w AS ordinal
    FROM touched_files f
    WHERE f.location NOT IN (SELECT location FROM misplaced)
       OR NOT EXISTS (
           SELECT 1 FROM touched_files g
           WHERE g.view_id = f.view_id AND g.location NOT IN (SELECT location FROM misplaced)
             AND g.location NOT IN (SELECT location FROM removed))
    WINDOW w AS (PARTITION BY f.view_id
                 ORDER BY f.commit_ms NULLS FIRST, coalesce(f.sequence_number, -1), f.location)
),
commits AS MATERIALIZED (
    -- Each commit after a view's first that makes a change below: a version made current, or
    -- properties alone.
    SELECT * FROM committed
    WHERE ordinal > 1
      AND (last_log_ms IS DISTINCT FROM previous_log_ms
           OR (current_version_id IS NOT DISTINCT FROM previous_version_id
               AND properties IS DISTINCT FROM previous_properties))
),
property_keys AS (
    -- Key by key, by a join rather than by looking each key up in the other map (a map's lookup
    -- reads its keys: a map of 10^5 keys took minutes).
    SELECT view_id, ordinal, key, bool_or(side = 0) AS now_has, bool_or(side = 1) AS before_has,
           any_value(value) FILTER (WHERE side = 0) AS now_value,
           any_value(value) FILTER (WHERE side = 1) AS before_value
    FROM (
        SELECT view_id, ordinal, 0 AS side, unnest(map_keys(properties)) AS key,
               unnest(map_values(properties)) AS value
        FROM commits WHERE properties IS DISTINCT FROM previous_properties
        UNION ALL
        SELECT view_id, ordinal, 1, unnest(map_keys(previous_properties)),
               unnest(map_values(previous_properties))
        FROM commits WHERE properties IS DISTINCT FROM previous_properties
    )
    GROUP BY view_id, ordinal, key
),
property_changes AS (
    SELECT view_id, ordinal,
           list_sort(list(key) FILTER (WHERE distinct_value)) AS changed_properties,
           list_sort(list(key) FILTER (WHERE now_has AND NOT before_has)) AS added,
           list_sort(list(key) FILTER (WHERE now_has AND before_has AND distinct_value)) AS changed,
           list_sort(list(key) FILTER (WHERE before_has AND NOT now_has)) AS removed
    FROM (SELECT *, now_value IS DISTINCT FROM before_value AS distinct_value FROM property_keys)
    GROUP BY view_id, ordinal
),
changed AS (
    -- With the keys of the properties each commit set, changed or removed, and what it did to
    -- them: 'properties team, tier added; owner changed; comment removed' (NULL for nothing).
    SELECT c.*, coalesce(p.changed_properties, []) AS changed_properties,
           nullif('properties ' || concat_ws('; ', array_to_string(p.added, ', ') || ' added',
                                             array_to_string(p.changed, ', ') || ' changed',
                                             array_to_string(p.removed, ', ') || ' removed'),
                  'properties ') AS property_summary
    FROM commits c LEFT JOIN property_changes p USING (view_id, ordinal)
),
introduced AS (
    -- The properties changed by the commit that made a version current (its log's newest entry,
    -- which a later property-only commit carries over unchanged).
    SELECT view_id, last_log_version_id AS version_id, last_log_ms AS at_ms,
           nullif(any_value(changed_properties), []) AS changed_properties,
           any_value(property_summary) AS property_summary
    FROM changed WHERE last_log_ms IS DISTINCT FROM previous_log_ms GROUP BY ALL
),
made_current AS (
    -- The file whose commit made each version current: the first to log it last.
    SELECT view_id, last_log_version_id AS version_id, last_log_ms AS at_ms,
           min(sequence_number) AS sequence_number
    FROM committed GROUP BY ALL
),
events AS (
    SELECT a.view_id, a.at_ms, m.sequence_number,
           CASE WHEN a.previous_version_id IS NULL
                     AND (a.version_id = 1 OR a.view_id IN (SELECT view_id FROM first_files))
                THEN 'created'
                WHEN a.previous_version_id IS NULL THEN 'first-known'
                WHEN a.current_before THEN 'rolled-back'
                ELSE 'replaced' END AS kind,
           a.version_id, a.previous_version_id, i.changed_properties, i.property_summary
    FROM activated a LEFT JOIN introduced i USING (view_id, version_id, at_ms)
    LEFT JOIN made_current m USING (view_id, version_id, at_ms)
    -- The version current already, logged again at another time (two files' logs that disagree:
    -- the finding log-rewritten): no change.
    WHERE a.previous_version_id IS DISTINCT FROM a.version_id
    UNION ALL
    SELECT view_id, commit_ms, sequence_number, 'property-only', current_version_id, previous_version_id,
           changed_properties, property_summary
    FROM changed
    WHERE current_version_id IS NOT DISTINCT FROM previous_version_id
      AND properties IS DISTINCT FROM previous_properties
    UNION ALL
    SELECT view_id, dropped_ms, NULL, 'dropped', NULL, last_version_id, NULL, NULL
    FROM latest WHERE dropped_ms IS NOT NULL
),
relisted AS (
    -- Drops a re-list found (`reconcile`): the file went then or before, when no one followed.
    SELECT DISTINCT f.view_id, r.removed_ms FROM removals r JOIN touched_files f USING (location)
    WHERE r.source = 'reconcile'
),
preferred AS (
    -- The copy of each version that counts (preferred_copies, derived just before).
    SELECT v.view_id, v.version_id, v.version_hash, v.engine_name
    FROM versions v ANTI JOIN preferred_copies USING (view_id, version_id)
    WHERE v.view_id IN (SELECT view_id FROM _touched)
    UNION ALL
    SELECT v.view_id, v.version_id, v.version_hash, v.engine_name FROM versions v
    WHERE v.version_hash IN (
        SELECT version_hash FROM preferred_copies WHERE view_id IN (SELECT view_id FROM _touched))
),
dialects AS (
    SELECT version_hash, list(DISTINCT dialect ORDER BY dialect) AS dialects FROM representations
    WHERE version_hash IN (SELECT version_hash FROM preferred) AND dialect IS NOT NULL
    GROUP BY version_hash
)
SELECT e.view_id, l.view, l.catalog, l.namespace, e.at_ms, e.kind, e.version_id, e.previous_version_id,
       e.sequence_number, e.changed_properties, e.property_summary, x.view_id IS NOT NULL, p.engine_name,
       d.dialects
FROM events e
JOIN latest l USING (view_id)
LEFT JOIN relisted x ON x.view_id = e.view_id AND x.removed_ms = e.at_ms AND e.kind = 'dropped'
LEFT JOIN preferred p ON p.view_id = e.view_id AND p.version_id = e.version_id AND e.kind <> 'dropped'
LEFT JOIN dialects d ON d.version_hash = p.version_hash"""
"""A replace or rollback whose commit also changed properties names them too; a drop's previous
version is the version current when it was dropped (its newest file's removal)."""

_VIEW_FINDINGS = """
INSERT INTO view_findings
WITH touched_files AS MATERIALIZED (
    SELECT view_id, location, sequence_number, commit_ms, commit_source, current_version_id, last_log_ms,
           last_log_version_id
    FROM view_files WHERE view_id IN (SELECT view_id FROM _touched)
),
logged AS MATERIALIZED (SELECT * FROM version_log WHERE view_id IN (SELECT view_id FROM _touched)),
touched_versions AS MATERIALIZED (
    SELECT view_id, version_id, version_hash FROM versions WHERE view_id IN (SELECT view_id FROM _touched)
),
touched_activations AS MATERIALIZED (
    SELECT * FROM activations WHERE view_id IN (SELECT view_id FROM _touched)
)
SELECT 'view', NULL, view_id, version_id, 'version-conflict', 'warning',
       'version ' || version_id || ' has ' || count(*) || ' different contents: each file in force shows '
       || 'the copy it lists (the one listed last, if it lists two), a file listing none the copy in the '
       || 'file with the highest sequence number', '$.versions'
FROM touched_versions GROUP BY view_id, version_id HAVING count(*) > 1
UNION ALL
SELECT 'view', NULL, view_id, NULL, 'competing-commit', 'warning',
       count(*) || ' files with sequence number ' || sequence_number || ': '
       || string_agg(location, ', ' ORDER BY location) || '; committed: '
       || coalesce(string_agg(CASE WHEN committed THEN location END, ', ' ORDER BY location), 'none yet'),
       '$'
FROM (
    SELECT f.*, EXISTS (
        SELECT 1 FROM touched_files later JOIN logged l ON l.location = later.location
        WHERE later.view_id = f.view_id AND later.sequence_number > f.sequence_number
          AND l.version_id = f.last_log_version_id AND l.timestamp_ms = f.last_log_ms) AS committed
    FROM touched_files f
    -- Whether each file was committed is asked only of files that share a sequence number.
    SEMI JOIN (SELECT view_id, sequence_number FROM touched_files WHERE sequence_number IS NOT NULL
               GROUP BY ALL HAVING count(*) > 1) USING (view_id, sequence_number)
)
GROUP BY view_id, sequence_number
UNION ALL
SELECT 'version', NULL, v.view_id, v.version_id, 'dialect-drift', 'warning',
       'dialects read different tables: '
       || string_agg(dialect || ' -> [' || tables || ']', '; ' ORDER BY dialect), '$'
FROM (
    SELECT version_hash, dialect, coalesce(string_agg(DISTINCT read, ', ' ORDER BY read), '') AS tables
    FROM (SELECT r.version_hash, r.dialect,
                 coalesce(tr.catalog || '.', '')
                     || array_to_string(list_append(tr.namespace, tr.name), '.') AS read
          FROM representations r LEFT JOIN table_references tr USING (lineage_key)
          WHERE r.lineage_key IS NOT NULL AND r.version_hash IN (SELECT version_hash FROM touched_versions))
    GROUP BY version_hash, dialect
) d JOIN touched_versions v USING (version_hash)
GROUP BY v.view_id, v.version_id, v.version_hash HAVING count(DISTINCT tables) > 1
UNION ALL
SELECT 'file', l.location, l.view_id, l.version_id, 'future-activation', 'warning',
       'activated ' || ((l.timestamp_ms - epoch_ms(f.ingested_at)) // 1000) || ' s after this file was '
       || 'indexed: its writer''s clock runs ahead (answers without --as-of give the latest state anyway)',
       '$.version-log[' || l.ordinal || '].timestamp-ms'
FROM logged l JOIN files f USING (location)
WHERE l.timestamp_ms > epoch_ms(f.ingested_at) + 60000
UNION ALL
SELECT 'file', r.location, f.view_id, NULL, 'removal-before-commit', 'warning',
       'removed at ' || min(r.removed_ms) || ' ms (by ' || string_agg(DISTINCT r.source, ', ')
       || '), before the file''s last version-log entry at ' || any_value(f.last_log_ms)
       || ' ms: the removal counts from then',
       '$'
FROM removals r JOIN touched_files f USING (location)
GROUP BY r.location, f.view_id HAVING min(r.removed_ms) < any_value(f.last_log_ms)
UNION ALL
SELECT DISTINCT 'version', NULL, view_id, version_id, 'reads-itself', 'warning',
       'the version reads its own view (' || path_name(catalog, name_path) || '): no engine can run it', '$'
FROM view_spans
WHERE view_id IN (SELECT view_id FROM _touched) AND name_path IS NOT NULL AND read_paths IS NOT NULL
  AND list_contains(string_split(read_paths, chr(30)), coalesce(catalog, '') || chr(29) || name_path)
UNION ALL
SELECT 'view', NULL, view_id, max(version_id), 'activation-tie', 'warning',
       'versions ' || string_agg(DISTINCT version_id::VARCHAR, ', ' ORDER BY version_id::VARCHAR)
       || ' are made current at one instant (' || timestamp_ms || ') by version-logs; the greatest id '
       || 'is taken as current from then, and what the others read is matched tied-file', '$.version-log'
FROM touched_activations a GROUP BY view_id, timestamp_ms
HAVING count(DISTINCT version_id) > 1
   AND NOT bool_or(EXISTS (SELECT 1 FROM touched_files f
                           WHERE f.view_id = a.view_id AND f.last_log_ms = a.timestamp_ms
                             AND f.current_version_id = a.version_id))
UNION ALL
SELECT DISTINCT 'view', NULL, view_id, version_id, 'timestamp-out-of-range', 'warning',
       'activated at ' || timestamp_ms || ' ms, past what a date can be (years 1 to 9999): microseconds '
       || 'written as milliseconds? Shown as the raw number', '$.version-log'
FROM touched_activations WHERE timestamp_ms NOT BETWEEN -62135596800000 AND 253402300799999
UNION ALL
SELECT 'file', location, view_id, NULL, 'commit-order-mismatch', 'warning',
       'committed at ' || commit_ms || ' ms (' || commit_source || '), before ' || earlier_location
       || ' (' || earlier_ms || ' ms), whose sequence number is lower: times copied over (a sync '
       || 'or copy that did not keep them)? Which file held the view when follows the times, a guess',
       '$'
FROM (
    -- Against the file of a lower sequence number committed last (not the one just before: files
    -- of one number tie, and a run of files can all come before an earlier one).
    SELECT view_id, location, commit_ms, commit_source,
           arg_max(location, (commit_ms, location)) OVER w AS earlier_location,
           max(commit_ms) OVER w AS earlier_ms
    FROM touched_files WHERE sequence_number IS NOT NULL AND commit_ms IS NOT NULL
    WINDOW w AS (PARTITION BY view_id ORDER BY sequence_number
                 RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
)
WHERE commit_ms < earlier_ms
UNION ALL
SELECT DISTINCT 'view', NULL, a.view_id, a.version_id, 'log-rewritten', 'warning',
       'version ' || a.version_id || ' made current at ' || a.timestamp_ms || ' ms by the log of '
       || a.location
       || ', which the next file ' || a.next_location || ' no longer lists though its log spans that time: '
       || 'a log rewritten or forged; the store takes both logs as they are', '$.version-log'
FROM (
    SELECT a.*, n.next_location FROM logged a
    JOIN (SELECT location, sequence_number,
                 lead(location) OVER w AS next_location, lead(sequence_number) OVER w AS next_sequence_number
          FROM touched_files WHERE sequence_number IS NOT NULL
          WINDOW w AS (PARTITION BY view_id ORDER BY sequence_number, location)) n
      ON n.location = a.location AND n.next_sequence_number > n.sequence_number  -- not a tie, nor a copy
    JOIN (SELECT location, min(timestamp_ms) AS first_ms, max(timestamp_ms) AS last_ms
          FROM logged GROUP BY location) s
      ON s.location = n.next_location
    WHERE a.timestamp_ms BETWEEN s.first_ms AND s.last_ms
) a
ANTI JOIN logged b
  ON b.location = a.next_location AND b.version_id = a.version_id AND b.timestamp_ms = a.timestamp_ms
UNION ALL
SELECT 'view', NULL, view_id, version_id, 'version-gap', 'warning',
       CASE WHEN version_id - before = 2 THEN 'version ' || (before + 1)
            ELSE 'versions ' || (before + 1) || ' to ' || (version_id - 1) END
       || ' of the view were never stored: no indexed file lists them (expired from its metadata before '
       || 'one was indexed, or in a file quarantined or never seen), if its writer numbers versions one '
       || 'by one, as Iceberg''s Java library does', '$.versions'
FROM (
    SELECT view_id, version_id, lag(version_id) OVER (PARTITION BY view_id ORDER BY version_id) AS before
    FROM (SELECT DISTINCT view_id, version_id FROM touched_versions)
    -- A writer that numbers versions one by one from 1 gives no id below 1: of one that does,
    -- nothing can be told from the gaps.
    WHERE view_id NOT IN (SELECT view_id FROM touched_versions WHERE version_id < 1)
)
WHERE version_id - before > 1"""
"""Each finding compares what the files of one view say: one id with two contents
(version-conflict), two files of one sequence number (competing-commit), dialects that read
different tables (dialect-drift), clocks (future-activation, commit-order-mismatch,
timestamp-out-of-range), a removal before the last commit (removal-before-commit), a version that
reads itself, versions made current at one instant (activation-tie), a log the next file rewrote
(log-rewritten), ids never stored (version-gap)."""


_NEIGHBOURS = """
SELECT DISTINCT o.view_id FROM view_spans o
SEMI JOIN (SELECT DISTINCT catalog, name_path, directory_hash FROM view_spans
           WHERE view_id IN (SELECT view_id FROM _touched) AND name_path IS NOT NULL) p
  ON o.name_path = p.name_path AND o.catalog IS NOT DISTINCT FROM p.catalog
 AND o.directory_hash = p.directory_hash"""
"""The views with spans at a path (a name in a metadata directory) the touched views have spans at:
whether another view took one's place is a question about them all."""

_VIEW_REPLACEMENTS = f"""
INSERT INTO view_replacements
SELECT l.view_id, arg_min(o.view_id, o.commit_ms),
       -- when it took hold: its version's activation, if that came before its file's commit time
       least(min(o.commit_ms),
             coalesce(min(o.from_ms) FILTER (WHERE o.from_ms > l.commit_ms), min(o.commit_ms)))
FROM view_spans l JOIN view_spans o
  ON o.name_path = l.name_path AND o.catalog IS NOT DISTINCT FROM l.catalog
 AND o.directory_hash = l.directory_hash
WHERE l.view_id IN (SELECT view_id FROM _neighbours) AND l.until_ms = {OPEN_MS}
  AND o.view_id <> l.view_id AND o.commit_ms > l.commit_ms
GROUP BY l.view_id"""
"""A view another took the place of: the first commit of one in its directory, under its name, after
the view's newest file (a view dropped by a catalog that left its older files, then created again at
its path: the newest file holds the name, see view_heads_as_of)."""


def derive(conn: duckdb.DuckDBPyConnection) -> None:
    """The audit rows of the views registered as `_touched`, whose spans and preferred copies are
    derived, in the caller's transaction; and which view took the place of each view at their paths."""
    for table, derivation in (("view_changes", _VIEW_CHANGES), ("view_findings", _VIEW_FINDINGS)):
        conn.execute(f"DELETE FROM {table} WHERE view_id IN (SELECT view_id FROM _touched)")
        conn.execute(derivation)
    conn.register("_neighbours", conn.sql(_NEIGHBOURS).to_arrow_table())
    conn.execute("DELETE FROM view_replacements WHERE view_id IN (SELECT view_id FROM _neighbours)")
    conn.execute(_VIEW_REPLACEMENTS)
    conn.unregister("_neighbours")


def rebuild(conn: duckdb.DuckDBPyConnection) -> None:
    """Every view's audit rows, from the stored rows and spans, `REBUILD_CHUNK` views a statement."""
    for table in TABLES:
        conn.execute(f"DELETE FROM {table}")
    views = conn.sql("SELECT DISTINCT view_id FROM view_spans ORDER BY view_id").to_arrow_table().column(0)
    for start in range(0, len(views), REBUILD_CHUNK):
        conn.register("_touched", pa.table({"view_id": views.slice(start, REBUILD_CHUNK)}))
        derive(conn)
        conn.unregister("_touched")
