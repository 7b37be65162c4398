"""Materialized-view freshness on tables real Spark 3.5 + Iceberg 1.10 writes while `watch` follows
(`realwriter/spark_mvs.py`): each MV goes STALE after an insert into its base table, FRESH after the
next recorded refresh, and STALE with data unchanged after a compaction; `mv-status --as-of`
answers each state at the time it held."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.queries import mviews
from viewlineage.queries.cli import cli
from viewlineage.sinks.readers import open_reader

from ..metadata_files import View
from ..realwriter import run_scenario
from .watch_process import Watch

pytestmark = [pytest.mark.integration, pytest.mark.spark]
MV_TWO = "9a0c6a52-2f6b-4a49-9c55-1f3f0d1c2e7b"


def _states(db: Path, mv: str, steps: dict[str, int]) -> dict[str, Any]:
    with open_reader(db) as conn:
        return {name: mviews.mv_status(conn, mv, at)["materialized_views"][0] for name, at in steps.items()}


def test_mv_freshness_follows_spark_inserts_and_refreshes(tmp_path: Path, iceberg_jars: str) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    db = tmp_path / "store.duckdb"
    recorded = tmp_path / "steps.json"
    watch = Watch(warehouse, db, "--catalog-map", f"{warehouse}=prod")
    try:
        run_scenario("spark_mvs", iceberg_jars, str(warehouse), str(recorded), cwd=tmp_path)
        run = json.loads(recorded.read_text())
        steps: dict[str, int] = run["steps"]
        # No Iceberg release writes a version's storage-table: the MV spec draft's view file is ours.
        View(warehouse, "db", "mv_two", MV_TWO).commit(
            steps["created"],
            "SELECT kind, count(*) AS events FROM prod.db.events GROUP BY kind",
            **{"storage-table": {"namespace": ["db"], "name": "mv_two_storage"}},
        )
        written = [p for p in warehouse.rglob("*.metadata.json") if not p.name.startswith(".")]
        watch.wait_until("SELECT count(*) FROM files", len(written))
        assert watch.count("SELECT count(*) FROM quarantine") == 0
    finally:
        watch.stop()

    with open_reader(db) as conn:
        events = conn.execute(
            "SELECT s.operation, s.timestamp_ms FROM snapshots s JOIN table_names n USING (table_id) "
            "WHERE n.name = ['db', 'events'] ORDER BY s.sequence_number"
        ).fetchall()
    # Each insert and the compaction became a snapshot, indexed with the time Spark committed it.
    assert [operation for operation, _ in events] == ["append", "append", "replace"]
    assert steps["created"] < events[1][1] <= steps["events-2"]
    assert steps["mv-two-refreshed-2"] < events[2][1] <= steps["events-compacted"]

    with (
        open_reader(db) as conn,
        pytest.raises(UsageError, match=r"did not exist yet at .*: it had no version"),
    ):
        mviews.mv_status(conn, "prod.db.mv_one", steps["events-1"])  # not created yet
    later = {name: at for name, at in steps.items() if name != "events-1"}
    one = _states(db, "prod.db.mv_one", later)
    assert {name: status["state"] for name, status in one.items()} == {
        "created": "UNKNOWN",  # no refresh recorded yet
        "refreshed-1": "FRESH",
        "events-2": "STALE",
        "mv-one-refreshed-2": "FRESH",
        "mv-two-refreshed-2": "FRESH",
        "events-compacted": "STALE",
    }
    stale = one["events-2"]["sources"][0]
    assert (stale["source"], stale["operations_since"], stale["data_unchanged"]) == (
        "db.events",
        ["append"],
        False,
    )
    assert stale["stale_since_ms"] == events[1][1]
    compacted = one["events-compacted"]["sources"][0]
    assert (compacted["operations_since"], compacted["data_unchanged"]) == (["replace"], True)
    assert one["refreshed-1"]["refresh"]["refresh_id"] == "r1"
    assert one["mv-one-refreshed-2"]["refresh"]["refresh_id"] == "r2"
    assert one["refreshed-1"]["allow_stale_data"] is True

    two = _states(db, "prod.db.mv_two", later)
    assert {name: status["state"] for name, status in two.items()} == {
        "created": "UNKNOWN",  # its storage table has no snapshot yet
        "refreshed-1": "FRESH",
        "events-2": "STALE",
        "mv-one-refreshed-2": "STALE",
        "mv-two-refreshed-2": "FRESH",
        "events-compacted": "STALE",
    }
    assert two["refreshed-1"]["sources"][0]["table_id"] == run["events_uuid"]
    # The command line gives the same answers.
    for step, state in (("events-2", "STALE"), ("mv-two-refreshed-2", "FRESH")):
        answer = CliRunner().invoke(
            cli, ["--db", str(db), "mv-status", "db.mv_two", "--as-of", str(steps[step]), "--format", "json"]
        )
        assert answer.exit_code == 0, answer.output
        assert json.loads(answer.output)["materialized_views"][0]["state"] == state
    assert two["events-compacted"]["sources"][0]["data_unchanged"] is True
