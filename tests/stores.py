"""Comparing stores: every non-bookkeeping column of every table, as sorted multisets."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

import duckdb

from viewlineage.indexer.batches import SCHEMAS

BOOKKEEPING = {"ingested_at", "quarantined_at", "computed_at"}

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
    """Every store table's rows without bookkeeping columns (nor the `table.column`s in `exclude`),
    every string passed through `rewrite`, so stores that read the same files from two places compare."""
    with duckdb.connect(str(db), read_only=True) as conn:
        tables = {}
        for name, schema in SCHEMAS.items():
            kept = [f.name for f in schema if f.name not in BOOKKEEPING and f"{name}.{f.name}" not in exclude]
            columns = ", ".join(f'"{column}"' for column in kept)
            rows = conn.execute(f"SELECT {columns} FROM {name}").fetchall()
            tables[name] = sorted((tuple(_deep(rewrite, v) for v in row) for row in rows), key=repr)
        return tables
