"""`watch`: index a directory, then every metadata file closed in it or moved into it.

The observer starts before the initial scan, so nothing written during the scan is missed (what is
seen twice is absorbed by idempotent ingest). A file that fails to read or parse is retried with
backoff while its size or mtime still changes, for up to `settle_seconds`; only a file that fails
twice with the same size and mtime (stable), or is still failing at the deadline, is quarantined.
A later good read of the same path supersedes its quarantine row. A deleted metadata file is
recorded as removed at the time the deletion was seen; `--reconcile-every` re-lists the root to
catch what inotify missed (files it never reported, deletions while `watch` was down).
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import re
import stat
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

import pyarrow as pa
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from viewlineage.indexer.config import Settings
from viewlineage.indexer.errors import (
    NotRegularFile,
    ObjectMissing,
    ReadError,
    TransientReadError,
    UsageError,
)
from viewlineage.indexer.parse.locations import is_metadata_file_name, normalize_location
from viewlineage.indexer.parse.metadata import ParsedFile
from viewlineage.indexer.pipeline.health import Health
from viewlineage.indexer.pipeline.indexer import Indexer, complete_files
from viewlineage.indexer.pipeline.reads import ReadFailure
from viewlineage.indexer.pipeline.rows import Batch, QuarantinedFile, Removal
from viewlineage.indexer.pipeline.runs import gap_batch, with_roots, with_store_naming, writable_store
from viewlineage.indexer.pipeline.store_thread import StoreThread
from viewlineage.indexer.pipeline.workers import worker_pool
from viewlineage.indexer.sources.read import FileRead, LocalReader, local_path
from viewlineage.sinks.readers import Readers
from viewlineage.sinks.store import Store
from viewlineage.sinks.tables import successive

IDLE_POLL_SECONDS = 0.05
T = TypeVar("T")

# watchdog re-registers directories created inside a recursive watch and warns each time; the
# warning is noise (the watch stays correct), so it is silenced here rather than in every caller.
warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning, module="watchdog")


class _Handler(FileSystemEventHandler):
    """Queues metadata files on close, on move, and on creation when they appear with content (moved
    in from outside the tree, hard-linked); and new directories: a file written into a directory
    before inotify watches it sends no event, so new directories are listed. Deleted metadata files
    (and the source of a move) are queued as removals, timed when seen; so is a directory deleted or
    moved out of the tree (inotify then reports the directory alone, none of the files in it), for
    the loop to expand into the indexed files under it."""

    def __init__(self, paths: queue.Queue[str], removals: queue.Queue[Removal]) -> None:
        self.paths = paths
        self.removals = removals

    def on_deleted(self, event: DirDeletedEvent | FileDeletedEvent) -> None:
        self._removed(event.src_path, event.is_directory)

    def _removed(self, path: str | bytes, directory: bool = False) -> None:
        text = normalize_location(os.fsdecode(path))
        if not directory and not is_metadata_file_name(os.path.basename(text)):
            return
        try:
            os.lstat(os.fsdecode(path))
        except FileNotFoundError:
            self.removals.put(Removal(text, int(time.time() * 1000), "watch"))
        except OSError:
            pass  # out of sight, not gone: a directory above it became unreadable (polling reports that)

    def on_modified(self, event: DirModifiedEvent | FileModifiedEvent) -> None:
        # Only polling sends these (inotify's are filtered out): a file it saw half-written is read
        # again when it changes, as inotify's close would have it read.
        if not event.is_directory:
            self._offer(event.src_path)

    def on_closed(self, event: FileClosedEvent) -> None:
        self._offer(event.src_path)

    def on_moved(self, event: FileMovedEvent | DirMovedEvent) -> None:
        if event.is_directory:
            self.paths.put(os.fsdecode(event.dest_path))
        else:
            self._removed(event.src_path)
            self._offer(event.dest_path)

    def on_created(self, event: DirCreatedEvent | FileCreatedEvent) -> None:
        if event.is_directory:
            self.paths.put(os.fsdecode(event.src_path))
        elif (found := _stat(os.fsdecode(event.src_path))) is not None and found[0] > 0:
            # Complete as it appears, with no close to come: moved in from outside the watched tree
            # (watchdog reports that as a creation) or hard-linked. A file still being written is
            # mostly empty here; if not, its read fails and is retried until its close.
            self._offer(event.src_path)

    def _offer(self, path: str | bytes) -> None:
        text = os.fsdecode(path)
        if is_metadata_file_name(os.path.basename(text)):
            self.paths.put(text)


@dataclass
class _Attempt:
    first_seen: float
    due: float
    tries: int
    stat: tuple[int, int] | None


def _stat(location: str) -> tuple[int, int] | None:
    try:
        info = os.stat(local_path(location))
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def watch_directory(
    root: str,
    settings: Settings,
    health: Health | None = None,
    stop: threading.Event | None = None,
    on_ready: Callable[[], None] | None = None,
    readers: Readers | None = None,
) -> None:
    """Run until `stop` is set (or forever). `readers` (an HTTP API's) read this process's store."""
    root = normalize_location(root)
    if not os.path.isdir(local_path(root)):
        raise UsageError(f"{root}: no such directory to watch")
    stop = stop or threading.Event()
    health = health or Health("watch", settings.log_format)
    settings = with_store_naming(settings)
    config = with_roots(settings.parse_config(), [root])
    reader = LocalReader()
    paths: queue.Queue[str] = queue.Queue()
    removals: queue.Queue[Removal] = queue.Queue()
    # Workers are forked: start them before the observer's threads exist.
    workers = contextlib.ExitStack()
    pool = workers.enter_context(worker_pool(settings))
    if settings.poll_seconds is None and (mount := _eventless_mount(local_path(root))):
        eventless = f"on a {mount} mount, which may send no inotify events for changes made elsewhere"
        health.log("warning", root=root, message=f"{eventless}: consider --poll-seconds")
    polling = settings.poll_seconds
    observer = Observer() if polling is None else PollingObserver(timeout=polling)
    events = [
        FileClosedEvent,
        FileMovedEvent,
        FileCreatedEvent,
        FileDeletedEvent,
        DirDeletedEvent,
        DirMovedEvent,
        DirCreatedEvent,
    ]
    events += [] if polling is None else [FileModifiedEvent]  # inotify closes instead
    observer.schedule(
        _Handler(paths, removals),
        root,
        recursive=True,
        event_filter=events,
    )
    try:
        observer.start()
    except OSError as exc:
        workers.close()
        if exc.errno not in (errno.ENOSPC, errno.EMFILE):
            raise
        raise UsageError(
            f"inotify cannot watch every directory under {root} ({exc}; fs.inotify.max_user_watches is "
            f"{_proc_value('sys/fs/inotify/max_user_watches')}, max_user_instances "
            f"{_proc_value('sys/fs/inotify/max_user_instances')}): raise them with sysctl, or follow "
            "the tree by listing it (--poll-seconds 5)"
        ) from exc
    try:
        with (
            writable_store(settings) as store,
            readers.attached(store) if readers else contextlib.nullcontext(),
        ):
            store.record_roots([root])
            indexer = Indexer(store, config, pool)
            listed = [item.location for item in reader.list(root)]
            for location in listed:
                paths.put(location)
            health.unlisted(reader.unlisted)
            # A stored file the listing lacks was deleted while no one watched: removed as of now,
            # the latest it can have gone (as `index` finds it).
            unlisted, now_ms = [error.location for error in reader.unlisted], int(time.time() * 1000)
            held = pa.array(listed, pa.string())
            for location in store.gone(root, held, unlisted):
                removals.put(Removal(location, now_ms, "reconcile"))
            # A file found gone before, there again: its removal stays until the loop reads it
            # again (`indexed(removed_too=False)`) and the store tells back from `location-reused`.
            store.publish_replica(force=True)
            health.log("watching", root=root, store=settings.db)
            if on_ready is not None:
                on_ready()
            loop = _Loop(indexer, store, reader, root, settings, health)
            try:
                loop.run(paths, removals, stop)
            finally:
                loop.writes.close()
    finally:
        observer.stop()
        observer.join()
        workers.close()


class _Built(NamedTuple):
    """A batch waiting for the store, with what its log line reports."""

    batch: Batch
    outcomes: Counter[str]
    started: float


class _Loop:
    """Batches of queued paths and removals -> the store (those built during a transaction go into
    the next one together)."""

    def __init__(
        self,
        indexer: Indexer,
        store: Store,
        reader: LocalReader,
        root: str,
        settings: Settings,
        health: Health,
    ) -> None:
        self.indexer = indexer
        self.store = store
        self.reader = reader
        self.root = root
        self.settings = settings
        self.health = health
        self.retries: dict[str, _Attempt] = {}
        self.in_flight: set[str] = set()
        """Locations of batches handed to the store thread and not stored yet: an event for one
        of them is a repeat (polling reports a file until the store has it)."""
        self.removing: set[str] = set()
        """Locations of removals handed to the store thread and not stored yet: a file there again
        is read, not taken as indexed (it is stored after them, and is back)."""
        self.writes: StoreThread[_Built] = StoreThread(self._store)
        """Stores the batches built so far while the next one is read and parsed."""

    def run(self, paths: queue.Queue[str], removals: queue.Queue[Removal], stop: threading.Event) -> None:
        reconciled_at = time.monotonic()
        while not stop.is_set():
            self.health.beat()
            every = self.settings.reconcile_every
            if every is not None and time.monotonic() - reconciled_at >= every:
                self._reconcile()
                reconciled_at = time.monotonic()
            due = _expand_directories(_drain(paths, self.settings.batch_files), self.reader, self.root)
            if self.reader.unlisted:
                self.health.unlisted(self.reader.unlisted)
            # A file deleted and written again before its removal is stored is back: its removal is past.
            removed = [
                removal
                for removal in self._files_of(_drain(removals, self.settings.batch_files))
                if _stat(removal.location) is None
            ]
            now = time.monotonic()
            due.extend(
                location
                for location, attempt in self.retries.items()
                if attempt.due <= now and location not in due
            )
            if not due and not removed:
                self.writes.wait()
                self.store.publish_replica()
                time.sleep(IDLE_POLL_SECONDS)
                continue
            self._batch(due, removed)

    def _files_of(self, removed: list[Removal]) -> list[Removal]:
        """Removals of files, a removed directory's being those of the files indexed under it that
        have no removal yet (it was deleted, or moved out of the tree, as a whole)."""
        files = [removal for removal in removed if is_metadata_file_name(os.path.basename(removal.location))]
        directories = [removal for removal in removed if removal not in files]
        if directories:
            self.writes.wait()  # files indexed just before are stored: they are under it too
        for directory in directories:
            files.extend(
                Removal(location, directory.removed_ms, directory.source)
                for location in self.store.gone(directory.location, pa.array([], pa.string()))
            )
        return files

    def _batch(self, due: list[str], removed: list[Removal]) -> None:
        started = time.monotonic()
        outcomes: Counter[str] = Counter(removed=len(removed))
        unique = list(dict.fromkeys(normalize_location(p) for p in due))
        flying = self.in_flight.intersection(unique) - self.removing
        known = flying | self.store.indexed(
            (
                location
                for location in unique
                if location not in self.retries and location not in flying and location not in self.removing
            ),
            removed_too=False,
        )
        outcomes["already-indexed"] += len(known)
        ready: list[FileRead | ReadFailure] = []
        parsed: dict[str, ParsedFile | QuarantinedFile] = {}
        for location in (location for location in unique if location not in known):
            before = _stat(location)
            try:
                read = self.reader.read(location, self.settings.max_file_bytes)
            except ObjectMissing:
                self.retries.pop(location, None)
                outcomes["deleted-before-read"] += 1  # its deletion is queued as a removal
                continue
            except NotRegularFile as exc:  # no write will make it one
                self.retries.pop(location, None)
                ready.append(ReadFailure(location, exc))
                continue
            except ReadError as exc:
                if _retry(self.retries, location, before, self.settings.settle_seconds):
                    continue
                ready.append(ReadFailure(location, exc))
                continue
            parsed[location] = self.indexer.parse(read)
            if isinstance(parsed[location], QuarantinedFile) and _retry(
                self.retries, location, before, self.settings.settle_seconds
            ):
                continue
            self.retries.pop(location, None)
            ready.append(read)
        batch = self.indexer.build_batch(ready, parsed=parsed) if ready else Batch()
        # What watch reads is there, and not indexed but for a removal: files moved out and back.
        batch.back = [item.read.location for item in batch.indexed]
        batch.removals.extend(removed)
        if batch:
            self.in_flight.update(item.read.location for item in batch.indexed)
            self.removing.update(removal.location for removal in batch.removals)
            self.writes.submit(_Built(batch, outcomes, started))

    def _store(self, built: list[_Built]) -> None:
        """On the store thread: the batches built since the last transaction, in one."""
        # Each batch converted on its own: a file it quarantines there is counted so below.
        # Files seen after their removal was recorded are back (a move out and in again).
        refused = self.store.write_tables(
            successive([each.batch.to_arrow() for each in built]), follower=True
        ).reasons()
        self.in_flight.difference_update(item.read.location for each in built for item in each.batch.indexed)
        self.removing.difference_update(removal.location for each in built for removal in each.batch.removals)
        complete_files(self.store, self.indexer.config)
        for batch, outcomes, started in built:
            for item in batch.quarantined:
                self.health.log(
                    "quarantined", location=item.location, reason=item.reason, message=item.message
                )
            stored = [item.read.location for item in batch.indexed]
            refused_here = refused.keys() & stored
            for location in sorted(refused_here):
                self.health.log("quarantined", location=location, reason=refused[location])
            outcomes["indexed"] += len(stored) - len(refused_here)
            outcomes["quarantined"] += len(batch.quarantined) + len(refused_here)
            self.health.batch(outcomes, time.monotonic() - started, files=len(batch.indexed))

    def _reconcile(self) -> None:
        self.writes.wait()
        try:
            batch, outcomes = gap_batch(
                self.indexer, self.reader, self.root, self.settings, int(time.time() * 1000)
            )
        except ReadError as exc:  # the listing failed: the next round tries again
            self.health.log("reconcile-failed", root=self.root, error=str(exc))
            return
        self.store.write_tables(batch.to_arrow(), follower=True)
        complete_files(self.store, self.indexer.config)
        self.health.count(outcomes)
        self.health.unlisted(self.reader.unlisted)
        self.health.log("reconciled", root=self.root, outcomes=dict(outcomes))


EVENTLESS_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "9p", "fuse", "ceph", "glusterfs", "lustre")
"""Filesystems whose changes made on another machine send this one no inotify event."""


_OCTAL = re.compile(r"\\([0-7]{3})")


def _eventless_mount(path: str, mounts: str | None = None) -> str | None:
    """The type of the mount holding `path` (the longest mount point above it, from
    /proc/self/mounts) when it is one of `EVENTLESS_FILESYSTEMS` (`fuse.*` included)."""
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return None
    best, kind = "", ""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = _OCTAL.sub(lambda match: chr(int(match.group(1), 8)), fields[1])  # a space is \040
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
            best, kind = point, fields[2]
    family = kind.split(".", 1)[0]
    return kind if family in EVENTLESS_FILESYSTEMS else None


def _proc_value(name: str) -> str:
    try:
        return Path("/proc", name).read_text().strip()
    except OSError:
        return "unknown"


def _retry(retries: dict[str, _Attempt], location: str, stat: tuple[int, int] | None, settle: float) -> bool:
    """Whether to try `location` again later rather than quarantine it now."""
    now = time.monotonic()
    attempt = retries.get(location)
    if attempt is None:
        retries[location] = _Attempt(now, now + 0.1, 1, stat)
        return True
    # An empty file is one a writer created and has yet to fill (found by the eighth new-user
    # trial: Spark's file sat empty for over a second), however long its size and mtime stay.
    stable = stat == attempt.stat and stat is not None and stat[0] > 0
    if stable or now - attempt.first_seen >= settle:
        retries.pop(location)
        return False
    attempt.tries += 1
    attempt.stat = stat
    attempt.due = now + min(0.1 * 2**attempt.tries, 2.0)
    return True


def _expand_directories(paths: list[str], reader: LocalReader, root: str) -> list[str]:
    """The files of the directories among `paths`, and the other paths. One that cannot even be
    looked at (a directory above it is unreadable) is reported as not listed (`reader.unlisted`), not
    read: it may be a directory, and quarantining it would outlive the cause; a reconciliation reads
    it once it can. As a listing, they keep out of links to directories: a directory moved in can
    hold one, whose files watchdog reports (found by the twelfth adversarial trial: a link to a
    view outside the tree, and `self -> .`, gave views)."""
    expanded: list[str] = []
    real_root = os.path.realpath(local_path(root))
    for path in paths:
        try:
            mode = os.lstat(local_path(path)).st_mode
        except FileNotFoundError:
            expanded.append(path)  # gone: its read says so
            continue
        except OSError as error:
            reader.unlisted.append(TransientReadError(path, f"not listed: {error.strerror or error}"))
            continue
        if _through_link(path, root, real_root) or (
            stat.S_ISLNK(mode) and not is_metadata_file_name(os.path.basename(path))
        ):
            continue  # a link named like a metadata file is read, and refused as no regular file
        if stat.S_ISDIR(mode):
            expanded.extend(listed.location for listed in reader.list(path))
        else:
            expanded.append(path)
    return expanded


def _through_link(path: str, root: str, real_root: str) -> bool:
    """Whether `path` is in the tree under `root` only through a link to a directory."""
    directory = os.path.dirname(local_path(path))
    within = os.path.relpath(directory, local_path(root))
    return os.path.realpath(directory) != os.path.normpath(os.path.join(real_root, within))


def _drain(items: queue.Queue[T], limit: int) -> list[T]:
    drained: list[T] = []
    while len(drained) < limit:
        try:
            drained.append(items.get_nowait())
        except queue.Empty:
            break
    return drained
