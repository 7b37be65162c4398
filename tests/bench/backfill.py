"""Backfill throughput: `index` against `backfill --engine local` and `--engine spark` (local[2]).

    python -m tests.bench.backfill [--files 100000]

One seeded realistic-history warehouse (`tests/generate.py`: 100 commits per view, 20 namespaces,
about 1 commit in 10 changing the SQL), local files, each engine into a fresh store. Prints files/s,
the wall time of each stage, and the time inside tasks per file (what more cores divide), then
what 10^8 files would take on a cluster, computed from those per-file task times.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from viewlineage.indexer.backfill.run import backfill
from viewlineage.indexer.backfill.stages import BackfillStats
from viewlineage.indexer.config import Settings, load_settings
from viewlineage.indexer.pipeline.runs import index_locations

from ..generate import generate

CLUSTER_CORES = (40, 200, 800)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="viewlineage-backfill-bench-"))
    started = time.perf_counter()
    generated = generate(
        work / "wh", views=max(1, args.files // 100), commits=100, seed=2, namespaces=20, realistic=True
    )
    files = len(generated.files)
    size = sum(path.stat().st_size for path in generated.files)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    generation = time.perf_counter() - started
    print(f"warehouse: {files} files, {size / 2**20:.0f} MiB stored, generated in {generation:.0f}s")

    def settings(name: str) -> Settings:
        return load_settings(environ={}, flags={"db": str(work / f"{name}.duckdb")})

    started = time.perf_counter()
    index_settings = settings("index")
    index_locations([str(work / "wh")], index_settings)
    index_seconds = time.perf_counter() - started
    workers = index_settings.worker_count
    print(f"index          {files / index_seconds:8.0f} files/s  ({index_seconds:.0f}s, {workers} workers)")
    results: dict[str, BackfillStats] = {}
    for engine in ("local", "spark"):
        started = time.perf_counter()
        stats = backfill(
            [str(work / "wh")], settings(engine), engine, None, True,
            master="local[2]", listing="tasks", spark_conf={"spark.driver.memory": "3g"},
        )  # fmt: skip
        seconds = time.perf_counter() - started
        results[engine] = stats
        stages = ", ".join(f"{stage} {value:.0f}s" for stage, value in stats.seconds.items())
        per_file = ", ".join(
            f"{stage} {value / files * 1000:.2f} ms" for stage, value in stats.task_seconds.items()
        )
        print(f"backfill {engine:5s} {files / seconds:8.0f} files/s  ({seconds:.0f}s; wall: {stages})")
        print(f"               task time per file: {per_file}")
    spark = results["spark"]
    cores = os.cpu_count() or 1
    parallel = sum(seconds for stage, seconds in spark.seconds.items() if stage != "merge")
    core_seconds = parallel * cores / files  # all of this scales out with executors
    merge = spark.seconds.get("merge", 0.0) / files  # the DuckDB load runs on one machine
    print(
        f"10^8 files on a cluster: {core_seconds * 1000:.2f} core-ms per file in Spark stages "
        f"(wall x {cores} cores, Spark start-up included), plus {merge * 1000:.2f} ms per file "
        "loading DuckDB:"
    )
    for cluster in CLUSTER_CORES:
        hours = core_seconds * 1e8 / cluster / 3600
        print(
            f"  {cluster:4d} cores: {hours:6.1f} h in Spark, "
            f"+ {merge * 1e8 / 3600:.1f} h loading one DuckDB store"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
