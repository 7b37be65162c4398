"""Two versions of a view side by side: SQL per dialect line by line, and the schema's changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.queries.cli import cli
from viewlineage.queries.diff import side_by_side, version_diff
from viewlineage.queries.web import api as web_api
from viewlineage.sinks.readers import open_reader


def test_side_by_side_aligns_changed_added_and_removed_lines() -> None:
    rows = side_by_side("SELECT a\nFROM t\nWHERE x", "SELECT a, b\nFROM t\nGROUP BY a\nHAVING 1")
    assert [(r["kind"], r["before_line"], r["before"], r["after_line"], r["after"]) for r in rows] == [
        ("replace", 1, "SELECT a", 1, "SELECT a, b"),
        ("equal", 2, "FROM t", 2, "FROM t"),
        ("replace", 3, "WHERE x", 3, "GROUP BY a"),
        ("insert", None, None, 4, "HAVING 1"),
    ]
    assert [r["kind"] for r in side_by_side("a\nb\nc", "a")] == ["equal", "delete", "delete"]


def test_two_versions_of_a_spark_view(sample_store: Path) -> None:
    with open_reader(sample_store) as conn:
        answer = version_diff(conn, "prod.db.event_agg", 1, 2)
        latest = version_diff(conn, "prod.db.event_agg")
    assert (answer["before_version_id"], answer["after_version_id"]) == (1, 2)
    (spark,) = answer["dialects"]
    assert (spark["dialect"], spark["changed"]) == ("spark", True)
    assert [(r["kind"], r["before"], r["after"]) for r in spark["rows"]] == [
        (
            "replace",
            "SELECT COUNT(1), CAST(event_ts AS DATE) FROM prod.db.events GROUP BY 2",
            "SELECT COUNT(*), to_date(event_ts)",
        ),
        ("insert", None, "FROM prod.db.events"),
        ("insert", None, "WHERE kind <> 'heartbeat'"),
        ("insert", None, "GROUP BY to_date(event_ts)"),
    ]
    assert [(c["column"], c["change"], c["after"]) for c in answer["columns"]] == [
        ("event_count", "documented", "event_count long NOT NULL -- Count of events, heartbeats excluded"),
        ("event_date", "documented", "event_date date -- UTC calendar day"),
    ]
    assert (latest["before_version_id"], latest["after_version_id"]) == (12, 13)
    assert [
        (c["column"], c["change"], c["before_position"], c["after_position"]) for c in latest["columns"]
    ] == [
        ("event_date", "documented, moved", 2, 1),
        ("event_count", "moved", 1, 2),
        ("distinct_kinds", "added", None, 3),
    ]


def test_a_version_the_view_never_had_is_refused(sample_store: Path) -> None:
    with open_reader(sample_store) as conn, pytest.raises(UsageError, match="has no stored version 99"):
        version_diff(conn, "prod.db.event_agg", 1, 99)


def test_the_cli_prints_both_sides(sample_store: Path) -> None:
    result = CliRunner().invoke(
        cli, ["diff", "prod.db.event_agg", "--before", "1", "--after", "2", "--db", str(sample_store)]
    )
    assert result.output.splitlines()[:7] == [
        "view: prod.db.event_agg",
        "versions: 1 -> 2",
        "",
        "-- spark",
        "~ 1 SELECT COUNT(1), CAST(event_ts AS DATE) FROM prod.db.events GROUP BY 2 | "
        "1 SELECT COUNT(*), to_date(event_ts)",
        "+ " + " " * 72 + " | 2 FROM prod.db.events",
        "+ " + " " * 72 + " | 3 WHERE kind <> 'heartbeat'",
    ]


def test_csv_over_http_is_the_cli_s_lines(sample_store: Path) -> None:
    """Found by the sixth new-user trial: `/api/diff?format=csv` answered the column changes, or an
    empty 200 when no column changed, where `diff --format csv` prints the SQL lines."""
    arguments = ["diff", "prod.db.event_agg", "--before", "1", "--after", "2", "--format", "csv"]
    printed = CliRunner().invoke(cli, [*arguments, "--db", str(sample_store)]).output
    with open_reader(sample_store) as conn:
        answered = web_api.answer_on(
            conn,
            10,
            "diff",
            [("view", "prod.db.event_agg"), ("before", "1"), ("after", "2"), ("format", "csv")],
        )
    assert answered.csv is not None and answered.csv.splitlines() == printed.splitlines()
    assert printed.splitlines()[0] == "dialect,kind,before_line,before,after_line,after"
    assert len(printed.splitlines()) == 5


def test_a_column_spelt_in_another_case_is_the_same_column(tmp_path: Path) -> None:
    """Found by the twelfth new-user trial: `amount` became `Amount` and the diff said one was
    removed and the other added; engines resolve them as one column."""
    from viewlineage.indexer.pipeline.runs import index_locations

    from .conftest import settings_for
    from .metadata_files import View, schema_of, write

    root = tmp_path / "warehouse"
    view = View(
        root, "db", "v", "e9300000-0000-4000-8000-000000000001", schema=schema_of(("amount", "double"))
    )
    view.commit(1000, "SELECT amount FROM db.t")
    first = view.schema
    view.schema = {**schema_of(("Amount", "double")), "schema-id": 1}
    second = view.commit(2000, "SELECT amount AS Amount FROM db.t", **{"schema-id": 1})
    write(second, {**json.loads(second.read_text()), "schemas": [first, view.schema]}, 2000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        answer = version_diff(conn, "db.v", 1, 2)
    assert [(c["column"], c["change"], c["before"], c["after"]) for c in answer["columns"]] == [
        ("Amount", "respelled", "amount double", "Amount double")
    ]
