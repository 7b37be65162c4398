"""Bulk indexing for backfills: the pipeline's pure stages, split so parallel engines share them.

1. `index_files`: a partition of listed files -> read (fsspec), parse, validate -> rows of every
   store table except lineage's, plus `lineage_requests`: the SQL the partition needs analysed,
   distinct by lineage memo key. Versions repeated across files have one content hash; requests
   repeated across versions have one key.
2. The engine deduplicates requests by key across the whole job (a version repeated in ten files
   is analysed once), then `analyse_lineage` turns a partition of them into the lineage tables.

Both return `{store table: Arrow table}`; `--engine local` moves them between processes,
`--engine spark` through `mapInArrow`. Neither stage touches the store.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from viewlineage.indexer.config import Settings
from viewlineage.indexer.lineage.tables import LineageRequest, extract_lineage
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.pipeline.indexer import Indexer
from viewlineage.indexer.pipeline.reads import ReadFailure, read_all
from viewlineage.indexer.pipeline.rows import Batch
from viewlineage.indexer.sources.read import FileRead, ListedFile, Reader, listed_table, reader_for
from viewlineage.sinks.tables import without_file_column

LINEAGE_REQUESTS = pa.schema(
    [
        ("lineage_key", pa.string()),
        ("sql", pa.string()),
        ("dialect", pa.string()),
        ("default_catalog", pa.string()),
        ("default_namespace", pa.list_(pa.string())),
        ("view_catalog", pa.string()),
    ]
)


def read_listed(listed: pa.Table, settings: Settings) -> list[FileRead | ReadFailure]:
    """Read every file of a listed partition (in parallel, bounded retries); files gone since
    listing are skipped, other failures become quarantine rows in `index_files`."""
    readers: dict[str, Reader] = {}

    def entry(row: dict[str, Any]) -> tuple[Reader, ListedFile]:
        item = ListedFile(row["location"], row["size"], row["modified_ms"])
        scheme = item.location.split("://", 1)[0] if "://" in item.location else ""
        if scheme not in readers:
            readers[scheme] = reader_for(item.location, settings.s3_endpoint)
        return readers[scheme], item

    return list(read_all((entry(row) for row in listed.to_pylist()), settings))


def index_files(items: Iterable[FileRead | ReadFailure], config: ParseConfig) -> dict[str, pa.Table]:
    """Stage 1 on reads (and read failures) of one partition."""
    batch = Indexer(None, config).build_batch(items, defer_lineage=True)
    tables = without_file_column(batch.to_arrow())
    requests = sorted(batch.lineage_requests.items())
    tables["lineage_requests"] = pa.table(
        {
            "lineage_key": [key for key, _ in requests],
            "sql": [r.sql for _, r in requests],
            "dialect": [r.dialect for _, r in requests],
            "default_catalog": [r.default_catalog for _, r in requests],
            "default_namespace": [list(r.default_namespace) for _, r in requests],
            "view_catalog": [r.view_catalog for _, r in requests],
        },
        schema=LINEAGE_REQUESTS,
    )
    return tables


def analyse_lineage(requests: pa.Table, config: ParseConfig) -> dict[str, pa.Table]:
    """Stage 2: lineage tables for a partition of distinct requests."""
    batch = Batch()
    for row in requests.to_pylist():
        request = LineageRequest(
            row["sql"],
            row["dialect"],
            row["default_catalog"],
            tuple(row["default_namespace"]),
            row["view_catalog"],
        )
        batch.lineage[row["lineage_key"]] = extract_lineage(request, config.lineage)
    return without_file_column(batch.to_arrow())


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
