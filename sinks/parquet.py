"""The Parquet sink: a store as a dataset, one directory per store table.

    <out>/<table>/*.parquet        (tables and columns as in the README's store schema)

Rows are distinct by each table's key, so Spark, Trino or DuckDB can read a table directory as
is (`read_parquet('<out>/versions/*.parquet')`). `load_into` merges a dataset into a DuckDB store
through the same idempotent `Store.write_tables` as every other path, so a backfill can be loaded
into a store that `consume` keeps filling, and loading twice changes nothing.

Bulk engines without a distributed writer (`--engine local`) write parts under `<out>/_parts/`
first; `finish` deduplicates each table into its directory with DuckDB.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from viewlineage.indexer.errors import UsageError
from viewlineage.sinks.store import Store
from viewlineage.sinks.tables import CHILDREN, PRIMARY_KEYS, SCHEMAS

LOAD_BATCH_ROWS = 50_000


class ParquetParts:
    """Parts of a dataset, written as they come; `finish` turns them into the dataset."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.parts = self.root / "_parts"
        _check_dataset_directory(self.root)
        self.parts.mkdir(parents=True, exist_ok=True)

    def write(self, tables: Mapping[str, pa.Table], part: str) -> None:
        for name, table in tables.items():
            if name in SCHEMAS and table.num_rows:
                directory = self.parts / name
                directory.mkdir(exist_ok=True)
                pq.write_table(table, directory / f"{part}.parquet")

    def finish(self) -> None:
        """One directory per table, rows distinct by key; the parts are removed."""
        with duckdb.connect() as conn:
            for name in SCHEMAS:
                target = self.root / name
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir()
                source = self.parts / name
                if not source.exists():
                    pq.write_table(SCHEMAS[name].empty_table(), target / "part-0.parquet")
                    continue
                keys = ", ".join(f'"{column}"' for column in PRIMARY_KEYS[name])
                conn.execute(
                    f"COPY (SELECT * FROM read_parquet('{source}/*.parquet') "
                    f"QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY {keys}) = 1 ORDER BY {keys}) "
                    f"TO '{target}/part-0.parquet' (FORMAT parquet)"
                )
        shutil.rmtree(self.parts)


def _check_dataset_directory(root: Path) -> None:
    """A `UsageError` unless `root` is missing, empty or a dataset: `finish` replaces its table
    directories, which must hold nothing else (the eleventh adversarial trial lost a file so)."""
    if not root.is_dir():
        return

    def stray(entry: Path) -> bool:
        if entry.name not in SCHEMAS:
            return entry.name != "_parts"
        return not entry.is_dir() or any(not part.name.endswith(".parquet") for part in entry.iterdir())

    strays = [entry for entry in root.iterdir() if stray(entry)]
    if strays:
        raise UsageError(
            f"{root} holds what is not a dataset ({', '.join(sorted(str(s.name) for s in strays)[:5])}), "
            "which writing one there would replace: name an empty directory or an earlier dataset"
        )


def load_into(store: Store, root: str | Path) -> dict[str, int]:
    """Merge a dataset into the store, table by table in batches; returns rows read per table."""
    read: dict[str, int] = {}
    # Child tables first (before their parents make them look stored), `files` last: it is what
    # marks a location indexed, so a load that stops half-way leaves locations that the next
    # index, reconcile or load still reads and completes.
    for name in sorted(SCHEMAS, key=lambda table: (table not in CHILDREN, table == "files")):
        schema = SCHEMAS[name]
        directory = Path(root) / name
        if not directory.exists():
            continue
        dataset = ds.dataset(str(directory), format="parquet")
        read[name] = 0
        for batch in dataset.to_batches(batch_size=LOAD_BATCH_ROWS):
            table = pa.Table.from_batches([batch]).select(schema.names).cast(schema)
            store.write_tables({name: table}, resumable_children=True)
            read[name] += table.num_rows
    return read
