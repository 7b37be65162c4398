"""`backfill --engine local`: the stages over a process pool of this machine's cores, their tables
written as Parquet parts, then deduplicated into the dataset."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pyarrow as pa

from viewlineage.indexer.backfill.stages import (
    LINEAGE_REQUESTS,
    BackfillStats,
    StageTimer,
    timed_analyse_lineage,
    timed_index_files,
)
from viewlineage.indexer.config import Settings
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.sinks.parquet import ParquetParts

FILES_PER_PART = 500
REQUESTS_PER_PART = 500


def _stage_files(job: tuple[pa.Table, Settings, ParseConfig]) -> tuple[dict[str, pa.Table], float, float]:
    return timed_index_files(*job)


def _stage_lineage(job: tuple[pa.Table, ParseConfig]) -> tuple[dict[str, pa.Table], float]:
    return timed_analyse_lineage(*job)


def _slices(table: pa.Table, size: int) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, size):
        yield table.slice(start, size)


def run_local(
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
