"""Store work on a thread of its own, so that reading and parsing the next files overlaps the
transaction in progress (DuckDB releases the GIL while it works)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

Payload = TypeVar("Payload")


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
