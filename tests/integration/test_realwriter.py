"""`watch` follows a live Spark 3.5 + Iceberg 1.10 writer running the sample scenario.

The same checks as on the committed sample (`realwriter/scenario_checks.py`) then hold on the store
`watch` built while Spark wrote: including the dropped view, whose newest metadata file Iceberg
deletes on DROP, so only a file captured as it was written keeps its last state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from viewlineage.sinks.readers import open_reader

from ..realwriter import run_scenario
from ..realwriter.scenario_checks import CHECKS, load_steps
from .watch_process import Watch

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_watch_follows_spark_writing_views(tmp_path: Path, iceberg_jars: str) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    captured = tmp_path / "captured"
    db = tmp_path / "store.duckdb"
    watch = Watch(warehouse, db, "--catalog-map", f"{warehouse}=prod")
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
    finally:
        watch.stop()
    with open_reader(db) as conn:
        assert [row[0] for row in conn.execute("SELECT location FROM files ORDER BY 1").fetchall()] == written
        for check in CHECKS:
            check(conn, load_steps(captured))
