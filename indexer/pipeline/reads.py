"""Reading files in parallel with bounded retries: listed or announced locations -> `FileRead`s,
or `ReadFailure`s that become quarantine rows."""

from __future__ import annotations

import functools
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from viewlineage.indexer.config import Settings
from viewlineage.indexer.errors import NotRegularFile, ObjectMissing, ObjectTooLarge, ReadError
from viewlineage.indexer.pipeline.rows import QuarantinedFile
from viewlineage.indexer.sources.read import (
    FileRead,
    ListedFile,
    Reader,
)

READ_ATTEMPTS = 3
ANNOUNCED_ATTEMPTS = 6
ANNOUNCED_WINDOW_S = 3.1
"""How long after a batch's reads start a missing announced object is read again (`read_with_retries`)."""
BULK_READS_PER_TASK = 16
"""Files each read task of `index` takes (see `read_all`)."""


@dataclass(frozen=True, slots=True)
class ReadFailure:
    """A location that could not be turned into bytes."""

    location: str
    error: ReadError


READ_FAILURE_REASONS: dict[type[ReadError], str] = {
    ObjectTooLarge: "over-size-limit",
    NotRegularFile: "not-a-regular-file",
}
"""The quarantine reason of each terminal read error; any other read failure is `unreadable`."""


def quarantine_read_failure(
    failure: ReadFailure, missing_is_quarantine: bool = False
) -> QuarantinedFile | None:
    """A read failure's quarantine row. A missing object is only quarantined (`object-missing`)
    when an event said it was created: a listing that races a delete has nothing to keep."""
    if isinstance(failure.error, ObjectMissing):
        if not missing_is_quarantine:
            return None
        return QuarantinedFile(failure.location, "object-missing", str(failure.error), None, None)
    reason = READ_FAILURE_REASONS.get(type(failure.error), "unreadable")
    return QuarantinedFile(failure.location, reason, str(failure.error), None, None)


def read_with_retries(
    read: Callable[[], FileRead],
    location: str,
    attempts: int = READ_ATTEMPTS,
    announced_until: float | None = None,
) -> FileRead | ReadFailure:
    """Bounded retries for transient errors; terminal ones fail at once. An announced object (an
    event said it was created) that is missing is retried too, until `announced_until` (a
    `time.monotonic()` deadline the reads of one batch share): SeaweedFS publishes its notification
    before the PUT has finished, so the first GET can come too early; a batch gets a few seconds,
    not each object (a message naming 3,000 missing objects held `consume` for 20 minutes). Its
    other transient errors are not retried here: the client retried already, and `consume` waits
    out a store that does not answer (a read per attempt took ~5 s against a store that was down)."""
    announced = announced_until is not None
    total = max(attempts, ANNOUNCED_ATTEMPTS) if announced else attempts
    attempts = 1 if announced else attempts
    for attempt in range(total):
        pause = 0.1 * 2**attempt  # before the next attempt
        try:
            return read()
        except ObjectMissing as exc:
            late = announced_until is None or time.monotonic() + pause > announced_until
            if late or attempt == total - 1:
                return ReadFailure(location, exc)
        except (ObjectTooLarge, NotRegularFile) as exc:
            return ReadFailure(location, exc)
        except ReadError as exc:
            if attempt >= attempts - 1:
                return ReadFailure(location, exc)
        time.sleep(pause)
    raise AssertionError("unreachable")


def read_all(
    todo: Iterable[tuple[Reader, ListedFile]],
    settings: Settings,
    announced: bool = False,
    files_per_task: int = 1,
) -> Iterator[FileRead | ReadFailure]:
    """Read files in parallel (`read_workers` threads), in order, with bounded retries. At most
    `batch_files` reads, and about `batch_bytes` of listed bytes (a file of unknown size counts as
    `max_file_bytes`), run ahead of the consumer, so memory stays flat whatever the listing's size
    and its files' sizes. A bulk listing reads several files per task (`files_per_task`): from the
    page cache a read costs less than handing it to a thread."""

    announced_until = time.monotonic() + ANNOUNCED_WINDOW_S if announced else None

    def read_some(entries: list[tuple[Reader, ListedFile]]) -> list[FileRead | ReadFailure]:
        return [
            read_with_retries(
                functools.partial(reader.read, listed.location, settings.max_file_bytes, listed),
                listed.location,
                announced_until=announced_until,
            )
            for reader, listed in entries
        ]

    def weight(entries: list[tuple[Reader, ListedFile]]) -> int:
        return sum(
            settings.max_file_bytes if listed.size is None else min(listed.size, settings.max_file_bytes)
            for _, listed in entries
        )

    window = max(settings.batch_files, settings.read_workers * 4) // files_per_task or 1
    entries = iter(todo)
    with ThreadPoolExecutor(settings.read_workers) as pool:
        ahead: deque[tuple[Future[list[FileRead | ReadFailure]], int]] = deque()
        ahead_bytes = 0
        while chunk := list(itertools.islice(entries, files_per_task)):
            ahead.append((pool.submit(read_some, chunk), weight(chunk)))
            ahead_bytes += ahead[-1][1]
            while ahead and (len(ahead) >= window or ahead_bytes > settings.batch_bytes):
                done, done_bytes = ahead.popleft()
                ahead_bytes -= done_bytes
                yield from done.result()
        for done, _ in ahead:
            yield from done.result()
