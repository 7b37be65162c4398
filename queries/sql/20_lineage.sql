-- Lineage as of t: direct reads, then transitive walks through views. Recursion ends on cycles.

-- held_table_names(t): the names tables held by t: catalog, name (namespace levels and name) and
-- name_path (as the spans spell a view's name).
CREATE OR REPLACE MACRO held_table_names(t) AS TABLE
SELECT DISTINCT catalog, name, array_to_string(name, chr(31)) AS name_path FROM table_files WHERE commit_ms <= t;

-- table_name_shared(ref_catalog, ref_parts, t): whether tables in two directories held the name by
-- t, or a view current at t holds it too. Names are case-folded as engines fold them, but a
-- case-sensitive catalog (Iceberg's JDBC one) keeps `Sales` and `sales` apart; and a table dropped
-- without its files (DROP TABLE without PURGE) leaves no trace of the drop, while a view created at
-- its name then holds it: which of them a read names is then a guess (`shared-name`).
CREATE OR REPLACE MACRO table_name_shared(ref_catalog, ref_parts, t) AS (
    SELECT count(DISTINCT metadata_directory(location)) > 1 FROM table_files
    WHERE name = ref_parts AND catalog IS NOT DISTINCT FROM ref_catalog AND commit_ms <= t
) OR EXISTS (
    FROM view_heads_as_of(t)
    WHERE name_path = array_to_string(ref_parts, chr(31)) AND catalog IS NOT DISTINCT FROM ref_catalog
);

-- current_reads_as_of(t): each view current at t (view_heads_as_of) whose version is stored, with
-- the references it reads in full. Under a version conflict, the preferred copy's.
CREATE OR REPLACE MACRO current_reads_as_of(t) AS TABLE
SELECT view_id, catalog, name, reads FROM view_heads_as_of(t) WHERE version_hash IS NOT NULL;

-- view_reads_as_of(t): each current view's table references (the union over its dialects), with
-- each current view the reference could name, and how surely it names what it is taken to be
-- (read_match, as `match` of uses_as_of). A view: the same namespace and name in the same catalog
-- (0), with the reference's or the view's catalog unknown (1) or in a catalog no stored view or
-- table is in (2); failing any, one with a leading part more names the view when that part is its
-- catalog or no known catalog (`lake.sales.v` read in spark_catalog, 3). A table: one leading part
-- more than an indexed table's name, that part no known catalog (3); the reference's catalog
-- unknown, or an indexed table of that name in none (1); its catalog one no stored view or table is
-- in (2); else 0. A view or table whose name two directories hold (names that differ only in
-- case), or a table and a view both (`table_name_shared`): 5, shared-name.
CREATE OR REPLACE MACRO view_reads_as_of(t) AS TABLE
WITH current AS MATERIALIZED (
    -- `shared`: another current view has the name (directories whose names differ only in case),
    -- or a table held it (`table_name_shared`).
    SELECT v.view_id, v.catalog, v.name, v.reads,
           count(*) OVER (PARTITION BY v.catalog, v.name) > 1 OR t.name IS NOT NULL AS shared
    FROM current_reads_as_of(t) v
    LEFT JOIN held_table_names(t) t ON t.name = v.name AND t.catalog IS NOT DISTINCT FROM v.catalog
),
catalogs AS MATERIALIZED (
    SELECT catalog FROM view_names WHERE catalog IS NOT NULL
    UNION SELECT catalog FROM table_names WHERE catalog IS NOT NULL
),
tables AS MATERIALIZED (SELECT DISTINCT catalog, name FROM table_names),
shared_tables AS MATERIALIZED (  -- names tables in two directories held by t (table_name_shared)
    SELECT catalog, name FROM table_files WHERE commit_ms <= t
    GROUP BY catalog, name HAVING count(DISTINCT metadata_directory(location)) > 1
),
reference AS (
    SELECT *, len(namespace) > 0 AND namespace[1] IN (SELECT catalog FROM catalogs) AS leads_with_catalog,
           catalog IS NOT NULL AND catalog NOT IN (SELECT catalog FROM catalogs) AS other_catalog
    FROM (SELECT view_id, unnest(reads, recursive := true) FROM current)
)
SELECT r.view_id, r.catalog, r.namespace, r.name AS table_name, r.suffix, r.pin, r.catalog_unknown,
       coalesce(target.view_id, shifted.view_id) AS target_view_id,
       CASE WHEN coalesce(target.shared, shifted.shared) THEN 5
            WHEN target.view_id IS NOT NULL THEN
                CASE WHEN r.catalog = target.catalog THEN 0
                     WHEN r.catalog IS NULL OR target.catalog IS NULL THEN 1
                     ELSE 2 END
            WHEN shifted.view_id IS NOT NULL THEN 3
            WHEN EXISTS (FROM shared_tables s WHERE s.name = list_append(r.namespace, r.name)
                         AND (r.catalog IS NULL OR s.catalog IS NULL OR s.catalog = r.catalog)) THEN 5
            WHEN len(r.namespace) > 1 AND NOT r.leads_with_catalog
                 AND list_append(r.namespace[2:], r.name) IN (SELECT name FROM tables)
                 AND list_append(r.namespace, r.name) NOT IN (SELECT name FROM tables) THEN 3
            WHEN r.catalog IS NULL THEN 1
            WHEN r.other_catalog THEN 2
            WHEN list_append(r.namespace, r.name) IN (SELECT name FROM tables WHERE catalog IS NULL)
                 AND list_append(r.namespace, r.name) NOT IN (SELECT name FROM tables WHERE catalog = r.catalog)
                 THEN 1
            ELSE 0 END AS read_match
FROM reference r
LEFT JOIN current target
    ON list_append(r.namespace, r.name) = target.name
   AND (r.catalog IS NULL OR target.catalog IS NULL OR r.catalog = target.catalog OR r.other_catalog)
LEFT JOIN current shifted
    ON target.view_id IS NULL AND len(r.namespace) > 0
   AND list_append(r.namespace[2:], r.name) = shifted.name
   AND (shifted.catalog IS NULL OR r.namespace[1] = shifted.catalog OR NOT r.leads_with_catalog);

-- deps_as_of(start, t): what view `start` reads, through views recursively; depth 1 is direct.
-- match: the least sure step of the path to the read, its own included. The walk reaches each view
-- once per depth, by its surest path (then the least in order): views that share ancestors are
-- walked in time linear in their reads, not path by path, whose number grows exponentially.
CREATE OR REPLACE MACRO deps_as_of(start, t) AS TABLE
WITH RECURSIVE reads AS MATERIALIZED (SELECT * FROM view_reads_as_of(t)),
readers(view_id, depth, path, via) AS (
    SELECT start, 1, [start], 0
    UNION ALL
    SELECT r.target_view_id, w.depth + 1,
           first(list_append(w.path, r.target_view_id)
                 ORDER BY greatest(w.via, r.read_match), list_append(w.path, r.target_view_id)),
           min(greatest(w.via, r.read_match))
    FROM readers w JOIN reads r ON r.view_id = w.view_id
    WHERE r.target_view_id IS NOT NULL AND NOT list_contains(w.path, r.target_view_id)
    GROUP BY r.target_view_id, w.depth
)
SELECT r.view_id, w.depth, w.path, r.catalog, r.namespace, r.table_name, r.suffix, r.pin, r.catalog_unknown,
       r.target_view_id,
       ['exact', 'namespace-and-name', 'other-catalog', 'leading-part', 'tied-file', 'shared-name'][
           greatest(w.via, coalesce(r.read_match, 0)) + 1] AS match
FROM readers w JOIN reads r USING (view_id);

-- uses_as_of(ref_catalog, ref_parts, t): views reading the table named by ref_parts (namespace
-- levels then name; ref_catalog NULL when the table's catalog is unknown), directly (depth 1) or
-- through views. path lists the views from the reader down to the one reading the table,
-- path_names the same views by their names at t (catalog.namespace.name; the view id of a view
-- with no name). It walks references by their plain names, which the spans carry: one filtered
-- scan, no join. A current view whose version is not stored reads nothing known (its read_paths
-- are NULL), so it is never walked through.
-- Every reference that could name the table counts, and `match` says how sure that is, the least
-- sure step of the path:
--   exact               the same namespace and name, in the same catalog;
--   namespace-and-name  the same namespace and name, and the reference's or the table's catalog
--                       is unknown (no default catalog, no --catalog-map entry);
--   other-catalog       the same namespace and name in a catalog no stored view or table is in:
--                       an engine's own name for the table's catalog, if no --catalog-alias says so;
--   leading-part        one leading part more, which the indexer read as a namespace level for
--                       want of a known catalog of that name (`lake.crm.t` read in spark_catalog);
--   tied-file           read by the current version of a file that ties with the view's file in
--                       force (`tied_files_of`), or by a version made current at the same instant
--                       as the view's, which no file settles (`activation-tie`): which of them
--                       holds the view is a guess;
--   shared-name         through a view whose name another current view or a table holds too, or
--                       of a table whose name tables in two directories or a current view held
--                       (directories whose names differ only in case; a table dropped without its
--                       files, and a view created at its name): which one an engine reads is a guess.
CREATE OR REPLACE MACRO uses_as_of(ref_catalog, ref_parts, t) AS TABLE
WITH RECURSIVE current AS MATERIALIZED (
    SELECT view_id, catalog, name_path, read_paths, tied_read_paths,
           CASE WHEN name_path IS NULL THEN view_id
                ELSE path_name(catalog, name_path) END AS view_name
    FROM view_heads_as_of(t)
),
reads AS MATERIALIZED (
    SELECT *, split_part(read_name, chr(31), -1) AS tail FROM (
        SELECT view_id, view_name, nullif(split_part(entry, chr(29), 1), '') AS catalog,
               split_part(entry, chr(29), 2) AS read_name, tied
        FROM (SELECT view_id, view_name, unnest(string_split(read_paths, chr(30))) AS entry, false AS tied
              FROM current
              UNION ALL
              SELECT view_id, view_name, unnest(string_split(tied_read_paths, chr(30))), true
              FROM current WHERE tied_read_paths IS NOT NULL)
    )
),
catalogs AS MATERIALIZED (
    SELECT catalog FROM view_names WHERE catalog IS NOT NULL
    UNION SELECT catalog FROM table_names WHERE catalog IS NOT NULL
),
named AS MATERIALIZED (
    SELECT v.view_id, v.catalog, v.name_path AS read_name, split_part(v.name_path, chr(31), -1) AS tail,
           count(*) OVER (PARTITION BY v.catalog, v.name_path) > 1 OR t.name IS NOT NULL AS shared
    FROM current v
    LEFT JOIN held_table_names(t) t ON t.name_path = v.name_path AND t.catalog IS NOT DISTINCT FROM v.catalog
    WHERE v.name_path IS NOT NULL
),
direct AS (
    SELECT view_id, view_name, catalog,
           CASE
               -- The name asked is that of two current views: which one a read names is a guess.
               WHEN (SELECT count(*) > 1 FROM named WHERE read_name = array_to_string(ref_parts, chr(31))
                     AND catalog IS NOT DISTINCT FROM ref_catalog) THEN 5
               WHEN table_name_shared(ref_catalog, ref_parts, t) THEN 5
               WHEN tied THEN 4
               WHEN read_name <> array_to_string(ref_parts, chr(31)) THEN 3
               WHEN catalog = ref_catalog THEN 0
               WHEN catalog IS NULL OR ref_catalog IS NULL THEN 1
               WHEN catalog NOT IN (SELECT catalog FROM catalogs) THEN 2
           END AS certainty
    FROM reads
    WHERE read_name = array_to_string(ref_parts, chr(31))
       OR (read_name LIKE '%' || chr(31) || array_to_string(ref_parts, chr(31))
           AND len(string_split(read_name, chr(31))) = len(ref_parts) + 1
           AND (ref_catalog IS NULL OR split_part(read_name, chr(31), 1) = ref_catalog
                OR split_part(read_name, chr(31), 1) NOT IN (SELECT catalog FROM catalogs)))
),
walk(view_id, depth, path, catalog_unknown, certainty, path_names) AS (
    SELECT view_id, 1, [view_id], bool_or(catalog IS NULL), min(certainty), [view_name] FROM direct
    WHERE certainty IS NOT NULL GROUP BY view_id, view_name
    UNION ALL
    -- A view read through a view: matched by the rules of `direct`, the view's own name standing
    -- for the table's (joined on the last part, so that the join stays a hash join). A reader once
    -- per depth and view reading the table directly, by its surest path there (then the least in
    -- order): not once per path, whose number grows exponentially with shared ancestors.
    SELECT view_id, depth, best.path, best.catalog_unknown, best.certainty, best.path_names FROM (
        SELECT view_id, depth, first(step ORDER BY step.certainty, step.path) AS best FROM (
            SELECT r.view_id, w.depth + 1 AS depth, w.path[-1] AS direct_reader,
                   {'path': list_prepend(r.view_id, w.path),
                    'catalog_unknown': w.catalog_unknown OR r.catalog IS NULL,
                    'certainty': greatest(w.certainty, CASE
                        WHEN n.shared THEN 5
                        WHEN r.tied THEN 4
                        WHEN r.read_name <> n.read_name THEN 3
                        WHEN r.catalog = n.catalog THEN 0
                        WHEN r.catalog IS NULL OR n.catalog IS NULL THEN 1
                        ELSE 2 END),
                    'path_names': list_prepend(r.view_name, w.path_names)} AS step
            FROM walk w JOIN named n ON n.view_id = w.path[1]
            JOIN reads r ON r.tail = n.tail
            WHERE NOT list_contains(w.path, r.view_id)
              AND ((r.read_name = n.read_name
                    AND (r.catalog IS NULL OR n.catalog IS NULL OR r.catalog = n.catalog
                         OR r.catalog NOT IN (SELECT catalog FROM catalogs)))
                   OR (r.read_name LIKE '%' || chr(31) || n.read_name
                       AND len(string_split(r.read_name, chr(31))) = len(string_split(n.read_name, chr(31))) + 1
                       AND (n.catalog IS NULL OR split_part(r.read_name, chr(31), 1) = n.catalog
                            OR split_part(r.read_name, chr(31), 1) NOT IN (SELECT catalog FROM catalogs))))
        ) GROUP BY view_id, depth, direct_reader
    )
)
SELECT view_id, path_names[1] AS view_name, depth, path, path_names, catalog_unknown,
       ['exact', 'namespace-and-name', 'other-catalog', 'leading-part', 'tied-file', 'shared-name'][
           certainty + 1] AS match
FROM walk;

-- lineage_unknown_as_of(t): the views current at t that could read anything, as far as the store
-- knows, with why: no representation of their version gave lineage (its SQL does not parse or
-- holds no single query, names a table by an expression (`IDENTIFIER('db.' || x)`), calls a table
-- function whose reads are not known (`TABLE(system.query(...))`), its dialect is
-- unknown, it is longer than max-sql-length, it is no SQL), or the version is not stored.
CREATE OR REPLACE MACRO lineage_unknown_as_of(t) AS TABLE
WITH heads AS MATERIALIZED (
    SELECT view_id, version_hash,
           CASE WHEN name_path IS NULL THEN view_id
                ELSE path_name(catalog, name_path) END AS view_name
    FROM view_heads_as_of(t)
),
representation_state AS (
    SELECT r.version_hash,
           CASE WHEN r.type <> 'sql' THEN 'a ' || r.type || ' representation'
                WHEN r.sql IS NULL THEN 'no SQL text'
                WHEN r.dialect IS NULL THEN 'unknown dialect ' || coalesce('''' || r.dialect_raw || '''', '(none)')
                WHEN r.lineage_key IS NULL THEN 'SQL longer than max-sql-length'
                ELSE (SELECT f.code || coalesce(' at ' || nullif(nullif(f.position, ''), '$'), '') || ': '
                             || f.message
                      FROM lineage_findings f
                      WHERE f.lineage_key = r.lineage_key
                        AND f.code IN ('sql-parse-error', 'sql-analysis-error', 'dynamic-identifier',
                                       'table-function')
                      ORDER BY f.ordinal LIMIT 1)
           END AS failure
    FROM representations r WHERE r.version_hash IN (SELECT version_hash FROM heads)
)
SELECT h.view_id, h.view_name,
       CASE WHEN h.version_hash IS NULL THEN 'its current version is not stored'
            WHEN count(s.version_hash) = 0 THEN 'no representation'
            ELSE string_agg(DISTINCT s.failure, '; ' ORDER BY s.failure) END AS reason
FROM heads h LEFT JOIN representation_state s USING (version_hash)
GROUP BY h.view_id, h.view_name, h.version_hash
HAVING h.version_hash IS NULL OR count(s.version_hash) = 0 OR bool_and(s.failure IS NOT NULL);

-- lineage_unknown_readers_as_of(t): the views current at t that read, directly or through views, a
-- view of unknown lineage (lineage_unknown_as_of), each with one such view (`through`, its name):
-- what that view reads is unknown, so they too could read anything.
CREATE OR REPLACE MACRO lineage_unknown_readers_as_of(t) AS TABLE
WITH RECURSIVE unknown AS MATERIALIZED (SELECT view_id, view_name FROM lineage_unknown_as_of(t)),
reads AS MATERIALIZED (
    SELECT DISTINCT view_id, target_view_id FROM view_reads_as_of(t) WHERE target_view_id IS NOT NULL
),
-- Each reader once per depth, with the least `through` (and its least path) of that depth.
walk(view_id, depth, through, path) AS (
    SELECT r.view_id, 1, min(u.view_name), first([u.view_id, r.view_id] ORDER BY u.view_name, u.view_id)
    FROM reads r JOIN unknown u ON r.target_view_id = u.view_id GROUP BY r.view_id
    UNION ALL
    SELECT r.view_id, w.depth + 1, min(w.through), first(list_append(w.path, r.view_id) ORDER BY w.through, w.path)
    FROM walk w JOIN reads r ON r.target_view_id = w.view_id
    WHERE NOT list_contains(w.path, r.view_id)
    GROUP BY r.view_id, w.depth
)
SELECT h.view_id,
       CASE WHEN h.name_path IS NULL THEN h.view_id ELSE path_name(h.catalog, h.name_path) END AS view_name,
       min(w.through) AS through
FROM walk w JOIN view_heads_as_of(t) h USING (view_id)
WHERE w.view_id NOT IN (SELECT view_id FROM unknown)
GROUP BY ALL;
