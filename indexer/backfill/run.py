"""`backfill`: index whole warehouses in parallel, with the streaming path's pure stages (`stages.py`).

Engines:
- `local`: a process pool over this machine's cores;
- `spark`: PySpark (`viewlineage[spark]`); stages run in tasks through `mapInArrow`, files are read
  inside tasks with fsspec/s3fs (Spark's wheels carry no hadoop-aws), and Spark writes the Parquet
  dataset, deduplicated by each table's key.

Both produce the Parquet dataset of `sinks/parquet.py` and, with a store, load it through the same
idempotent merge as `index` and `consume`: the store then equals what `index` builds.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from viewlineage.indexer.backfill.local import run_local
from viewlineage.indexer.backfill.stages import (
    BackfillStats,
    StageTimer,
    list_on_driver,
)
from viewlineage.indexer.config import Settings
from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.parse.locations import normalize_location
from viewlineage.indexer.pipeline.runs import with_roots, with_store_naming, writable_store
from viewlineage.sinks.parquet import load_into


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
    if into_store:  # the rows merged must name things as the store's do
        settings = with_store_naming(settings)
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
            run_local(listed, settings, config, dataset, settings.worker_count, stats, timed, progress)
        elif engine == "spark":
            try:
                import pyspark  # noqa: F401
            except ImportError as exc:
                raise UsageError(
                    f"backfill --engine spark needs PySpark ({exc}): pip install 'viewlineage[spark]'"
                ) from exc
            from viewlineage.indexer.backfill.spark import run_spark

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
                writable_store(settings, deferred_spans=True) as store,
            ):
                store.record_roots(roots)
                load_into(store, dataset)
    return stats
