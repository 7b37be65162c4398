-- findings: every finding with where it applies. Per-file findings come from parsing, SQL findings
-- from lineage (once per version using the SQL); those that compare a view's files, versions and
-- representations (version-conflict, competing-commit, dialect-drift, ...) are derived with its
-- spans (`view_findings`, viewlineage.sinks.audit), whatever the order the files arrived in; those
-- that compare views with each other and with tables, here.
CREATE OR REPLACE VIEW findings AS
SELECT 'file' AS scope, ff.location, vf.view_id, NULL::INTEGER AS version_id, ff.code, ff.severity,
       ff.message, ff.path AS position
FROM file_findings ff LEFT JOIN view_files vf USING (location)
UNION ALL
SELECT DISTINCT 'sql', NULL, v.view_id, v.version_id, lf.code, lf.severity, lf.message,
       'representations[' || r.ordinal || '] ' || lf.position
FROM lineage_findings lf JOIN representations r USING (lineage_key) JOIN versions v USING (version_hash)
UNION ALL
-- Those that compare one view's files, versions and representations, derived with its spans.
SELECT * FROM view_findings
UNION ALL
SELECT DISTINCT 'view', NULL, a.view_id, NULL, 'normalization-twin', 'warning',
       'its name ' || dotted_name(a.catalog, a.name) || ' and view ' || b.view_id || '''s look the same but '
       || 'differ in Unicode normalization (NFC and NFD): engines take them as two names, and a read names '
       || 'the one whose bytes it has', '$'
FROM view_names a JOIN view_names b
  ON a.view_id <> b.view_id AND a.catalog IS NOT DISTINCT FROM b.catalog AND a.name <> b.name
 AND nfc_normalize(array_to_string(a.name, chr(31))) = nfc_normalize(array_to_string(b.name, chr(31)))
UNION ALL
SELECT DISTINCT 'view', NULL, v.view_id, NULL, 'table-name-shared', 'warning',
       'its name ' || dotted_name(v.catalog, v.name) || ' is table ' || t.table_id || '''s too: a table dropped '
       || 'without its files (DROP TABLE without PURGE) and this view created at its name? Which one a read '
       || 'names is a guess, matched shared-name in uses, deps, impact and graph', '$'
FROM view_names v JOIN table_names t ON t.name = v.name AND t.catalog IS NOT DISTINCT FROM v.catalog;
