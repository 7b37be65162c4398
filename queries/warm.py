"""Works out ahead, for a process that answers questions (`serve`, a follower's --metrics-port),
the column analyses that a question about a column asks of the views current now
(`impact.analyse_current`): kept in memory (`viewlineage.queries.analyses`), they make such a
question of a table 150 views read a matter of its queries, not of seconds of SQL analysis. The
passes run on a thread, the analyses in a process of their own (`_Analyser`).

After each pass it looks again every few seconds, and passes again once files were indexed or
removed and then none for a look (or, while they keep coming, every few minutes: a pass reads
every current view, and a follower's store is busy then): what it finds kept costs a lookup, so
a pass over a store that changed little works out only what changed. A question about a past
time, or asked before a pass reached it, works out what it needs itself (and keeps it).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from multiprocessing.pool import Pool
from typing import Any

import duckdb

from viewlineage.indexer.errors import StoreError
from viewlineage.indexer.lineage.columns import ColumnLineage, TableKey, column_lineage
from viewlineage.indexer.lineage.config import LineageConfig
from viewlineage.indexer.lineage.tables import LineageRequest
from viewlineage.queries.analyses import ANALYSES, WORK_OUT
from viewlineage.queries.impact import AnalysisSkipped, analyse_current
from viewlineage.queries.names import FOREVER_MS

ANALYSIS_SECONDS = 30.0
"""An analysis ahead longer than this is left to the question that needs it (a view of thousands of
columns takes minutes): it is not kept, and not tried again by this process's passes."""
VIEWS_A_STEP = 64
"""Views analysed on one connection: a follower's connection is its store's, held by a step."""
LOOK_EVERY_SECONDS = 10.0
BUSY_PASS_INTERVAL_SECONDS = 300.0
"""While files keep coming (a look finds them changed again), a pass at most this often."""


def warm_analyses(
    connect: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
    stop: threading.Event,
    log: Callable[..., None],
    every: float = LOOK_EVERY_SECONDS,
) -> None:
    """Until `stop` is set: a pass over the views current now when it is due (the module's doc),
    each logged (`analyses-warm`: views, analyses worked out, kept, seconds); a pass that fails (no
    store or replica yet) is logged as `analyses-failed` (once while it fails alike), and the next
    look tries again."""
    with _Analyser(stop) as analyser:
        token = WORK_OUT.set(analyser)
        try:
            _passes(connect, stop, log, every)
        except Stopped:
            return
        finally:
            WORK_OUT.reset(token)


def _passes(
    connect: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
    stop: threading.Event,
    log: Callable[..., None],
    every: float,
) -> None:
    passed: tuple[Any, ...] | None = None  # the store's files at the last pass
    looked: tuple[Any, ...] | None = None  # and at the last look
    last_pass = -BUSY_PASS_INTERVAL_SECONDS
    failed = ""
    while not stop.is_set():
        started = time.monotonic()
        try:
            with connect() as conn:
                files = _files(conn)
                due = files != passed and (
                    passed is None or files == looked or started - last_pass >= BUSY_PASS_INTERVAL_SECONDS
                )
                looked = files
                views = (
                    [
                        row[0]
                        for row in conn.execute(
                            "SELECT view_id FROM view_heads_as_of(?) ORDER BY view_id", [FOREVER_MS]
                        ).fetchall()
                    ]
                    if due
                    else []
                )
            worked_out = 0
            for first in range(0, len(views), VIEWS_A_STEP):
                if stop.is_set():
                    return
                with connect() as conn:
                    worked_out += analyse_current(conn, views[first : first + VIEWS_A_STEP])
        except (StoreError, duckdb.Error) as exc:
            # Once, not at every look; and not before a first pass (a follower's store not written yet)
            if str(exc) != failed and passed is not None:
                log("analyses-failed", error=str(exc))
            failed = str(exc)
        else:
            if due:
                log(
                    "analyses-warm",
                    views=len(views),
                    worked_out=worked_out,
                    kept=len(ANALYSES),
                    kept_bytes=ANALYSES.kept_bytes,
                    seconds=round(time.monotonic() - started, 3),
                )
                passed, last_pass, failed = files, started, ""
        stop.wait(every)


def _files(conn: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """What changes when files are indexed or removed (a pass is due then)."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM view_files), (SELECT count(*) FROM table_files), "
        "(SELECT count(*) FROM removals)"
    ).fetchone()
    return tuple(row or ())


class Stopped(Exception):
    """The process is stopping: the pass ends where it is."""


class _Analyser:
    """Works analyses out in a process of its own, so that the pass neither holds the interpreter
    from the process's other threads nor keeps it from stopping: a stop, or an analysis longer than
    `ANALYSIS_SECONDS`, ends that process (a new one takes the next analysis)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.pool: Pool | None = None
        self.too_long: set[tuple[str, str, bool]] = set()

    def __enter__(self) -> _Analyser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._end()

    def __call__(
        self,
        request: LineageRequest,
        config: LineageConfig,
        schemas: dict[TableKey, list[tuple[str, str]]],
        resolved: dict[str, TableKey],
        typed: bool,
    ) -> ColumnLineage:
        asked = (request.sql, request.dialect, typed)
        if asked in self.too_long:
            raise AnalysisSkipped
        if self.pool is None:  # spawned: this process has threads, which a fork would copy mid-work
            self.pool = multiprocessing.get_context("spawn").Pool(1)
        pending = self.pool.apply_async(column_lineage, (request, config, schemas, resolved, typed))
        started = time.monotonic()
        while not pending.ready():
            if self.stop.wait(0.05):
                self._end()
                raise Stopped
            if time.monotonic() - started > ANALYSIS_SECONDS:
                self._end()
                self.too_long.add(asked)
                raise AnalysisSkipped
        return pending.get()

    def _end(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None
