"""The indexing loop: file reads -> parse -> lineage (memoised) -> Arrow batch -> store.

`Indexer` owns the memo caches and the store; the stages it calls are pure. Sources (`index`
listings, `watch`, `consume`) feed it `FileRead`s or read failures; every batch is one store
transaction.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from viewlineage.sinks.store import Store

from .batches import Batch, IndexedFile, QuarantinedFile, Removal
from .config import CatalogMapEntry, ParseConfig, Settings
from .errors import ObjectMissing, ObjectTooLarge, QuarantineError, ReadError
from .lineage import Lineage, LineageRequest, extract_lineage
from .locations import normalize_location
from .parse import ParsedFile, parse_metadata
from .read import FileRead, ListedFile, Reader, reader_for

READ_ATTEMPTS = 3
ANNOUNCED_ATTEMPTS = 6


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
    versions: set[str] = field(default_factory=set)
    findings: Counter[str] = field(default_factory=Counter)
    lineage_computed: int = 0
    lineage_reused: int = 0

    def summary(self) -> dict[str, int]:
        return {
            "files": self.listed,
            "indexed": self.indexed,
            "already_indexed": self.already_indexed,
            "quarantined": self.quarantined,
            "missing": self.missing,
            "table_files": self.table_files,
            "views": len(self.views),
            "versions": len(self.versions),
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


class Indexer:
    """Turns file reads into store batches, memoising lineage in the run and through the store.
    Without a store (a consumer that does not hold the write lock) the memo is the run's only."""

    def __init__(self, store: Store | None, config: ParseConfig) -> None:
        self.store = store
        self.config = config
        self.lineage_memo: dict[str, Lineage] = {}
        self.stats = IndexStats()

    def parse(self, read: FileRead) -> ParsedFile | QuarantinedFile:
        try:
            return parse_metadata(read.data, read.location, self.config)
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
    ) -> Batch:
        """With `defer_lineage`, the lineage the files need is left in `batch.lineage_requests` (bulk
        engines deduplicate it across the whole job first) instead of being computed here."""
        batch = Batch(include_source=include_source)
        pending: dict[str, LineageRequest] = {}
        for item in items:
            if isinstance(item, ReadFailure):
                quarantined = quarantine_read_failure(item, missing_is_quarantine)
                if quarantined is None:
                    self.stats.missing += 1
                else:
                    batch.quarantined.append(quarantined)
                continue
            parsed = self.parse(item)
            if isinstance(parsed, QuarantinedFile):
                batch.quarantined.append(parsed)
                continue
            keys = self._lineage_keys(parsed, pending)
            batch.indexed.append(IndexedFile(item, parsed, keys))
        if defer_lineage:
            batch.lineage_requests = pending
            self._count(batch)
            return batch
        fresh = set(pending) - set(self.lineage_memo)
        stored = self.store.known_lineage(fresh) if include_source and self.store is not None else set()
        self.stats.lineage_reused += len(pending) - len(fresh) + len(stored)
        for key in sorted(fresh - stored):
            self.lineage_memo[key] = batch.lineage[key] = extract_lineage(pending[key], self.config.lineage)
            self.stats.lineage_computed += 1
        for key in stored:
            self.lineage_memo.setdefault(key, Lineage("", (), ()))
        self._count(batch)
        return batch

    def _lineage_keys(
        self, parsed: ParsedFile, pending: dict[str, LineageRequest]
    ) -> dict[tuple[str, int], str]:
        keys: dict[tuple[str, int], str] = {}
        view = parsed.view
        if view is None:
            return keys
        view_catalog = view.name.catalog if view.name else None
        for version in view.versions:
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

    def _count(self, batch: Batch) -> None:
        self.stats.quarantined += len(batch.quarantined)
        for item in batch.indexed:
            self.stats.indexed += 1
            self.stats.findings.update(f.code for f in item.parsed.findings)
            if item.parsed.view is None:
                self.stats.table_files += 1
                continue
            self.stats.views.add(item.parsed.view.view_id)
            self.stats.versions.update(v.version_hash for v in item.parsed.view.versions)
        for lineage in batch.lineage.values():
            self.stats.findings.update(f.code for f in lineage.findings)

    def ingest(
        self,
        items: Iterable[FileRead | ReadFailure],
        batch_files: int,
        progress: Callable[[int], None] | None = None,
    ) -> IndexStats:
        """Store `items` in batches of `batch_files`, one transaction each."""
        chunk: list[FileRead | ReadFailure] = []
        for item in items:
            chunk.append(item)
            if len(chunk) >= batch_files:
                self._flush(chunk, progress)
                chunk = []
        if chunk:
            self._flush(chunk, progress)
        return self.stats

    def _flush(self, chunk: list[FileRead | ReadFailure], progress: Callable[[int], None] | None) -> None:
        assert self.store is not None, "ingest needs the store"
        self.store.write(self.build_batch(chunk))
        if progress is not None:
            progress(len(chunk))


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
    """List every metadata file under `locations`, read the new ones in parallel and store them."""
    roots = [normalize_location(location) for location in locations]
    config = with_roots(settings.parse_config(), roots)
    listed: list[tuple[str, ListedFile]] = []
    for root in roots:
        reader = reader_for(root, settings.s3_endpoint)
        listed.extend((root, item) for item in reader.list(root))
    with Store(settings.db, settings.replica_interval) as store:
        store.record_roots(roots)
        indexer = Indexer(store, config)
        indexer.stats.listed = len(listed)
        if on_listed is not None:
            on_listed(len(listed))
        known = store.indexed(item.location for _, item in listed)
        todo = [(root, item) for root, item in listed if item.location not in known]
        indexer.stats.already_indexed = len(listed) - len(todo)
        if progress is not None and known:
            progress(len(known))
        return indexer.ingest(_read_all(todo, settings), settings.batch_files, progress)


def _read_all(todo: list[tuple[str, ListedFile]], settings: Settings) -> Iterator[FileRead | ReadFailure]:
    readers = {root: reader_for(root, settings.s3_endpoint) for root, _ in todo}
    yield from read_all([(readers[root], listed) for root, listed in todo], settings)


def read_all(
    todo: Iterable[tuple[Reader, ListedFile]], settings: Settings, announced: bool = False
) -> Iterator[FileRead | ReadFailure]:
    """Read files in parallel (`read_workers` threads), in order, with bounded retries. At most
    `batch_files` reads run ahead of the consumer, so memory stays flat whatever the listing's size."""

    def read_one(entry: tuple[Reader, ListedFile]) -> FileRead | ReadFailure:
        reader, listed = entry
        return read_with_retries(
            lambda: reader.read(listed.location, settings.max_file_bytes, listed),
            listed.location,
            announced=announced,
        )

    window = max(settings.batch_files, settings.read_workers * 4)
    with ThreadPoolExecutor(settings.read_workers) as pool:
        ahead: deque[Future[FileRead | ReadFailure]] = deque()
        for entry in todo:
            ahead.append(pool.submit(read_one, entry))
            if len(ahead) >= window:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()


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
    with Store(settings.db, settings.replica_interval) as store:
        config = with_roots(config, store.roots())
        store.clear_derived()
        indexer = Indexer(store, config)
        for chunk in store.stored_documents(settings.batch_files):
            reads = [
                FileRead(location, document, modified_ms, source)
                for location, document, modified_ms, source in chunk
            ]
            store.write(indexer.build_batch(reads, include_source=False))
        indexer.stats.listed = indexer.stats.indexed
        return indexer.stats


__all__ = ["IndexStats", "Indexer", "index_locations", "reindex"]
