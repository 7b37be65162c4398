"""The exceptions viewlineage raises. Findings about a file's content are never exceptions.

    ViewLineageError
    ├── ReadError                   a location could not be turned into bytes
    │   ├── ObjectMissing             the object does not exist (any more)
    │   ├── ObjectTooLarge            stored size over the configured limit        (terminal)
    │   ├── NotRegularFile            a FIFO, socket or device named like a metadata file (terminal)
    │   ├── TransientReadError        network / throttling / partial write         (transient)
    │   └── SourceUnavailable         the object store answers no read of a batch  (transient)
    ├── QuarantineError             the bytes cannot be indexed at all                (terminal)
    │   ├── DecompressionBomb         decompressed size over the configured limit
    │   └── TruncatedGzip             the gzip stream ends early or is corrupt
    ├── StoreError                  the DuckDB store refused a batch or a query      (transient)
    │   ├── StoreAbandoned            a COMMIT failed: the writer stops, a restart resumes
    │   └── RebuildPending            a `reindex` was interrupted: a writer completes it first
    └── UsageError                  a bad argument: unknown view, ambiguous name, bad time

Terminal errors quarantine the file and the pipeline moves on; transient ones are retried and,
in the event consumers, leave the offset uncommitted.
"""

from __future__ import annotations

from collections.abc import Sequence


class Terminal:
    """Marker: retrying cannot help; quarantine and move on."""


class Transient:
    """Marker: the same call may succeed later."""


class ViewLineageError(Exception):
    """Base class of every error raised on purpose by viewlineage."""


class ReadError(ViewLineageError):
    """A location could not be read."""

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"{location}: {message}")
        self.location = location
        self.message = message

    def __reduce__(self) -> tuple[type[ReadError], tuple[str, str]]:
        # Read failures travel to the parsing workers; the default pickling passes one argument.
        return type(self), (self.location, self.message)


class ObjectMissing(ReadError, Terminal):
    """The object does not exist (deleted between listing and reading, or never written)."""


class ObjectTooLarge(ReadError, Terminal):
    """The stored object is larger than `max-file-bytes`."""


class NotRegularFile(ReadError, Terminal):
    """A local name that is no regular file (a FIFO would block the read that opened it)."""


class TransientReadError(ReadError, Transient):
    """A network, throttling or permission hiccup; the read may succeed later."""


class SourceUnavailable(ReadError, Transient):
    """Every read of a batch failed and the store itself does not answer (down, throttling,
    credentials refused): the batch waits, its offsets uncommitted, and nothing is quarantined."""


class QuarantineError(ViewLineageError, Terminal):
    """The bytes cannot be indexed. `reason` is the stable code stored in the quarantine table."""

    reason = "unreadable"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class DecompressionBomb(QuarantineError):
    """Decompressing would exceed `max-decompressed-bytes`."""

    reason = "over-decompressed-limit"


class TruncatedGzip(QuarantineError):
    """The gzip stream ends early or its CRC does not match."""

    reason = "truncated-gzip"


class StoreError(ViewLineageError, Transient):
    """The store could not take a batch or answer a query."""


class StoreAbandoned(StoreError):
    """A COMMIT failed. DuckDB's state after that cannot be trusted (a writer that went on, then
    checkpointed, left a store whose rows no longer matched its own filters), so the writer stops
    without a checkpoint: the files hold every batch committed before, and a restart goes on."""


class RebuildPending(StoreError):
    """The store is mid-rebuild: a `reindex` cleared its derived rows and stopped before it had
    derived them all again. Readers turn to the replica from before; a writer completes it."""


class QueryTimeout(StoreError):
    """A query ran longer than the setting `query-timeout` and was stopped."""


class QueryOutOfMemory(StoreError):
    """A query needed more memory than the setting `query-memory` lets it have."""


class StoreWarning(UserWarning):
    """An answer came from somewhere other than the store's latest state (an older replica)."""


class ServiceUnavailable(ViewLineageError):
    """Something a command needs outside the store cannot be had: a port to listen on is taken, the
    Kafka brokers do not answer."""


class UsageError(ViewLineageError):
    """A user-supplied argument is wrong: an unknown or ambiguous view, a malformed time.
    `suggestions`: what could be asked instead (close names, or the ids an ambiguous name has)."""

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions = tuple(suggestions)
