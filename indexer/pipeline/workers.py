"""Parsing and SQL analysis on several cores: one single-process executor per worker, each with
its own `Indexer` and so its own memo of known versions."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor

import pyarrow as pa

from viewlineage.indexer.config import Settings
from viewlineage.indexer.lineage.tables import Lineage, LineageRequest, extract_lineage
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.parse.metadata import ParsedVersion
from viewlineage.indexer.pipeline.indexer import Indexer, IndexStats, ParsedShard, PendingBatch
from viewlineage.indexer.pipeline.reads import ReadFailure
from viewlineage.indexer.sources.read import FileRead

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal a process gets when its parent dies."""


_worker: Indexer | None = None
"""A pool worker's own indexer (its memo of known versions), made by the pool's initializer."""


def _start_worker(config: ParseConfig, parent: int) -> None:
    global _worker
    if sys.platform == "linux":  # die with the parent: a SIGKILLed follower leaves no workers behind
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)
    # Arrow's default allocator keeps freed memory for reuse; a long-running worker hands every
    # batch's tables back through pickling, so the system allocator keeps its footprint flat.
    pa.set_memory_pool(pa.system_memory_pool())
    _worker = Indexer(None, config)


def _parse_shard(
    items: list[FileRead | ReadFailure], include_source: bool, max_bytes: int | None
) -> ParsedShard:
    assert _worker is not None, "the pool initializer makes the worker's indexer"
    _worker.stats = IndexStats()
    batch = _worker.build_batch(items, include_source=include_source, defer_lineage=True, max_bytes=max_bytes)
    tables = _worker.tables(batch)
    new_versions = [
        version.version_hash
        for item in batch.indexed
        if item.parsed.view is not None
        for version in item.parsed.view.versions
        if isinstance(version, ParsedVersion) and version.clean
    ]
    return ParsedShard(tables, batch.lineage_requests, _worker.stats, new_versions, batch.deferred)


def _analyse(requests: list[tuple[str, LineageRequest]], config: ParseConfig) -> dict[str, Lineage]:
    return {key: extract_lineage(request, config.lineage) for key, request in requests}


class WorkerPool:
    """Parsing and SQL analysis on several cores. A batch's files are split into contiguous runs of
    equal size (`contiguous_runs`); lineage goes through the main process's memo and the store's
    before a worker computes it, in slices of equal count."""

    def __init__(self, config: ParseConfig, workers: int) -> None:
        self.config = config
        self.workers = workers
        # One single-process executor per worker, so that shard i always meets process i (a shared
        # executor hands a task to whichever process is idle, and the memos would miss).
        self.processes = [
            ProcessPoolExecutor(1, initializer=_start_worker, initargs=(config, os.getpid()))
            for _ in range(workers)
        ]
        self.batches = 0
        # The first task forks a worker: do it now, before reader or consumer threads exist.
        # Frozen objects are left alone by the children's garbage collector, which would otherwise
        # touch (and so copy) every page of what the parent holds, a listing of 10^6 files say.
        gc.freeze()
        try:
            for process in self.processes:
                process.submit(int).result()
        finally:
            gc.unfreeze()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        for process in self.processes:
            process.shutdown(cancel_futures=True)

    def parse(
        self, items: Sequence[FileRead | ReadFailure], include_source: bool, max_bytes: int | None = None
    ) -> list[Future[ParsedShard]]:
        """The runs go to the workers in order, then in reverse for the next batch: the view a
        batch ends with starts the next one on the same worker. Each worker takes its share of
        `max_bytes`."""
        self.batches += 1
        processes = self.processes if self.batches % 2 else self.processes[::-1]
        share = None if max_bytes is None else max(1, max_bytes // self.workers)
        return [
            process.submit(_parse_shard, shard, include_source, share)
            for process, shard in zip(processes, contiguous_runs(items, self.workers), strict=True)
            if shard
        ]

    def analyse(
        self, indexer: Indexer, shards: list[Future[ParsedShard]], files: int, include_source: bool
    ) -> PendingBatch:
        """Once a batch is parsed, send the lineage nobody has answered yet across the pool."""
        parsed = [future.result() for future in shards]
        requests = {key: request for shard in parsed for key, request in shard.requests.items()}
        stored = files - sum(len(shard.deferred) for shard in parsed)
        return PendingBatch(
            parsed, self.submit_lineage(indexer.unknown_lineage(requests, include_source)), stored
        )

    def submit_lineage(self, requests: dict[str, LineageRequest]) -> list[Future[dict[str, Lineage]]]:
        """The requests in one slice per worker (sorted by key: the same split every run)."""
        ordered = sorted(requests.items())
        slices = [ordered[i :: self.workers] for i in range(self.workers)]
        return [
            process.submit(_analyse, part, self.config)
            for process, part in zip(self.processes, slices, strict=True)
            if part
        ]

    def lineage(self, requests: dict[str, LineageRequest]) -> dict[str, Lineage]:
        return {
            key: found for future in self.submit_lineage(requests) for key, found in future.result().items()
        }


def contiguous_runs(
    items: Sequence[FileRead | ReadFailure], parts: int
) -> list[list[FileRead | ReadFailure]]:
    """`items` in order, in `parts` contiguous runs of about equal bytes (parsing costs about what
    a file weighs). A listing is sorted, so a view's files stay together and meet one worker's
    memo of known versions, except where a run ends: the next worker parses that view's last
    versions once more. (Sharding by directory kept each view on one worker, but a batch holds a
    few views, and the busier worker had ~62% of the bytes.)"""
    weights = [max(1, len(item.data)) if isinstance(item, FileRead) else 1 for item in items]
    total = sum(weights)
    runs: list[list[FileRead | ReadFailure]] = [[] for _ in range(parts)]
    before = 0
    for item, weight in zip(items, weights, strict=True):
        runs[min(parts - 1, (2 * before + weight) * parts // (2 * total))].append(item)  # by its middle
        before += weight
    return runs


@contextlib.contextmanager
def worker_pool(settings: Settings, config: ParseConfig | None = None) -> Iterator[WorkerPool | None]:
    """`workers` processes; None (all in this process) when that is 1 or the machine has one core."""
    if settings.worker_count <= 1:
        yield None
        return
    with WorkerPool(config or settings.parse_config(), settings.worker_count) as pool:
        yield pool
