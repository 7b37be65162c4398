"""Column analyses kept by a process and worked out ahead (`queries.analyses`, `queries.warm`): a
warmed process answers questions about columns as a cold one does, without analysing again."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from viewlineage.indexer.lineage.tables import LineageRequest
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries import analyses as analyses_module
from viewlineage.queries import warm
from viewlineage.queries.analyses import ANALYSES, Analyses
from viewlineage.queries.impact import analyse_current, impact, parse_change
from viewlineage.queries.names import FOREVER_MS
from viewlineage.sinks.readers import open_reader

from . import impact_scenario
from .conftest import settings_for
from .integration.watch_process import Watch
from .metadata_files import Table, View, schema_of
from .test_service import get_json

ORDERS_RENAMED = schema_of(
    ("id", "long"),
    ("customer_id", "long"),
    ("total", "decimal(10, 2)"),  # was `amount`: readers of it are already broken
    ("status", "string"),
    ("qty", "int"),
    ("address", impact_scenario.ADDRESS),
)


def renamed_amount_warehouse(tmp_path: Path) -> Path:
    """`impact_scenario`'s views, then `amount` renamed `total`: views read as they were created too."""
    root = tmp_path / "warehouse"
    impact_scenario.build(root)
    orders = Table(
        root, "db", "orders", "a1000000-0000-4000-8000-000000000001", schema=impact_scenario.ORDERS
    )
    orders.commit(1000, 1)  # (as `build` wrote it: the next file follows it)
    orders.schema = ORDERS_RENAMED
    orders.commit(5000, 3)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    return db


QUESTIONS = [
    ("db.orders", "total", None, None),
    ("db.orders", "id", None, None),
    ("db.orders", "address.city", None, None),
    ("db.orders", None, "status=state", None),
    ("db.customers", "region", None, None),
    ("db.v_alias", "total", None, None),
]


def _answers(db: Path) -> list[dict[str, Any]]:
    with open_reader(db) as conn:
        return [
            impact(conn, table, parse_change(drop, rename, retype))
            for table, drop, rename, retype in QUESTIONS
        ]


def test_a_warmed_process_answers_questions_about_columns_now_without_analysing_again(tmp_path: Path) -> None:
    db = renamed_amount_warehouse(tmp_path)
    cold = _answers(db)
    assert [len(answer["views"]) for answer in cold] == [1, 11, 2, 3, 1, 2]
    assert len({row["view"] for row in cold[0]["already_broken"]}) == 7  # read as created, too
    ANALYSES.clear()
    with open_reader(db) as conn:
        views = [
            row[0] for row in conn.execute("SELECT view_id FROM view_heads_as_of(?)", [FOREVER_MS]).fetchall()
        ]
        worked_out = analyse_current(conn, views)
    assert (len(views), worked_out, len(ANALYSES)) == (13, 35, 35)  # 13 now, 10 as created, 12 typed
    before = ANALYSES.worked_out
    assert _answers(db) == cold
    assert ANALYSES.worked_out == before  # every analysis the questions asked was kept


def _request(sql: str) -> LineageRequest:
    return LineageRequest(sql, "spark", "prod", ("db",), "prod")


def test_kept_analyses_stay_within_their_budget_the_least_recently_used_going_first() -> None:
    schemas = {("prod", ("db",), "t"): [("a", "int"), ("b", "int")]}
    resolved = {"db.t": ("prod", ("db",), "t")}
    analyses = Analyses(budget_bytes=10**6)
    first = analyses.lineage(_request("SELECT a FROM db.t"), schemas, resolved)
    one = analyses.kept_bytes
    analyses.budget_bytes = 2 * one + one // 2  # room for two of these
    analyses.lineage(_request("SELECT b FROM db.t"), schemas, resolved)
    assert analyses.lineage(_request("SELECT a FROM db.t"), schemas, resolved) == first  # used again: kept
    analyses.lineage(_request("SELECT a, b FROM db.t"), schemas, resolved)
    assert (len(analyses), analyses.worked_out) == (2, 3)
    assert analyses.kept_bytes <= analyses.budget_bytes
    analyses.lineage(_request("SELECT a FROM db.t"), schemas, resolved)  # kept
    assert analyses.worked_out == 3
    analyses.lineage(_request("SELECT b FROM db.t"), schemas, resolved)  # the least recently used: gone
    assert analyses.worked_out == 4
    # Another schema is another analysis: nothing kept can answer for the store as it is now.
    analyses.lineage(_request("SELECT a FROM db.t"), {("prod", ("db",), "t"): [("a", "long")]}, resolved)
    assert analyses.worked_out == 5


def test_the_most_recently_used_analyses_are_kept_decoded_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's downloads ask its question again: its analyses are not decoded again."""
    monkeypatch.setattr(analyses_module, "DECODED_KEPT", 1)
    schemas = {("prod", ("db",), "t"): [("a", "int"), ("b", "int")]}
    resolved = {"db.t": ("prod", ("db",), "t")}
    analyses = Analyses()
    first = analyses.lineage(_request("SELECT a FROM db.t"), schemas, resolved)
    assert analyses.lineage(_request("SELECT a FROM db.t"), schemas, resolved) is first
    analyses.lineage(_request("SELECT b FROM db.t"), schemas, resolved)  # pushes it out of the decoded
    again = analyses.lineage(_request("SELECT a FROM db.t"), schemas, resolved)
    assert (again == first, again is first, analyses.worked_out) == (True, False, 2)
    analyses.budget_bytes = 0  # nothing kept: nor decoded
    analyses.lineage(_request("SELECT a, b FROM db.t"), schemas, resolved)
    analyses.lineage(_request("SELECT a, b FROM db.t"), schemas, resolved)
    assert (len(analyses), analyses.worked_out) == (0, 4)
    analyses.lineage(_request("SELECT a FROM db.t"), schemas, resolved)  # evicted with the others
    assert analyses.worked_out == 5


_WARM = re.compile(r"^analyses-warm views=(\d+) worked_out=(\d+) kept=(\d+)", re.M)


@contextlib.contextmanager
def _serving(db: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`viewlineage serve` of `db` on a free port, logging to `log`, once it serves; killed after
    unless it ended."""
    with log.open("w") as written:
        server = subprocess.Popen(
            [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(db), "serve", "--port", "0"],
            stderr=written,
        )
    try:
        deadline = time.monotonic() + 60
        while "serving " not in log.read_text():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield server
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.integration
def test_serve_works_out_the_analyses_of_the_views_current_now_ahead(tmp_path: Path) -> None:
    db = renamed_amount_warehouse(tmp_path)
    log = tmp_path / "serve.log"
    with _serving(db, log) as server:
        deadline = time.monotonic() + 60
        while not (warm := _WARM.search(log.read_text())):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        assert warm.groups() == ("13", "35", "35")
        (url,) = re.findall(r"^serving \S+ at (\S+)", log.read_text(), re.M)
        status, answer = get_json(f"{url}impact?{urlencode({'table': 'db.orders', 'drop_column': 'total'})}")
        assert (status, answer["views"]) == (200, ["prod.db.v_star"])
        server.send_signal(signal.SIGTERM)
        assert server.wait(10) == 0


def _passes(log: Path, views: int, timeout: float = 60) -> list[tuple[str, ...]]:
    """The warm passes logged, once one over `views` views is."""
    deadline = time.monotonic() + timeout
    while True:
        passes = _WARM.findall(log.read_text())
        if any(int(found[0]) == views for found in passes):
            return passes
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


@pytest.mark.integration
def test_a_follower_works_out_the_analyses_of_what_it_indexed_ahead(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    impact_scenario.build(root)
    watch = Watch(root, tmp_path / "store.duckdb", "--metrics-port", "0")
    try:
        passes = _passes(watch.log, 13)
        # Each view as now, and typed; a pass that met part of the initial scan did part of it.
        assert (sum(int(worked_out) for _, worked_out, _ in passes), passes[-1]) == (25, ("13", "25", "25"))
        View(
            root, "db", "v_new", "d4000000-0000-4000-8000-000000000001", schema=schema_of(("id", "long"))
        ).commit(6000, "SELECT id FROM db.orders")
        # What it kept costs a lookup: it works out the new view's alone.
        assert _passes(watch.log, 14)[-1] == ("14", "2", "27")
        # Found by the twentieth adversarial trial: "no replica yet", logged at every start.
        assert "analyses-failed" not in watch.log.read_text()
    finally:
        watch.stop()


def _wide_warehouse(tmp_path: Path, columns: int) -> Path:
    """A table of `columns` columns, a view of its `*` and a view of that one's: minutes of analysis."""
    root = tmp_path / "warehouse"
    wide = schema_of(*((f"c{number}", "int") for number in range(columns)))
    Table(root, "db", "t", "f1000000-0000-4000-8000-000000000001", schema=wide).commit(1000, 1)
    View(root, "db", "wide", "f1000000-0000-4000-8000-000000000002", schema=wide).commit(
        2000, "SELECT * FROM db.t"
    )
    View(root, "db", "wide2", "f1000000-0000-4000-8000-000000000003", schema=wide).commit(
        2000, "SELECT * FROM db.wide"
    )
    View(
        root, "db", "narrow", "f1000000-0000-4000-8000-000000000004", schema=schema_of(("c0", "int"))
    ).commit(2000, "SELECT c0 FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    return db


@pytest.mark.integration
def test_serve_stops_at_once_while_an_analysis_ahead_runs_long(tmp_path: Path) -> None:
    """Found by the twentieth adversarial trial: `serve` (and a follower) sent SIGTERM while working
    out a 5,000-column view's analysis ahead exited 226 s later, when the analysis ended."""
    db = _wide_warehouse(tmp_path, 3000)
    log = tmp_path / "serve.log"
    with _serving(db, log) as server:
        time.sleep(5)  # the pass is in the wide views' analyses by now
        assert "analyses-warm" not in log.read_text()
        stopped = time.monotonic()
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0
        assert time.monotonic() - stopped < 10


def test_an_analysis_ahead_that_runs_long_is_left_to_the_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An analysis past `ANALYSIS_SECONDS` is not kept, nor tried again by later passes; the pass
    goes on with the other views."""
    db = _wide_warehouse(tmp_path, 1500)
    monkeypatch.setattr(warm, "ANALYSIS_SECONDS", 1.0)
    logged: list[dict[str, Any]] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=warm.warm_analyses,
        args=(
            lambda: open_reader(db),
            stop,
            lambda event, **fields: logged.append({"event": event, **fields}),
            0.2,
        ),
    )
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while not logged:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    # `narrow` as now, and typed; the wide views' first analysis ran past the limit: left, both
    assert [(entry["event"], entry["views"], entry["worked_out"]) for entry in logged] == [
        ("analyses-warm", 3, 2)
    ]
