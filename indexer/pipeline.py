"""The indexing loop: file reads -> parse -> lineage (memoised) -> Arrow batch -> store.

`Indexer` owns the memo caches and the store; the stages it calls are pure. Sources (`index`
listings, `watch`, `consume`) feed it `FileRead`s or read failures; every batch is one store
transaction.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import itertools
import os
import signal
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import pyarrow as pa

from viewlineage.sinks.store import Store

from .batches import Batch, IndexedFile, QuarantinedFile, Removal, concatenated
from .collector import collector_paused
from .config import CatalogMapEntry, ParseConfig, Settings
from .errors import ObjectMissing, ObjectTooLarge, QuarantineError, ReadError
from .lineage import Lineage, LineageRequest, extract_lineage
from .locations import normalize_location
from .parse import KnownVersion, ParsedFile, ParsedVersion, parse_metadata
from .read import LISTED_CHUNK, FileRead, ListedFile, Reader, listed_files, listed_table, reader_for
from .store_thread import StoreThread
from .tables import ParsedSnapshot

READ_ATTEMPTS = 3
ANNOUNCED_ATTEMPTS = 6
BULK_READS_PER_TASK = 16
"""Files each read task of `index` takes (see `read_all`)."""
PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal a process gets when its parent dies."""
KNOWN_CONTENT_LIMIT = 50_000
"""Hashes each memo remembers (~6 MB; the oldest are forgotten first): a view's next file repeats
its last 10 versions, so this covers 5,000 views changing at once. Each worker keeps its own, and a
memo full at 200,000 held ~23 MB, a fifth of a worker's memory; forgetting costs parsing again."""
COUNTED_VERSIONS_LIMIT = 10_000
"""New versions' hashes the pool's parent remembers to count each once: only two workers' adjacent
runs parse one version new twice (`contiguous_runs`), a batch or two apart at most."""


@dataclass
class IndexStats:
    """Counts for the summary line and the structured logs."""

    listed: int = 0
    indexed: int = 0
    already_indexed: int = 0
    missing: int = 0
    quarantined: int = 0
    table_files: int = 0
    views: set[str] = field(default_factory=set)
    new_versions: int = 0
    """Clean versions parsed new, each once per process (it is known from then on): a count, as a
    set of 10^6 hashes would be ~100 MB."""
    flawed_versions: set[str] = field(default_factory=set)
    """Versions with findings, parsed again in every file that holds them (few): by hash."""
    findings: Counter[str] = field(default_factory=Counter)
    lineage_computed: int = 0
    lineage_reused: int = 0

    def absorb(self, other: IndexStats) -> None:
        """Add a worker's counts (its `listed` and lineage counts are the caller's own, and its new
        versions are counted by hash: `Indexer.count_new_versions`)."""
        self.indexed += other.indexed
        self.missing += other.missing
        self.quarantined += other.quarantined
        self.table_files += other.table_files
        self.views |= other.views
        self.flawed_versions |= other.flawed_versions
        self.findings += other.findings

    def summary(self) -> dict[str, int]:
        return {
            "files": self.listed,
            "indexed": self.indexed,
            "already_indexed": self.already_indexed,
            "quarantined": self.quarantined,
            "missing": self.missing,
            "table_files": self.table_files,
            "views": len(self.views),
            "versions": self.new_versions + len(self.flawed_versions),
            "findings": sum(self.findings.values()),
            "lineage_computed": self.lineage_computed,
            "lineage_reused": self.lineage_reused,
        }


@dataclass(frozen=True, slots=True)
class ReadFailure:
    """A location that could not be turned into bytes."""

    location: str
    error: ReadError


def quarantine_read_failure(
    failure: ReadFailure, missing_is_quarantine: bool = False
) -> QuarantinedFile | None:
    """A read failure's quarantine row. A missing object is only quarantined (`object-missing`)
    when an event said it was created: a listing that races a delete has nothing to keep."""
    if isinstance(failure.error, ObjectMissing):
        if not missing_is_quarantine:
            return None
        return QuarantinedFile(failure.location, "object-missing", str(failure.error), None, None)
    reason = "over-size-limit" if isinstance(failure.error, ObjectTooLarge) else "unreadable"
    return QuarantinedFile(failure.location, reason, str(failure.error), None, None)


class BoundedSet:
    """Keys remembered up to `limit`, the oldest forgotten first: a memo that cannot grow without
    bound in a long-running follower. Forgetting only costs work: the key is computed again."""

    def __init__(self, limit: int = KNOWN_CONTENT_LIMIT) -> None:
        self.limit = limit
        self._keys: dict[str, None] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def update(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._keys[key] = None
        while len(self._keys) > self.limit:
            del self._keys[next(iter(self._keys))]


class Indexer:
    """Turns file reads into store batches, memoising lineage in the run and through the store.
    Without a store (a consumer that does not hold the write lock) the memo is the run's only."""

    def __init__(self, store: Store | None, config: ParseConfig, pool: WorkerPool | None = None) -> None:
        self.store = store
        self.config = config
        self.pool = pool
        """Where `ingest` parses and analyses, and `build_batch` (followers) analyses new SQL."""
        self.known_lineage = BoundedSet()
        """Lineage keys whose rows this process has put in a batch, or found stored."""
        self.known_content = BoundedSet()
        """Hashes of schemas and clean versions whose rows this process has put in a batch: files
        repeating them are parsed by hash only."""
        self.counted_versions = BoundedSet(COUNTED_VERSIONS_LIMIT)
        self.stats = IndexStats()

    def parse(self, read: FileRead) -> ParsedFile | QuarantinedFile:
        try:
            return parse_metadata(read.data, read.location, self.config, self.known_content)
        except QuarantineError as exc:
            return QuarantinedFile(read.location, exc.reason, str(exc), len(read.data), read.modified_ms)
        except Exception as exc:  # a bug or a pathological document must not stop a follower
            message = f"{type(exc).__name__}: {str(exc)[:200]}"
            return QuarantinedFile(read.location, "internal-error", message, len(read.data), read.modified_ms)

    def build_batch(
        self,
        items: Iterable[FileRead | ReadFailure],
        include_source: bool = True,
        missing_is_quarantine: bool = False,
        defer_lineage: bool = False,
        parsed: Mapping[str, ParsedFile | QuarantinedFile] | None = None,
    ) -> Batch:
        """With `defer_lineage`, the lineage the files need is left in `batch.lineage_requests` (bulk
        engines deduplicate it across the whole job first) instead of being computed here. `parsed`
        holds files the caller has parsed already, by location (`watch` parses to decide retries)."""
        batch = Batch(include_source=include_source)
        pending: dict[str, LineageRequest] = {}
        with collector_paused():
            for item in items:
                if isinstance(item, ReadFailure):
                    quarantined = quarantine_read_failure(item, missing_is_quarantine)
                    if quarantined is None:
                        self.stats.missing += 1
                    else:
                        batch.quarantined.append(quarantined)
                    continue
                result = parsed.get(item.location) if parsed else None
                result = result if result is not None else self.parse(item)
                if isinstance(result, QuarantinedFile):
                    batch.quarantined.append(result)
                    continue
                keys = self._lineage_keys(result, pending)
                batch.indexed.append(IndexedFile(item, result, keys))
                self.known_content.update(_new_content(result))
        if defer_lineage:
            batch.lineage_requests = pending
        else:
            batch.lineage = self.analyse(self.unknown_lineage(pending, include_source))
        self.count(batch)
        return batch

    def unknown_lineage(
        self, requests: dict[str, LineageRequest], include_source: bool = True
    ) -> dict[str, LineageRequest]:
        """The requests neither this process nor the store has answered, which the caller now
        computes: they are remembered as answered."""
        fresh = {key for key in requests if key not in self.known_lineage}
        stored = self.store.known_lineage(fresh) if include_source and self.store is not None else set()
        todo = sorted(fresh - stored)
        self.known_lineage.update(fresh)
        self.stats.lineage_reused += len(requests) - len(todo)
        self.stats.lineage_computed += len(todo)
        return {key: requests[key] for key in todo}

    def analyse(self, requests: dict[str, LineageRequest]) -> dict[str, Lineage]:
        """Lineage of new SQL: across the pool when there is one and more than one text to analyse."""
        if self.pool is not None and len(requests) > 1:
            return self.pool.lineage(requests)
        return {key: extract_lineage(request, self.config.lineage) for key, request in requests.items()}

    def _lineage_keys(
        self, parsed: ParsedFile, pending: dict[str, LineageRequest]
    ) -> dict[tuple[str, int], str]:
        keys: dict[tuple[str, int], str] = {}
        view = parsed.view
        if view is None:
            return keys
        view_catalog = view.name.catalog if view.name else None
        for version in view.versions:
            if isinstance(version, KnownVersion):
                continue
            for rep in version.representations:
                if rep.dialect is None or rep.sql is None:
                    continue
                request = LineageRequest(
                    rep.sql, rep.dialect, version.default_catalog, version.default_namespace, view_catalog
                )
                key = request.key(self.config.lineage)
                pending.setdefault(key, request)
                keys[(version.version_hash, rep.ordinal)] = key
        return keys

    def count(self, batch: Batch) -> None:
        self.stats.quarantined += len(batch.quarantined)
        for item in batch.indexed:
            self.stats.indexed += 1
            self.stats.findings.update(f.code for f in item.parsed.findings)
            if item.parsed.view is None:
                self.stats.table_files += 1
                continue
            self.stats.views.add(item.parsed.view.view_id)
            for version in item.parsed.view.versions:
                if isinstance(version, ParsedVersion) and version.clean:
                    self.stats.new_versions += 1
                elif isinstance(version, ParsedVersion):
                    self.stats.flawed_versions.add(version.version_hash)
        for lineage in batch.lineage.values():
            self.stats.findings.update(f.code for f in lineage.findings)

    def count_new_versions(self, hashes: Iterable[str]) -> None:
        """Clean versions a worker parsed new, each counted once."""
        fresh = [key for key in dict.fromkeys(hashes) if key not in self.counted_versions]
        self.stats.new_versions += len(fresh)
        self.counted_versions.update(fresh)

    def ingest(
        self,
        items: Iterable[FileRead | ReadFailure],
        batch_files: int,
        progress: Callable[[int], None] | None = None,
        include_source: bool = True,
    ) -> IndexStats:
        """Store `items` in batches of `batch_files`, one transaction each, written on a store
        thread while the next batch is read, parsed and analysed (DuckDB releases the GIL). With a
        worker pool the workers parse and analyse SQL: one batch parses, one is analysed, one
        waits for the store, one is written. Only one waits, so memory stays flat whatever the
        input, and batches are not merged: one batch's lookups by key stay under DuckDB's
        index-scan limit (`INDEXED_LOOKUP_KEYS`)."""
        store, pool = self.store, self.pool
        assert store is not None, "ingest needs the store"
        writes: StoreThread[tuple[dict[str, pa.Table], int]] = StoreThread(
            functools.partial(_write_queued, store, progress), max_queued=1
        )
        chunks = _chunks(items, batch_files)
        try:
            if pool is None:
                for chunk in chunks:
                    batch = self.build_batch(chunk, include_source=include_source)
                    writes.submit((batch.to_arrow(), len(chunk)))
                return self.stats
            parsing: deque[tuple[list[Future[ParsedShard]], int]] = deque()
            analysing: deque[PendingBatch] = deque()
            for upcoming in itertools.chain(chunks, [None]):
                if upcoming is not None:
                    parsing.append((pool.parse(upcoming, include_source), len(upcoming)))
                while len(parsing) > (1 if upcoming is not None else 0):
                    analysing.append(pool.analyse(self, *parsing.popleft(), include_source))
                while len(analysing) > (1 if upcoming is not None else 0):
                    pending = analysing.popleft()
                    writes.submit((pending.tables(self), pending.files))
            return self.stats
        finally:
            writes.close()


def _write_queued(
    store: Store, progress: Callable[[int], None] | None, queued: list[tuple[dict[str, pa.Table], int]]
) -> None:
    """On the store thread: each batch queued (one at most), one transaction each."""
    for tables, files in queued:
        store.write_tables(tables)
        if progress is not None:
            progress(files)


def _chunks(items: Iterable[FileRead | ReadFailure], size: int) -> Iterator[list[FileRead | ReadFailure]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


_worker: Indexer | None = None
"""A pool worker's own indexer (its memo of known versions), made by the pool's initializer."""


@dataclass(frozen=True, slots=True)
class ParsedShard:
    """A worker's part of a batch: every table but lineage's, and the lineage it needs."""

    tables: dict[str, pa.Table]
    requests: dict[str, LineageRequest]
    stats: IndexStats
    new_versions: list[str]
    """Hashes of the clean versions parsed new (`stats` leaves them to be counted by hash)."""


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


def _parse_shard(items: list[FileRead | ReadFailure], include_source: bool) -> ParsedShard:
    assert _worker is not None, "the pool initializer makes the worker's indexer"
    _worker.stats = IndexStats()
    batch = _worker.build_batch(items, include_source=include_source, defer_lineage=True)
    new_versions = [
        version.version_hash
        for item in batch.indexed
        if item.parsed.view is not None
        for version in item.parsed.view.versions
        if isinstance(version, ParsedVersion) and version.clean
    ]
    return ParsedShard(batch.to_arrow(), batch.lineage_requests, _worker.stats, new_versions)


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
        self, items: Sequence[FileRead | ReadFailure], include_source: bool
    ) -> list[Future[ParsedShard]]:
        """The runs go to the workers in order, then in reverse for the next batch: the view a
        batch ends with starts the next one on the same worker."""
        self.batches += 1
        processes = self.processes if self.batches % 2 else self.processes[::-1]
        return [
            process.submit(_parse_shard, shard, include_source)
            for process, shard in zip(processes, contiguous_runs(items, self.workers), strict=True)
            if shard
        ]

    def analyse(
        self, indexer: Indexer, shards: list[Future[ParsedShard]], files: int, include_source: bool
    ) -> PendingBatch:
        """Once a batch is parsed, send the lineage nobody has answered yet across the pool."""
        parsed = [future.result() for future in shards]
        requests = {key: request for shard in parsed for key, request in shard.requests.items()}
        return PendingBatch(
            parsed, self.submit_lineage(indexer.unknown_lineage(requests, include_source)), files
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


@dataclass(frozen=True, slots=True)
class PendingBatch:
    parsed: list[ParsedShard]
    analysed: list[Future[dict[str, Lineage]]]
    files: int

    def tables(self, indexer: Indexer) -> dict[str, pa.Table]:
        """The batch's tables, once its lineage is analysed; its counts join `indexer`'s."""
        lineage = {key: found for future in self.analysed for key, found in future.result().items()}
        for shard in self.parsed:
            indexer.stats.absorb(shard.stats)
            indexer.count_new_versions(shard.new_versions)
        lineage_batch = Batch(lineage=lineage)
        indexer.count(lineage_batch)
        return concatenated([shard.tables for shard in self.parsed] + [lineage_batch.to_arrow()])


@contextlib.contextmanager
def worker_pool(settings: Settings, config: ParseConfig | None = None) -> Iterator[WorkerPool | None]:
    """`workers` processes; None (all in this process) when that is 1 or the machine has one core."""
    if settings.worker_count <= 1:
        yield None
        return
    with WorkerPool(config or settings.parse_config(), settings.worker_count) as pool:
        yield pool


def _new_content(parsed: ParsedFile) -> list[str]:
    """Hashes of the schemas, clean versions and snapshots a file brought: later files that repeat
    them are parsed by hash."""
    if parsed.table is not None:
        fresh = [schema.schema_hash for schema in parsed.table.schemas]
        return fresh + [s.snapshot_hash for s in parsed.table.snapshots if isinstance(s, ParsedSnapshot)]
    assert parsed.view is not None
    fresh = [schema.schema_hash for schema in parsed.view.schemas]
    return fresh + [v.version_hash for v in parsed.view.versions if isinstance(v, ParsedVersion) and v.clean]


def read_with_retries(
    read: Callable[[], FileRead], location: str, attempts: int = READ_ATTEMPTS, announced: bool = False
) -> FileRead | ReadFailure:
    """Bounded retries for transient errors; terminal ones fail at once. An `announced` object (an
    event said it was created) that is missing is retried too: SeaweedFS publishes its notification
    before the PUT has finished, so the first GET can come too early; it gets a few seconds."""
    attempts = max(attempts, ANNOUNCED_ATTEMPTS) if announced else attempts
    for attempt in range(attempts):
        try:
            return read()
        except ObjectMissing as exc:
            if not announced or attempt == attempts - 1:
                return ReadFailure(location, exc)
            time.sleep(0.1 * 2**attempt)
        except ObjectTooLarge as exc:
            return ReadFailure(location, exc)
        except ReadError as exc:
            if attempt == attempts - 1:
                return ReadFailure(location, exc)
            time.sleep(0.1 * 2**attempt)
    raise AssertionError("unreachable")


def with_roots(config: ParseConfig, roots: Iterable[str]) -> ParseConfig:
    """Add a catalog-less catalog-map entry for each indexed root no entry covers, so views under
    it are named relative to it."""
    extra = tuple(
        CatalogMapEntry(root.rstrip("/"), None) for root in roots if config.catalog_for(root) is None
    )
    return replace(config, catalog_map=config.catalog_map + extra) if extra else config


def index_locations(
    locations: Iterable[str],
    settings: Settings,
    on_listed: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> IndexStats:
    """List every metadata file under `locations`, read the new ones in parallel and store them.
    `progress` hears of skipped files from this thread and of stored ones from the store thread,
    one call at a time."""
    if progress is not None:
        progress = _one_at_a_time(progress)
    roots = [normalize_location(location) for location in locations]
    config = with_roots(settings.parse_config(), roots)
    with (
        worker_pool(settings, config) as pool,  # forked first: workers inherit none of what follows
        Store(settings.db, settings.replica_interval, settings.store_memory, deferred_spans=True) as store,
    ):
        readers = [reader_for(root, settings.s3_endpoint) for root in roots]
        listings = [listed_table(reader.list(root)) for root, reader in zip(roots, readers, strict=True)]
        store.record_roots(roots)
        indexer = Indexer(store, config, pool)
        indexer.stats.listed = sum(table.num_rows for table in listings)
        if on_listed is not None:
            on_listed(indexer.stats.listed)
        chunks = deque(
            chunk.append_column("root", pa.repeat(pa.scalar(number, pa.int32()), chunk.num_rows))
            for number, table in enumerate(listings)
            for chunk in table.to_batches(LISTED_CHUNK)
        )
        del listings
        todo = _unindexed_files(store, readers, chunks, indexer.stats, progress)
        reads = read_all(todo, settings, files_per_task=BULK_READS_PER_TASK)
        return indexer.ingest(reads, settings.batch_files, progress)


def _one_at_a_time(callback: Callable[[int], None]) -> Callable[[int], None]:
    lock = threading.Lock()

    def serialised(value: int) -> None:
        with lock:
            callback(value)

    return serialised


def _unindexed_files(
    store: Store,
    readers: list[Reader],
    chunks: deque[pa.RecordBatch],
    stats: IndexStats,
    progress: Callable[[int], None] | None,
) -> Iterator[tuple[Reader, ListedFile]]:
    """The listing's files not indexed yet, with the reader of their root (`root`: its position),
    looked up up to `LISTED_CHUNK` at a time across roots: a lookup costs ~10 ms on any store,
    and a run over each of a warehouse's namespaces or views names many small roots. Each chunk is
    dropped once its files are handed out, so the listing (10^6 locations: ~120 MB of Arrow)
    shrinks as the run goes instead of living, with a copy of its unindexed rows, to the end."""
    while chunks:
        group = [chunks.popleft()]
        rows = group[0].num_rows
        while chunks and rows + chunks[0].num_rows <= LISTED_CHUNK:
            group.append(chunks.popleft())
            rows += group[-1].num_rows
        listed = pa.Table.from_batches(group)
        del group
        unindexed = store.unindexed(listed)
        known = listed.num_rows - unindexed.num_rows
        del listed
        stats.already_indexed += known
        if progress is not None and known:
            progress(known)
        for root, item in zip(unindexed.column("root").to_pylist(), listed_files(unindexed), strict=True):
            yield readers[root], item


def read_all(
    todo: Iterable[tuple[Reader, ListedFile]],
    settings: Settings,
    announced: bool = False,
    files_per_task: int = 1,
) -> Iterator[FileRead | ReadFailure]:
    """Read files in parallel (`read_workers` threads), in order, with bounded retries. At most
    `batch_files` reads run ahead of the consumer, so memory stays flat whatever the listing's size.
    A bulk listing reads several files per task (`files_per_task`): from the page cache a read
    costs less than handing it to a thread."""

    def read_some(entries: list[tuple[Reader, ListedFile]]) -> list[FileRead | ReadFailure]:
        return [
            read_with_retries(
                functools.partial(reader.read, listed.location, settings.max_file_bytes, listed),
                listed.location,
                announced=announced,
            )
            for reader, listed in entries
        ]

    window = max(settings.batch_files, settings.read_workers * 4) // files_per_task or 1
    entries = iter(todo)
    with ThreadPoolExecutor(settings.read_workers) as pool:
        ahead: deque[Future[list[FileRead | ReadFailure]]] = deque()
        while chunk := list(itertools.islice(entries, files_per_task)):
            ahead.append(pool.submit(read_some, chunk))
            if len(ahead) >= window:
                yield from ahead.popleft().result()
        while ahead:
            yield from ahead.popleft().result()


def gap_batch(
    indexer: Indexer, reader: Reader, prefix: str, settings: Settings, now_ms: int
) -> tuple[Batch, Counter[str]]:
    """Reconciliation: list `prefix` again, read the metadata files the store lacks, and record as
    removed (at `now_ms`, source `reconcile`) the stored ones that are gone and had no removal yet.
    Needs the store: only the process holding it reconciles."""
    store = indexer.store
    assert store is not None, "reconciling needs the store"
    listed = {item.location: item for item in reader.list(prefix)}
    known = store.indexed(listed)
    reads = list(read_all([(reader, item) for loc, item in listed.items() if loc not in known], settings))
    batch = indexer.build_batch(reads)
    vanished = store.without_removal(prefix) - set(listed)
    batch.removals.extend(Removal(location, now_ms, "reconcile") for location in sorted(vanished))
    outcomes = Counter({"reconciled": len(batch.indexed), "removed": len(vanished)})
    outcomes["quarantined"] += len(batch.quarantined)
    return batch, outcomes


def reindex(settings: Settings) -> IndexStats:
    """Rebuild every derived row from the stored documents, with the current configuration."""
    config = settings.parse_config()
    with Store(
        settings.db, settings.replica_interval, settings.store_memory, rederiving=True, deferred_spans=True
    ) as store:
        config = with_roots(config, store.roots())
        store.clear_derived()
        reads = (
            FileRead(location, document, modified_ms, source)
            for chunk in store.stored_documents(settings.batch_files)
            for location, document, modified_ms, source in chunk
        )
        with worker_pool(settings, config) as pool:
            indexer = Indexer(store, config, pool)
            indexer.ingest(reads, settings.batch_files, include_source=False)
        store.reindexed()
        indexer.stats.listed = indexer.stats.indexed
        return indexer.stats


__all__ = ["IndexStats", "Indexer", "index_locations", "reindex"]
