"""Point-in-time indexes (migration 0006), refreshed in the transaction of every batch.

`version_spans` and `file_spans` turn "which version, which file held at T" into an interval
filter; `version_reads` holds each version's references in one row. A batch re-derives the spans
and preferred copies of the views it brings rows for (their files, log entries and versions may
arrive in any order) and the reads of the versions it brings, from the rows already stored: the
result never depends on the order batches came in.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

OPEN_MS = 2**63 - 1
"""The open end of a span: later than any time a query asks about (BIGINT's largest)."""
TABLES = ("version_spans", "file_spans", "version_reads", "preferred_copies")
VIEW_ROWS = ("view_files", "activations", "versions")
"""Store tables whose new rows change their views' spans and preferred copies."""

_VERSION_SPANS = f"""
INSERT INTO version_spans
SELECT view_id, version_id, from_ms, until_ms FROM (
    SELECT view_id, version_id, timestamp_ms AS from_ms,
           coalesce(lead(timestamp_ms) OVER (PARTITION BY view_id ORDER BY timestamp_ms, version_id),
                    {OPEN_MS}) AS until_ms
    FROM activations WHERE view_id IN (SELECT view_id FROM _touched)
) WHERE from_ms < until_ms"""
"""A version holds from its activation to the next one; of two at one instant the greater id wins."""

_FILE_SPANS = f"""
INSERT INTO file_spans
SELECT view_id, location, view_uuid, catalog, name, commit_ms, commit_source,
       CASE WHEN from_ms = min(from_ms) OVER (PARTITION BY view_id) THEN -{OPEN_MS} ELSE from_ms END,
       until_ms
FROM (
    SELECT *, commit_ms AS from_ms, coalesce(lead(commit_ms) OVER (
        PARTITION BY view_id ORDER BY commit_ms, coalesce(sequence_number, -1), location),
        {OPEN_MS}) AS until_ms
    FROM view_files WHERE commit_ms IS NOT NULL AND view_id IN (SELECT view_id FROM _touched)
) WHERE from_ms < until_ms
UNION ALL
SELECT view_id, f.location, f.view_uuid, f.catalog, f.name, NULL, NULL, -{OPEN_MS}, {OPEN_MS} FROM (
    SELECT view_id, arg_max(view_files, (coalesce(sequence_number, -1), location)) AS f
    FROM view_files WHERE view_id IN (SELECT view_id FROM _touched)
    GROUP BY view_id HAVING count(commit_ms) = 0
)"""
"""A file holds from its commit to the next file's (ties: greater sequence number, then location);
the first also before its commit. A view none of whose files has a commit time (no object time, no
log) is held by its file with the greatest sequence number, then location, at every time."""

_VERSION_READS = """
INSERT INTO version_reads
SELECT version_hash, view_id, version_id, reads,
       [array_to_string(list_append(r.namespace, r.name), chr(31)) FOR r IN reads],
       [r.catalog FOR r IN reads]
FROM (
    SELECT v.version_hash, v.view_id, v.version_id, coalesce(list_sort(list(DISTINCT {
               'catalog': tr.catalog, 'namespace': tr.namespace, 'name': tr.name, 'suffix': tr.suffix,
               'pin': tr.pin, 'catalog_unknown': tr.catalog_source = 'unknown'})
               FILTER (WHERE tr.name IS NOT NULL)), []) AS reads
    FROM versions v
    LEFT JOIN representations r USING (version_hash) LEFT JOIN table_references tr USING (lineage_key)
    WHERE v.version_hash IN (SELECT version_hash FROM _new_versions)
      AND v.version_hash NOT IN (SELECT version_hash FROM version_reads)
    GROUP BY v.version_hash, v.view_id, v.version_id
)"""
"""`read_names` and `read_catalogs` repeat `reads` as plain strings (migration 0008) for `uses`."""


_CONFLICTING = """
SELECT v.version_hash FROM versions v JOIN (
    SELECT view_id, version_id FROM versions WHERE view_id IN (SELECT view_id FROM _touched)
    GROUP BY ALL HAVING count(*) > 1
) USING (view_id, version_id)"""

_PREFERRED_COPIES = """
INSERT INTO preferred_copies
SELECT v.view_id, v.version_id, arg_max(v.version_hash, (coalesce(f.sequence_number, -1), f.location))
FROM versions v JOIN file_versions fv USING (version_hash) JOIN view_files f USING (location)
WHERE v.version_hash IN (SELECT version_hash FROM _conflicting)
GROUP BY v.view_id, v.version_id"""
"""The copy listed by the file with the highest sequence number, then the greatest location."""


def refresh(conn: duckdb.DuckDBPyConnection, views: pa.Array, versions: pa.Array) -> None:
    """Re-derive the spans of `views` (view ids) and the reads of `versions` (version hashes), in
    the caller's transaction."""
    conn.register("_touched", pa.table({"view_id": views}))
    conn.register("_new_versions", pa.table({"version_hash": versions}))
    conn.execute("DELETE FROM version_spans WHERE view_id IN (SELECT view_id FROM _touched)")
    conn.execute("DELETE FROM file_spans WHERE view_id IN (SELECT view_id FROM _touched)")
    conn.execute(_VERSION_SPANS)
    conn.execute(_FILE_SPANS)
    conn.execute(_VERSION_READS)
    conn.execute("DELETE FROM preferred_copies WHERE view_id IN (SELECT view_id FROM _touched)")
    conflicting = conn.sql(_CONFLICTING).to_arrow_table()
    if conflicting.num_rows:  # rare: ranking copies reads the file rows that list them
        conn.register("_conflicting", conflicting)
        conn.execute(_PREFERRED_COPIES)
        conn.unregister("_conflicting")
    # Left registered when a statement fails: the transaction is aborted (no unregistering then),
    # and the next refresh replaces them.
    conn.unregister("_touched")
    conn.unregister("_new_versions")


def rebuild(conn: duckdb.DuckDBPyConnection) -> None:
    """Every view's spans and every version's reads, from the stored rows."""
    views = conn.sql("SELECT DISTINCT view_id FROM view_files").to_arrow_table().column(0)
    versions = conn.sql("SELECT version_hash FROM versions").to_arrow_table().column(0)
    refresh(conn, views.combine_chunks(), versions.combine_chunks())
