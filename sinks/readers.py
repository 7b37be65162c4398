"""Reading a store from any process: `open_reader` (the store itself when no writer holds it, else
the replica its writer publishes, see `viewlineage.sinks.store`) and `Readers`, the connections of
a long-running process that answers queries and may hold the store itself.

Kept apart from the writer so that the query commands load neither pyarrow nor the batch schemas.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import resource
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

import duckdb

from viewlineage.indexer.errors import (
    QueryOutOfMemory,
    QueryTimeout,
    RebuildPending,
    StoreError,
    StoreWarning,
)
from viewlineage.sinks.schema import SCHEMA_VERSION, applied, installed_queries, queries_marker

READER_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "lock_configuration": True,
    "autoload_known_extensions": False,
    "temp_directory": "",
}
"""Readers (and the `sql` command) get no file or network access from SQL and cannot re-enable it.
No temporary directory either: DuckDB lets a sandboxed connection write there (`COPY ... TO`)."""

QUERY_MEMORY = "2GiB"
"""A reader's DuckDB memory limit unless the setting `query-memory` says otherwise."""

_BINARY_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def memory_limit_bytes(conn: duckdb.DuckDBPyConnection) -> int:
    """The connection's DuckDB memory limit in bytes (DuckDB spells it `256.0 MiB`)."""
    text = conn.execute("SELECT current_setting('memory_limit')").fetchall()
    value, unit = (text[0][0] if text else "0 bytes").split()
    return int(float(value) * _BINARY_UNITS[unit])


@contextlib.contextmanager
def process_memory_bounded(conn: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Bounds the data of this process (`RLIMIT_DATA`) to what it holds now and three times the
    connection's memory limit while a process runs any SQL (`sql`): DuckDB's list and string
    builders allocate outside its limit (`len(range(150000000))` held 14 GB under 256MiB), and now
    fail with DuckDB's out-of-memory error instead. Three: DuckDB's own, what it does not count,
    and the rows handed to Python."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            held = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmData:"))
    except (OSError, StopIteration):  # no /proc (not Linux): DuckDB's own limit alone
        yield
        return
    previous = soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    wanted = held + 3 * memory_limit_bytes(conn)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft == resource.RLIM_INFINITY or wanted < soft:
        resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, previous)


def replica_path(path: str | os.PathLike[str]) -> Path:
    """The stable name readers use: a symlink to the newest replica file."""
    return Path(f"{os.fspath(path)}.replica")


def replicas_directory(path: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(path)}.replicas")


class QueryableStore(Protocol):
    """The writer's side that `Readers` uses (`viewlineage.sinks.store.Store`)."""

    def query_connection(self) -> duckdb.DuckDBPyConnection: ...


REBUILD_INTERRUPTED = (
    "a `viewlineage reindex` cleared its derived rows and stopped before deriving them all again; "
    "any writer (`reindex`, `index`, `watch`, `consume`) completes the rebuild when it opens the store"
)

DETACH_WAIT_SECONDS = 10.0
"""How long a store being closed waits for the requests reading it to finish."""


class Readers:
    """Connections for the queries a long-running process answers over HTTP. While the process
    writes the store (`attach`), its own connection, in a transaction per request: its statements
    see one snapshot, every batch committed before the first of them. Otherwise the newest
    replica, so that the process never opens the store file itself: it keeps no writer out, and it
    may become the writer (DuckDB refuses a second, differently configured connection to a file in
    one process). With `store_without_replica` (`serve`), the store itself while no replica exists
    (every writer publishes one as it finishes), or while the newest replica is older than the
    store's last write and no writer holds the store: a writer killed before it published its last
    batches left it behind, and nothing will publish a newer one until a writer runs again."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        store_without_replica: bool = False,
        memory_limit: str = QUERY_MEMORY,
    ) -> None:
        self.path = Path(path)
        self.store_without_replica = store_without_replica
        self.memory_limit = memory_limit
        self._store: QueryableStore | None = None
        self._in_use = 0
        self._changed = threading.Condition()

    def attach(self, store: QueryableStore | None) -> None:
        """This process now writes `store`; None: no longer, and the store may close once the
        requests reading it are done (waited for, up to `DETACH_WAIT_SECONDS`)."""
        with self._changed:
            self._store = store
            if store is None:
                self._changed.wait_for(lambda: self._in_use == 0, timeout=DETACH_WAIT_SECONDS)

    @contextlib.contextmanager
    def attached(self, store: QueryableStore) -> Iterator[None]:
        self.attach(store)
        try:
            yield
        finally:
            self.attach(None)

    @contextlib.contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._changed:
            own = self._store.query_connection() if self._store is not None else None
            self._in_use += own is not None
        if own is None:
            with self._open() as conn:
                yield conn
            return
        try:
            own.execute("BEGIN TRANSACTION")
            yield own
        finally:
            with contextlib.suppress(duckdb.Error):
                own.execute("ROLLBACK")
            own.close()
            with self._changed:
                self._in_use -= 1
                self._changed.notify_all()

    def _open(self) -> duckdb.DuckDBPyConnection:
        try:
            replica = _open_replica(self.path, self.memory_limit)
        except OSError:
            if self.store_without_replica:
                return open_reader(self.path, memory_limit=self.memory_limit)
            raise StoreError(
                f"no replica of {self.path} yet: this process answers once it writes the store or "
                "the process writing it publishes one"
            ) from None
        if self.store_without_replica and _written_since_replica(self.path):
            # Locked: a writer runs and publishes newer replicas; incomplete: the replica is what
            # there is meanwhile, and the answers say so.
            try:
                store = _read_only(self.path, self.path, self.memory_limit)
            except RebuildPending as pending:
                replica.close()
                return _replica_meanwhile(self.path, pending, self.memory_limit)
            except (duckdb.IOException, StoreError):
                return replica
            replica.close()
            return store
        return replica


def _written_since_replica(path: Path) -> bool:
    """Whether the store (or its write-ahead log) changed after its newest replica was copied."""
    try:
        published = replica_path(path).resolve(strict=True).stat().st_mtime_ns
    except OSError:
        return True
    written = [file.stat().st_mtime_ns for file in (path, Path(f"{path}.wal")) if file.exists()]
    return max(written, default=0) > published


def open_reader(
    path: str | os.PathLike[str], retry_seconds: float = 2.0, memory_limit: str = QUERY_MEMORY
) -> duckdb.DuckDBPyConnection:
    """A read-only, sandboxed connection: the store itself when no writer holds it, else its replica."""
    path = Path(path)
    if not path.exists():
        raise StoreError(f"no store at {path}; run `viewlineage index` first")
    if path.is_dir():
        raise StoreError(
            f"{path} is a directory: --db names the store's file (`{path / 'viewlineage.duckdb'}`)"
        )
    deadline = time.monotonic() + retry_seconds
    while True:
        try:
            return _read_only(path, path, memory_limit)
        except RebuildPending as exc:
            return _replica_meanwhile(path, exc, memory_limit)
        except duckdb.IOException as exc:
            with contextlib.suppress(duckdb.IOException, OSError):
                return _open_replica(path, memory_limit)
            if time.monotonic() > deadline:
                raise StoreError(f"store {path} is locked by a writer and has no replica yet: {exc}") from exc
            time.sleep(0.05)


def recorded_settings(path: str | os.PathLike[str]) -> dict[str, tuple[str, ...]]:
    """The settings the store at `path` records (`Store.recorded_settings`), read from the store or,
    while a writer holds it, its replica; empty when there is neither or they are not recorded yet.
    A writer reads them before it opens the store (and forks its workers), and checks them again
    once it holds it."""
    path = Path(path)
    for file in (path, replica_path(path)):
        try:
            conn = duckdb.connect(str(file.resolve(strict=True)), read_only=True, config=dict(READER_CONFIG))
        except (OSError, duckdb.Error):
            continue
        try:
            return recorded_in(conn)
        finally:
            conn.close()
    return {}


def recorded_in(conn: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, ...]]:
    """What `recorded_settings` holds on `conn`'s store, if it has the table."""
    exists = conn.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'recorded_settings'"
    ).fetchall()
    if not exists[0][0]:
        return {}
    return {name: tuple(entries) for name, entries in conn.execute("FROM recorded_settings").fetchall()}


STORE_NOTICE: contextvars.ContextVar[str | None] = contextvars.ContextVar("store_notice", default=None)
"""Set, in the thread that opened a reader, when its answers come from a replica older than the
store's incomplete rebuild: what the CLI warns of, which a server says beside each answer."""


def _replica_meanwhile(path: Path, pending: RebuildPending, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """The last replica, while the store's derived rows are incomplete (a killed `reindex`, or a
    writer that stopped before deriving its views' spans), with a warning that says so."""
    try:
        replica = _open_replica(path, memory_limit)
    except (OSError, StoreError):
        raise StoreError(f"{pending}; it has no replica to answer from meanwhile") from None
    published = datetime.fromtimestamp(replica_path(path).resolve().stat().st_mtime, UTC)
    age = _age(datetime.now(UTC) - published)
    notice = (
        f"{pending}. Answering from its replica of {published:%Y-%m-%dT%H:%M:%SZ} ({age} old), from before."
    )
    STORE_NOTICE.set(notice)
    warnings.warn(notice, StoreWarning, stacklevel=3)
    return replica


def _age(elapsed: timedelta) -> str:
    """`42 s`, `5 min`, `3 h`, `2 days`: how old a replica is, to the unit that matters."""
    seconds = max(0, int(elapsed.total_seconds()))
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _open_replica(path: Path, memory_limit: str = QUERY_MEMORY) -> duckdb.DuckDBPyConnection:
    """The newest replica of the store at `path` (OSError when there is none)."""
    # resolved once: the link moves on
    return _read_only(path, replica_path(path).resolve(strict=True), memory_limit)


def _read_only(path: Path, file: Path, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """A sandboxed read-only connection to `file`: the store at `path` or one of its replicas."""
    config = {**READER_CONFIG, "memory_limit": memory_limit}
    try:
        conn = duckdb.connect(str(file), read_only=True, config=config)
    except duckdb.IOException as exc:
        if "not a valid DuckDB database file" in str(exc):  # (a replica too: found by the twentieth
            # adversarial trial, which `serve` answered 500 with DuckDB's message)
            raise StoreError(f"{file} is not a viewlineage store (not a DuckDB database file)") from exc
        raise
    return _current(path, conn)


T = TypeVar("T")

QUESTION_STOPPED: contextvars.ContextVar[threading.Event] = contextvars.ContextVar("question_stopped")
"""Set, in the thread that answers a question (`answered_within`), once it is to stop: a question
made of many statements checks it before each (`check_stopped`), since interrupting DuckDB stops
only the statement running."""


def check_stopped() -> None:
    """Raise `QueryTimeout` if the question this thread answers was stopped."""
    stopped = QUESTION_STOPPED.get(None)
    if stopped is not None and stopped.is_set():
        raise QueryTimeout("the question was stopped")


def answered_within(
    conn: duckdb.DuckDBPyConnection, seconds: float, question: Callable[[duckdb.DuckDBPyConnection], T]
) -> T:
    """`question(conn)`, stopped with `QueryTimeout` once it has run `seconds`, or on Ctrl-C (then
    `KeyboardInterrupt` once DuckDB has stopped). It runs on a thread of its own: DuckDB does not
    notice signals while it runs a query, and a Python signal handler runs only while the main
    thread runs Python, as it does here between waits."""
    outcome: list[tuple[bool, Any]] = []
    ctrl_c = threading.Event()
    stopped = threading.Event()

    def run() -> None:
        QUESTION_STOPPED.set(stopped)
        try:
            outcome.append((True, question(conn)))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    def on_ctrl_c(signum: int, frame: object) -> None:
        ctrl_c.set()
        stopped.set()
        conn.interrupt()

    thread = threading.Thread(target=run, name="query", daemon=True)
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_ctrl_c) if in_main else None
    try:
        thread.start()
        deadline = time.monotonic() + seconds
        while thread.is_alive() and (left := deadline - time.monotonic()) > 0:
            thread.join(min(left, 0.1))
        if thread.is_alive():
            stopped.set()  # a question of many statements stops before its next one
            conn.interrupt()
            thread.join()
            raise QueryTimeout(
                f"the query ran longer than {seconds:g} s and was stopped (setting query-timeout)"
            )
    finally:
        if in_main:
            signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
    if ctrl_c.is_set():
        raise KeyboardInterrupt
    answered, value = outcome[0]
    if answered:
        return value  # type: ignore[no-any-return]
    if isinstance(value, duckdb.OutOfMemoryException):
        limit = conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        raise QueryOutOfMemory(
            f"the query needed more than its memory limit of {limit} and was stopped (setting query-memory)"
        ) from value
    raise value


def _current(path: Path, conn: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """`conn` if its store has this version's schema (the queries need every table of it) and
    the point-in-time indexes of every view (see `viewlineage.sinks.spans`)."""
    found = max(applied(conn), default=0)
    if found == SCHEMA_VERSION:
        if installed_queries(conn) != queries_marker():
            conn.close()
            raise StoreError(
                f"store {path} holds the queries of another viewlineage release: a writer "
                "(`viewlineage index`, `watch`, `consume` or `reindex`) installs this one's when it opens it"
            )
        if conn.execute("SELECT EXISTS (FROM _rebuild_started)").fetchall()[0][0]:
            conn.close()
            raise RebuildPending(f"store {path}: {REBUILD_INTERRUPTED}")
        stale = conn.execute("SELECT count(*) FROM _stale_spans").fetchone()
        if not (stale and stale[0]):
            return conn
        conn.close()
        raise RebuildPending(
            f"store {path}: its last writer stopped before deriving the point-in-time indexes of "
            f"{stale[0]} views; a writer (`viewlineage index`, `watch`, `consume` or `reindex`) "
            "derives them when it opens the store"
        )
    conn.close()
    if found < SCHEMA_VERSION:
        raise StoreError(
            f"store {path} has schema {found}, this viewlineage needs {SCHEMA_VERSION}: a writer "
            "(`viewlineage index`, `watch`, `consume` or `reindex`) migrates it when it opens it"
        )
    raise StoreError(
        f"store {path} has schema {found}, newer than this viewlineage's {SCHEMA_VERSION}: upgrade"
    )
