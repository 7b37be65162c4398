-- Lineage as of t: direct reads, then transitive walks through views. Recursion ends on cycles.

-- view_reads_as_of(t): each current view's table references (the union over its dialects), with
-- the current view the reference names, if any. A reference with an unknown catalog matches a view
-- on namespace and name only (catalog_unknown).
CREATE OR REPLACE MACRO view_reads_as_of(t) AS TABLE
WITH current AS MATERIALIZED (SELECT view_id, catalog, name, version_id FROM view_heads_as_of(t)),
copies AS (
    SELECT r.*, count(*) OVER (PARTITION BY r.view_id) AS copies
    FROM current c JOIN version_reads r USING (view_id, version_id)
),
chosen AS (  -- under a version conflict, the preferred copy's references
    SELECT view_id, reads FROM copies WHERE copies = 1
    UNION ALL
    SELECT view_id, reads FROM copies SEMI JOIN preferred_copies USING (version_hash) WHERE copies > 1
),
reference AS (SELECT view_id, unnest(reads, recursive := true) FROM chosen)
SELECT DISTINCT r.view_id, r.catalog, r.namespace, r.name AS table_name, r.suffix, r.pin, r.catalog_unknown,
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
-- path lists the views from the reader down to the one reading the table.
CREATE OR REPLACE MACRO uses_as_of(ref_catalog, ref_parts, t) AS TABLE
WITH RECURSIVE reads AS MATERIALIZED (SELECT * FROM view_reads_as_of(t)),
walk(view_id, depth, path, catalog_unknown) AS (
    SELECT DISTINCT view_id, 1, [view_id], catalog_unknown FROM reads
    WHERE list_append(namespace, table_name) = ref_parts
      AND (ref_catalog IS NULL OR catalog IS NULL OR catalog = ref_catalog)
    UNION ALL
    SELECT r.view_id, w.depth + 1, list_prepend(r.view_id, w.path), w.catalog_unknown OR r.catalog_unknown
    FROM walk w JOIN reads r ON r.target_view_id = w.path[1]
    WHERE NOT list_contains(w.path, r.view_id)
)
SELECT * FROM walk;
