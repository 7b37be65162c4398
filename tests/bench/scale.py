"""Indexing a large warehouse, then querying it: peak RSS, store size, query latencies.

    python -m tests.bench.scale [--views 10000] [--commits 100] [--samples 1000] [--work DIR]
                                [--store-memory 256MB]

Generates a worst-case warehouse (every commit a new version: `views` x `commits` versions), runs
`viewlineage index` on it as a separate process (peak RSS of it and its workers, sampled every
0.2 s, as PSS), and compares the store without raw documents (every other table copied into a fresh
store) with the metadata gzip-compressed (gzip files as stored, plain ones compressed at level
6). Then, in a process of its own on one read-only connection (`query_process.py`), times `show
--as-of` and `uses --transitive --as-of` over two passes of seeded random (view or table, T) (cold
blocks, then the cache the first pass left) and the state of every view as of T; the same
commands through the CLI and over HTTP (`serve`); and a follower's store transaction
(`follower_write.py`). With `--work`, a warehouse and store already there are reused.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..generate import generate
from .follower_write import transaction_times
from .latency import percentile
from .run import peak_memory, store_size_without_documents

FOLLOWER_FILES = 12
"""Files in a follower's transaction: what `watch` gathers while one commits, at 100 files/s."""


def _gzip_size(path: Path) -> int:
    data = path.read_bytes()
    return len(data) if data[:2] == b"\x1f\x8b" else len(gzip.compress(data, compresslevel=6))


def gzip_size(root: Path) -> int:
    with ProcessPoolExecutor() as pool:
        return sum(pool.map(_gzip_size, root.rglob("*.metadata.json"), chunksize=1000))


def line(what: str, times: list[float], errors: int = 0, target: str = "") -> str:
    note = f" ({errors} not current at T)" if errors else ""
    return (
        f"| {what} | {len(times)}{note} | {percentile(times, 50):,.1f} ms | {percentile(times, 99):,.1f} ms "
        f"| {target} |"
    )


def http_times(db: Path, paths: list[str]) -> list[float]:
    """Milliseconds of each GET through `viewlineage serve` on the store (uvicorn; a connection to
    the store per request, as `serve` opens one), on one keep-alive HTTP connection."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(db), "serve", "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                connection.request("GET", paths[0])
                connection.getresponse().read()  # and warm
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        times = []
        for path in paths:
            started = time.perf_counter()
            connection.request("GET", path)
            connection.getresponse().read()
            times.append((time.perf_counter() - started) * 1000)
        connection.close()
        return times
    finally:
        server.terminate()
        server.wait(timeout=30)


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
    parser.add_argument("--write-samples", type=int, default=20, help="follower transactions timed, per kind")
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
            peak, shares, seconds = peak_memory(command)
            files = sum(1 for _ in warehouse.rglob("*.metadata.json"))
            rate = f"{files:,} files in {seconds:,.0f}s ({files / seconds:,.0f} files/s)"
            parts = " + ".join(f"{share / 2**20:,.0f}" for share in shares)
            print(
                f"index: {rate}, peak memory (PSS) {peak / 2**20:,.0f} MiB = {parts} (the indexing "
                "process, then its workers) (target < 1,024 MiB)",
                flush=True,
            )
            compressed = gzip_size(warehouse)
            without = store_size_without_documents(db, work)
            sizes = f"store {db.stat().st_size / 2**20:,.0f} MiB, "
            sizes += f"without raw documents {without / 2**20:,.0f} MiB"
            ratio = (
                f"{without / compressed:.2f}x the gzip-compressed metadata ({compressed / 2**20:,.0f} MiB)"
            )
            print(f"{sizes} = {ratio} (target < 2x)", flush=True)
        # A process of its own, as a query service: see query_process.py for why.
        query_process = [sys.executable, str(Path(__file__).with_name("query_process.py")), str(db)]
        measured = subprocess.run(
            [*query_process, "--samples", str(args.samples), "--seed", str(args.seed)],
            capture_output=True,
            text=True,
            check=True,
        )
        queries = json.loads(measured.stdout)
        print(f"store: {queries['store']['views']:,} views, {queries['store']['versions']:,} versions")
        print("| query (in-process API, read-only connection, own process) | n | p50 | p99 | target |")
        print("|---|---|---|---|---|")
        series = queries["series"]
        for cache in ("first pass", "second pass"):
            print(line(f"`show VIEW --as-of T`, {cache}", **series[f"show, {cache}"], target="p99 < 20 ms"))
            used = series[f"uses, {cache}"]
            print(line(f"`uses TABLE --transitive --as-of T`, {cache}", **used, target="p99 < 100 ms"))
        print(line("state of every view as of T (`views_as_of`)", **series["views_as_of"], target="< 1 s"))
        shows = [["show", name, "--as-of", str(at)] for name, at in queries["shows"][:10]]
        print(line("CLI `viewlineage show` (process wall time)", cli_times(db, shows)))
        used = [["uses", table, "--transitive", "--as-of", str(at)] for table, at in queries["uses"][:10]]
        print(line("CLI `viewlineage uses --transitive` (process wall time)", cli_times(db, used)))
        quoted = urllib.parse.quote
        shows = [f"/api/show?view={quoted(name)}&as_of={at}" for name, at in queries["shows"]]
        print(line("HTTP `GET /api/show` through `serve`", http_times(db, shows)))
        used = [
            f"/api/uses?table={quoted(table)}&transitive=true&as_of={at}" for table, at in queries["uses"]
        ]
        print(line("HTTP `GET /api/uses?transitive=true` through `serve`", http_times(db, used)))
        written = transaction_times(db, warehouse, FOLLOWER_FILES, args.write_samples, args.seed)
        for kind, times in written.items():
            print(line(f"follower transaction: {FOLLOWER_FILES} {kind} commits (rolled back)", times))

    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
