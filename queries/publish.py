"""A read-only snapshot of the store for the BI tools users already run (Grafana, Superset,
Metabase, Evidence): one Parquet file per table at a fixed path, which every one of them reads.

A DuckDB file cannot be swapped under its readers: DuckDB opens the path more than once while it
connects, and a reader between two opens would mix two files. A Parquet file is opened once per
query, so each table is written beside its fixed name and renamed over it (`os.replace`, atomic on
one filesystem): a query reads the whole of one snapshot, and one that started before the rename
keeps reading the file it opened. The tables of one snapshot are consistent among themselves; two
files read by one query may come from two snapshots published a moment apart.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq

from viewlineage.indexer.errors import StoreError
from viewlineage.queries.names import FOREVER_MS

TABLES = {
    "changes": "SELECT * FROM change_events ORDER BY changed_ms, view_id",
    "views": """
        SELECT v.view_id, dotted_name(v.catalog, v.name) AS view, v.catalog,
               array_to_string(v.name[:-2], '.') AS namespace, v.version_id, v.activated_ms,
               epoch_ms_time(v.activated_ms) AS activated_at, v.file_location, v.properties,
               u.reason AS lineage_unknown
        FROM views_as_of($latest) v LEFT JOIN lineage_unknown_as_of($latest) u USING (view_id)
        ORDER BY view""",
    "reads": """
        SELECT r.view_id, dotted_name(v.catalog, v.name) AS view,
               dotted_name(r.catalog, list_append(r.namespace, r.table_name)) AS reads,
               r.target_view_id IS NOT NULL AS reads_view, r.suffix, r.pin,
               ['exact', 'namespace-and-name', 'other-catalog', 'leading-part', 'tied-file', 'shared-name'][
                   coalesce(r.read_match, 0) + 1] AS match
        FROM view_reads_as_of($latest) r JOIN view_heads_as_of($latest) v USING (view_id)
        ORDER BY view, reads""",
    "findings": """
        SELECT scope, code, severity, view_id, version_id, location, position, message FROM findings
        ORDER BY code, view_id, version_id, location, position""",
    "quarantine": """
        SELECT location, reason, message, stored_bytes, modified_ms FROM quarantine ORDER BY location""",
}
"""What a snapshot holds: the table's name (its file is `<name>.parquet`) and the query that fills
it, as of the latest state the store holds."""
ROW_GROUP = 100_000


def publish(conn: duckdb.DuckDBPyConnection, directory: Path) -> dict[str, int]:
    """Write every table of `TABLES` to `directory/<name>.parquet`, each whole before it replaces
    the one readers see; returns the rows of each."""
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, query in TABLES.items():
        target = directory / f"{name}.parquet"
        partial = directory / f".{name}.parquet.partial"
        parameters = {"latest": FOREVER_MS} if "$latest" in query else {}
        reader = conn.cursor().sql(query, params=parameters).to_arrow_reader(ROW_GROUP)
        rows = 0
        try:
            with pq.ParquetWriter(partial, reader.schema, compression="zstd") as writer:
                for batch in reader:
                    writer.write_batch(batch)
                    rows += batch.num_rows
            os.replace(partial, target)
        except BaseException:  # a full disk: the part written is of no use to anyone
            partial.unlink(missing_ok=True)
            raise
        written[name] = rows
    return written


def publish_every(
    connect: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
    directory: Path,
    every: float | None,
    stop: threading.Event,
    log: Callable[..., None],
) -> None:
    """Publish now, then every `every` seconds until `stop` is set (None: once). Each round is
    logged (`published`, with its rows and seconds); one that fails (no store or replica yet, a
    full disk) is logged as `publish-failed` and the next round tries again."""
    while True:
        started = time.monotonic()
        try:
            with connect() as conn:
                written: dict[str, Any] = publish(conn, directory)
        except (StoreError, duckdb.Error, OSError) as exc:
            if every is None:
                raise
            log("publish-failed", directory=str(directory), error=str(exc))
        else:
            log(
                "published", directory=str(directory), seconds=round(time.monotonic() - started, 3), **written
            )
        if every is None or stop.wait(every):
            return
