"""The spool: durable batches between the processes that build them and the one that stores them.

A DuckDB file has one writer. Several `consume` processes (one Kafka group sharing partitions)
therefore never write the store directly: each puts its batches into `<store>.spool/` as
segments (one Arrow IPC file per store table, and `_back` for files put back after their removal
(`BACK`), written to a hidden temporary directory, fsynced, then
renamed into place, so a segment is whole or absent). Whichever process holds the store's write
lock merges the segments waiting, several in one store transaction, then deletes them. A segment
that was merged but not deleted (a crash in between) is merged again, which changes nothing:
ingest is idempotent.

For offsets this means: a batch counts as committed once its segment is in the spool; the writer
also merges before committing its own offsets, so a single consumer commits only what the store holds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc

from viewlineage.indexer.errors import StoreAbandoned, StoreError
from viewlineage.sinks.store import SetAside, Store
from viewlineage.sinks.tables import BACK, CHILDREN, SCHEMAS, successive

MERGED_TOGETHER = 8
"""Segments stored in one transaction at most (each holds one batch: up to `batch-files` files)."""
STALE_TEMPORARY_SECONDS = 600.0
"""A temporary segment this old belongs to a process that died while writing it."""


@dataclass
class Merged:
    """What a merge stored: how many segments, and the files in them the store set aside."""

    segments: int = 0
    set_aside: SetAside = field(default_factory=SetAside)


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class Spool:
    def __init__(self, store_path: str | os.PathLike[str]) -> None:
        self.path = Path(f"{os.fspath(store_path)}.spool")
        self.path.mkdir(parents=True, exist_ok=True)

    def put(self, tables: Mapping[str, pa.Table]) -> Path | None:
        """Write one segment durably; None when there is nothing to write."""
        if not any(table.num_rows for table in tables.values()):
            return None
        name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        temporary = self.path / f".{name}.tmp"
        try:
            temporary.mkdir()
            for table_name, table in tables.items():
                target = temporary / f"{table_name}.arrow"
                with pa.OSFile(str(target), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
                    writer.write_table(table.unify_dictionaries())  # an IPC file holds one per column
                with target.open("rb+") as handle:
                    os.fsync(handle.fileno())
            _fsync_directory(temporary)
        except OSError as exc:  # a full disk: the batch stays unspooled, its offsets uncommitted
            shutil.rmtree(temporary, ignore_errors=True)
            raise StoreError(f"spool segment not written in {self.path}: {exc}") from exc
        segment = self.path / name
        os.rename(temporary, segment)
        _fsync_directory(self.path)
        return segment

    def pending(self) -> list[Path]:
        return sorted(path for path in self.path.iterdir() if not path.name.startswith("."))

    def waiting(self) -> tuple[int, float]:
        """How many segments wait to be merged, and for how long the oldest has (seconds; 0: none)."""
        pending = self.pending()
        if not pending:
            return 0, 0.0
        return len(pending), max(0.0, time.time() - int(pending[0].name.split("-")[0]) / 1e9)

    @staticmethod
    def read(segment: Path) -> dict[str, pa.Table]:
        tables = {}
        for name in (*SCHEMAS, BACK):
            path = segment / f"{name}.arrow"
            if path.exists():
                with pa.memory_map(str(path)) as source:
                    tables[name] = ipc.open_file(source).read_all()
        return tables

    def merge_into(self, store: Store) -> Merged:
        """Store every pending segment and delete it. Up to `MERGED_TOGETHER`
        segments go into one transaction (its cost is mostly fixed, so a writer behind its spool
        catches up), never two that bring the same parent row (a child row goes in only with a new
        parent, so the second segment's children would go in too); when that transaction fails,
        each is stored alone and one that fails alone is set aside."""
        merged = Merged()
        group: list[tuple[Path, dict[str, pa.Table]]] = []
        parents: set[tuple[str, object]] = set()
        for segment in self.pending():
            try:
                tables = self.read(segment)
            except (OSError, pa.ArrowException) as exc:
                self._set_aside(segment, exc)
                continue
            keys = _parent_keys(tables)
            if len(group) == MERGED_TOGETHER or keys & parents:
                self._merge_group(store, group, merged)
                group, parents = [], set()
            group.append((segment, tables))
            parents |= keys
        self._merge_group(store, group, merged)
        self._remove_stale_temporaries()
        return merged

    def _merge_group(
        self, store: Store, group: list[tuple[Path, dict[str, pa.Table]]], merged: Merged
    ) -> None:
        together = _concatenated([tables for _, tables in group]) if len(group) > 1 else None
        if together is not None and (set_aside := self._store(store, together)) is not None:
            merged.segments += self._delete([segment for segment, _ in group])
            merged.set_aside += set_aside
            return
        for segment, tables in group:  # one by one: which segment is at fault?
            if (set_aside := self._store(store, tables, segment)) is not None:
                merged.segments += self._delete([segment])
                merged.set_aside += set_aside

    def _store(self, store: Store, tables: dict[str, pa.Table], alone: Path | None = None) -> SetAside | None:
        """What the store set aside of `tables`, or None when they did not go in; a segment stored
        `alone` that fails is set aside. A failure of the store itself (I/O, a failed COMMIT;
        memory, for a segment alone) is raised: the segments wait for a writer."""
        try:
            return store.write_tables(tables, follower=True)
        except StoreError as exc:
            if (
                isinstance(exc, StoreAbandoned)
                or isinstance(exc.__cause__, duckdb.IOException)
                or (alone is not None and isinstance(exc.__cause__, duckdb.OutOfMemoryException))
            ):
                raise
            if alone is not None:
                self._set_aside(alone, exc)
            return None

    @staticmethod
    def _delete(segments: list[Path]) -> int:
        for segment in segments:
            shutil.rmtree(segment)
        return len(segments)

    def _set_aside(self, segment: Path, error: Exception) -> None:
        """A segment that cannot be read or stored goes to `.failed/` (with the reason beside it),
        so it cannot block every writer after it; ingest is idempotent, so it can be re-merged by
        hand once the cause is fixed."""
        failed = self.path / ".failed"
        failed.mkdir(exist_ok=True)
        os.rename(segment, failed / segment.name)
        (failed / f"{segment.name}.reason").write_text(f"{type(error).__name__}: {error}\n")

    def _remove_stale_temporaries(self) -> None:
        now = time.time()
        for path in self.path.iterdir():
            if path.name.startswith(".") and path.name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    if now - path.stat().st_mtime > STALE_TEMPORARY_SECONDS:
                        shutil.rmtree(path)


def _parent_keys(tables: dict[str, pa.Table]) -> set[tuple[str, object]]:
    """The rows of a segment that child rows hang on: (parent table, key)."""
    return {
        (parent, key)
        for parents, column in CHILDREN.values()
        for parent in parents
        if parent in tables
        for key in tables[parent].column(column).to_pylist()
    }


def _concatenated(segments: list[dict[str, pa.Table]]) -> dict[str, pa.Table] | None:
    """Each table's rows from every segment, in order (`successive`); None when a table's schemas
    differ between them."""
    try:
        return successive(segments)
    except pa.ArrowException:
        return None
