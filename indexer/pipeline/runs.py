"""The runs over a whole listing or store: `index` (list, read what is new, store), `reindex`
(re-derive every row from the stored documents) and the followers' reconciliation (`gap_batch`)."""

from __future__ import annotations

import functools
import os
import threading
import time
import warnings
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

import pyarrow as pa

from viewlineage.indexer.config import Settings
from viewlineage.indexer.errors import RebuildPending, StoreWarning, UsageError
from viewlineage.indexer.faults import Faults
from viewlineage.indexer.parse.config import CatalogMapEntry, ParseConfig
from viewlineage.indexer.parse.locations import normalize_location
from viewlineage.indexer.pipeline.indexer import Indexer, IndexStats
from viewlineage.indexer.pipeline.reads import BULK_READS_PER_TASK, read_all
from viewlineage.indexer.pipeline.rows import Batch, Removal
from viewlineage.indexer.pipeline.workers import worker_pool
from viewlineage.indexer.sources.read import (
    LISTED_CHUNK,
    FileRead,
    ListedFile,
    Reader,
    listed_files,
    listed_table,
    local_path,
    reader_for,
)
from viewlineage.sinks.readers import recorded_settings
from viewlineage.sinks.store import Store


def with_roots(config: ParseConfig, roots: Iterable[str]) -> ParseConfig:
    """Add a catalog-less catalog-map entry for each indexed root no entry covers, so views under
    it are named relative to it."""
    extra = tuple(
        CatalogMapEntry(root.rstrip("/"), None) for root in roots if config.catalog_for(root) is None
    )
    return replace(config, catalog_map=config.catalog_map + extra) if extra else config


def with_store_naming(settings: Settings, *, change: bool = False) -> Settings:
    """`settings` with the catalog map and aliases the store records when they give none, so that
    every writer names views and tables as the store's rows do. Others are a `UsageError`, unless
    `change` (`reindex --change-catalogs`, which derives every row again with them). Read before
    the store is opened, so that worker processes are forked with them; `writable_store` checks
    them again once it holds the store."""
    return _named(settings, recorded_settings(settings.db), change)


def _named(settings: Settings, recorded: dict[str, tuple[str, ...]], change: bool) -> Settings:
    """Each of the two settings left out is the store's; one given must be the store's."""
    given = settings.naming()
    if change or not recorded or given == recorded:
        return settings
    if {name: entries or recorded.get(name, ()) for name, entries in given.items()} == recorded:
        return settings.with_naming(recorded)
    raise UsageError(
        f"store {settings.db} names views and tables with {naming_options(recorded)}; this run gives "
        f"{naming_options(given)}. Leave them out to use the store's, or rename everything with "
        "`viewlineage reindex --change-catalogs` and the new options"
    )


def naming_options(naming: dict[str, tuple[str, ...]]) -> str:
    """`naming` (`Settings.naming`) as the options that give it."""
    given = [
        f"--{name} {entry}" for name in ("catalog-map", "catalog-alias") for entry in naming.get(name, ())
    ]
    return " ".join(given) if given else "no --catalog-map and no --catalog-alias"


def writable_store(
    settings: Settings, *, deferred_spans: bool = False, lock_wait: float | None = None
) -> Store:
    """The store, opened for writing (waiting `lock_wait` seconds for its lock, see `Store`). One
    that an interrupted `reindex` left mid-rebuild is rebuilt first (with these settings): no
    writer adds to, or skips files because of, half-derived rows.
    `settings` come from `with_store_naming`: the store records their catalog map and aliases if
    it holds none yet, and refuses others (a writer that recorded its own meanwhile)."""
    opened = functools.partial(
        Store,
        settings.db,
        settings.replica_interval,
        settings.store_memory,
        deferred_spans=deferred_spans,
        lock_wait=lock_wait,
    )
    try:
        store = opened()
    except RebuildPending as exc:
        warnings.warn(f"{exc}. Completing the rebuild now.", StoreWarning, stacklevel=2)
        reindex(settings)
        store = opened()
    try:
        _record_naming(store, settings, change=False)
    except BaseException:
        store.close()
        raise
    return store


def _record_naming(store: Store, settings: Settings, change: bool) -> None:
    recorded = store.recorded_settings()
    named = _named(settings, recorded, change).naming()  # refuses others
    if named != recorded:
        store.record_settings(named)


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
    faults = Faults.from_environ()  # crash-safety tests stop the run after a batch is stored

    def stored(files: int) -> None:
        faults.point("index-batch")
        if progress is not None:
            progress(files)

    roots = [normalize_location(location) for location in locations]
    missing_roots(roots)
    settings = with_store_naming(settings)
    config = with_roots(settings.parse_config(), roots)
    with (
        worker_pool(settings, config) as pool,  # forked first: workers inherit none of what follows
        writable_store(settings, deferred_spans=True) as store,
    ):
        readers = [reader_for(root, settings.s3_endpoint) for root in roots]
        listings = [listed_table(reader.list(root)) for root, reader in zip(roots, readers, strict=True)]
        store.record_roots(roots)
        # Files indexed before that a listing no longer holds were deleted: a view whose newest file
        # went was dropped (as `watch` reconciles), known from now on.
        unlisted = [error.location for reader in readers for error in reader.unlisted]
        listed_ms = int(time.time() * 1000)
        gone = [
            location
            for root, table in zip(roots, listings, strict=True)
            for location in store.gone(root, table.column("location"), unlisted)
        ]
        for root, table in zip(roots, listings, strict=True):
            store.forget_missing(root, table.column("location").combine_chunks(), unlisted)
        indexer = Indexer(store, config, pool)
        for reader, table in zip(readers, listings, strict=True):  # a file found gone, there again since
            reread(
                indexer,
                reader,
                read_again(store, reader, table.column("location").combine_chunks()),
                settings,
            )
        indexer.stats.unlisted = [str(error) for reader in readers for error in reader.unlisted]
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
        stats = indexer.ingest(reads, settings.batch_files, stored, batch_bytes=settings.batch_bytes)
        if gone:
            store.write(Batch(removals=[Removal(location, listed_ms, "reconcile") for location in gone]))
        stats.removed = len(gone)
        stats.store = store.holds()
        return stats


def missing_roots(roots: Iterable[str]) -> None:
    """A `UsageError` for the first local root that does not exist: before a store file is made."""
    for root in roots:
        if "://" not in root and not os.path.exists(local_path(root)):
            raise UsageError(f"{root}: no such file or directory")


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


def read_again(store: Store, reader: Reader, listed: pa.Array) -> list[str]:
    """Of the `listed` locations, those `Store.reappeared` names to read again: each but those whose
    file the store set aside (`location-reused`) and that is still the one there (its time
    unchanged); a file set aside is read again only when it changes (before, each run read it and
    set it aside anew)."""
    return [
        location
        for location, set_aside_ms in store.reappeared(listed).items()
        if set_aside_ms is None or reader.written_ms(location) != set_aside_ms
    ]


def reread(indexer: Indexer, reader: Reader, locations: list[str], settings: Settings) -> None:
    """Read again the files a re-list finds at `locations`, recorded removed before: stored as a
    follower stores them (`BACK`), a file holding what was indexed there is back, one holding other
    content is quarantined `location-reused` and the first stays removed."""
    if not locations:
        return
    store = indexer.store
    assert store is not None, "reading files back needs the store"
    batch = indexer.build_batch(
        read_all([(reader, ListedFile(location)) for location in locations], settings)
    )
    batch.back = [item.read.location for item in batch.indexed]
    reused = len(store.write_tables(indexer.tables(batch), follower=True).reused)
    indexer.stats.indexed -= reused
    indexer.stats.quarantined += reused
    indexer.stats.already_indexed -= len(locations)  # the listing's pass counts them as indexed


def gap_batch(
    indexer: Indexer, reader: Reader, prefix: str, settings: Settings, now_ms: int
) -> tuple[Batch, Counter[str]]:
    """Reconciliation: list `prefix` again, read the metadata files the store lacks, and record as
    removed (at `now_ms`, source `reconcile`) the stored ones that are gone and had no removal yet.
    Needs the store: only the process holding it reconciles. Nothing under a directory the listing
    could not read is taken for removed; it stays in `reader.unlisted` for the caller to report."""
    store = indexer.store
    assert store is not None, "reconciling needs the store"
    listed = {item.location: item for item in reader.list(prefix)}
    known = store.indexed(listed) - set(read_again(store, reader, pa.array(list(listed), pa.string())))
    reads = list(read_all([(reader, item) for loc, item in listed.items() if loc not in known], settings))
    batch = indexer.build_batch(reads)
    batch.back = [item.read.location for item in batch.indexed]  # for a follower's write: see `reread`
    unlisted = [error.location for error in reader.unlisted]
    vanished = store.gone(prefix, pa.array(list(listed), pa.string()), unlisted)
    store.forget_missing(prefix, pa.array(list(listed), pa.string()), unlisted)
    batch.removals.extend(Removal(location, now_ms, "reconcile") for location in vanished)
    outcomes = Counter({"reconciled": len(batch.indexed), "removed": len(vanished)})
    outcomes["quarantined"] += len(batch.quarantined)
    return batch, outcomes


def reindex(
    settings: Settings,
    *,
    change_naming: bool = False,
    on_listed: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> IndexStats:
    """Rebuild every derived row from the stored documents, with the current configuration and the
    store's catalog map and aliases (`change_naming`: with those of `settings`, recorded instead).
    `on_listed` hears how many files the store holds, `progress` of each batch rebuilt."""
    if progress is not None:
        progress = _one_at_a_time(progress)
    settings = with_store_naming(settings, change=change_naming)
    faults = Faults.from_environ()  # crash-safety tests stop the rebuild between its steps
    with Store(
        settings.db, settings.replica_interval, settings.store_memory, rederiving=True, deferred_spans=True
    ) as store:
        config = with_roots(settings.parse_config(), store.roots())
        store.clear_derived(_named(settings, store.recorded_settings(), change_naming).naming())
        faults.point("reindex-cleared")
        if on_listed is not None:
            on_listed(store.holds()["files"])

        def batch_stored(files: int) -> None:
            faults.point("reindex-batch")
            if progress is not None:
                progress(files)

        reads = (
            FileRead(location, document, modified_ms, source)
            for chunk in store.stored_documents(settings.batch_files)
            for location, document, modified_ms, source in chunk
        )
        with worker_pool(settings, config) as pool:
            indexer = Indexer(store, config, pool)
            indexer.ingest(
                reads,
                settings.batch_files,
                batch_stored,
                include_source=False,
                batch_bytes=settings.batch_bytes,
            )
        store.reindexed()
        indexer.stats.listed = indexer.stats.indexed
        indexer.stats.store = store.holds()
        return indexer.stats
