"""The worker pool: same store as one process, workers that inherit nothing to copy, and that die
with the process that forked them."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from viewlineage.indexer.errors import ObjectMissing
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.pipeline import indexer as indexing_loop
from viewlineage.indexer.pipeline import reads
from viewlineage.indexer.pipeline.collector import collector_paused
from viewlineage.indexer.pipeline.indexer import Indexer
from viewlineage.indexer.pipeline.reads import ReadFailure
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.indexer.pipeline.workers import WorkerPool, contiguous_runs
from viewlineage.indexer.sources.read import FileRead, ListedFile, LocalReader

from .conftest import settings_for
from .generate import generate
from .stores import snapshot


def test_a_pool_of_workers_indexes_exactly_what_one_process_does(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    generate(root, views=12, commits=30, seed=9, namespaces=3)
    for workers in (1, 2):
        stats = index_locations(
            [str(root)], settings_for(tmp_path / f"{workers}.duckdb", workers=workers, batch_files=50)
        )
        assert (stats.indexed, stats.quarantined, stats.summary()["versions"]) == (
            12 * 30 + 10 * 3 + 1,
            4,
            12 * 30 + 1,
        )  # views, tables, conflict
    assert snapshot(tmp_path / "1.duckdb") == snapshot(tmp_path / "2.duckdb")


def test_a_batch_is_split_into_contiguous_runs_of_equal_bytes() -> None:
    """Parsing costs about what a file weighs: the runs are balanced by bytes, and each is a
    stretch of the sorted batch, so a view's files stay together."""
    sizes = [100, 100, 100, 700, 50, 50, 300, 300, 200, 100]
    items: list[FileRead | ReadFailure] = [
        FileRead(f"/w/{n:02d}.metadata.json", b"x" * size, None, None) for n, size in enumerate(sizes)
    ]
    items.append(ReadFailure("/w/99.metadata.json", ObjectMissing("/w/99.metadata.json", "gone")))
    runs = contiguous_runs(items, 2)
    assert [[item.location[3:5] for item in run] for run in runs] == [
        ["00", "01", "02", "03"],
        ["04", "05", "06", "07", "08", "09", "99"],
    ]
    assert [sum(len(item.data) for item in run if isinstance(item, FileRead)) for run in runs] == [1000, 1000]
    assert contiguous_runs(items[:1], 3) == [[], items[:1], []]  # by its middle
    empty: list[FileRead | ReadFailure] = [
        FileRead(f"/w/{n}.metadata.json", b"", None, None) for n in range(4)
    ]
    assert contiguous_runs(empty, 2) == [empty[:2], empty[2:]]  # empty files weigh a byte


def test_workers_start_with_the_parents_objects_frozen() -> None:
    # Unfrozen, a worker's garbage collector would touch every inherited object and so copy the
    # parent's pages: at 10^6 listed files, hundreds of MB per worker.
    inherited = [(str(i), i) for i in range(10_000)]
    with WorkerPool(ParseConfig(), 2) as pool:
        frozen = [process.submit(gc.get_freeze_count).result() for process in pool.processes]
    assert min(frozen) >= len(inherited)
    assert gc.get_freeze_count() == 0  # the parent unfreezes once its workers exist


def test_parsing_leaves_no_cyclic_garbage(tmp_path: Path, sample_warehouse: Path) -> None:
    """Batches are parsed and turned into rows with the cyclic collector paused
    (`collector_paused`): what they leave must go with reference counts alone."""
    root = tmp_path / "warehouse"
    generate(root, views=6, commits=12, seed=5, namespaces=2)
    reader = LocalReader()
    locations = sorted(str(p) for base in (root, sample_warehouse) for p in base.rglob("*.metadata.json"))
    reads = [reader.read(location, 1 << 26) for location in locations]
    collected = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(2):  # the first pass also leaves what libraries build lazily on first use
            batch = Indexer(None, ParseConfig()).build_batch(reads, defer_lineage=True)
            assert len(batch.indexed) > 90, len(batch.indexed)
            tables = batch.to_arrow()
            del batch, tables
            collected.append(gc.collect())
    finally:
        gc.enable()
    assert collected[1] == 0, collected


def test_the_collector_runs_again_when_the_last_pause_in_any_thread_ends() -> None:
    entered, release = threading.Event(), threading.Event()

    def other_thread() -> None:
        with collector_paused():
            entered.set()
            release.wait(10)

    assert gc.isenabled()
    thread = threading.Thread(target=other_thread)
    with collector_paused():
        thread.start()
        entered.wait(10)
    assert not gc.isenabled()  # the other thread's pause goes on
    release.set()
    thread.join()
    assert gc.isenabled()


def test_workers_die_with_their_parent() -> None:
    script = (
        "import os, sys, time\n"
        "from viewlineage.indexer.parse.config import ParseConfig\n"
        "from viewlineage.indexer.pipeline.workers import WorkerPool\n"
        "pool = WorkerPool(ParseConfig(), 2)\n"
        "print(' '.join(str(p) for e in pool.processes for p in e._processes), flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(workers) == 2
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in workers if _alive(pid)] == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_followers_analyse_new_sql_on_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `watch` and `consume` build batches in the main process; the SQL in them goes to the workers.
    root = tmp_path / "warehouse"
    generate(root, views=4, commits=3, seed=5, namespaces=2)
    reads = [LocalReader().read(f.location, 10**8) for f in LocalReader().list(str(root))]
    config = ParseConfig()
    alone = Indexer(None, config).build_batch(reads)
    with WorkerPool(config, 2) as pool:
        # Forked before the patch, the workers keep the real analysis; this process must not run it.
        monkeypatch.setattr(indexing_loop, "extract_lineage", _not_here)
        pooled = Indexer(None, config, pool).build_batch(reads)
    assert len(alone.lineage) == 16
    assert pooled.lineage == alone.lineage


def _not_here(*_: object) -> None:
    raise AssertionError("SQL analysed in the main process")


def test_an_indexing_process_does_not_load_pandas(tmp_path: Path) -> None:
    """pyarrow would import pandas (44 MiB a process) on the first Arrow array built from a list;
    `index` refuses it before its workers fork, so they inherit the refusal. Checked here in the
    indexing process, after a run with two workers."""
    root = tmp_path / "warehouse"
    generate(root, views=3, commits=5, seed=2, namespaces=1)
    script = (
        "import importlib.util, sys\n"
        "from viewlineage.queries.cli import cli\n"
        "assert importlib.util.find_spec('pandas') is not None, 'pandas is installed here'\n"
        f"cli(['--db', {str(tmp_path / 'store.duckdb')!r}, 'index', {str(root)!r}, '--workers', '2',"
        " '--format', 'json'], standalone_mode=False)\n"
        "print('pandas loaded:', 'pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"files": 30, "indexed": 26,' in done.stdout  # 4 malformed files among them
    assert done.stdout.rstrip().endswith("pandas loaded: False")


class _Clock:
    """`time` as `reads` sees it: a sleep moves the clock on at once."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_missing_announced_objects_share_one_window_of_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the sixteenth adversarial trial: each missing object an event announced was read
    six times over 3.1 s, so one Kafka message naming 3,000 of them held `consume` for 20 minutes
    (and good files behind it). The reads of a batch now share the window: the first missing object
    is retried through it, the ones read after it once."""
    clock = _Clock()
    monkeypatch.setattr(reads, "time", clock)
    written = tmp_path / "00001-present.metadata.json"
    written.write_bytes(b"{}")
    locations = [str(tmp_path / f"{n:05d}-missing.metadata.json") for n in range(40)]
    todo = [(LocalReader(), ListedFile(location)) for location in [*locations, str(written)]]
    settings = settings_for(tmp_path / "store.duckdb", f"{tmp_path}=prod", read_workers=1)
    results = list(reads.read_all(todo, settings, announced=True))
    assert [type(result).__name__ for result in results] == ["ReadFailure"] * 40 + ["FileRead"]
    assert all(isinstance(result.error, ObjectMissing) for result in results[:40])  # type: ignore[union-attr]
    assert clock.sleeps == [0.1, 0.2, 0.4, 0.8, 1.6]
