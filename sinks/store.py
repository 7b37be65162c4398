"""The DuckDB store: the only writer of a store file, and sandboxed read-only readers.

DuckDB lets one process open a file for writing, and a writer's lock keeps every other process
out, readers included. So while a writer runs (`index`, `watch`, `consume`, `reindex`) it publishes
read-only replicas at most every `replica_interval` seconds (and copying at most a tenth of its
time) after a committed batch: CHECKPOINT, copy to a new file `<store>.replicas/<n>.duckdb` while
the writer goes on, then point the symlink `<store>.replica` at it (atomic rename). A replica
file is never modified or replaced, only deleted once three newer ones exist and it is five
seconds old: DuckDB opens a database by path several times while connecting, so a file renamed
over a path mid-connect would mix two stores. Readers open the store itself when it is free, else
the file the symlink names, resolved once; they are never blocked, never see a half-written file,
and what they see never goes back.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from viewlineage.indexer.errors import RebuildPending, StoreAbandoned, StoreError
from viewlineage.sinks import audit, spans
from viewlineage.sinks.readers import (
    REBUILD_INTERRUPTED,
    memory_limit_bytes,
    recorded_in,
    replica_path,
    replicas_directory,
)
from viewlineage.sinks.schema import install_queries, migrate, reindex_needed
from viewlineage.sinks.tables import (
    BACK,
    CHILDREN,
    DEDUPLICATED,
    DERIVED_TABLES,
    FILE_COLUMN,
    PRIMARY_KEYS,
    SCHEMAS,
    without_file_column,
)

MEMORY_RAISE = 1.1
"""A limit the key indexes outgrow is raised by this factor: in small steps, because the cache
fills whatever limit is set, not what the indexes need."""
MEMORY_RAISES = 16
"""How often one statement or batch may raise the store's memory limit before failing (4.6x in all)."""
INDEXED_LOOKUP_KEYS = 2048
DISK_FULL = "No space left on device"
ROW_ERRORS = (
    duckdb.ConstraintException,
    duckdb.ConversionException,
    duckdb.InvalidInputException,
    duckdb.OutOfRangeException,
    duckdb.TypeMismatchException,
)
"""What DuckDB raises for rows it refuses (the store itself is fine): a batch that fails so is
stored file by file."""
"""DuckDB's `index_scan_max_count`: more keys than this are found by a scan anyway."""

_Result = TypeVar("_Result")

COPY_COMMAND = ("cp", "--reflink=auto")
CHECKPOINTS_HELD_OFF = "1000TB"
"""`checkpoint_threshold` while a replica is copied: no write-ahead log grows that large."""
REPLICA_WAIT_FACTOR = 9.0
"""After a publication, the next waits at least this many times as long as it took: copies (a
core and the disk) run at most a tenth of a writer's time. A copy grows with the store (8 GB at
10^6 files, ~20 s here), and at a fixed interval a writer on a large store would always be copying."""
KEEP_REPLICAS = 3
REPLICA_GRACE_SECONDS = 5.0
"""An old replica file is deleted only when this many newer ones exist and it is this old, so a
reader that resolved the symlink just before it moved still connects to a whole file."""


class ArrowBatch(Protocol):
    """What a writer hands the store: rows as Arrow tables named as store tables (`tables.py`)."""

    def to_arrow(self) -> dict[str, pa.Table]: ...


@dataclass
class SetAside:
    """The files a write brought that the store quarantined rather than indexed."""

    refused: list[str] = field(default_factory=list)
    """Refused by DuckDB (`insert-failed`)."""
    reused: list[str] = field(default_factory=list)
    """At a location indexed with other content (`location-reused`)."""

    def __iadd__(self, other: SetAside) -> SetAside:
        self.refused += other.refused
        self.reused += other.reused
        return self

    def reasons(self) -> dict[str, str]:
        """Each location set aside, with its quarantine reason."""
        return dict.fromkeys(self.refused, "insert-failed") | dict.fromkeys(self.reused, "location-reused")


class Store:
    """A writer connection to a store file: migrations applied, query macros installed."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        replica_interval: float | None = 2.0,
        memory_limit: str | None = None,
        rederiving: bool = False,
        deferred_spans: bool = False,
        lock_wait: float | None = None,
    ) -> None:
        """`rederiving`: the caller re-derives every row (`reindex`), so a migration that awaits a
        reindex is not worth a warning. `lock_wait`: how long to wait for the store's lock (default
        `LOCK_WAIT_SECONDS`). `deferred_spans`: nothing in this process reads the store
        while it writes (no `query_connection`), so the point-in-time indexes of the views batches
        touch are derived once before each replica and on closing, not in every batch (see
        `viewlineage.sinks.spans`)."""
        self.path = Path(path)
        self.replica_interval = replica_interval
        self.memory_limit = memory_limit
        self.deferred_spans = deferred_spans
        self._spans_pending = True
        """Whether views may await their spans: a writer that stopped before deriving them left
        them to this one."""
        self._next_replica = time.monotonic() + (replica_interval or 0.0)
        """No replica before this (unless forced). The interval counts from opening: a short
        `index` run publishes once, when it closes, not after its first batch too (a CHECKPOINT
        and a copy of the store each). Followers publish when they start (`force`)."""
        self._dirty = False
        self._abandoned: str | None = None
        """Why this writer stopped (a failed COMMIT), said again to every later call."""
        self._refused_any = False
        """Whether this writer ever refused a file or stored one as `internal-error`."""
        self.unverified: set[str] = set()
        """Files stored since the first of them: what they name may have gone with it (the
        indexer leaves out what it parsed before), so `incomplete_files` checks them."""
        self._copy: ReplicaCopy | None = None
        self._memory_raises = 0
        self._raising = threading.Lock()
        self._transacting = threading.Lock()
        """Held by a transaction, and by a lookup of a listing's chunk (`unindexed`): the two share
        one memory limit, and a COMMIT that cannot allocate stops the writer (`StoreAbandoned`)."""
        try:
            # DuckDB's default limit (80% of RAM) lets a long-running writer's cache grow with the
            # store; under `memory_limit` it evicts and spills instead.
            limit: dict[str, str | bool | int | float | list[str]] = (
                {"memory_limit": memory_limit} if memory_limit else {}
            )
            self.conn = _connect_waiting(
                self.path, limit, LOCK_WAIT_SECONDS if lock_wait is None else lock_wait
            )
        except duckdb.Error as exc:
            raise StoreError(f"cannot open {self.path} for writing: {exc}") from exc
        # A join whose build side has up to this many keys filters the other side's scan by the
        # keys themselves, which DuckDB looks up in an index (DuckDB's default, 50, is fewer than a
        # follower's batch brings): see `_stored`.
        self.conn.execute(f"SET dynamic_or_filter_threshold = {INDEXED_LOOKUP_KEYS}")
        self._within_memory(self.conn, self._prepare)
        if (stale := reindex_needed(self.conn)) and not rederiving:
            warnings.warn(
                f"{self.path} was indexed before {', '.join(stale)}: run `viewlineage reindex` to derive "
                "the rows they add from the stored documents",
                RuntimeWarning,
                stacklevel=2,
            )
        found = self.conn.execute("SELECT EXISTS (FROM quarantine)").fetchall()
        self._quarantine_rows = bool(found[0][0])
        """Whether the quarantine may hold rows: this writer alone changes the store while it runs,
        so while it holds none, a batch skips the statements that clear superseded ones."""
        self.lookups = self.conn.cursor()
        """Lookups (what is indexed, which lineage is stored) on a connection of their own: a
        follower asks them while its store thread writes the batch before (they see what is
        committed; a miss only costs idempotent work)."""
        self._queries = self.conn.cursor()  # only ever asked for cursors, from any thread
        self._rebuilding = self._rebuild_marked()
        """Whether derived rows are being (or were left half) re-derived: no replica shows that."""
        if self._rebuilding and not rederiving:
            self.lookups.close()
            self._queries.close()
            self.conn.close()
            raise RebuildPending(f"store {self.path}: {REBUILD_INTERRUPTED}")
        self._derive_stale_spans()

    def _prepare(self) -> None:
        """Migrations, the query macros and the point-in-time indexes they need, in one
        transaction: a store is at the schema it had or at this one, never between, and a crash
        leaves the next writer all of it to do again."""
        with self._transaction():
            migrated = migrate(self.conn)
            install_queries(self.conn, reinstall=bool(migrated))
            if set(spans.FILLED_BY) & set(migrated):  # derived from the rows already there
                spans.rebuild(self.conn)
            elif set(audit.FILLED_BY) & set(migrated):
                audit.rebuild(self.conn)

    def close(self) -> None:
        try:
            if self._copy is not None:
                if self._abandoned:
                    self._copy.abandon()
                    self._copy = None
                else:
                    self._publish_copy()
            if not self._abandoned:
                self._derive_stale_spans()
            if self._dirty:
                self.publish_replica(force=True)
        finally:
            self.lookups.close()
            self._queries.close()
            self.conn.close()

    def query_connection(self) -> duckdb.DuckDBPyConnection:
        """A connection of its own for queries, from any thread (the caller closes it): each
        statement, or each transaction the caller opens, sees every batch committed before it
        starts, whatever the writer does meanwhile. Only this package's queries run on it: it
        could write. Not with `deferred_spans`: the spans of views may lag the batches."""
        if self.deferred_spans:
            raise StoreError(f"{self.path}: a writer that defers spans answers no queries")
        return self._queries.cursor()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def write(self, batch: ArrowBatch) -> None:
        """Insert a batch in one transaction (see `write_tables`)."""
        self.write_tables(batch.to_arrow())

    def write_tables(
        self, tables: Mapping[str, pa.Table], resumable_children: bool = False, follower: bool = False
    ) -> SetAside:
        """Insert Arrow tables (named as store tables) in one transaction. Every key is
        content-derived, so inserting what is already there changes nothing (INSERT OR IGNORE):
        ingest is idempotent and order-free. Child rows go in first, and only those whose parent
        row is not stored yet (the batch brings it); with `resumable_children`, also only those
        not stored yet (a table-by-table load that stopped half-way). Rows of `DEDUPLICATED` tables
        go in when no equal row is stored. A location that indexed once
        stays indexed, so a quarantine row never hides it (one saying that other content was
        written there since, `location-reused`, stands beside it) and a good read supersedes one; an
        `object-missing` row gives way to a removal of the same location (the object was deleted
        before it could be read). The removals of the files `BACK` names go (the table is no store
        table: deleted and put back). A `follower`'s file at a location indexed with other content
        is quarantined (`location-reused`, see `_reused_set_aside`). Returns the files the batch
        brought that were quarantined rather than indexed."""
        set_aside = SetAside()
        if not tables:
            return set_aside
        if self._abandoned:
            raise StoreAbandoned(self._abandoned)
        if follower and "files" in tables:
            tables, set_aside.reused = self._reused_set_aside(tables)
        statements = {
            "quarantine": [
                "INSERT OR IGNORE INTO quarantine SELECT * FROM _batch b "
                f"WHERE (b.location NOT IN ({_stored('files', 'location')}) OR b.reason = 'location-reused') "
                f"AND NOT (b.reason = 'object-missing' AND b.location IN ({_stored('removals', 'location')}))"
            ],
            "files": ["INSERT OR IGNORE INTO files SELECT * FROM _batch"],
            "removals": ["INSERT OR IGNORE INTO removals SELECT * FROM _batch"],
            BACK: ["DELETE FROM removals WHERE location IN (SELECT location FROM _batch)"],
        }
        if self._quarantine_rows or "quarantine" in tables:  # else there is nothing to clear
            statements["files"].append(
                "DELETE FROM quarantine WHERE location IN (SELECT location FROM _batch)"
            )
            statements["removals"].append(
                "DELETE FROM quarantine WHERE reason = 'object-missing' "
                "AND location IN (SELECT location FROM _batch)"
            )
        for child, (parents, column) in CHILDREN.items():
            unseen = " AND ".join(f"b.{column} NOT IN ({_stored(parent, column)})" for parent in parents)
            if resumable_children:
                keys = " AND ".join(f"c.{key} = b.{key}" for key in PRIMARY_KEYS[child])
                unseen += f" AND NOT EXISTS (SELECT 1 FROM {child} c WHERE {keys})"
            statements[child] = [f"INSERT INTO {child} SELECT DISTINCT * FROM _batch b WHERE {unseen}"]
        for table in DEDUPLICATED:
            key_columns = PRIMARY_KEYS[table]
            same = " AND ".join(f"s.{key} IS NOT DISTINCT FROM b.{key}" for key in key_columns)
            stored = _stored(table, key_columns[0], "*")
            statements[table] = [
                f"INSERT INTO {table} SELECT DISTINCT * FROM _batch b "
                f"WHERE NOT EXISTS (SELECT 1 FROM ({stored}) s WHERE {same})"
            ]
        try:
            self._within_memory(self.conn, lambda: self._write(without_file_column(tables), statements))
        except ROW_ERRORS as exc:
            if not any(FILE_COLUMN in table.column_names for table in tables.values()):
                raise StoreError(f"batch of {_rows(tables)} rows not stored: {exc}") from exc
            set_aside.refused = self._write_file_by_file(tables, statements)
        except duckdb.Error as exc:
            raise StoreError(f"batch of {_rows(tables)} rows not stored: {exc}") from exc
        self._dirty = True
        self._quarantine_rows = self._quarantine_rows or "quarantine" in tables
        reasons = tables["quarantine"]["reason"].to_pylist() if "quarantine" in tables else []
        self._refused_any |= bool(set_aside.refused) or "internal-error" in reasons
        if self._refused_any:
            self.unverified.update(_written_locations(tables))
        self.publish_replica()
        return set_aside

    def _reused_set_aside(self, tables: Mapping[str, pa.Table]) -> tuple[Mapping[str, pa.Table], list[str]]:
        """The tables without the rows of files whose location was indexed with another document,
        and with a `location-reused` quarantine row for each; and those locations. A metadata file
        is written once, so the store keeps the first: taking the second too would mix two
        documents under one location (a Hadoop catalog writes `v1.metadata.json` again after DROP
        and CREATE)."""
        files = tables["files"]
        indexed = dict(
            self._lookup(self.conn, "files", "location", files["location"].to_pylist(), "content_hash")
        )
        reused = [
            row
            for row in files.select(["location", "content_hash", "stored_bytes", "modified_ms"]).to_pylist()
            if indexed.get(row["location"], row["content_hash"]) != row["content_hash"]
        ]
        if not reused:
            return tables, []
        locations = pa.array([row["location"] for row in reused], pa.string())
        kept = {  # its removal stays (the first file is gone), and so do its quarantine rows
            name: table
            if name in ("removals", "quarantine")
            else table.filter(
                pc.invert(
                    pc.is_in(table["location" if name == BACK else FILE_COLUMN].cast(pa.string()), locations)
                )
            )
            for name, table in tables.items()
        }
        now = datetime.now(UTC)
        reason = "location-reused"
        quarantine = pa.Table.from_pylist(
            [
                {
                    "location": row["location"],
                    "reason": reason,
                    "message": f"holds document {row['content_hash'][:16]}, not the indexed "
                    f"{indexed[row['location']][:16]}: the location was reused (DROP and CREATE in a "
                    "catalog that names files vN.metadata.json?); the store keeps the file first "
                    "indexed here, and an index into a new store takes the new one",
                    "stored_bytes": row["stored_bytes"],
                    "modified_ms": row["modified_ms"],
                    "quarantined_at": now,
                    FILE_COLUMN: row["location"],
                }
                for row in reused
            ],
            schema=SCHEMAS["quarantine"].append(pa.field(FILE_COLUMN, pa.string())),
        )
        if "quarantine" in kept:
            quarantine = pa.concat_tables([kept["quarantine"].cast(quarantine.schema), quarantine])
        kept["quarantine"] = quarantine
        # The first file is gone by the time the second was written: a removal then, unless one is
        # known (`consume` may meet the create first, and the older delete then counts for nothing).
        removed = {row[0] for row in self._lookup(self.conn, "removals", "location", locations.to_pylist())}
        if "removals" in kept:
            removed.update(kept["removals"]["location"].to_pylist())
        now_ms = int(now.timestamp() * 1000)
        replaced = pa.Table.from_pylist(
            [
                {
                    "location": row["location"],
                    "removed_ms": now_ms if row["modified_ms"] is None else row["modified_ms"],
                    "source": reason,
                    FILE_COLUMN: row["location"],
                }
                for row in reused
                if row["location"] not in removed
            ],
            schema=SCHEMAS["removals"].append(pa.field(FILE_COLUMN, pa.string())),
        )
        if "removals" in kept:
            replaced = pa.concat_tables([kept["removals"].cast(replaced.schema), replaced])
        kept["removals"] = replaced
        return kept, locations.to_pylist()

    def _write_file_by_file(
        self, tables: Mapping[str, pa.Table], statements: Mapping[str, list[str]]
    ) -> list[str]:
        """A batch whose rows DuckDB refused, one transaction per file (with the rows files share):
        a file refused alone is quarantined (`insert-failed`), and the others are stored. Returns
        the files refused."""
        refused_files: list[str] = []
        owners = {
            name: table.column(FILE_COLUMN).cast(pa.string())
            for name, table in tables.items()
            if FILE_COLUMN in table.column_names
        }
        locations = dict.fromkeys(
            location for column in owners.values() for location in column.to_pylist() if location is not None
        )
        for location in locations:
            own = {
                name: table.filter(pc.or_kleene(pc.equal(owners[name], location), pc.is_null(owners[name])))
                for name, table in tables.items()
                if name in owners
            }
            if BACK in tables:
                own[BACK] = tables[BACK].filter(pc.equal(tables[BACK]["location"], location))
            try:
                self._within_memory(
                    self.conn, functools.partial(self._write, without_file_column(own), statements)
                )
            except ROW_ERRORS as exc:
                refused_files.append(location)
                refused = {"quarantine": _insert_failed(location, exc)}
                try:
                    self._within_memory(self.conn, functools.partial(self._write, refused, statements))
                except duckdb.Error as again:
                    raise StoreError(f"{location}: not stored ({exc}), nor quarantined: {again}") from again
            except duckdb.Error as exc:
                raise StoreError(f"{location}: not stored: {exc}") from exc
        return refused_files

    def _write(self, tables: Mapping[str, pa.Table], statements: Mapping[str, list[str]]) -> None:
        with self._transaction():
            for name in [*sorted(SCHEMAS, key=lambda table: table not in CHILDREN), BACK]:
                if name not in tables:
                    continue
                self.conn.register("_batch", tables[name])
                for statement in statements.get(name, [f"INSERT OR IGNORE INTO {name} SELECT * FROM _batch"]):
                    self.conn.execute(statement)
                self.conn.unregister("_batch")
            views = [tables[name]["view_id"] for name in spans.VIEW_ROWS if name in tables]
            removed = [tables[name]["location"] for name in ("removals", BACK) if name in tables]
            if views or removed:
                update = spans.defer if self.deferred_spans else spans.refresh
                update(self.conn, _joined(views), _joined(removed))
                self._spans_pending |= self.deferred_spans

    def _derive_stale_spans(self) -> None:
        """The spans of every stale view, a transaction per `spans.STALE_CHUNK` views."""

        def derive(views: pa.Array) -> None:
            with self._transaction():
                spans.derive_stale(self.conn, views)

        if not self._spans_pending:
            return
        while len(views := spans.stale(self.conn)):
            try:
                self._within_memory(self.conn, functools.partial(derive, views))
            except duckdb.Error as exc:
                raise StoreError(f"spans of {len(views)} views not derived: {exc}") from exc
        self._spans_pending = False

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """The block in one transaction, rolled back when a statement fails. When COMMIT itself
        fails (running out of memory, say) this DuckDB instance is abandoned: nothing more goes
        through it, and it closes without a checkpoint. DuckDB may have kept part of the
        transaction in memory, and a checkpoint would write it into the store."""
        with self._transacting:
            self.conn.execute("BEGIN TRANSACTION")
            try:
                yield
            except duckdb.Error:
                with contextlib.suppress(duckdb.Error):
                    self.conn.execute("ROLLBACK")
                raise
            try:
                self.conn.execute("COMMIT")
            except duckdb.Error as exc:
                self._abandon(exc)

    def _abandon(self, exc: duckdb.Error, action: str = "a COMMIT") -> NoReturn:
        with contextlib.suppress(duckdb.Error):
            self.conn.execute("PRAGMA disable_checkpoint_on_shutdown")
        remedy = (
            "free space on its disk, run the command again"
            if DISK_FULL in str(exc)
            else "run the command again (with a larger --store-memory if it ran out of memory)"
        )
        self._abandoned = (
            f"{self.path}: {action} failed ({str(exc).splitlines()[0]}); this writer stops without a "
            f"checkpoint. The store holds every batch committed before it: {remedy} and it goes on "
            "from there."
        )
        raise StoreAbandoned(self._abandoned) from exc

    def _within_memory(self, conn: duckdb.DuckDBPyConnection, run: Callable[[], _Result]) -> _Result:
        """`run`, retried with a raised limit while it runs out of memory under `memory_limit`
        (else the machine itself is out of memory). Lookups need this as much as batches: they
        share the limit with the key indexes the batches loaded."""
        for _ in range(MEMORY_RAISES):
            raises = self._memory_raises
            try:
                return run()
            except duckdb.OutOfMemoryException as exc:
                if self.memory_limit is None:
                    raise
                self._raise_memory_limit(conn, raises, exc)
        return run()

    def _raise_memory_limit(self, conn: duckdb.DuckDBPyConnection, raises: int, error: duckdb.Error) -> None:
        """DuckDB evicts cached data under its memory limit, but not the parts of the key indexes
        a transaction loaded, which grow with the store: a limit they outgrow is raised by a tenth
        (reported as a warning) rather than stopping indexing. Once for two threads that ran out
        under one limit (`raises`: how often it had been raised when they started): at 10^6 files
        a batch and a lookup beside it raised it twice."""
        with self._raising:
            if self._memory_raises != raises:  # raised meanwhile: the caller tries under that
                return
            self._memory_raises += 1
            limit = memory_limit_bytes(conn)
            raised = int(limit * MEMORY_RAISE)
            conn.execute(f"SET memory_limit = '{raised // 2**20}MiB'")  # global: every connection's
        warnings.warn(
            f"store memory limit raised from {limit / 2**20:.1f} MiB to {raised // 2**20} MiB: "
            f"{str(error).splitlines()[0]}",
            RuntimeWarning,
            stacklevel=4,
        )

    def record_roots(self, roots: Iterable[str]) -> None:
        # One statement: `executemany` commits each root apart (~5 ms each).
        self.conn.execute("INSERT OR IGNORE INTO index_roots SELECT unnest(?::VARCHAR[])", [list(roots)])

    def roots(self) -> list[str]:
        return [
            row[0] for row in self.conn.execute("SELECT prefix FROM index_roots ORDER BY prefix").fetchall()
        ]

    def recorded_settings(self) -> dict[str, tuple[str, ...]]:
        """The settings the derived rows were made with (migration 0016); empty: none recorded."""
        return recorded_in(self.conn)

    def record_settings(self, settings: dict[str, tuple[str, ...]]) -> None:
        with self._transaction():
            self._replace_recorded_settings(settings)

    def _replace_recorded_settings(self, settings: dict[str, tuple[str, ...]]) -> None:
        self.conn.execute("DELETE FROM recorded_settings")
        self.conn.execute(
            "INSERT INTO recorded_settings SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[][])",
            [list(settings), [list(entries) for entries in settings.values()]],
        )

    def indexed(self, locations: Iterable[str], removed_too: bool = True) -> set[str]:
        """Which of these locations are already indexed (their files are immutable); without
        `removed_too`, only those with no removal recorded (a follower that sees the others again
        stores them as `BACK`)."""
        wanted = list(locations)
        indexed = self._existing("files", "location", wanted)
        return indexed if removed_too else indexed - self._existing("removals", "location", wanted)

    def unindexed(self, listed: pa.Table) -> pa.Table:
        """The rows of a listing (`LISTED`) whose locations are not indexed yet, by location. An
        anti join hashes the listing (up to `LISTED_CHUNK` rows); NOT IN would hash every stored
        location, twice the time and memory at 10^6 files."""
        self.lookups.register("_listed", listed)
        try:
            with self._transacting:
                return self._within_memory(
                    self.lookups,
                    lambda: self.lookups.sql(
                        "SELECT * FROM _listed l ANTI JOIN files f ON f.location = l.location "
                        "ORDER BY l.location"
                    ).to_arrow_table(),
                )
        finally:
            self.lookups.unregister("_listed")

    def gone(self, prefix: str, listed: pa.Array, unlisted: Iterable[str] = ()) -> list[str]:
        """Indexed locations under `prefix`, with no recorded removal, that a listing of it (`listed`
        locations) no longer holds: outside the `unlisted` directories it could not read. Compared
        in DuckDB: a listing of 10^6 files is never a Python set."""
        self.lookups.register("_listed", pa.table({"location": listed}))
        try:
            rows = self._within_memory(
                self.lookups,
                lambda: self.lookups.execute(
                    "SELECT location FROM files WHERE location NOT IN (SELECT location FROM removals) "
                    f"AND {_LISTING_LACKS} ORDER BY location",
                    _listing_parameters(prefix, unlisted),
                ).fetchall(),
            )
        finally:
            self.lookups.unregister("_listed")
        return [row[0] for row in rows]

    def forget_missing(self, prefix: str, listed: pa.Array, unlisted: Iterable[str] = ()) -> int:
        """Delete the `object-missing` rows under `prefix` that a listing of it (`listed`
        locations) does not hold, outside the `unlisted` directories it could not read: the object
        announced was deleted, and its delete event lost, so nothing is left to index (found by the
        twelfth adversarial trial: such rows outlived every re-list)."""
        with self._transaction():
            self.conn.register("_listed", pa.table({"location": listed}))
            try:
                forgotten = self.conn.execute(
                    f"DELETE FROM quarantine WHERE reason = 'object-missing' AND {_LISTING_LACKS}",
                    _listing_parameters(prefix, unlisted),
                ).fetchall()
            finally:
                self.conn.unregister("_listed")
        self._dirty = self._dirty or bool(forgotten and forgotten[0][0])
        return int(forgotten[0][0]) if forgotten else 0

    def reappeared(self, listed: pa.Array) -> dict[str, int | None]:
        """Of the `listed` locations, those a re-list had recorded removed (source `reconcile`): a
        file deleted and put back, or other content written there since (a view dropped and
        created again at its path). Read again and stored as `BACK`, the store tells which
        (`_reused_set_aside`). Each with the time of the file the store set aside there already
        (its `location-reused` quarantine row's), if it did: unchanged since, it is not read again
        (`runs.read_again`). A removal a follower saw happen stays: a late delete event must not be
        undone by a create seen before it."""
        self.lookups.register("_listed", pa.table({"location": listed}))
        try:
            back = self.lookups.execute(
                "SELECT r.location, any_value(q.modified_ms) FROM removals r "
                "LEFT JOIN quarantine q ON q.location = r.location AND q.reason = 'location-reused' "
                "WHERE r.source = 'reconcile' AND r.location IN (SELECT location FROM _listed) "
                "GROUP BY r.location ORDER BY r.location"
            ).fetchall()
        finally:
            self.lookups.unregister("_listed")
        return dict(back)

    def known_lineage(self, keys: Iterable[str]) -> set[str]:
        """Which lineage keys have stored results (the memo across runs)."""
        return self._existing("lineage", "lineage_key", keys)

    def modified_at(self, locations: Iterable[str]) -> dict[str, int | None]:
        """Of these locations, the indexed ones, with their object time (LastModified or mtime;
        None when the read did not say)."""
        return dict(self._lookup(self.lookups, "files", "location", locations, "modified_ms"))

    def removed_at(self, locations: Iterable[str]) -> dict[str, int]:
        """The latest recorded removal of each of these locations that has one, epoch ms."""
        removed: dict[str, int] = {}
        for location, removed_ms in self._lookup(
            self.lookups, "removals", "location", locations, "removed_ms"
        ):
            removed[location] = max(removed_ms, removed.get(location, removed_ms))
        return removed

    def _existing(self, table: str, column: str, values: Iterable[str]) -> set[str]:
        return {row[0] for row in self._lookup(self.lookups, table, column, values)}

    def _lookup(
        self, conn: duckdb.DuckDBPyConnection, table: str, column: str, values: Iterable[str], *more: str
    ) -> list[tuple[Any, ...]]:
        """Rows of (`column`, *`more`) of `table` whose `column` is one of `values`: through
        `lookups` for the thread that builds batches, through `conn` for the one that stores them."""
        wanted = pa.table({"value": pa.array(list(values), type=pa.string())})
        if not wanted.num_rows:
            return []
        selected = ", ".join((column, *more))
        conn.register("_wanted", wanted)
        try:
            return self._within_memory(
                conn,
                lambda: conn.execute(
                    f"SELECT {selected} FROM {table} WHERE {column} IN (SELECT value FROM _wanted)"
                ).fetchall(),
            )
        finally:
            conn.unregister("_wanted")

    def stored_documents(
        self, chunk: int = 1000, locations: Collection[str] | None = None
    ) -> Iterator[list[tuple[str, bytes, int | None, str | None]]]:
        """(location, stored document, modified_ms, modified_source) of every indexed file (or of
        those at `locations`), in chunks. Streams through its own cursor (a second connection to
        the same database, reading one snapshot), so the caller can write derived rows while it
        iterates."""
        cursor = self.conn.cursor()
        where = ""
        if locations is not None:
            cursor.register("_wanted", pa.table({"location": pa.array(list(locations), pa.string())}))
            where = "WHERE f.location IN (SELECT location FROM _wanted) "
        cursor.execute(
            "SELECT f.location, r.document, f.modified_ms, f.modified_source FROM files f "
            f"JOIN raw_documents r USING (content_hash) {where}ORDER BY f.location"
        )
        while rows := cursor.fetchmany(chunk):
            yield [(row[0], row[1], row[2], row[3]) for row in rows]

    def holds(self) -> dict[str, int]:
        """What the store holds: indexed `files`, `view_files` of `views`, `table_files` of `tables`."""
        ((files, view_files, views, table_files, tables),) = self.conn.execute(
            """
            SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM view_files),
                   (SELECT count(DISTINCT view_id) FROM view_files),
                   (SELECT count(*) FROM table_files), (SELECT count(DISTINCT table_id) FROM table_files)"""
        ).fetchall()
        return {
            "files": files,
            "view_files": view_files,
            "views": views,
            "table_files": table_files,
            "tables": tables,
        }

    def incomplete_files(self, locations: Collection[str] | None = None) -> list[str]:
        """Stored files (of those at `locations`) that name content no stored row holds: a
        version, a schema, a lineage result or a logged snapshot that a writer left out as parsed
        before (in this process) and that then went into the store with a file it refused. (A
        table whose snapshot log names a snapshot its metadata no longer lists is among them:
        re-deriving it changes nothing.)"""
        cursor = self.conn.cursor()
        scope = ""
        if locations is not None:
            cursor.register("_wanted", pa.table({"location": pa.array(list(locations), pa.string())}))
            scope = "AND location IN (SELECT location FROM _wanted)"
        return [
            row[0]
            for row in cursor.execute(
                f"""
                WITH file_content AS (
                    SELECT fv.location, v.version_hash IS NULL AS missing_version,
                        v.schema_hash, r.lineage_key
                    FROM file_versions fv
                    LEFT JOIN versions v USING (version_hash)
                    LEFT JOIN representations r USING (version_hash)
                    WHERE true {scope}
                )
                SELECT DISTINCT location FROM file_content
                WHERE missing_version
                    OR schema_hash NOT IN (SELECT schema_hash FROM schemas)
                    OR lineage_key NOT IN (SELECT lineage_key FROM lineage)
                UNION
                SELECT location FROM table_files t
                WHERE (
                    current_schema_hash NOT IN (SELECT schema_hash FROM schemas)
                    OR EXISTS (
                        SELECT 1 FROM snapshot_log l
                        WHERE l.table_id = t.table_id AND NOT EXISTS (
                            SELECT 1 FROM snapshots s
                            WHERE s.table_id = l.table_id AND s.snapshot_id = l.snapshot_id
                        )
                    )
                ) {scope}
                ORDER BY location
                """
            ).fetchall()
        ]

    def _rebuild_marked(self) -> bool:
        """Whether a rebuild began and has not completed (migration 0015)."""
        return bool(self.conn.execute("SELECT EXISTS (FROM _rebuild_started)").fetchall()[0][0])

    def clear_derived(self, naming: dict[str, tuple[str, ...]]) -> None:
        """Begin a rebuild: the derived rows go, and the store is marked mid-rebuild until
        `reindexed` (migration 0015) and records the `naming` settings the rebuild derives names
        with, in the same transaction, so that a writer completing a killed rebuild uses them. No
        replica is published meanwhile."""
        with self._transaction():
            self._replace_recorded_settings(naming)
            for name in (*spans.TABLES, *reversed(DERIVED_TABLES)):
                self.conn.execute(f"DELETE FROM {name}")
            self.conn.execute("DELETE FROM _rebuild_started")
            self.conn.execute("INSERT INTO _rebuild_started VALUES (epoch_ms(now()))")
        self._rebuilding = True

    def reindexed(self) -> None:
        """Every derived row was re-derived from the stored documents: the rebuild is complete and
        no migration awaits one."""
        with self._transaction():
            self.conn.execute("DELETE FROM _reindex_needed")
            self.conn.execute("DELETE FROM _rebuild_started")
        self._rebuilding = False

    def publish_replica(self, force: bool = False) -> None:
        """Copy a checkpointed store to `<store>.replica` (atomic rename), unless forced at most
        every `replica_interval` seconds and after nine times as long as the last copy took
        (`REPLICA_WAIT_FACTOR`); 0 is after every batch, whatever it costs. None disables
        replicas. The copy runs while the writer goes on (`ReplicaCopy`); a forced one, or one at
        interval 0, is published before this returns."""
        if self.replica_interval is None or self._abandoned or self._rebuilding:
            return
        if self._copy is not None:
            if not (force or self._copy.done()):
                return
            self._publish_copy()
        started = time.monotonic()
        if not (self._dirty or force) or (not force and started < self._next_replica):
            return
        self._derive_stale_spans()
        try:
            self.conn.execute("CHECKPOINT")
        except duckdb.Error as exc:  # a full disk, say: DuckDB invalidates the instance
            self._abandon(exc, "a CHECKPOINT")
        self._dirty = False
        self._copy = ReplicaCopy(self.conn, self.path, started)
        if force or not self.replica_interval:
            self._publish_copy()

    def _publish_copy(self) -> None:
        copy, self._copy = self._copy, None
        assert copy is not None
        try:
            finished = copy.wait(self.conn)
        except StoreError:
            self._dirty = True  # what the copy held is in no replica yet
            raise
        waited = (finished - copy.started) * REPLICA_WAIT_FACTOR if self.replica_interval else 0.0
        self._next_replica = max(copy.started + (self.replica_interval or 0.0), finished + waited)


LOCK_WAIT_SECONDS = 10.0
"""How long a writer waits for the store's lock: a reader holds it while it reads the store
itself (a CLI question, or `serve` while no replica is current), mostly for milliseconds; another
writer holds it for good, and the writer is refused after this."""


def _connect_waiting(
    path: Path, config: dict[str, str | bool | int | float | list[str]], wait: float
) -> duckdb.DuckDBPyConnection:
    """A read-write connection to `path`, waiting up to `wait` seconds for readers' locks."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return duckdb.connect(str(path), config=config)
        except duckdb.IOException as exc:
            if "Could not set lock" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class ReplicaCopy:
    """A copy of the store file as its last CHECKPOINT left it, published as the replica by a
    thread of its own once whole. Until the next CHECKPOINT, DuckDB changes no block that one
    wrote: commits go to the write-ahead log, and large ones into blocks it left free. So the
    writer goes on while `cp` runs, with automatic checkpoints held off (`checkpoint_threshold`)
    until the writer sees the copy done (`wait`).

    DuckDB's write lock is a POSIX record lock, which a process loses when it closes *any*
    descriptor of the file: copying in this process would open and close one, and hand the store
    to other processes. A child process's descriptors do not touch the lock."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, store: Path, started: float) -> None:
        found = conn.execute("SELECT current_setting('checkpoint_threshold')").fetchone()
        self.threshold = found[0] if found else "16 MiB"
        """The writer's own `checkpoint_threshold`, restored once the copy is done."""
        conn.execute(f"SET checkpoint_threshold = '{CHECKPOINTS_HELD_OFF}'")
        self.store = store
        self.started = self.finished = started
        directory = replicas_directory(store)
        directory.mkdir(exist_ok=True)
        self.version = directory / f"{time.time_ns():020d}.duckdb"
        """The replica file this copy becomes (never replaced: readers resolve the symlink to it)."""
        self.temporary = directory / f".{self.version.name}.tmp"
        self.error: StoreError | None = None
        self._process = subprocess.Popen(
            [*COPY_COMMAND, str(store), str(self.temporary)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._thread = threading.Thread(target=self._publish, name="replica", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, conn: duckdb.DuckDBPyConnection) -> float:
        """Until the copy is published (or failed); then checkpoints happen again. Returns when
        the copy ended (`time.monotonic`)."""
        self._thread.join()
        conn.execute(f"SET checkpoint_threshold = '{self.threshold}'")
        if self.error is not None:
            raise self.error
        return self.finished

    def abandon(self) -> None:
        self._process.kill()
        self._thread.join()

    def _publish(self) -> None:
        _, errors = self._process.communicate()
        self.finished = time.monotonic()
        try:
            if self._process.returncode != 0:
                raise OSError(errors.strip() or f"{COPY_COMMAND[0]} exited with {self._process.returncode}")
            os.rename(self.temporary, self.version)
            link = replica_path(self.store)
            pending_link = link.with_name(f".{link.name}.{os.getpid()}.tmp")
            with contextlib.suppress(FileNotFoundError):
                pending_link.unlink()
            pending_link.symlink_to(os.path.relpath(self.version, link.parent))
            os.replace(pending_link, link)
            _prune_replicas(self.version.parent, self.version)
        except OSError as exc:
            self.temporary.unlink(missing_ok=True)
            self.error = StoreError(f"replica of {self.store} not written: {exc}")


def _stored(table: str, column: str, columns: str | None = None) -> str:
    """The stored rows of `table` whose `column` the batch has. DuckDB looks up a few distinct keys
    (up to `index_scan_max_count`) in the column's index; a join with the whole table, or with the
    batch's keys not made distinct, scans it: ~40 ms a statement at 10^6 files, against ~3."""
    return f"SELECT {columns or column} FROM {table} WHERE {column} IN (SELECT DISTINCT {column} FROM _batch)"


def _joined(columns: list[pa.ChunkedArray]) -> pa.Array:
    chunks = [chunk for column in columns for chunk in column.chunks]
    return pa.chunked_array(chunks, type=pa.string()).combine_chunks()


def _prune_replicas(directory: Path, current: Path) -> None:
    """Old replicas, and copies a crash left half-written; never the one the symlink names."""
    now = time.time()
    versions = sorted(p for p in directory.iterdir() if p.suffix == ".duckdb" and not p.name.startswith("."))
    leftovers = [p for p in directory.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]
    for old in [*versions[:-KEEP_REPLICAS], *leftovers]:
        with contextlib.suppress(FileNotFoundError):
            if old != current and now - old.stat().st_mtime > REPLICA_GRACE_SECONDS:
                old.unlink()


def _written_locations(tables: Mapping[str, pa.Table]) -> set[str]:
    return {
        location
        for name in ("files", "view_files", "table_files")
        if name in tables
        for location in tables[name]["location"].to_pylist()
    }


def _rows(tables: Mapping[str, pa.Table]) -> int:
    return sum(table.num_rows for table in tables.values())


_LISTING_LACKS = """starts_with(location, ?1) AND location NOT IN (SELECT location FROM _listed)
    AND NOT coalesce(list_bool_or([starts_with(location, d) FOR d IN ?2::VARCHAR[]]), false)"""
"""A location under a listed prefix (?1) that the listing (`_listed`) lacks, outside the directories
it could not read (?2): see `_listing_parameters`."""


def _listing_parameters(prefix: str, unlisted: Iterable[str]) -> list[object]:
    return [prefix.rstrip("/") + "/", [d.rstrip("/") + "/" for d in unlisted]]


def _insert_failed(location: str, error: duckdb.Error) -> pa.Table:
    reason = "insert-failed"
    message = f"store: {str(error).splitlines()[0][:300]}"
    return pa.table(
        [[location], [reason], [message], [None], [None], [datetime.now(UTC)]], schema=SCHEMAS["quarantine"]
    )
