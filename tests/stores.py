"""Comparing stores: every non-bookkeeping column of every table, as sorted multisets."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

import duckdb

from viewlineage.sinks import spans
from viewlineage.sinks.tables import SCHEMAS

BOOKKEEPING = {"ingested_at", "quarantined_at", "computed_at"}
OBJECT_TIMES = {
    *("files.modified_ms", "files.modified_source", "view_files.commit_ms", "view_files.commit_source"),
    *("table_files.commit_ms", "table_files.commit_source"),
    *("view_spans", "view_changes", "view_replacements"),
}
"""Columns (and tables: which file held when, the changes and when, which view took another's
place when) that come from when an object was written or removed: they differ between an object
store's copy of a warehouse and the local files it was uploaded from."""

Snapshot = dict[str, list[tuple[object, ...]]]


def _deep(rewrite: Callable[[str], str], value: object) -> object:
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, list):
        return [_deep(rewrite, item) for item in value]
    if isinstance(value, dict):
        return {key: _deep(rewrite, item) for key, item in value.items()}
    return value


def snapshot(
    db: Path, exclude: Collection[str] = (), rewrite: Callable[[str], str] = lambda text: text
) -> Snapshot:
    """Every store table's rows without bookkeeping columns (nor the `table.column`s and tables in
    `exclude`),
    every string passed through `rewrite`, so stores that read the same files from two places compare."""
    with duckdb.connect(str(db), read_only=True) as conn:
        tables = {}
        columns_of = {name: schema.names for name, schema in SCHEMAS.items()}
        for name in spans.TABLES:  # the store's own point-in-time indexes
            columns_of[name] = [row[0] for row in conn.execute(f"DESCRIBE {name}").fetchall()]
        for name, names in columns_of.items():
            if name in exclude:
                continue
            kept = [c for c in names if c not in BOOKKEEPING and f"{name}.{c}" not in exclude]
            columns = ", ".join(f'"{column}"' for column in kept)
            rows = conn.execute(f"SELECT {columns} FROM {name}").fetchall()
            tables[name] = sorted((tuple(_deep(rewrite, v) for v in row) for row in rows), key=repr)
        return tables
