"""Followers store batch N on a thread of their own while they read and parse batch N+1."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from viewlineage.indexer.batches import Batch
from viewlineage.indexer.health import Health
from viewlineage.indexer.pipeline import Indexer, with_roots
from viewlineage.indexer.read import LocalReader
from viewlineage.indexer.sources.watch import _Loop
from viewlineage.indexer.sources.writer import StoreThread
from viewlineage.sinks.store import Store

from .conftest import settings_for
from .generate import generate


def test_jobs_run_one_at_a_time_in_order_and_their_errors_surface() -> None:
    writes = StoreThread()
    done: list[tuple[int, str]] = []
    release = threading.Event()

    def job(number: int) -> None:
        release.wait(5)
        done.append((number, threading.current_thread().name.split("_")[0]))

    writes.submit(lambda: job(1))
    assert done == []  # submit does not wait for its own job
    release.set()
    writes.submit(lambda: job(2))  # ... but for the one before
    assert done == [(1, "store")]
    writes.wait()
    assert done == [(1, "store"), (2, "store")]
    writes.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        writes.wait()
    writes.close()


def test_watch_parses_the_next_batch_while_the_last_one_is_stored(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    generated = generate(root, views=2, commits=6, seed=2, namespaces=1)
    files = sorted(str(path) for path in generated.files if path not in generated.malformed)
    settings = settings_for(tmp_path / "store.duckdb", f"{root}=prod")
    events: list[tuple[str, float]] = []
    with Store(settings.db, replica_interval=None) as store:
        indexer = Indexer(store, with_roots(settings.parse_config(), [str(root)]))
        build, write = indexer.build_batch, store.write

        def timed_build(*args: Any, **kwargs: Any) -> Batch:
            batch = build(*args, **kwargs)
            events.append(("built", time.monotonic()))
            return batch

        def slow_write(batch: Batch) -> None:
            events.append(("write started", time.monotonic()))
            time.sleep(0.5)
            write(batch)
            events.append(("write ended", time.monotonic()))

        indexer.build_batch = timed_build  # type: ignore[method-assign]
        store.write = slow_write  # type: ignore[method-assign]
        loop = _Loop(
            indexer, store, LocalReader(), str(root), settings, Health("watch", stream=io.StringIO())
        )
        loop._batch(files[:12], [])
        loop._batch(files[12:], [])
        loop.writes.close()
        stored = store.conn.execute("SELECT count(*) FROM view_files").fetchone()
    at = {what: [moment for name, moment in events if name == what] for what, _ in events}
    assert [len(at["built"]), len(at["write started"]), len(at["write ended"])] == [2, 2, 2]
    assert at["built"][1] < at["write ended"][0]  # batch 2 was parsed while batch 1 was stored
    assert at["write ended"][0] <= at["write started"][1]  # and the writes did not overlap
    assert (len(files), stored) == (23, (2 * 6 + 1,))  # the view files, with a conflicting copy
