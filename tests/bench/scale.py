"""Indexing a large warehouse, then querying it: peak RSS, store size, query latencies.

    python -m tests.bench.scale [--views 10000] [--commits 100] [--samples 1000] [--work DIR]
                                [--store-memory 256MB]

Generates a worst-case warehouse (every commit a new version: `views` x `commits` versions), runs
`viewlineage index` on it as a separate process (peak RSS of it and its workers, sampled every
0.2 s, as PSS), and compares the store without raw documents (every other table copied into a fresh
store) with the metadata gzip-compressed (gzip files as stored, plain ones compressed at level
6). Then, in-process on one read-only connection, times `show --as-of` and `uses --transitive
--as-of` over two passes of seeded random (view or table, T) (cold blocks, then the cache the first
pass left), the state of every view as of T, and the same commands through the CLI. With
`--work`, a warehouse and store already there are reused.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.queries import api

from ..generate import generate
from .latency import percentile
from .run import peak_memory, store_size_without_documents


def _gzip_size(path: Path) -> int:
    data = path.read_bytes()
    return len(data) if data[:2] == b"\x1f\x8b" else len(gzip.compress(data, compresslevel=6))


def gzip_size(root: Path) -> int:
    with ProcessPoolExecutor() as pool:
        return sum(pool.map(_gzip_size, root.rglob("*.metadata.json"), chunksize=1000))


def timed(calls: list[Callable[[], Any]]) -> tuple[list[float], int]:
    """Milliseconds of each call, and how many raised `UsageError` (a view not there at T)."""
    times, errors = [], 0
    for call in calls:
        started = time.perf_counter()
        try:
            call()
        except UsageError:
            errors += 1
        times.append((time.perf_counter() - started) * 1000)
    return times, errors


def line(what: str, times: list[float], errors: int = 0, target: str = "") -> str:
    note = f" ({errors} not current at T)" if errors else ""
    return (
        f"| {what} | {len(times)}{note} | {percentile(times, 50):,.1f} ms | {percentile(times, 99):,.1f} ms "
        f"| {target} |"
    )


def cli_times(db: Path, commands: list[list[str]]) -> list[float]:
    times = []
    for command in commands:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(db), *command],
            capture_output=True,
            check=False,
        )
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--views", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--store-memory", default=None, help="index's DuckDB memory limit, e.g. 256MB")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="viewlineage-scale-"))
    try:
        warehouse, db = work / "warehouse", work / "store.duckdb"
        if not warehouse.exists():
            started = time.perf_counter()
            generated = generate(
                warehouse,
                args.views,
                args.commits,
                seed=args.seed,
                namespaces=100,
                workers=os.cpu_count() or 1,
            )
            print(
                f"generated {len(generated.files):,} files in {time.perf_counter() - started:.0f}s",
                flush=True,
            )
        if not db.exists():
            command = [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(db), "index"]
            command.append(str(warehouse))
            command += ["--catalog-map", f"{warehouse}=prod", "--no-progress", "--replica-interval", "600"]
            command += ["--store-memory", args.store_memory] if args.store_memory else []
            peak, seconds = peak_memory(command)
            files = sum(1 for _ in warehouse.rglob("*.metadata.json"))
            rate = f"{files:,} files in {seconds:,.0f}s ({files / seconds:,.0f} files/s)"
            print(
                f"index: {rate}, peak memory (PSS) {peak / 2**20:,.0f} MiB (target < 1,024 MiB)", flush=True
            )
            compressed = gzip_size(warehouse)
            without = store_size_without_documents(db, work)
            sizes = f"store {db.stat().st_size / 2**20:,.0f} MiB, "
            sizes += f"without raw documents {without / 2**20:,.0f} MiB"
            ratio = (
                f"{without / compressed:.2f}x the gzip-compressed metadata ({compressed / 2**20:,.0f} MiB)"
            )
            print(f"{sizes} = {ratio} (target < 2x)", flush=True)
        rng = random.Random(args.seed)
        with duckdb.connect(str(db), read_only=True) as conn:
            versions = conn.execute("SELECT count(*) FROM versions").fetchone()
            view_names = "SELECT DISTINCT 'prod.' || array_to_string(name, '.') FROM view_files ORDER BY 1"
            names = [row[0] for row in conn.execute(view_names).fetchall()]
            table_names = (
                "SELECT DISTINCT array_to_string(namespace, '.') || '.' || name FROM table_references "
                "WHERE name NOT LIKE 'view_%' ORDER BY 1"
            )
            tables = [row[0] for row in conn.execute(table_names).fetchall()]
            low, high = conn.execute("SELECT min(commit_ms), max(commit_ms) FROM view_files").fetchone() or (
                0,
                0,
            )
            print(f"store: {len(names):,} views, {versions[0] if versions else 0:,} versions", flush=True)
            picks = [(rng.choice(names), rng.randint(low, high)) for _ in range(args.samples)]
            uses_picks = [(rng.choice(tables), rng.randint(low, high)) for _ in range(args.samples)]
            api.show(conn, *picks[0])  # warm
            print("| query (in-process API, read-only connection) | n | p50 | p99 | target |")
            print("|---|---|---|---|---|")
            # Two passes of fresh random picks: the first touches blocks no query has read yet
            # (DuckDB reads and decompresses them), the second runs on the cache the first left, as
            # a long-running query service would.
            for cache in ("first pass", "second pass"):
                shown = [(rng.choice(names), rng.randint(low, high)) for _ in range(args.samples)]
                times, errors = timed([lambda p=pick: api.show(conn, *p) for pick in shown])
                print(line(f"`show VIEW --as-of T`, {cache}", times, errors, "p99 < 20 ms"))
                used = [(rng.choice(tables), rng.randint(low, high)) for _ in range(args.samples)]
                calls = [lambda p=pick: api.uses(conn, p[0], p[1], transitive=True) for pick in used]
                times, _ = timed(calls)
                print(line(f"`uses TABLE --transitive --as-of T`, {cache}", times, 0, "p99 < 100 ms"))
            state = [
                lambda t=t: conn.execute("SELECT * FROM views_as_of(?)", [t]).fetchall()
                for _, t in picks[:20]
            ]  # type: ignore[misc]
            times, _ = timed(state)
            print(line("state of every view as of T (`views_as_of`)", times, 0, "< 1 s"))
        shows = [["show", name, "--as-of", str(at)] for name, at in picks[:10]]
        print(line("CLI `viewlineage show` (process wall time)", cli_times(db, shows)))
        used = [["uses", table, "--transitive", "--as-of", str(at)] for table, at in uses_picks[:10]]
        print(line("CLI `viewlineage uses --transitive` (process wall time)", cli_times(db, used)))

    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
