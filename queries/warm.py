"""Works out ahead, on a thread of a process that answers questions (`serve`, a follower's
--metrics-port), the column analyses that a question about a column asks of the views current
now (`impact.analyse_current`): kept in memory (`viewlineage.queries.analyses`), they make such a
question of a table 150 views read a matter of its queries, not of seconds of SQL analysis.

After each pass it looks again every few seconds, and passes again once files were indexed or
removed: what it finds kept costs a lookup, so a pass over a store that changed little works out
only what changed. A question about a past time asks of the versions current then, which it works
out itself (and keeps).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import duckdb

from viewlineage.indexer.errors import StoreError
from viewlineage.queries.analyses import ANALYSES
from viewlineage.queries.impact import analyse_current
from viewlineage.queries.names import FOREVER_MS

VIEWS_A_STEP = 64
"""Views analysed on one connection: a follower's connection is its store's, held by a step."""
LOOK_EVERY_SECONDS = 10.0


def warm_analyses(
    connect: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
    stop: threading.Event,
    log: Callable[..., None],
    every: float = LOOK_EVERY_SECONDS,
) -> None:
    """Until `stop` is set: a pass over the views current now whenever the store's files changed,
    each logged (`analyses-warm`: views, analyses worked out, kept, seconds); a pass that fails (no
    store or replica yet) is logged as `analyses-failed`, and the next look tries again."""
    passed: tuple[Any, ...] | None = None
    while not stop.is_set():
        started = time.monotonic()
        try:
            with connect() as conn:
                files = _files(conn)
                views = (
                    []
                    if files == passed
                    else [
                        row[0]
                        for row in conn.execute(
                            "SELECT view_id FROM view_heads_as_of(?) ORDER BY view_id", [FOREVER_MS]
                        ).fetchall()
                    ]
                )
            worked_out = 0
            for first in range(0, len(views), VIEWS_A_STEP):
                if stop.is_set():
                    return
                with connect() as conn:
                    worked_out += analyse_current(conn, views[first : first + VIEWS_A_STEP])
        except (StoreError, duckdb.Error) as exc:
            log("analyses-failed", error=str(exc))
        else:
            if files != passed:
                log(
                    "analyses-warm",
                    views=len(views),
                    worked_out=worked_out,
                    kept=len(ANALYSES),
                    kept_bytes=ANALYSES.kept_bytes,
                    seconds=round(time.monotonic() - started, 3),
                )
            passed = files
        stop.wait(every)


def _files(conn: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """What changes when files are indexed or removed (a pass is due then)."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM view_files), (SELECT count(*) FROM table_files), "
        "(SELECT count(*) FROM removals)"
    ).fetchone()
    return tuple(row or ())
