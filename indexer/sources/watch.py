"""`watch`: index a directory, then every metadata file closed in it or moved into it.

The observer starts before the initial scan, so nothing written during the scan is missed (what is
seen twice is absorbed by idempotent ingest). A file that fails to read or parse is retried with
backoff while its size or mtime still changes, for up to `settle_seconds`; only a file that fails
twice with the same size and mtime (stable), or is still failing at the deadline, is quarantined.
A later good read of the same path supersedes its quarantine row.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from watchdog.events import (
    DirCreatedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileMovedEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from viewlineage.sinks.store import Store

from ..batches import QuarantinedFile
from ..config import Settings
from ..errors import ObjectMissing, ReadError
from ..locations import is_metadata_file_name, normalize_location
from ..pipeline import Indexer, ReadFailure, with_roots
from ..read import FileRead, LocalReader

IDLE_POLL_SECONDS = 0.05

# watchdog re-registers directories created inside a recursive watch and warns each time; the
# warning is noise (the watch stays correct), so it is silenced here rather than in every caller.
warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning, module="watchdog")


class _Handler(FileSystemEventHandler):
    """Queues metadata files on close and move, and new directories: a file written into a
    directory before inotify watches it sends no event, so new directories are listed."""

    def __init__(self, paths: queue.Queue[str]) -> None:
        self.paths = paths

    def on_closed(self, event: FileClosedEvent) -> None:
        self._offer(event.src_path)

    def on_moved(self, event: FileMovedEvent | DirMovedEvent) -> None:
        if event.is_directory:
            self.paths.put(os.fsdecode(event.dest_path))
        else:
            self._offer(event.dest_path)

    def on_created(self, event: DirCreatedEvent | FileCreatedEvent) -> None:
        if event.is_directory:
            self.paths.put(os.fsdecode(event.src_path))

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


def _stat(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def watch_directory(
    root: str,
    settings: Settings,
    log: Callable[[str], None] = lambda line: None,
    stop: threading.Event | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Run until `stop` is set (or forever)."""
    root = normalize_location(root)
    stop = stop or threading.Event()
    config = with_roots(settings.parse_config(), [root])
    reader = LocalReader()
    paths: queue.Queue[str] = queue.Queue()
    observer = Observer()
    observer.schedule(
        _Handler(paths),
        root,
        recursive=True,
        event_filter=[FileClosedEvent, FileMovedEvent, DirMovedEvent, DirCreatedEvent],
    )
    observer.start()
    try:
        with Store(settings.db, settings.replica_interval) as store:
            store.record_roots([root])
            indexer = Indexer(store, config)
            for listed in reader.list(root):
                paths.put(listed.location)
            store.publish_replica(force=True)
            log(f"watching {root}")
            if on_ready is not None:
                on_ready()
            _loop(indexer, reader, paths, settings, stop, log)
    finally:
        observer.stop()
        observer.join()


def _loop(
    indexer: Indexer,
    reader: LocalReader,
    paths: queue.Queue[str],
    settings: Settings,
    stop: threading.Event,
    log: Callable[[str], None],
) -> None:
    retries: dict[str, _Attempt] = {}
    while not stop.is_set():
        due = _expand_directories(_drain(paths, settings.batch_files), reader)
        now = time.monotonic()
        due.extend(
            location for location, attempt in retries.items() if attempt.due <= now and location not in due
        )
        if not due:
            indexer.store.publish_replica()
            time.sleep(IDLE_POLL_SECONDS)
            continue
        todo = [
            location
            for location in dict.fromkeys(normalize_location(p) for p in due)
            if location in retries or location not in indexer.store.indexed([location])
        ]
        ready: list[FileRead | ReadFailure] = []
        for location in todo:
            before = _stat(location)
            try:
                read = reader.read(location, settings.max_file_bytes)
            except ObjectMissing:
                retries.pop(location, None)
                continue
            except ReadError as exc:
                if _retry(retries, location, before, settings.settle_seconds):
                    continue
                ready.append(ReadFailure(location, exc))
                continue
            parsed = indexer.parse(read)
            if isinstance(parsed, QuarantinedFile) and _retry(
                retries, location, before, settings.settle_seconds
            ):
                continue
            retries.pop(location, None)
            ready.append(read)
        if ready:
            batch = indexer.build_batch(ready)
            indexer.store.write(batch)
            for item in batch.quarantined:
                log(f"quarantined {item.location}: {item.reason}: {item.message}")
            log(f"indexed {len(batch.indexed)} files, quarantined {len(batch.quarantined)}")


def _retry(retries: dict[str, _Attempt], location: str, stat: tuple[int, int] | None, settle: float) -> bool:
    """Whether to try `location` again later rather than quarantine it now."""
    now = time.monotonic()
    attempt = retries.get(location)
    if attempt is None:
        retries[location] = _Attempt(now, now + 0.1, 1, stat)
        return True
    stable = stat == attempt.stat and stat is not None
    if stable or now - attempt.first_seen >= settle:
        retries.pop(location)
        return False
    attempt.tries += 1
    attempt.stat = stat
    attempt.due = now + min(0.1 * 2**attempt.tries, 2.0)
    return True


def _expand_directories(paths: list[str], reader: LocalReader) -> list[str]:
    expanded: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            expanded.extend(listed.location for listed in reader.list(path))
        else:
            expanded.append(path)
    return expanded


def _drain(paths: queue.Queue[str], limit: int) -> list[str]:
    drained: list[str] = []
    while len(drained) < limit:
        try:
            drained.append(paths.get_nowait())
        except queue.Empty:
            break
    return drained
