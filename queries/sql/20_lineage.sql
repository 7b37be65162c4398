-- Lineage as of t: direct reads, then transitive walks through views. Recursion ends on cycles.

-- current_reads_as_of(t): each view current at t (view_heads_as_of) whose version is stored, with
-- the references it reads in full. Under a version conflict, the preferred copy's.
CREATE OR REPLACE MACRO current_reads_as_of(t) AS TABLE
SELECT view_id, catalog, name, reads FROM view_heads_as_of(t) WHERE version_hash IS NOT NULL;

-- view_reads_as_of(t): each current view's table references (the union over its dialects), with
-- the current view the reference names, if any. A reference with an unknown catalog matches a view
-- on namespace and name only (catalog_unknown).
CREATE OR REPLACE MACRO view_reads_as_of(t) AS TABLE
WITH current AS MATERIALIZED (SELECT view_id, catalog, name, reads FROM current_reads_as_of(t)),
reference AS (SELECT view_id, unnest(reads, recursive := true) FROM current)
SELECT r.view_id, r.catalog, r.namespace, r.name AS table_name, r.suffix, r.pin, r.catalog_unknown,
       target.view_id AS target_view_id
FROM reference r
LEFT JOIN current target
    ON list_append(r.namespace, r.name) = target.name
   AND (r.catalog IS NULL OR target.catalog IS NULL OR r.catalog = target.catalog);

-- deps_as_of(start, t): what view `start` reads, through views recursively; depth 1 is direct.
CREATE OR REPLACE MACRO deps_as_of(start, t) AS TABLE
WITH RECURSIVE reads AS MATERIALIZED (SELECT * FROM view_reads_as_of(t)),
walk(view_id, depth, path, catalog, namespace, table_name, suffix, pin, catalog_unknown, target_view_id) AS (
    SELECT view_id, 1, [view_id], catalog, namespace, table_name, suffix, pin, catalog_unknown, target_view_id
    FROM reads WHERE view_id = start
    UNION ALL
    SELECT r.view_id, w.depth + 1, list_append(w.path, r.view_id), r.catalog, r.namespace, r.table_name,
           r.suffix, r.pin, r.catalog_unknown, r.target_view_id
    FROM walk w JOIN reads r ON r.view_id = w.target_view_id
    WHERE NOT list_contains(w.path, r.view_id)
)
SELECT * FROM walk;

-- uses_as_of(ref_catalog, ref_parts, t): views reading the table named by ref_parts (namespace
-- levels then name; ref_catalog NULL to match any catalog), directly (depth 1) or through views.
-- path lists the views from the reader down to the one reading the table, path_names the same
-- views by their names at t (catalog.namespace.name; the view id of a view with no name). It walks
-- references by their plain names, which the spans carry: one filtered scan, no join. A current
-- view whose version is not stored reads nothing known (its read_paths are NULL), so it is never
-- walked through.
CREATE OR REPLACE MACRO uses_as_of(ref_catalog, ref_parts, t) AS TABLE
WITH RECURSIVE current AS MATERIALIZED (
    SELECT view_id, catalog, name_path, read_paths,
           CASE WHEN name_path IS NULL THEN view_id
                ELSE concat_ws('.', catalog, replace(name_path, chr(31), '.')) END AS view_name
    FROM view_heads_as_of(t)
),
reads AS MATERIALIZED (
    SELECT view_id, view_name, nullif(split_part(entry, chr(29), 1), '') AS catalog,
           split_part(entry, chr(29), 2) AS read_name
    FROM (SELECT view_id, view_name, unnest(string_split(read_paths, chr(30))) AS entry FROM current)
),
named AS MATERIALIZED (
    SELECT view_id, catalog, name_path AS read_name FROM current WHERE name_path IS NOT NULL
),
walk(view_id, depth, path, catalog_unknown, path_names) AS (
    SELECT DISTINCT view_id, 1, [view_id], catalog IS NULL, [view_name] FROM reads
    WHERE read_name = array_to_string(ref_parts, chr(31))
      AND (ref_catalog IS NULL OR catalog IS NULL OR catalog = ref_catalog)
    UNION ALL
    SELECT r.view_id, w.depth + 1, list_prepend(r.view_id, w.path), w.catalog_unknown OR r.catalog IS NULL,
           list_prepend(r.view_name, w.path_names)
    FROM walk w JOIN named n ON n.view_id = w.path[1]
    JOIN reads r ON r.read_name = n.read_name AND (r.catalog IS NULL OR n.catalog IS NULL OR r.catalog = n.catalog)
    WHERE NOT list_contains(w.path, r.view_id)
)
SELECT view_id, path_names[1] AS view_name, depth, path, path_names, catalog_unknown FROM walk;
