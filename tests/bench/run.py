"""The benchmark suite: viewlineage against the F, P and R baselines, in one run, on one machine.

    python -m tests.bench.run [--views 200] [--commits 100] [--sample 2000] [--r-files 300] [--quick]

For each history mode (`worst`: every commit changes the SQL; `realistic`: about 1 in 10 does) it
generates a seeded warehouse (`tests/generate.py`) and draws a seeded sample of whole views
(about `--sample` files: every file of the views drawn, so each file brings the history it would
bring in a real warehouse). On the sample it times F, P and R (`tests/bench/baselines.py`; R only
on the sample's first views, about `--r-files` files, as its store slows it further as it grows)
and `index`; then `index` alone on the whole warehouse; then `index` and the lineage stage alone
on one process and on every core (the lineage stage against P: how fast `index` could go if
lineage were all it did); then property-only commits of every sampled file (all versions known)
against F on those files, and every file delivered again. Ratios compare figures from this run only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import sqlglot

from viewlineage.indexer.config import load_settings
from viewlineage.indexer.lineage.tables import extract_lineage
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.pipeline.indexer import Indexer, IndexStats
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.indexer.pipeline.workers import WorkerPool
from viewlineage.indexer.sources.read import LocalReader
from viewlineage.queries.cli import indexing_process
from viewlineage.sinks.store import Store

from ..generate import generate
from .baselines import Measured, floor, pyiceberg_parse, straightforward


@dataclass(frozen=True)
class Row:
    mode: str
    what: str
    files: int
    seconds: float
    mib: float
    versions: int | None = None
    ratio: str = ""

    def cells(self) -> list[str]:
        per_second = self.versions / self.seconds if self.versions is not None else None
        return [
            self.mode,
            self.what,
            f"{self.files:,}",
            _rate(self.files / self.seconds),
            f"{self.mib / self.seconds:,.1f}",
            _rate(per_second) if per_second is not None else "",
            self.ratio,
        ]


def _rate(per_second: float) -> str:
    """A rate as a whole number, or with two significant digits below 10 (tiny warehouses on a
    loaded machine: never a rounded 0)."""
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2g}"


HEADER = ["mode", "what", "files", "files/s", "MiB/s", "new versions/s", "ratio (same run)"]


def table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def sample_views(root: Path, files: int, seed: int) -> list[Path]:
    """Whole view directories, drawn with `seed`, until they hold at least `files` files."""
    views = sorted(path.parent for path in root.glob("*/view_*/metadata"))
    random.Random(seed).shuffle(views)
    chosen: list[Path] = []
    count = 0
    for view in views:
        if count >= files:
            break
        chosen.append(view)
        count += len(list((view / "metadata").glob("*.metadata.json")))
    return chosen


def metadata_files(views: list[Path]) -> list[Path]:
    return [path for view in views for path in sorted((view / "metadata").glob("*.metadata.json"))]


def mib(paths: list[Path]) -> float:
    return sum(path.stat().st_size for path in paths) / 2**20


def run_index(locations: list[Path], warehouse: Path, db: Path, workers: int = 0) -> tuple[IndexStats, float]:
    settings = load_settings(
        environ={},
        flags={
            "db": str(db),
            "catalog_map": [f"{warehouse}=prod"],
            "workers": workers,
        },
    )
    started = time.perf_counter()
    stats = index_locations([str(location) for location in locations], settings)
    return stats, time.perf_counter() - started


def property_commits(views: list[Path]) -> list[Path]:
    """For every file of `views`, a property-only commit after it: same versions, new file."""
    written = []
    for path in metadata_files(views):
        raw = path.read_bytes()
        document = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        document["properties"] = {**document.get("properties", {}), "benchmark": "property-only"}
        data = json.dumps(document).encode()
        target = path.with_name("9" + path.name[1:])
        target.write_bytes(gzip.compress(data, mtime=0) if raw[:2] == b"\x1f\x8b" else data)
        written.append(target)
    return written


def baseline_row(mode: str, what: str, measured: Measured) -> Row:
    return Row(mode, what, measured.files, measured.seconds, measured.bytes_read / 2**20)


def ratio(value: Row, base: Row, target: float | None = None) -> str:
    text = f"{(value.files / value.seconds) / (base.files / base.seconds):.2f}x {base.what.split(':')[0]}"
    return f"{text} (target >= {target}x)" if target is not None else text


def peak_memory(command: list[str]) -> tuple[int, list[int], float]:
    """Run `command`; (peak of the summed PSS of it and its children in bytes, each process's share
    of that peak (the command's first, then its children's, largest first), seconds). PSS, not RSS:
    forked workers share pages with their parent, which summed RSS would count twice."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    peak: list[int] = []
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.2):
            shares = _tree_pss(process.pid)
            if sum(shares) > sum(peak):
                peak = shares

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    returncode = process.wait()
    done.set()
    sampler.join()
    if returncode:
        raise RuntimeError(f"{command} failed with {returncode}")
    return sum(peak), peak, time.perf_counter() - started


def _tree_pss(pid: int) -> list[int]:
    """PSS of `pid`, then of each of its descendants, largest first."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        tree += children
        frontier += children
    shares = []
    for member in tree:
        try:
            rollup = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            shares.append(0)
            continue
        shares.append(
            sum(int(line.split()[1]) * 1024 for line in rollup.splitlines() if line.startswith("Pss:"))
        )
    return shares[:1] + sorted(shares[1:], reverse=True)


def store_size_without_documents(db: Path, work: Path) -> int:
    """The store's size with every table but `raw_documents` copied into a fresh store."""
    copy = work / "without-documents.duckdb"
    copy.unlink(missing_ok=True)
    with Store(copy, replica_interval=None):
        pass
    with duckdb.connect(str(copy)) as conn:
        conn.execute(f"ATTACH '{db}' AS source (READ_ONLY)")
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = 'source'"
            ).fetchall()
        ]
        for name in tables:
            if name != "raw_documents" and not name.startswith("_"):  # bookkeeping
                conn.execute(f"INSERT INTO main.{name} SELECT * FROM source.{name}")
        conn.execute("DETACH source")
        conn.execute("CHECKPOINT")
    return copy.stat().st_size


def bench_mode(mode: str, args: argparse.Namespace, work: Path) -> list[Row]:
    warehouse = work / f"wh-{mode}"
    started = time.perf_counter()
    generated = generate(
        warehouse, args.views, args.commits, seed=args.seed, namespaces=10,
        realistic=mode == "realistic", workers=os.cpu_count() or 1,
    )  # fmt: skip
    print(
        f"{mode}: {len(generated.files):,} files, {mib(generated.files):,.0f} MiB, "
        f"generated in {time.perf_counter() - started:.0f}s",
        file=sys.stderr,
    )
    views = sample_views(warehouse, args.sample, args.seed)
    sample = metadata_files(views)
    r_views = sample_views(warehouse, args.r_files, args.seed)
    r_sample = metadata_files(r_views)
    f = baseline_row(mode, "F: read + gunzip + orjson (sample)", floor(sample))
    p = baseline_row(mode, "P: pyiceberg parse (sample)", pyiceberg_parse(sample))
    r = baseline_row(
        mode,
        "R: straightforward (sample's first views)",
        straightforward(r_sample, work / f"r-{mode}.duckdb"),
    )
    stats, seconds = run_index(views, warehouse, work / f"sample-{mode}.duckdb")
    index_sample = Row(mode, "index (sample)", len(sample), seconds, mib(sample), stats.summary()["versions"])
    target_r, target_p = (20.0, None) if mode == "worst" else (None, 1.0)
    index_sample = replace(
        index_sample, ratio=f"{ratio(index_sample, r, target_r)}, {ratio(index_sample, p, target_p)}"
    )
    # Every run on the sample and the warehouse as generated, before property-only commits join
    # the sampled views' directories.
    whole = []
    if not args.quick:
        stats, seconds = run_index([warehouse], warehouse, work / f"whole-{mode}.duckdb")
        versions = stats.summary()["versions"]
        whole.append(
            Row(mode, "index (whole warehouse)", stats.listed, seconds, mib(generated.files), versions)
        )
    single_stats, single = run_index(views, warehouse, work / f"one-{mode}.duckdb", workers=1)
    one = Row(
        mode,
        "index, 1 process (sample)",
        len(sample),
        single,
        mib(sample),
        single_stats.summary()["versions"],
    )
    every_stats, every = run_index(views, warehouse, work / f"every-{mode}.duckdb")
    cores = Row(
        mode, f"index, {os.cpu_count()} workers (sample)", len(sample), every, mib(sample),
        every_stats.summary()["versions"], f"{single / every:.2f}x 1 process (target >= 1.8x)",
    )  # fmt: skip
    assert single_stats.listed == every_stats.listed == len(sample), (single_stats.listed, every_stats.listed)
    scaling = [one, cores, *lineage_stage(mode, sample, mib(sample), p)]
    commits = property_commits(views)
    f_known = baseline_row(mode, "F: on property-only commits", floor(commits))
    stats, seconds = run_index(views, warehouse, work / f"sample-{mode}.duckdb")
    known = Row(
        mode, "index: property-only commits (all versions known)", len(commits), seconds, mib(commits)
    )
    stats, seconds = run_index(views, warehouse, work / f"sample-{mode}.duckdb")
    assert stats.already_indexed == len(sample) + len(commits), stats.summary()
    again = Row(mode, "index: re-deliveries (every file indexed before)", stats.already_indexed, seconds, 0.0)
    return [
        f, p, r, index_sample, f_known, replace(known, ratio=ratio(known, f_known, 0.5)),
        replace(again, ratio=ratio(again, f_known, 0.5)), *whole, *scaling,
    ]  # fmt: skip


def lineage_stage(mode: str, sample: list[Path], size: float, p: Row) -> list[Row]:
    """The lineage stage alone: the sample's distinct SQL analysed in this process, then across a
    pool of one worker per core. Against P: the rate `index` cannot pass with lineage alone."""
    config = ParseConfig()
    reader = LocalReader()
    batch = Indexer(None, config).build_batch(
        [reader.read(str(path), 1 << 26) for path in sample], defer_lineage=True
    )
    versions = len(
        {v.version_hash for item in batch.indexed if item.parsed.view for v in item.parsed.view.versions}
    )
    requests = batch.lineage_requests
    started = time.perf_counter()
    for request in requests.values():
        extract_lineage(request, config.lineage)
    single = time.perf_counter() - started
    cores = os.cpu_count() or 1
    with WorkerPool(config, cores) as pool:
        started = time.perf_counter()
        pool.lineage(requests)
        every = time.perf_counter() - started
    calibration = cpu_scaling(cores)
    what = "lineage stage (the sample's distinct SQL)"
    pooled = Row(mode, f"{what}, {cores} workers", len(sample), every, size, versions)
    scaling = (
        f"{single / every:.2f}x 1 process (target >= 1.8x; this machine's own scaling of independent "
        f"CPU-bound processes: {calibration:.2f}x), {ratio(pooled, p)}"
    )
    return [
        Row(mode, f"{what}, 1 process", len(sample), single, size, versions),
        replace(pooled, ratio=scaling),
    ]


def _spin(loops: int) -> int:
    total = 0
    for i in range(loops):
        total += i * i % 7
    return total


def cpu_scaling(cores: int, loops: int = 10_000_000) -> float:
    """What `cores` processes of pure CPU work gain over one on this machine, now: the ceiling
    for any parallel stage measured in the same run (shared VMs give less than their core count)."""
    started = time.perf_counter()
    for _ in range(cores):
        _spin(loops)
    single = time.perf_counter() - started
    with ProcessPoolExecutor(cores) as pool:
        pool.submit(int).result()
        started = time.perf_counter()
        list(pool.map(_spin, [loops] * cores))
        parallel = time.perf_counter() - started
    return single / parallel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--views", type=int, default=200)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--r-files", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--modes", default="worst,realistic")
    parser.add_argument("--quick", action="store_true", help="a smoke run: skip the whole-warehouse index")
    parser.add_argument(
        "--work", type=Path, default=None, help="keep files here [default: a temporary directory]"
    )
    args = parser.parse_args()
    indexing_process()  # as `viewlineage index` runs: else the first run times pyarrow importing pandas
    work = args.work or Path(tempfile.mkdtemp(prefix="viewlineage-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"DuckDB {duckdb.__version__}, sqlglot {sqlglot.__version__}",
    )
    rows: list[Row] = []
    try:
        for mode in args.modes.split(","):
            rows += bench_mode(mode, args, work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows))


if __name__ == "__main__":
    main()
