"""The one process that writes a store: whoever holds its lock merges the spool into it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from viewlineage.sinks.readers import Readers
from viewlineage.sinks.spool import Spool
from viewlineage.sinks.store import Store

from ..config import Settings
from ..errors import StoreError
from ..health import Health

ACQUIRE_RETRY_SECONDS = 1.0
Payload = TypeVar("Payload")


class StoreWriter:
    """Tries for the store's write lock (at most every second) until it holds it, then keeps it
    and merges the spool. A process that never gets it keeps feeding the spool."""

    def __init__(
        self, settings: Settings, spool: Spool, health: Health, readers: Readers | None = None
    ) -> None:
        self.settings = settings
        self.spool = spool
        self.health = health
        self.readers = readers
        self.store: Store | None = None
        self._tried = float("-inf")
        self._refusal: str | None = None

    def acquire(self) -> bool:
        """True when this call took the lock."""
        now = time.monotonic()
        if self.store is not None or now - self._tried < ACQUIRE_RETRY_SECONDS:
            return False
        self._tried = now
        try:
            self.store = Store(self.settings.db, self.settings.replica_interval, self.settings.store_memory)
        except StoreError as exc:
            if "Could not set lock" not in str(exc):
                raise  # not another writer: a bad path, permissions, a damaged file
            if self._refusal is None:
                self.health.log("not-writer", reason=str(exc).splitlines()[0])
            self._refusal = str(exc)
            return False
        if self.readers is not None:
            self.readers.attach(self.store)
        self.merge()
        self.store.publish_replica(force=True)  # readers get an answer (maybe empty) from the start
        # Logged once other processes' readers can read the store: from its replica.
        self.health.log("writer", store=self.settings.db)
        return True

    def merge(self) -> int:
        if self.store is None:
            return 0
        merged = self.spool.merge_into(self.store)
        self.store.publish_replica()
        return merged

    def close(self) -> None:
        if self.store is not None:
            self.merge()
            if self.readers is not None:
                self.readers.attach(None)
            self.store.close()
            self.store = None


class StoreThread(Generic[Payload]):
    """Store work on a thread of its own, in order, while the caller reads and parses what comes
    next. What is submitted while a transaction runs goes into the next one together (`write`
    takes every payload queued): a transaction's cost is mostly fixed (a statement per table, the
    spans' re-derivation), so a follower behind its input pays it once a round rather than once a
    batch, and a file waits for the transaction in progress, not for each batch queued before it.
    At most `max_queued` payloads wait (`submit` blocks beyond them). A failed write's error is
    raised by the next `submit` or `wait`."""

    def __init__(self, write: Callable[[list[Payload]], None], max_queued: int = 4) -> None:
        self._write = write
        self._max_queued = max_queued
        self._queued: list[Payload] = []
        self._writing = False
        self._closed = False
        self._error: BaseException | None = None
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None  # started by the first submit: after any fork

    def submit(self, payload: Payload) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="store", daemon=True)
            self._thread.start()
        with self._changed:
            self._changed.wait_for(lambda: self._error is not None or len(self._queued) < self._max_queued)
            self._raise()
            self._queued.append(payload)
            self._changed.notify_all()

    def wait(self) -> None:
        """Until nothing is queued or written: then the store's connection is the caller's again."""
        with self._changed:
            self._changed.wait_for(lambda: self._error is not None or not (self._queued or self._writing))
            self._raise()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            with self._changed:
                self._closed = True
                self._changed.notify_all()
            if self._thread is not None:
                self._thread.join()

    def _raise(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._queued or self._closed)
                if not self._queued:
                    return
                payloads, self._queued = self._queued, []
                self._writing = True
                self._changed.notify_all()
            try:
                self._write(payloads)
            except BaseException as exc:  # handed to the caller, as a job's error would be
                with self._changed:
                    self._error = exc
            finally:
                with self._changed:
                    self._writing = False
                    self._changed.notify_all()
