"""The baselines viewlineage is measured against, each one process over a list of files.

- F (floor): read + gunzip + `orjson.loads`, nothing else.
- P: pyiceberg 0.12's `ViewMetadata.model_validate_json` (after read + gunzip), parse only.
- R (what a straightforward integration does): P, then sqlglot (the build viewlineage uses) parses
  every representation of every version of every file and collects its `exp.Table` nodes, then
  `executemany` INSERTs the rows into viewlineage's own schema, one transaction per file.

R is written the way a team would write it in an afternoon, correctly but without memoisation or
batching: that is the point of measuring it.
"""

from __future__ import annotations

import gzip
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson
import sqlglot
from pydantic import ValidationError
from pyiceberg.view.metadata import ViewMetadata
from sqlglot import exp

from viewlineage.sinks.schema import migrations

KEYED_SCHEMA = 3
"""R writes viewlineage's tables as migrations 1-3 made them, every table with its key enforced (a
straightforward integration leans on INSERT OR IGNORE); migration 4 drops the child tables' keys."""


@dataclass(frozen=True)
class Measured:
    files: int
    seconds: float
    failed: int
    bytes_read: int

    @property
    def files_per_second(self) -> float:
        return self.files / self.seconds

    @property
    def mib_per_second(self) -> float:
        return self.bytes_read / 2**20 / self.seconds


def _document(path: Path) -> tuple[bytes, int]:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw), len(raw)


def _timed(paths: list[Path], one: Callable[[bytes], None]) -> Measured:
    failed = total = 0
    started = time.perf_counter()
    for path in paths:
        try:
            document, size = _document(path)
            total += size
            one(document)
        except (ValueError, OSError, EOFError, ValidationError):
            failed += 1
    return Measured(len(paths), time.perf_counter() - started, failed, total)


def floor(paths: list[Path]) -> Measured:
    return _timed(paths, orjson.loads)


def pyiceberg_parse(paths: list[Path]) -> Measured:
    return _timed(paths, ViewMetadata.model_validate_json)


class Straightforward:
    """R: pyiceberg + sqlglot + executemany, one transaction per file."""

    def __init__(self, db: Path) -> None:
        self.conn = duckdb.connect(str(db))
        for migration in migrations()[:KEYED_SCHEMA]:
            self.conn.execute(migration.sql)

    def close(self) -> None:
        self.conn.close()

    def run(self, paths: list[Path]) -> Measured:
        failed = total = 0
        started = time.perf_counter()
        for path in paths:
            try:
                raw = path.read_bytes()
                total += len(raw)
                self.index(str(path), raw)
            except (ValueError, OSError, EOFError, ValidationError):
                failed += 1
        return Measured(len(paths), time.perf_counter() - started, failed, total)

    def index(self, location: str, raw: bytes) -> None:
        document = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        metadata = ViewMetadata.model_validate_json(document)
        content_hash = hashlib.blake2b(document, digest_size=16).hexdigest()
        view_id = metadata.view_uuid
        version_rows, file_version_rows, representation_rows = [], [], []
        lineage_rows, reference_rows = [], []
        for ordinal, version in enumerate(metadata.versions):
            version_hash = hashlib.blake2b(
                f"{view_id}:{version.model_dump_json()}".encode(), digest_size=16
            ).hexdigest()
            version_rows.append(
                (version_hash, view_id, version.version_id, version.timestamp_ms, version.schema_id,
                 version.default_catalog, list(version.default_namespace), version.summary)
            )  # fmt: skip
            file_version_rows.append((location, ordinal, version.version_id, version_hash))
            for index, representation in enumerate(version.representations):
                rep = representation.root
                key = hashlib.blake2b(f"{rep.dialect}:{rep.sql}".encode(), digest_size=16).hexdigest()
                representation_rows.append(
                    (version_hash, index, rep.type, rep.dialect, rep.dialect, rep.sql, "{}", key)
                )
                tables = sorted(
                    {
                        table.sql(rep.dialect)
                        for statement in sqlglot.parse(rep.sql, read=rep.dialect)
                        if statement is not None
                        for table in statement.find_all(exp.Table)
                    }
                )
                lineage_rows.append((key, rep.dialect))
                reference_rows.extend(
                    (key, i, None, table.split(".")[:-1], table.split(".")[-1], table)
                    for i, table in enumerate(tables)
                )
        log_rows = [
            (location, i, view_id, entry.version_id, entry.timestamp_ms)
            for i, entry in enumerate(metadata.version_log)
        ]
        conn = self.conn
        conn.begin()
        conn.execute(
            "INSERT OR IGNORE INTO raw_documents VALUES (?, ?, ?)",
            [content_hash, gzip.compress(document, mtime=0), len(document)],
        )
        conn.execute(
            "INSERT OR IGNORE INTO files VALUES (?, ?, 'view', ?, ?, NULL, NULL, NULL, now())",
            [location, content_hash, len(raw), raw[:2] == b"\x1f\x8b"],
        )
        conn.execute(
            "INSERT OR IGNORE INTO view_files (location, view_id, view_uuid, metadata_location, "
            "format_version, current_version_id, properties) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [location, view_id, view_id, metadata.location, metadata.format_version,
             metadata.current_version_id, metadata.properties],
        )  # fmt: skip
        conn.executemany(
            "INSERT OR IGNORE INTO versions (version_hash, view_id, version_id, timestamp_ms, schema_id, "
            "default_catalog, default_namespace, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            version_rows,
        )
        conn.executemany("INSERT OR IGNORE INTO file_versions VALUES (?, ?, ?, ?)", file_version_rows)
        conn.executemany(
            "INSERT OR IGNORE INTO representations VALUES (?, ?, ?, ?, ?, ?, ?, ?)", representation_rows
        )
        conn.executemany("INSERT OR IGNORE INTO version_log VALUES (?, ?, ?, ?, ?)", log_rows)
        conn.executemany("INSERT OR IGNORE INTO lineage VALUES (?, 0, ?, now())", lineage_rows)
        conn.executemany(
            "INSERT OR IGNORE INTO table_references (lineage_key, ordinal, catalog, namespace, name, "
            "catalog_source, raw) VALUES (?, ?, ?, ?, ?, 'explicit', ?)",
            reference_rows,
        )
        conn.commit()


def straightforward(paths: list[Path], db: Path) -> Measured:
    indexer = Straightforward(db)
    try:
        return indexer.run(paths)
    finally:
        indexer.close()
