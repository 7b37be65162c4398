"""The indexing loop: file reads -> parse -> lineage (memoised) -> Arrow batch -> store.

`Indexer` owns the memo caches and the store; the stages it calls are pure. Sources (`index`
listings, `watch`, `consume`) feed it `FileRead`s or read failures; every batch is one store
transaction. A worker pool (`workers.py`) may parse and analyse on other cores.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

from viewlineage.indexer.errors import QuarantineError
from viewlineage.indexer.lineage.tables import Lineage, LineageRequest, extract_lineage
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.parse.metadata import KnownVersion, ParsedFile, ParsedVersion, parse_metadata
from viewlineage.indexer.parse.table import ParsedSnapshot
from viewlineage.indexer.pipeline.collector import collector_paused
from viewlineage.indexer.pipeline.reads import ReadFailure, quarantine_read_failure
from viewlineage.indexer.pipeline.rows import Batch, IndexedFile, QuarantinedFile
from viewlineage.indexer.pipeline.store_thread import StoreThread
from viewlineage.indexer.sources.read import FileRead
from viewlineage.sinks.store import Store
from viewlineage.sinks.tables import concatenated

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
    removed: int = 0
    """Files indexed before that the listing no longer holds (`index`): recorded as removed."""
    table_files: int = 0
    views: set[str] = field(default_factory=set)
    new_versions: int = 0
    """Clean versions parsed new, each once per process (it is known from then on): a count, as a
    set of 10^6 hashes would be ~100 MB."""
    flawed_versions: set[str] = field(default_factory=set)
    """Versions with findings, parsed again in every file that holds them (few): by hash."""
    findings: Counter[str] = field(default_factory=Counter)
    store: dict[str, int] = field(default_factory=dict)
    """What the store holds after the run, from every run (`Store.holds`)."""
    lineage_computed: int = 0
    lineage_reused: int = 0
    unlisted: list[str] = field(default_factory=list)
    """Directories the listing could not read, each with why: their files are not in the run."""

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
            "removed": self.removed,
            "table_files": self.table_files,
            "views": len(self.views),
            "versions": self.new_versions + len(self.flawed_versions),
            "findings": sum(self.findings.values()),
            "lineage_computed": self.lineage_computed,
            "lineage_reused": self.lineage_reused,
            "unlisted_directories": len(self.unlisted),
            **{f"store_{name}": count for name, count in self.store.items()},
        }


class ParsingPool(Protocol):
    """What `Indexer` asks of a pool of worker processes (`workers.WorkerPool`)."""

    def parse(
        self, items: Sequence[FileRead | ReadFailure], include_source: bool, max_bytes: int | None = None
    ) -> list[Future[ParsedShard]]: ...

    def analyse(
        self, indexer: Indexer, shards: list[Future[ParsedShard]], files: int, include_source: bool
    ) -> PendingBatch: ...

    def lineage(self, requests: dict[str, LineageRequest]) -> dict[str, Lineage]: ...


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

    def __init__(self, store: Store | None, config: ParseConfig, pool: ParsingPool | None = None) -> None:
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
        except RecursionError:  # a value nested deeper than validating or copying it can go
            message = "a value nested deeper than it can be validated (Python's recursion limit)"
            return QuarantinedFile(read.location, "too-deep", message, len(read.data), read.modified_ms)
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
        max_bytes: int | None = None,
    ) -> Batch:
        """With `defer_lineage`, the lineage the files need is left in `batch.lineage_requests` (bulk
        engines deduplicate it across the whole job first) instead of being computed here. `parsed`
        holds files the caller has parsed already, by location (`watch` parses to decide retries).
        With `max_bytes`, the batch closes once its documents reach that many decompressed bytes;
        the files read after that are left unparsed in `batch.deferred`."""
        batch = Batch(include_source=include_source)
        pending: dict[str, LineageRequest] = {}
        documents = 0
        with collector_paused():
            for item in items:
                if isinstance(item, ReadFailure):
                    quarantined = quarantine_read_failure(item, missing_is_quarantine)
                    if quarantined is None:
                        self.stats.missing += 1
                    else:
                        batch.quarantined.append(quarantined)
                    continue
                if max_bytes is not None and documents >= max_bytes:
                    batch.deferred.append(item)
                    continue
                result = parsed.get(item.location) if parsed else None
                result = result if result is not None else self.parse(item)
                if isinstance(result, QuarantinedFile):
                    batch.quarantined.append(result)
                    continue
                keys = self._lineage_keys(result, pending)
                batch.indexed.append(IndexedFile(item, result, keys))
                documents += result.document_bytes
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
                if rep.dialect is None or rep.sql is None or not rep.analysable:
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

    def tables(self, batch: Batch) -> dict[str, pa.Table]:
        """`batch.to_arrow()`; a file it quarantines there counts as quarantined, not indexed."""
        indexed = len(batch.indexed)
        tables = batch.to_arrow()
        self.stats.indexed -= indexed - len(batch.indexed)
        self.stats.quarantined += indexed - len(batch.indexed)
        return tables

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
        batch_bytes: int | None = None,
    ) -> IndexStats:
        """Store `items` in batches of `batch_files` (and of about `batch_bytes` decompressed bytes:
        a batch of large documents closes early, the rest of its files joining a later one), one
        transaction each, written on a store thread while the next batch is read, parsed and
        analysed (DuckDB releases the GIL). With a worker pool the workers parse and analyse SQL:
        one batch parses, one is analysed, one waits for the store, one is written. Only one
        waits, so memory stays flat whatever the input, and batches are not merged: one batch's
        lookups by key stay under DuckDB's index-scan limit (`INDEXED_LOOKUP_KEYS`)."""
        store, pool = self.store, self.pool
        assert store is not None, "ingest needs the store"
        writes: StoreThread[tuple[dict[str, pa.Table], int]] = StoreThread(
            functools.partial(_write_queued, store, progress), max_queued=1
        )
        iterator, deferred = iter(items), deque[FileRead | ReadFailure]()
        try:
            if pool is None:
                while chunk := _next_chunk(iterator, batch_files, deferred):
                    batch = self.build_batch(chunk, include_source=include_source, max_bytes=batch_bytes)
                    deferred.extend(batch.deferred)
                    writes.submit((self.tables(batch), len(chunk) - len(batch.deferred)))
                    del batch  # its Python values, while the store copies their Arrow twins
            else:
                self._ingest_in_pool(
                    pool, writes, iterator, deferred, batch_files, batch_bytes, include_source
                )
        finally:
            writes.close()
        complete_files(store, self.config)
        return self.stats

    def _ingest_in_pool(
        self,
        pool: ParsingPool,
        writes: StoreThread[tuple[dict[str, pa.Table], int]],
        iterator: Iterator[FileRead | ReadFailure],
        deferred: deque[FileRead | ReadFailure],
        batch_files: int,
        batch_bytes: int | None,
        include_source: bool,
    ) -> None:
        """`ingest`'s loop with a worker pool (see there)."""
        parsing: deque[tuple[list[Future[ParsedShard]], int]] = deque()
        analysing: deque[PendingBatch] = deque()
        while True:
            upcoming = _next_chunk(iterator, batch_files, deferred)
            if upcoming:
                parsing.append((pool.parse(upcoming, include_source, batch_bytes), len(upcoming)))
            while len(parsing) > (1 if upcoming else 0):
                analysing.append(pool.analyse(self, *parsing.popleft(), include_source))
                deferred.extend(analysing[-1].deferred)
            while len(analysing) > (1 if upcoming else 0):
                pending = analysing.popleft()
                writes.submit((pending.tables(self), pending.files))
            if not upcoming and not deferred:  # else the files the last batches left go on
                return


def complete_files(store: Store, config: ParseConfig) -> list[str]:
    """Once the store refused a file, or one was quarantined for an internal error, the files it
    stored since may name content that went with it (versions, schemas, snapshots and lineage an
    indexer had parsed before are left out of later files): those that do are re-derived in full
    from their stored documents. Returns their locations."""
    if not store.unverified:
        return []
    locations, store.unverified = store.unverified, set()
    incomplete = store.incomplete_files(locations)
    if incomplete:
        reads = [
            FileRead(location, document, modified_ms, source)
            for chunk in store.stored_documents(locations=incomplete)
            for location, document, modified_ms, source in chunk
        ]
        store.write(Indexer(store, config).build_batch(reads, include_source=False))
        store.unverified.difference_update(incomplete)  # complete now, or incomplete as written
    return incomplete


def _write_queued(
    store: Store, progress: Callable[[int], None] | None, queued: list[tuple[dict[str, pa.Table], int]]
) -> None:
    """On the store thread: each batch queued (one at most), one transaction each."""
    for tables, files in queued:
        store.write_tables(tables)
        if progress is not None:
            progress(files)


def _next_chunk(
    iterator: Iterator[FileRead | ReadFailure], size: int, deferred: deque[FileRead | ReadFailure]
) -> list[FileRead | ReadFailure]:
    """The next `size` items, files that earlier batches deferred first."""
    chunk = [deferred.popleft() for _ in range(min(size, len(deferred)))]
    chunk.extend(itertools.islice(iterator, size - len(chunk)))
    return chunk


@dataclass(frozen=True, slots=True)
class ParsedShard:
    """A worker's part of a batch: every table but lineage's, and the lineage it needs."""

    tables: dict[str, pa.Table]
    requests: dict[str, LineageRequest]
    stats: IndexStats
    new_versions: list[str]
    """Hashes of the clean versions parsed new (`stats` leaves them to be counted by hash)."""
    deferred: list[FileRead]
    """Files left unparsed when the shard reached its share of the batch's bytes."""


@dataclass(frozen=True, slots=True)
class PendingBatch:
    parsed: list[ParsedShard]
    analysed: list[Future[dict[str, Lineage]]]
    files: int
    """Files the batch stores (the files its shards deferred are not among them)."""

    @property
    def deferred(self) -> list[FileRead]:
        return [item for shard in self.parsed for item in shard.deferred]

    def tables(self, indexer: Indexer) -> dict[str, pa.Table]:
        """The batch's tables, once its lineage is analysed; its counts join `indexer`'s."""
        lineage = {key: found for future in self.analysed for key, found in future.result().items()}
        for shard in self.parsed:
            indexer.stats.absorb(shard.stats)
            indexer.count_new_versions(shard.new_versions)
        lineage_batch = Batch(lineage=lineage)
        indexer.count(lineage_batch)
        return concatenated([shard.tables for shard in self.parsed] + [lineage_batch.to_arrow()])


def _new_content(parsed: ParsedFile) -> list[str]:
    """Hashes of the schemas, clean versions and snapshots a file brought: later files that repeat
    them are parsed by hash."""
    if parsed.table is not None:
        fresh = [schema.schema_hash for schema in parsed.table.schemas]
        return fresh + [s.snapshot_hash for s in parsed.table.snapshots if isinstance(s, ParsedSnapshot)]
    assert parsed.view is not None
    fresh = [schema.schema_hash for schema in parsed.view.schemas]
    return fresh + [v.version_hash for v in parsed.view.versions if isinstance(v, ParsedVersion) and v.clean]
