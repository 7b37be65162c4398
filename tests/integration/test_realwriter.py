"""`watch` follows a live Spark 3.5 + Iceberg 1.10 writer running the sample scenario.

The same checks as on the committed sample (`realwriter/scenario_checks.py`) then hold on the store
`watch` built while Spark wrote: including the dropped view, whose newest metadata file Iceberg
deletes on DROP, so only a file captured as it was written keeps its last state. The web UI the
follower serves from its own warm store (`--metrics-port`) shows what its API answers.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from viewlineage.sinks.readers import open_reader

from ..browser import Visit, launched
from ..realwriter import run_scenario
from ..realwriter.scenario_checks import CHECKS, load_steps
from .watch_process import Watch

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_watch_follows_spark_writing_views(tmp_path: Path, iceberg_jars: str) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    captured = tmp_path / "captured"
    db = tmp_path / "store.duckdb"
    watch = Watch(warehouse, db, "--catalog-map", f"{warehouse}=prod", "--metrics-port", "0")
    try:
        run_scenario("spark_views", iceberg_jars, str(warehouse), str(captured), cwd=tmp_path)
        # Every metadata file Spark wrote (captured after each statement), dropped view's included.
        written = sorted(
            str(warehouse / path.relative_to(captured / "warehouse"))
            for path in (captured / "warehouse").rglob("*.metadata.json")
            if not path.name.startswith(".")
        )
        assert len(written) == 32
        watch.wait_until("SELECT count(*) FROM files", len(written))
        assert watch.count("SELECT count(*) FROM quarantine") == 0
        _walk_the_pages(watch.api_url().removesuffix("/api/"))
    finally:
        watch.stop()
    with open_reader(db) as conn:
        assert [row[0] for row in conn.execute("SELECT location FROM files ORDER BY 1").fetchall()] == written
        for check in CHECKS:
            check(conn, load_steps(captured))


def _walk_the_pages(site: str) -> None:
    """The follower's pages show what its API answers, in a real browser."""

    def answer(path: str) -> Any:
        with urllib.request.urlopen(f"{site}/api/{path}") as response:
            return json.load(response)

    changes = answer("changes?limit=500")
    events = answer("table-history?table=prod.db.events")
    readers = answer("uses?table=prod.db.events&transitive=true")
    with launched() as browser:
        activity = Visit(browser, f"{site}/", "follower-activity")
        kinds = " · ".join(f"{n} {kind}" for kind, n in changes["kinds"].items())
        assert activity.page.inner_text("#total") == f"{changes['total']} changes · {kinds}"
        assert "dropped" in changes["kinds"]  # the drop `watch` saw as it happened
        activity.close()
        table = Visit(browser, f"{site}/table?table=prod.db.events", "follower-table")
        assert table.cells("snapshots", "snapshot_id") == [str(s["snapshot_id"]) for s in events["snapshots"]]
        assert table.cells("readers", "view") == [view["view"] for view in readers["views"]]
        assert len(events["snapshots"]) == 2
        table.close()
