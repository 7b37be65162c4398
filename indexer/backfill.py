"""`backfill`: index whole warehouses in parallel, with the streaming path's pure stages (`bulk`).

Engines:
- `local`: a process pool over this machine's cores;
- `spark`: PySpark (`viewlineage[spark]`); stages run in tasks through `mapInArrow`, files are read
  inside tasks with fsspec/s3fs (Spark's wheels carry no hadoop-aws), and Spark writes the Parquet
  dataset, deduplicated by each table's key.

Both produce the Parquet dataset of `sinks/parquet.py` and, with a store, load it through the same
idempotent merge as `index` and `consume`: the store then equals what `index` builds.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from viewlineage.sinks.parquet import ParquetParts, load_into
from viewlineage.sinks.store import Store

from .bulk import LINEAGE_REQUESTS, analyse_lineage, index_files, read_listed
from .config import ParseConfig, Settings
from .errors import UsageError
from .locations import normalize_location
from .pipeline import with_roots
from .read import listed_table, reader_for

FILES_PER_PART = 500
REQUESTS_PER_PART = 500


@dataclass
class BackfillStats:
    listed: int = 0
    indexed: int = 0
    quarantined: int = 0
    lineage_requests: int = 0
    lineage_computed: int = 0
    parsing_tasks: int = 0
    listing_tasks: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per stage."""
    task_seconds: dict[str, float] = field(default_factory=dict)
    """Time inside tasks, summed over tasks: read, parse, lineage (what more cores divide)."""

    def summary(self) -> dict[str, Any]:
        return {
            "files": self.listed,
            "indexed": self.indexed,
            "quarantined": self.quarantined,
            "lineage_requests": self.lineage_requests,
            "lineage_computed": self.lineage_computed,
            "parsing_tasks": self.parsing_tasks,
            "listing_tasks": self.listing_tasks,
            "seconds": {stage: round(value, 3) for stage, value in self.seconds.items()},
            "task_seconds": {stage: round(value, 3) for stage, value in self.task_seconds.items()},
        }

    def add_task_time(self, stage: str, seconds: float) -> None:
        self.task_seconds[stage] = self.task_seconds.get(stage, 0.0) + seconds


def list_on_driver(roots: list[str], settings: Settings) -> pa.Table:
    return listed_table(item for root in roots for item in reader_for(root, settings.s3_endpoint).list(root))


def timed_index_files(
    listed: pa.Table, settings: Settings, config: ParseConfig
) -> tuple[dict[str, pa.Table], float, float]:
    """Stage 1 with its read and parse times, for both engines' accounting."""
    started = time.perf_counter()
    reads = read_listed(listed, settings)
    read_at = time.perf_counter()
    tables = index_files(reads, config)
    return tables, read_at - started, time.perf_counter() - read_at


def timed_analyse_lineage(requests: pa.Table, config: ParseConfig) -> tuple[dict[str, pa.Table], float]:
    started = time.perf_counter()
    tables = analyse_lineage(requests, config)
    return tables, time.perf_counter() - started


def _stage_files(job: tuple[pa.Table, Settings, ParseConfig]) -> tuple[dict[str, pa.Table], float, float]:
    return timed_index_files(*job)


def _stage_lineage(job: tuple[pa.Table, ParseConfig]) -> tuple[dict[str, pa.Table], float]:
    return timed_analyse_lineage(*job)


def _slices(table: pa.Table, size: int) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, size):
        yield table.slice(start, size)


class StageTimer:
    """Adds each stage's wall time to the stats and reports it."""

    def __init__(self, stats: BackfillStats, progress: Callable[[str], None]) -> None:
        self.stats = stats
        self.progress = progress

    @contextlib.contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        seconds = self.stats.seconds.get(stage, 0.0) + time.monotonic() - started
        self.stats.seconds[stage] = seconds
        self.progress(f"{stage}: {seconds:.1f}s")


def backfill(
    locations: list[str],
    settings: Settings,
    engine: str,
    out: str | None,
    into_store: bool,
    master: str = "local[2]",
    partitions: int | None = None,
    listing: str = "driver",
    spark_conf: dict[str, str] | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> BackfillStats:
    roots = [normalize_location(location) for location in locations]
    config = with_roots(settings.parse_config(), roots)
    stats = BackfillStats()
    timed = StageTimer(stats, progress)
    with tempfile.TemporaryDirectory(prefix="viewlineage-backfill-") as scratch:
        dataset = out or str(Path(scratch) / "dataset")
        if engine == "local":
            with timed("listing"):
                listed = list_on_driver(roots, settings)
            stats.listed = listed.num_rows
            progress(f"listed {stats.listed} files")
            _run_local(listed, settings, config, dataset, settings.worker_count, stats, timed, progress)
        elif engine == "spark":
            from .spark import run_spark

            if out is None and not master.startswith("local"):
                raise UsageError("on a cluster, --out must name a directory the driver and executors share")

            run_spark(
                roots,
                settings,
                config,
                dataset,
                master,
                partitions,
                listing,
                spark_conf or {},
                stats,
                timed,
                progress,
            )
        else:
            raise UsageError(f"unknown engine {engine!r}: local or spark")
        if into_store:
            with (
                timed("merge"),
                Store(
                    settings.db, settings.replica_interval, settings.store_memory, deferred_spans=True
                ) as store,
            ):
                store.record_roots(roots)
                load_into(store, dataset)
    return stats


def _run_local(
    listed: pa.Table,
    settings: Settings,
    config: ParseConfig,
    dataset: str,
    workers: int,
    stats: BackfillStats,
    timed: StageTimer,
    progress: Callable[[str], None],
) -> None:
    parts = ParquetParts(dataset)
    requests: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(workers) as pool:
        with timed("read+parse"):
            jobs = ((chunk, settings, config) for chunk in _slices(listed, FILES_PER_PART))
            for number, (tables, read_seconds, parse_seconds) in enumerate(pool.map(_stage_files, jobs)):
                stats.parsing_tasks += 1
                stats.add_task_time("read", read_seconds)
                stats.add_task_time("parse", parse_seconds)
                stats.indexed += tables["files"].num_rows if "files" in tables else 0
                stats.quarantined += tables["quarantine"].num_rows if "quarantine" in tables else 0
                for row in tables.pop("lineage_requests").to_pylist():
                    stats.lineage_requests += 1
                    requests.setdefault(row["lineage_key"], row)
                parts.write(tables, f"files-{number:06d}")
                progress(f"parsed {stats.indexed + stats.quarantined}/{listed.num_rows} files")
        distinct = pa.Table.from_pylist(list(requests.values()), schema=LINEAGE_REQUESTS)
        stats.lineage_computed = distinct.num_rows
        with timed("lineage"):
            jobs2 = ((chunk, config) for chunk in _slices(distinct, REQUESTS_PER_PART))
            for number, (tables, lineage_seconds) in enumerate(pool.map(_stage_lineage, jobs2)):
                stats.add_task_time("lineage", lineage_seconds)
                parts.write(tables, f"lineage-{number:06d}")
    with timed("dataset"):
        parts.finish()
