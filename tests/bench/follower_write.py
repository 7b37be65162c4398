"""What one follower transaction costs on a large store: `watch` and `consume` write a batch of a
few files at a time, so a cost that grows with the store (a scan of a table every batch touches)
bounds their latency on a real warehouse, whatever it is on a small one.

    python -m tests.bench.follower_write STORE WAREHOUSE [--files 12] [--samples 20]

Each sample takes `files` random views of the indexed warehouse, makes a new commit of each from
its newest file as a writer would (`property-only`: same versions, one property changed; `new
version`: one more version, made current, with new SQL), builds the batch as a follower does and
times its store transaction, rolled back so the store is left as it was.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from viewlineage.indexer.config import load_settings
from viewlineage.indexer.pipeline.indexer import Indexer
from viewlineage.indexer.sources.read import FileRead
from viewlineage.sinks.store import Store

from .latency import percentile

KINDS = ("property-only", "new version")


class _RolledBack:
    """The writer's connection, with every COMMIT turned into a ROLLBACK."""

    def __init__(self, conn: duckdb.DuckDBPyConnection) -> None:
        self._conn = conn

    def execute(self, statement: str, *args: Any) -> Any:
        return self._conn.execute("ROLLBACK" if statement == "COMMIT" else statement, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextmanager
def rolled_back(store: Store) -> Iterator[None]:
    writer = store.conn
    store.conn = _RolledBack(writer)  # type: ignore[assignment]
    try:
        yield
    finally:
        store.conn = writer


def newest_files(warehouse: Path) -> list[Path]:
    """Every view's newest metadata file (greatest sequence number)."""
    newest = []
    for metadata in sorted(warehouse.glob("*/*/metadata")):
        files = sorted(metadata.glob("*.metadata.json"))
        if files and "view-uuid" in _document(files[-1]):
            newest.append(files[-1])
    return newest


def _document(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    loaded: dict[str, Any] = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return loaded


def next_commit(path: Path, kind: str, serial: int) -> FileRead:
    """The commit after `path`'s, as bytes at the location a writer would give it (not written)."""
    document = _document(path)
    now_ms = int(time.time() * 1000) + serial
    document["properties"] = {**document.get("properties", {}), "bench-serial": str(serial)}
    if kind == "new version":
        current = max(document["versions"], key=lambda version: version["version-id"])
        version_id = current["version-id"] + 1
        representations = [
            {**each, "sql": f"{each['sql']}\n-- revision {serial}"} for each in current["representations"]
        ]
        document["versions"] = [
            *document["versions"][1:],
            {**current, "version-id": version_id, "timestamp-ms": now_ms, "representations": representations},
        ]
        document["current-version-id"] = version_id
        document["version-log"] = [
            *document["version-log"][1:],
            {"version-id": version_id, "timestamp-ms": now_ms},
        ]
    sequence = int(path.name.split("-", 1)[0]) + 1
    location = path.with_name(f"{sequence:05d}-{uuid.UUID(int=serial)}.metadata.json")
    return FileRead(str(location), json.dumps(document).encode(), now_ms, "bench")


def transaction_times(
    db: Path, warehouse: Path, files: int, samples: int, seed: int
) -> dict[str, list[float]]:
    rng = random.Random(seed)
    settings = load_settings(environ={}, flags={"db": str(db), "catalog_map": [f"{warehouse}=prod"]})
    candidates = newest_files(warehouse)
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    with Store(db, replica_interval=None) as store:
        indexer = Indexer(store, settings.parse_config())
        for sample in range(samples):
            for kind in KINDS:
                chosen = rng.sample(candidates, min(files, len(candidates)))
                reads = [next_commit(path, kind, sample * files + i) for i, path in enumerate(chosen)]
                tables = indexer.build_batch(reads).to_arrow()
                with rolled_back(store):
                    started = time.perf_counter()
                    store.write_tables(tables)
                    times[kind].append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("store", type=Path)
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    times = transaction_times(args.store, args.warehouse, args.files, args.samples, args.seed)
    for kind, measured in times.items():
        print(
            f"| follower transaction, {args.files} {kind} commits | {len(measured)} "
            f"| {percentile(measured, 50):,.1f} ms | {percentile(measured, 99):,.1f} ms |"
        )


if __name__ == "__main__":
    main()
