"""Point-in-time indexes (migrations 0006, 0009, 0010, 0012, 0017, 0018, 0020, 0021 and 0023), derived
from the stored rows.

`view_spans` turns "which file and which version held at T, was that file removed by then, and
what did that version read" into one interval filter. The spans and preferred copies of the views
a batch brings rows or removals for (their files, log entries, versions and removals may arrive in
any order) are re-derived from the rows already stored, with their audit rows
(viewlineage.sinks.audit): the result never depends on the order batches came in. What a version
reads never changes once derived, so the spans a derivation replaces hand theirs on, and only
versions new to the spans are looked up.

A writer whose store something reads while it runs re-derives them in every batch's transaction
(`refresh`). One that nothing reads meanwhile records the views as stale in the batch's
transaction (`defer`, migration 0014) and derives them before anything can read them
(`derive_stale`): a view a run touches in many batches is derived once, not per batch."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from viewlineage.sinks import audit
from viewlineage.sinks.schema import LATEST_MS, OPEN_MS

TABLES = ("view_spans", "preferred_copies", *audit.TABLES)
VIEW_ROWS = ("view_files", "activations", "versions")
"""Store tables whose new rows change their views' spans and preferred copies."""
FILLED_BY = (
    "0006_spans",
    "0009_view_spans",
    "0010_drops_in_spans",
    "0012_reads_in_spans",
    "0017_spans_by_directory",
)
"""Migrations after which the store derives these tables from the rows already there."""
STALE_CHUNK = 256
"""Stale views derived per transaction: each chunk's spans are looked up by key (below
`INDEXED_LOOKUP_KEYS` views), and a transaction's memory does not grow with the store."""


def _read_paths(reads: str) -> str:
    """The spans' text form of a list of references (`read_paths`, migration 0009)."""
    return f"""nullif(array_to_string([
           coalesce(read.catalog, '') || chr(29)
               || array_to_string(list_append(read.namespace, read.name), chr(31))
           FOR read IN {reads}], chr(30)), '')"""


_VIEW_SPANS = f"""
INSERT INTO view_spans
WITH tied_views AS (
    SELECT DISTINCT view_id FROM activations WHERE view_id IN (SELECT view_id FROM _touched)
    GROUP BY view_id, timestamp_ms HAVING count(*) > 1
),
logged AS (
    -- Of versions made current at one instant, the one the file that logged them names current
    -- (its current-version-id) wins, else the greater id.
    SELECT a.view_id, a.version_id, least(a.timestamp_ms, {LATEST_MS}) AS timestamp_ms,
           a.timestamp_ms AS activated_ms, f.view_id IS NOT NULL AS settled
    FROM activations a
    LEFT JOIN (SELECT view_id, last_log_ms, current_version_id FROM view_files
               WHERE view_id IN (SELECT view_id FROM tied_views) GROUP BY ALL) f
      ON f.view_id = a.view_id AND f.last_log_ms = a.timestamp_ms
     AND f.current_version_id = a.version_id
    WHERE a.view_id IN (SELECT view_id FROM _touched)
),
tie_partners AS (
    -- Versions made current at one instant that no file settles: that the greater id holds is a
    -- guess, so what the others read is kept with it, as a tied file's is (rare).
    SELECT DISTINCT a.view_id, a.version_id, b.version_id AS partner
    FROM logged a JOIN logged b
      ON b.view_id = a.view_id AND b.timestamp_ms = a.timestamp_ms AND b.version_id <> a.version_id
    WHERE a.view_id IN (SELECT view_id FROM tied_views)
    QUALIFY NOT bool_or(a.settled OR b.settled) OVER (PARTITION BY a.view_id, a.timestamp_ms)
),
held_versions AS (
    SELECT view_id, version_id, timestamp_ms AS from_ms, activated_ms,
           coalesce(next_ms, {OPEN_MS}) AS until_ms
    FROM (
        SELECT *, lead(timestamp_ms) OVER (
                   PARTITION BY view_id ORDER BY timestamp_ms, settled, version_id) AS next_ms
        FROM logged
    ) WHERE next_ms IS NULL OR timestamp_ms < next_ms
    UNION ALL
    SELECT view_id, NULL, -{OPEN_MS}, NULL, least(min(timestamp_ms), {LATEST_MS}) FROM activations
    WHERE view_id IN (SELECT view_id FROM _touched) GROUP BY view_id
),
drops AS (
    -- A removal dated before the version-log entry its file wrote last (a skewed or forged event
    -- time) counts from that entry: no view is dropped before its file made its version current
    -- (the finding removal-before-commit). The writer's time, not the object's: a copied object's
    -- time is when it was copied.
    SELECT r.location, greatest(min(r.removed_ms), any_value(f.last_log_ms)) AS dropped_ms
    FROM removals r JOIN view_files f USING (location)
    WHERE f.view_id IN (SELECT view_id FROM _touched)
    GROUP BY r.location
),
misplaced AS (
    SELECT DISTINCT location FROM file_findings WHERE code = 'location-mismatch'
    AND location IN (SELECT location FROM view_files WHERE view_id IN (SELECT view_id FROM _touched))
),
placed_files AS (
    -- A copy of a view's file elsewhere (its document's location names another directory: the
    -- finding location-mismatch) never holds the view while a file in place that was not removed
    -- does: once none is left (its directory moved), the copies hold it, as they would for an
    -- index of the tree as it is now. Of two files of one commit, a removed one holds first.
    SELECT f.*, d.location IS NOT NULL AS removed
    FROM view_files f
    LEFT JOIN misplaced m ON m.location = f.location
    LEFT JOIN drops d ON d.location = f.location
    WHERE f.view_id IN (SELECT view_id FROM _touched)
    QUALIFY m.location IS NULL
         OR NOT bool_or(m.location IS NULL AND d.location IS NULL) OVER (PARTITION BY f.view_id)
),
ranked_files AS (
    -- One pass over the touched views' file rows: the spans keep few of their columns, and at 10^6
    -- files fetching a row's columns from cold blocks is what a batch's spans cost.
    SELECT view_id, location, view_uuid, catalog, name, commit_ms, commit_source, sequence_number,
           lead(commit_ms) OVER ranked AS next_ms,
           lead(location) OVER ranked IS NULL AS newest,
           min(commit_ms) OVER (PARTITION BY view_id) AS first_ms
    FROM placed_files
    WINDOW ranked AS (
        PARTITION BY view_id
        ORDER BY commit_ms NULLS LAST, coalesce(sequence_number, -1), NOT removed, location)
),
held_files AS (
    SELECT view_id, location, view_uuid, catalog, name, commit_ms, sequence_number,
           CASE WHEN commit_ms IS NOT NULL THEN commit_source END AS commit_source,
           CASE WHEN first_ms IS NULL OR commit_ms = first_ms THEN -{OPEN_MS} ELSE commit_ms END AS from_ms,
           CASE WHEN first_ms IS NULL THEN {OPEN_MS} ELSE coalesce(next_ms, {OPEN_MS}) END AS until_ms
    FROM ranked_files
    WHERE CASE WHEN first_ms IS NULL THEN newest  -- no file has a commit time: the newest holds
               ELSE commit_ms IS NOT NULL AND (next_ms IS NULL OR commit_ms < next_ms) END
),
copies AS (
    SELECT view_id, version_id, version_hash
    FROM versions ANTI JOIN preferred_copies USING (view_id, version_id)
    WHERE view_id IN (SELECT view_id FROM _touched)
    UNION ALL
    SELECT view_id, version_id, version_hash FROM preferred_copies
    WHERE view_id IN (SELECT view_id FROM _touched)
),
own_copies AS (
    -- Under a version conflict the file in force holds its own copy of the version: a uuid whose
    -- files in two directories each name their own shows each directory's SQL under its name.
    -- Only versions with a conflict (preferred_copies: rare) are looked up.
    SELECT fv.location, fv.version_id, arg_max(fv.version_hash, fv.ordinal) AS version_hash
    FROM (SELECT * FROM preferred_copies WHERE view_id IN (SELECT view_id FROM _touched)) p
    JOIN held_files f ON f.view_id = p.view_id
    JOIN file_versions fv ON fv.location = f.location AND fv.version_id = p.version_id
    GROUP BY fv.location, fv.version_id
),
tied_copies AS (
    -- A file that ties with the one in force (one commit time and sequence number: a competing
    -- commit, or the view's uuid in two directories): which of them holds the view is a guess, so
    -- the copy of the version the other made current is kept too, with what it reads (rare).
    SELECT h.location AS held_location, arg_max(fv.version_hash, fv.ordinal) AS version_hash
    FROM held_files h
    JOIN placed_files t ON t.view_id = h.view_id AND t.location <> h.location
     AND t.commit_ms IS NOT DISTINCT FROM h.commit_ms
     AND t.sequence_number IS NOT DISTINCT FROM h.sequence_number
    JOIN file_versions fv ON fv.location = t.location AND fv.version_id = t.current_version_id
    GROUP BY h.location, t.location
),
partner_copies AS (
    SELECT DISTINCT p.view_id, p.version_id, c.version_hash
    FROM tie_partners p JOIN copies c ON c.view_id = p.view_id AND c.version_id = p.partner
),
held_copies AS (
    SELECT DISTINCT c.version_hash FROM copies c JOIN held_versions v USING (view_id, version_id)
    UNION SELECT version_hash FROM own_copies
    UNION SELECT version_hash FROM tied_copies
    UNION SELECT version_hash FROM partner_copies
),
kept_reads AS (
    SELECT version_hash, any_value(reads) AS reads FROM _replaced_spans
    WHERE version_hash IN (SELECT version_hash FROM held_copies) GROUP BY version_hash
),
new_reads AS (
    SELECT version_hash FROM held_copies WHERE version_hash NOT IN (SELECT version_hash FROM kept_reads)
),
used AS (
    SELECT version_hash, lineage_key FROM representations
    WHERE version_hash IN (SELECT version_hash FROM new_reads)
),
copy_reads AS (
    SELECT * FROM kept_reads
    UNION ALL
    SELECT n.version_hash, coalesce(list_sort(list_distinct(flatten(list(l.reads)))), [])
    FROM new_reads n
    LEFT JOIN used u USING (version_hash)
    LEFT JOIN (SELECT lineage_key, reads FROM lineage WHERE lineage_key IN (SELECT lineage_key FROM used)) l
        USING (lineage_key)
    GROUP BY n.version_hash
),
tied_reads AS (
    SELECT t.held_location, list_distinct(flatten(list(r.reads))) AS reads
    FROM tied_copies t JOIN copy_reads r USING (version_hash) GROUP BY t.held_location
),
partner_reads AS (
    SELECT p.view_id, p.version_id, list_distinct(flatten(list(r.reads))) AS reads
    FROM partner_copies p JOIN copy_reads r USING (version_hash) GROUP BY p.view_id, p.version_id
)
SELECT f.view_id, greatest(f.from_ms, coalesce(v.from_ms, -{OPEN_MS})),
       least(f.until_ms, coalesce(v.until_ms, {OPEN_MS})), f.location, f.view_uuid, f.catalog,
       array_to_string(f.name, chr(31)), f.commit_ms, f.commit_source, v.version_id,
       CASE WHEN v.version_id IS NOT NULL THEN v.activated_ms END, coalesce(o.version_hash, c.version_hash),
       {_read_paths("r.reads")}, d.dropped_ms, r.reads,
       hash(regexp_replace(f.location, '(/metadata)?/[^/]*$', '')),
       {_read_paths("list_distinct(flatten([coalesce(t.reads, []), coalesce(p.reads, [])]))")}
FROM held_files f
LEFT JOIN held_versions v ON v.view_id = f.view_id AND v.from_ms < f.until_ms AND f.from_ms < v.until_ms
LEFT JOIN copies c ON c.view_id = f.view_id AND c.version_id = v.version_id
LEFT JOIN own_copies o ON o.location = f.location AND o.version_id = v.version_id
LEFT JOIN copy_reads r ON r.version_hash = coalesce(o.version_hash, c.version_hash)
LEFT JOIN drops d ON d.location = f.location
LEFT JOIN tied_reads t ON t.held_location = f.location
LEFT JOIN partner_reads p ON p.view_id = f.view_id AND p.version_id = v.version_id"""
"""A file holds from its commit to the next file's (ties: greater sequence number, then location);
the first also before its commit. A view none of whose files has a commit time (no object time, no
log) is held by its file with the greatest sequence number, then location, at every time. A version
holds from its activation to the next one (of two at one instant, the one the file logging them
names current, else the greater id, with what the other reads as its tied reads), and no
version before the first. Each interval is where one file's and one version's spans overlap. A
version reads the distinct references of its representations' lineage: the replaced spans give
those of the versions they held, the others are found by key, through the indexes (scans of
these tables grow with the store)."""

_CONFLICTING = """
SELECT v.version_hash FROM versions v JOIN (
    SELECT view_id, version_id FROM versions WHERE view_id IN (SELECT view_id FROM _touched)
    GROUP BY ALL HAVING count(*) > 1
) USING (view_id, version_id)"""

_PREFERRED_COPIES = """
INSERT INTO preferred_copies
SELECT v.view_id, v.version_id,
       arg_max(v.version_hash, (coalesce(f.sequence_number, -1), f.location, fv.ordinal))
FROM versions v JOIN file_versions fv USING (version_hash) JOIN view_files f USING (location)
WHERE v.version_hash IN (SELECT version_hash FROM _conflicting)
GROUP BY v.view_id, v.version_id"""
"""The copy listed by the file with the highest sequence number, then the greatest location; of two
copies in one file, the one listed last (as `own_copies` picks)."""


def refresh(conn: duckdb.DuckDBPyConnection, views: pa.Array, removed: pa.Array) -> None:
    """Re-derive the spans of `views` (view ids) and of the views whose files `removed` names
    (locations), in the caller's transaction."""
    if len(touched := _touched(conn, views, removed)):
        _derive(conn, touched)


def defer(conn: duckdb.DuckDBPyConnection, views: pa.Array, removed: pa.Array) -> None:
    """Record as stale what `refresh` would re-derive, in the caller's transaction."""
    if not len(touched := _touched(conn, views, removed)):
        return
    conn.register("_touched", pa.table({"view_id": touched}))
    conn.execute(
        "INSERT INTO _stale_spans SELECT view_id FROM _touched "
        "WHERE view_id NOT IN (SELECT view_id FROM _stale_spans)"
    )
    conn.unregister("_touched")


def stale(conn: duckdb.DuckDBPyConnection) -> pa.Array:
    """Up to `STALE_CHUNK` stale views."""
    found = conn.sql(f"SELECT view_id FROM _stale_spans LIMIT {STALE_CHUNK}").to_arrow_table()
    return found.column(0).combine_chunks().cast(pa.string())


def derive_stale(conn: duckdb.DuckDBPyConnection, views: pa.Array) -> None:
    """Derive the spans of these stale views, no longer stale then, in the caller's transaction."""
    _derive(conn, views)
    derived = [views.to_pylist()]
    conn.execute("DELETE FROM _stale_spans WHERE view_id IN (SELECT unnest(?::VARCHAR[]))", derived)


def _touched(conn: duckdb.DuckDBPyConnection, views: pa.Array, removed: pa.Array) -> pa.Array:
    # Distinct: a batch names a view in every row it brings (~4,500 rows for 5 views in 500 files),
    # and past `INDEXED_LOOKUP_KEYS` build rows DuckDB scans each table instead of looking it up.
    return pc.unique(pa.concat_arrays([views, _views_of(conn, removed)]) if len(removed) else views)


def _derive(conn: duckdb.DuckDBPyConnection, touched: pa.Array) -> None:
    conn.register("_touched", pa.table({"view_id": touched}))
    conflicting = conn.sql(_CONFLICTING).to_arrow_table()
    # Rare: ranking copies reads the file rows that list them. A view has preferred copies only
    # while it has conflicting ones (versions are never deleted), so none is left to replace.
    if conflicting.num_rows:
        conn.execute("DELETE FROM preferred_copies WHERE view_id IN (SELECT view_id FROM _touched)")
        conn.register("_conflicting", conflicting)
        conn.execute(_PREFERRED_COPIES)
        conn.unregister("_conflicting")
    replaced = conn.sql(
        "DELETE FROM view_spans WHERE view_id IN (SELECT view_id FROM _touched) RETURNING version_hash, reads"
    ).to_arrow_table()
    conn.register("_replaced_spans", replaced)
    conn.execute(_VIEW_SPANS)
    audit.derive(conn)
    # Left registered when a statement fails: the transaction is aborted (no unregistering then),
    # and the next refresh replaces them.
    for name in ("_touched", "_replaced_spans"):
        conn.unregister(name)


def _views_of(conn: duckdb.DuckDBPyConnection, locations: pa.Array) -> pa.Array:
    conn.register("_removed", pa.table({"location": locations}))
    found = conn.sql(
        "SELECT DISTINCT view_id FROM view_files WHERE location IN (SELECT location FROM _removed)"
    ).to_arrow_table()
    conn.unregister("_removed")
    return found.column(0).combine_chunks().cast(pa.string())


def rebuild(conn: duckdb.DuckDBPyConnection) -> None:
    """Every view's spans, from the stored rows: none is kept (a migration may have just added a
    column to them)."""
    for table in (*TABLES, "_stale_spans"):
        conn.execute(f"DELETE FROM {table}")
    views = conn.sql("SELECT DISTINCT view_id FROM view_files").to_arrow_table().column(0)
    if not len(views):  # a new store: nothing to derive (and deriving nothing costs ~0.3 s)
        return
    refresh(conn, views.combine_chunks(), pa.array([], pa.string()))
