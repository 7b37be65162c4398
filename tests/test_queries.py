"""Point-in-time and lineage answers on the committed real-writer warehouse (Spark 3.5 + Iceberg 1.10).

Times are the scenario's step completion times from `data/sample/steps.json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.queries import api
from viewlineage.queries.cli import cli
from viewlineage.sinks.store import open_reader

from .data.restore_mtimes import SAMPLE

STEPS = {step["step"]: step["finished_ms"] for step in json.loads((SAMPLE / "steps.json").read_text())}
EVENT_AGG = "d9f43627-b716-4982-b052-9e38d3e11a0b"
BIG_DAYS_OLD = "4314fa7c-bbf3-4c33-9cd2-a483e994ddf4"
BIG_DAYS_NEW = "621f9620-d632-4552-aa8d-b485775cc8b8"
REVENUE = "685ca871-4c66-493f-8b62-2de9b3c06faa"
CUSTOMER_REVENUE = "9af11850-f036-44e4-b5ae-7d333009536e"


@pytest.fixture
def conn(sample_store: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    with open_reader(sample_store) as connection:
        yield connection


def test_show_before_and_after_a_property_only_commit(conn: duckdb.DuckDBPyConnection) -> None:
    before = api.show(conn, "prod.db.big_days", STEPS[27])
    after = api.show(conn, "prod.db.big_days", STEPS[28])
    assert (before["view_id"], before["version_id"]) == (BIG_DAYS_OLD, 1)
    assert before["representations"] == [
        {
            "type": "sql",
            "dialect": "spark",
            "dialect_raw": "spark",
            "sql": "SELECT * FROM event_agg WHERE event_count > 2",
        }
    ]
    assert before["properties"]["sla_minutes"] == "30"
    assert "sla_minutes" not in after["properties"]
    assert after["properties"]["team"] == "growth-team"
    assert after["properties_since_source"] == "mtime"
    assert STEPS[27] < after["properties_since_ms"] <= STEPS[28]
    assert [c["name"] for c in before["columns"]] == ["event_date", "kind", "event_count"]
    assert (before["default_namespace"], before["engine_name"]) == (["db"], "spark")


def test_drop_and_recreate_gives_a_new_uuid_at_the_same_name(conn: duckdb.DuckDBPyConnection) -> None:
    recreated = api.show(conn, "db.big_days", STEPS[34])
    assert recreated["view_id"] == BIG_DAYS_NEW
    assert recreated["representations"][0]["sql"] == (
        "SELECT event_date, event_count\nFROM event_agg\nWHERE event_count > 3\nORDER BY event_date"
    )
    assert api.show(conn, "big_days")["view_id"] == BIG_DAYS_NEW
    # The dropped view's history stays answerable by uuid.
    dropped = api.history(conn, BIG_DAYS_OLD)
    assert [a["version_id"] for a in dropped["activations"]] == [1]


def test_history_keeps_versions_expired_from_the_newest_file(conn: duckdb.DuckDBPyConnection) -> None:
    result = api.history(conn, "prod.db.event_agg")
    assert [a["version_id"] for a in result["activations"]] == list(range(1, 14))
    assert len(result["versions"]) == 13
    newest_file_versions = conn.execute(
        "SELECT list_sort(list(version_id)) FROM file_versions WHERE location = (SELECT max(location) "
        "FROM view_files WHERE view_id = ?)",
        [EVENT_AGG],
    ).fetchone()
    assert newest_file_versions == (list(range(4, 14)),)
    diff = result["activations"][1]["diff"]
    assert "-SELECT COUNT(1), CAST(event_ts AS DATE) FROM prod.db.events GROUP BY 2" in diff
    assert "+WHERE kind <> 'heartbeat'" in diff
    v1 = api.show(conn, "prod.db.event_agg", STEPS[10])
    assert (v1["version_id"], v1["default_catalog"], v1["default_namespace"]) == (
        1,
        "spark_catalog",
        ["default"],
    )


def test_show_at_each_replacement(conn: duckdb.DuckDBPyConnection) -> None:
    steps = [10, 12, 14, 16, 20, 22, 25, 27, 30, 33, 35, 37, 39]
    assert [api.show(conn, EVENT_AGG, STEPS[step])["version_id"] for step in steps] == list(range(1, 14))
    with pytest.raises(UsageError, match="no active version"):
        api.show(conn, EVENT_AGG, STEPS[9])


def test_deps_transitive_across_namespaces(conn: duckdb.DuckDBPyConnection) -> None:
    direct = api.deps(conn, "prod.acme.finance.revenue_by_region", STEPS[24])
    assert [(r["table"], r["is_view"]) for r in direct["reads"]] == [
        ("prod.db.event_agg", True),
        ("prod.sales.customer_revenue", True),
    ]
    transitive = api.deps(conn, "revenue_by_region", STEPS[24], transitive=True)
    assert [(r["table"], r["depth"]) for r in transitive["reads"]] == [
        ("prod.db.event_agg", 1),
        ("prod.sales.customer_revenue", 1),
        ("prod.db.events", 2),
        ("prod.sales.customers", 2),
        ("prod.sales.orders", 2),
    ]
    assert transitive["reads"][2]["via"] == ["prod.acme.finance.revenue_by_region", "prod.db.event_agg"]
    assert transitive["reads"][4]["via"] == [
        "prod.acme.finance.revenue_by_region",
        "prod.sales.customer_revenue",
    ]
    # By step 30 event_agg v9 joins orders and customers too: each path is listed.
    later = api.deps(conn, "revenue_by_region", STEPS[30], transitive=True)
    assert [(r["table"], r["via"][-1]) for r in later["reads"] if r["depth"] == 2] == [
        ("prod.db.events", "prod.db.event_agg"),
        ("prod.sales.customers", "prod.db.event_agg"),
        ("prod.sales.customers", "prod.sales.customer_revenue"),
        ("prod.sales.orders", "prod.db.event_agg"),
        ("prod.sales.orders", "prod.sales.customer_revenue"),
    ]


def test_uses_transitive_changes_with_time(conn: duckdb.DuckDBPyConnection) -> None:
    def uses(at: int) -> list[tuple[str, int, str]]:
        result = api.uses(conn, "prod.sales.orders", at, transitive=True)
        return [(v["view"], v["depth"], v["view_id"]) for v in result["views"]]

    # Step 20: event_agg v5 joins sales.orders; customer_revenue and order_rank read it directly.
    assert uses(STEPS[20]) == [
        ("prod.db.event_agg", 1, EVENT_AGG),
        ("prod.sales.customer_revenue", 1, CUSTOMER_REVENUE),
        ("prod.sales.order_rank", 1, "cce648e8-0513-471c-abed-bbd8fc608f86"),
        ("prod.db.big_days", 2, BIG_DAYS_OLD),
    ]
    # Step 22: event_agg v6 no longer reads orders.
    assert ("prod.db.event_agg", 1, EVENT_AGG) not in uses(STEPS[22])
    assert uses(STEPS[15]) == []


def test_unknown_and_ambiguous_names(conn: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UsageError, match="no view 'nope'"):
        api.resolve_view(conn, "nope")
    assert api.resolve_view(conn, "event_agg").view_id == EVENT_AGG


def test_time_parsing() -> None:
    assert api.parse_time("2026-11-21T23:17:26.5") == 1795303046500
    assert api.parse_time("2026-11-21T23:17:26.5Z") == 1795303046500
    assert api.parse_time("2026-11-22T00:17:26.5+01:00") == 1795303046500
    assert api.iso(1795303046500) == "2026-11-21T23:17:26.500Z"
    with pytest.raises(UsageError):
        api.parse_time("yesterday")


def test_cli_json_and_text(sample_store: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "--db",
            str(sample_store),
            "show",
            "prod.db.big_days",
            "--as-of",
            str(STEPS[27]),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["view_id"], document["activated_source"]) == (BIG_DAYS_OLD, "version-log")
    text = runner.invoke(cli, ["--db", str(sample_store), "uses", "prod.db.events", "--transitive"])
    assert text.exit_code == 0, text.output
    assert "prod.acme.finance.revenue_by_region > prod.db.event_agg" in text.output
    missing = runner.invoke(cli, ["--db", str(sample_store), "show", "nope"])
    assert (missing.exit_code, missing.output.strip()) == (2, "error: no view 'nope' in the store")


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (SELECT 1) TO '/tmp/viewlineage-escape.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SET enable_external_access = true",
        "INSERT INTO quarantine VALUES ('x', 'r', 'm', 1, 1, now())",
    ],
)
def test_sql_is_read_only_and_sandboxed(sample_store: Path, statement: str) -> None:
    result = CliRunner().invoke(cli, ["--db", str(sample_store), "sql", statement])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: SQL failed:")
    assert not Path("/tmp/viewlineage-escape.csv").exists()


def test_sql_answers_queries(sample_store: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "--db",
            str(sample_store),
            "sql",
            "SELECT count(*) AS n FROM views_as_of(9e15::BIGINT)",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"n": 6}]
