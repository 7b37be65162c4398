-- findings: every finding with where it applies. Per-file findings come from parsing, SQL findings
-- from lineage (once per version using the SQL); version-conflict, competing-commit and
-- dialect-drift compare files and representations, so they are derived here, whatever the order
-- the files arrived in.
CREATE OR REPLACE VIEW findings AS
SELECT 'file' AS scope, ff.location, vf.view_id, NULL::INTEGER AS version_id, ff.code, ff.severity,
       ff.message, ff.path AS position
FROM file_findings ff LEFT JOIN view_files vf USING (location)
UNION ALL
SELECT DISTINCT 'sql', NULL, v.view_id, v.version_id, lf.code, lf.severity, lf.message,
       'representations[' || r.ordinal || '] ' || lf.position
FROM lineage_findings lf JOIN representations r USING (lineage_key) JOIN versions v USING (version_hash)
UNION ALL
SELECT 'view', NULL, view_id, version_id, 'version-conflict', 'warning',
       'version ' || version_id || ' has ' || count(*) || ' different contents: each file in force shows '
       || 'the copy it lists (the one listed last, if it lists two), a file listing none the copy in the '
       || 'file with the highest sequence number', '$.versions'
FROM versions GROUP BY view_id, version_id HAVING count(*) > 1
UNION ALL
SELECT 'view', NULL, view_id, NULL, 'competing-commit', 'warning',
       count(*) || ' files with sequence number ' || sequence_number || ': ' || string_agg(location, ', ' ORDER BY location)
       || '; committed: ' || coalesce(string_agg(CASE WHEN committed THEN location END, ', ' ORDER BY location), 'none yet'),
       '$'
FROM (
    SELECT f.*, EXISTS (
        SELECT 1 FROM view_files later JOIN version_log l ON l.location = later.location
        WHERE later.view_id = f.view_id AND later.sequence_number > f.sequence_number
          AND l.version_id = f.last_log_version_id AND l.timestamp_ms = f.last_log_ms) AS committed
    FROM view_files f WHERE f.sequence_number IS NOT NULL
)
GROUP BY view_id, sequence_number HAVING count(*) > 1
UNION ALL
SELECT 'version', NULL, v.view_id, v.version_id, 'dialect-drift', 'warning',
       'dialects read different tables: ' || string_agg(dialect || ' -> [' || tables || ']', '; ' ORDER BY dialect), '$'
FROM (
    SELECT r.version_hash, r.dialect, coalesce(string_agg(DISTINCT
        coalesce(tr.catalog || '.', '') || array_to_string(list_append(tr.namespace, tr.name), '.'), ', '
        ORDER BY coalesce(tr.catalog || '.', '') || array_to_string(list_append(tr.namespace, tr.name), '.')), '') AS tables
    FROM representations r LEFT JOIN table_references tr USING (lineage_key)
    WHERE r.lineage_key IS NOT NULL
    GROUP BY r.version_hash, r.dialect
) d JOIN versions v USING (version_hash)
GROUP BY v.view_id, v.version_id, v.version_hash HAVING count(DISTINCT tables) > 1
UNION ALL
SELECT 'file', l.location, l.view_id, l.version_id, 'future-activation', 'warning',
       'activated ' || ((l.timestamp_ms - epoch_ms(f.ingested_at)) // 1000) || ' s after this file was '
       || 'indexed: its writer''s clock runs ahead (answers without --as-of give the latest state anyway)',
       '$.version-log[' || l.ordinal || '].timestamp-ms'
FROM version_log l JOIN files f USING (location)
WHERE l.timestamp_ms > epoch_ms(f.ingested_at) + 60000
UNION ALL
SELECT 'file', r.location, f.view_id, NULL, 'removal-before-commit', 'warning',
       'removed at ' || min(r.removed_ms) || ' ms (by ' || string_agg(DISTINCT r.source, ', ') || '), before the '
       || 'file''s last version-log entry at ' || any_value(f.last_log_ms) || ' ms: the removal counts from then',
       '$'
FROM removals r JOIN view_files f USING (location)
GROUP BY r.location, f.view_id HAVING min(r.removed_ms) < any_value(f.last_log_ms)
UNION ALL
SELECT DISTINCT 'version', NULL, view_id, version_id, 'reads-itself', 'warning',
       'the version reads its own view (' || path_name(catalog, name_path) || '): no engine can run it', '$'
FROM view_spans
WHERE name_path IS NOT NULL AND read_paths IS NOT NULL
  AND list_contains(string_split(read_paths, chr(30)), coalesce(catalog, '') || chr(29) || name_path)
UNION ALL
SELECT 'view', NULL, view_id, max(version_id), 'activation-tie', 'warning',
       'versions ' || string_agg(DISTINCT version_id::VARCHAR, ', ' ORDER BY version_id::VARCHAR)
       || ' are made current at one instant (' || timestamp_ms || ') by version-logs; the greatest id '
       || 'is taken as current from then, and what the others read is matched tied-file', '$.version-log'
FROM activations a GROUP BY view_id, timestamp_ms
HAVING count(DISTINCT version_id) > 1
   AND NOT bool_or(activation_settled(a.view_id, a.version_id, a.timestamp_ms))
UNION ALL
SELECT DISTINCT 'view', NULL, view_id, version_id, 'timestamp-out-of-range', 'warning',
       'activated at ' || timestamp_ms || ' ms, past what a date can be (years 1 to 9999): microseconds '
       || 'written as milliseconds? Shown as the raw number', '$.version-log'
FROM activations WHERE timestamp_ms NOT BETWEEN -62135596800000 AND 253402300799999
UNION ALL
SELECT 'file', location, view_id, NULL, 'commit-order-mismatch', 'warning',
       'committed at ' || commit_ms || ' ms (' || commit_source || '), before ' || earlier_location
       || ' (' || earlier_ms || ' ms), whose sequence number is lower: times copied over (a sync '
       || 'or copy that did not keep them)? Which file held the view when follows the times, a guess',
       '$'
FROM (
    SELECT view_id, location, commit_ms, commit_source,
           lag(location) OVER w AS earlier_location, lag(commit_ms) OVER w AS earlier_ms
    FROM view_files WHERE sequence_number IS NOT NULL AND commit_ms IS NOT NULL
    WINDOW w AS (PARTITION BY view_id ORDER BY sequence_number, location)
)
WHERE commit_ms < earlier_ms
UNION ALL
SELECT DISTINCT 'view', NULL, a.view_id, NULL, 'normalization-twin', 'warning',
       'its name ' || dotted_name(a.catalog, a.name) || ' and view ' || b.view_id || '''s look the same but '
       || 'differ in Unicode normalization (NFC and NFD): engines take them as two names, and a read names '
       || 'the one whose bytes it has', '$'
FROM view_names a JOIN view_names b
  ON a.view_id <> b.view_id AND a.catalog IS NOT DISTINCT FROM b.catalog AND a.name <> b.name
 AND nfc_normalize(array_to_string(a.name, chr(31))) = nfc_normalize(array_to_string(b.name, chr(31)))
UNION ALL
SELECT DISTINCT 'view', NULL, a.view_id, a.version_id, 'log-rewritten', 'warning',
       'version ' || a.version_id || ' made current at ' || a.timestamp_ms || ' ms by the log of ' || a.location
       || ', which the next file ' || n.next_location || ' no longer lists though its log spans that time: '
       || 'a log rewritten or forged; the store takes both logs as they are', '$.version-log'
FROM version_log a
JOIN (SELECT location, sequence_number,
             lead(location) OVER w AS next_location, lead(sequence_number) OVER w AS next_sequence_number
      FROM view_files WHERE sequence_number IS NOT NULL
      WINDOW w AS (PARTITION BY view_id ORDER BY sequence_number, location)) n
  ON n.location = a.location AND n.next_sequence_number > n.sequence_number  -- not a tie, nor a copy
JOIN (SELECT location, min(timestamp_ms) AS first_ms, max(timestamp_ms) AS last_ms FROM version_log GROUP BY location) s
  ON s.location = n.next_location
WHERE a.timestamp_ms BETWEEN s.first_ms AND s.last_ms
  AND NOT EXISTS (SELECT 1 FROM version_log b WHERE b.location = n.next_location
                  AND b.version_id = a.version_id AND b.timestamp_ms = a.timestamp_ms)
UNION ALL
SELECT DISTINCT 'view', NULL, v.view_id, NULL, 'table-name-shared', 'warning',
       'its name ' || dotted_name(v.catalog, v.name) || ' is table ' || t.table_id || '''s too: a table dropped '
       || 'without its files (DROP TABLE without PURGE) and this view created at its name? Which one a read '
       || 'names is a guess, matched shared-name in uses, deps, impact and graph', '$'
FROM view_names v JOIN table_names t ON t.name = v.name AND t.catalog IS NOT DISTINCT FROM v.catalog
UNION ALL
SELECT 'view', NULL, view_id, version_id, 'version-gap', 'warning',
       CASE WHEN version_id - before = 2 THEN 'version ' || (before + 1)
            ELSE 'versions ' || (before + 1) || ' to ' || (version_id - 1) END
       || ' of the view were never stored: no indexed file lists them (expired from its metadata before '
       || 'one was indexed, or in a file quarantined or never seen), if its writer numbers versions one '
       || 'by one, as Iceberg''s Java library does', '$.versions'
FROM (
    SELECT view_id, version_id, lag(version_id) OVER (PARTITION BY view_id ORDER BY version_id) AS before
    FROM (SELECT DISTINCT view_id, version_id FROM versions)
    -- A writer that numbers versions one by one from 1 gives no id below 1: of one that does,
    -- nothing can be told from the gaps.
    WHERE view_id NOT IN (SELECT view_id FROM versions WHERE version_id < 1)
)
WHERE version_id - before > 1;
