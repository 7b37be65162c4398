"""Followers store what they built on a thread of their own while they read and parse what comes
next; batches built during a transaction go into the next one together."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from viewlineage.indexer.followers.watch import _Loop
from viewlineage.indexer.pipeline.health import Health
from viewlineage.indexer.pipeline.indexer import Indexer
from viewlineage.indexer.pipeline.rows import Batch
from viewlineage.indexer.pipeline.runs import with_roots
from viewlineage.indexer.pipeline.store_thread import StoreThread
from viewlineage.indexer.sources.read import LocalReader
from viewlineage.sinks.store import SetAside, Store

from .conftest import settings_for
from .generate import generate


def test_what_queues_during_a_write_goes_into_the_next_one_in_order() -> None:
    started, release = threading.Event(), threading.Event()
    written: list[tuple[list[int], str]] = []

    def write(payloads: list[int]) -> None:
        started.set()
        release.wait(5)
        written.append((payloads, threading.current_thread().name))

    writes = StoreThread(write, max_queued=2)
    writes.submit(1)
    assert started.wait(5) and written == []  # submit does not wait for its own write
    writes.submit(2)
    writes.submit(3)  # both queue while 1 is written
    blocked = threading.Thread(target=writes.submit, args=(4,))
    blocked.start()
    blocked.join(0.3)
    assert blocked.is_alive()  # two already wait: a third waits for room
    release.set()
    blocked.join(5)
    writes.wait()
    assert written == [([1], "store"), ([2, 3], "store"), ([4], "store")]
    writes.close()


def test_a_failed_write_surfaces_once_in_the_caller() -> None:
    writes: StoreThread[int] = StoreThread(lambda payloads: [1 / 0 for _ in payloads])
    writes.submit(1)
    with pytest.raises(ZeroDivisionError):
        writes.wait()
    writes.wait()  # raised once: the caller decides what follows
    writes.submit(2)
    with pytest.raises(ZeroDivisionError):
        writes.close()


def test_watch_parses_the_next_batches_while_the_last_one_is_stored(tmp_path: Path) -> None:
    """Three batches, the first stored slowly: the other two are built meanwhile and stored
    together in one transaction; each still gets its own log line."""
    root = tmp_path / "warehouse"
    generated = generate(root, views=2, commits=6, seed=2, namespaces=1)
    files = sorted(str(path) for path in generated.files if path not in generated.malformed)
    settings = settings_for(tmp_path / "store.duckdb", f"{root}=prod")
    events: list[tuple[str, float]] = []
    written: list[int] = []
    log = io.StringIO()
    with Store(settings.db, replica_interval=None) as store:
        indexer = Indexer(store, with_roots(settings.parse_config(), [str(root)]))
        build, write = indexer.build_batch, store.write_tables

        def timed_build(*args: Any, **kwargs: Any) -> Batch:
            batch = build(*args, **kwargs)
            events.append(("built", time.monotonic()))
            return batch

        def slow_write(
            tables: dict[str, pa.Table], resumable_children: bool = False, follower: bool = False
        ) -> SetAside:
            events.append(("write started", time.monotonic()))
            time.sleep(0.5)
            set_aside = write(tables, resumable_children, follower)
            written.append(tables["files"].num_rows)
            events.append(("write ended", time.monotonic()))
            return set_aside

        indexer.build_batch = timed_build  # type: ignore[method-assign]
        store.write_tables = slow_write  # type: ignore[method-assign]
        loop = _Loop(indexer, store, LocalReader(), str(root), settings, Health("watch", stream=log))
        for chunk in (files[:12], files[12:18], files[18:]):
            loop._batch(chunk, [])
        loop.writes.close()
        stored = store.conn.execute("SELECT count(*) FROM view_files").fetchone()
    at = {what: [moment for name, moment in events if name == what] for what, _ in events}
    assert [len(at["built"]), len(at["write started"]), len(at["write ended"])] == [3, 2, 2]
    assert at["built"][2] < at["write ended"][0]  # batches 2 and 3 were parsed while 1 was stored
    assert at["write ended"][0] <= at["write started"][1]  # and the writes did not overlap
    assert written == [12, 11]  # batches 2 and 3 in one transaction
    assert [line.split()[-1] for line in log.getvalue().splitlines() if line.startswith("batch")] == [
        "files=12",
        "files=6",
        "files=5",
    ]
    assert (len(files), stored) == (23, (2 * 6 + 1,))  # the view files, with a conflicting copy
