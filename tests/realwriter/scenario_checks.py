"""What any store built from the real-writer scenario (`spark_views.py`) must answer.

Each check takes a reader connection and the scenario's step completion times (`steps.json`). View
uuids are looked up by name at a step, never written down, so the same checks run on the committed
sample warehouse and on a warehouse that Spark writes live while `watch` follows it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from viewlineage.indexer.errors import UsageError
from viewlineage.queries import api

Steps = dict[int, int]
Check = Callable[[duckdb.DuckDBPyConnection, Steps], None]

# Steps after which event_agg has versions 1..13.
EVENT_AGG_REPLACEMENTS = [10, 12, 14, 16, 20, 22, 25, 27, 30, 33, 35, 37, 39]


def load_steps(out_dir: Path) -> Steps:
    return {step["step"]: step["finished_ms"] for step in json.loads((out_dir / "steps.json").read_text())}


def show_before_and_after_a_property_only_commit(conn: duckdb.DuckDBPyConnection, steps: Steps) -> None:
    before = api.show(conn, "prod.db.big_days", steps[27])
    after = api.show(conn, "prod.db.big_days", steps[28])
    assert (before["view_id"], before["version_id"]) == (after["view_id"], 1)
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
    assert steps[27] < after["properties_since_ms"] <= steps[28]
    assert before["activated_source"] == "version-log"
    assert steps[14] < before["activated_ms"] <= steps[15]
    assert [c["name"] for c in before["columns"]] == ["event_date", "kind", "event_count"]
    assert (before["default_namespace"], before["engine_name"]) == (["db"], "spark")


def drop_and_recreate_give_a_new_uuid_at_the_same_name(conn: duckdb.DuckDBPyConnection, steps: Steps) -> None:
    dropped_id = api.show(conn, "prod.db.big_days", steps[31])["view_id"]
    recreated = api.show(conn, "db.big_days", steps[34])
    assert recreated["view_id"] != dropped_id
    assert recreated["representations"][0]["sql"] == (
        "SELECT event_date, event_count\nFROM event_agg\nWHERE event_count > 3\nORDER BY event_date"
    )
    assert api.show(conn, "big_days")["view_id"] == recreated["view_id"]
    # The dropped view's whole history stays answerable by uuid: one version, three property commits.
    dropped = api.history(conn, dropped_id)
    assert [a["version_id"] for a in dropped["activations"]] == [1]
    assert [v["version_id"] for v in dropped["versions"]] == [1]
    assert conn.execute("SELECT count(*) FROM view_files WHERE view_id = ?", [dropped_id]).fetchone() == (4,)


def history_keeps_versions_expired_from_the_newest_file(
    conn: duckdb.DuckDBPyConnection, steps: Steps
) -> None:
    result = api.history(conn, "prod.db.event_agg")
    assert [a["version_id"] for a in result["activations"]] == list(range(1, 14))
    assert len(result["versions"]) == 13
    activated = [a["activated_ms"] for a in result["activations"]]
    for step, at in zip(EVENT_AGG_REPLACEMENTS, activated, strict=True):
        assert steps[step - 1] < at <= steps[step]
    assert {a["engine_name"] for a in result["activations"]} == {"spark"}
    newest_file_versions = conn.execute(
        "SELECT list_sort(list(version_id)) FROM file_versions WHERE location = (SELECT max(location) "
        "FROM view_files WHERE view_id = ?)",
        [result["view_id"]],
    ).fetchone()
    assert newest_file_versions == (list(range(4, 14)),)
    diff = result["activations"][1]["diff"]
    assert "-SELECT COUNT(1), CAST(event_ts AS DATE) FROM prod.db.events GROUP BY 2" in diff
    assert "+WHERE kind <> 'heartbeat'" in diff
    v1 = api.show(conn, "prod.db.event_agg", steps[10])
    assert (v1["version_id"], v1["default_catalog"], v1["default_namespace"]) == (
        1,
        "spark_catalog",
        ["default"],
    )


def show_at_each_replacement(conn: duckdb.DuckDBPyConnection, steps: Steps) -> None:
    view_id = api.resolve_view(conn, "prod.db.event_agg").view_id
    assert [api.show(conn, view_id, steps[step])["version_id"] for step in EVENT_AGG_REPLACEMENTS] == list(
        range(1, 14)
    )
    with pytest.raises(UsageError, match=r"was not created yet at .*: its first version became current at "):
        api.show(conn, view_id, steps[9])


def deps_transitive_across_namespaces(conn: duckdb.DuckDBPyConnection, steps: Steps) -> None:
    direct = api.deps(conn, "prod.acme.finance.revenue_by_region", steps[24])
    assert [(r["table"], r["is_view"]) for r in direct["reads"]] == [
        ("prod.db.event_agg", True),
        ("prod.sales.customer_revenue", True),
    ]
    transitive = api.deps(conn, "revenue_by_region", steps[24], transitive=True)
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
    later = api.deps(conn, "revenue_by_region", steps[30], transitive=True)
    assert [(r["table"], r["via"][-1]) for r in later["reads"] if r["depth"] == 2] == [
        ("prod.db.events", "prod.db.event_agg"),
        ("prod.sales.customers", "prod.db.event_agg"),
        ("prod.sales.customers", "prod.sales.customer_revenue"),
        ("prod.sales.orders", "prod.db.event_agg"),
        ("prod.sales.orders", "prod.sales.customer_revenue"),
    ]
    # The re-created big_days reads event_agg v10 (events UNION ALL orders) at step 34.
    big_days = api.deps(conn, "prod.db.big_days", steps[34], transitive=True)
    assert [(r["table"], r["depth"]) for r in big_days["reads"]] == [
        ("prod.db.event_agg", 1),
        ("prod.db.events", 2),
        ("prod.sales.orders", 2),
    ]


def uses_transitive_changes_with_time(conn: duckdb.DuckDBPyConnection, steps: Steps) -> None:
    def uses(at: int) -> list[tuple[str, int]]:
        result = api.uses(conn, "prod.sales.orders", at, transitive=True)
        return [(v["view"], v["depth"]) for v in result["views"]]

    # Step 20: event_agg v5 joins sales.orders; customer_revenue and order_rank read it directly.
    assert uses(steps[20]) == [
        ("prod.db.event_agg", 1),
        ("prod.sales.customer_revenue", 1),
        ("prod.sales.order_rank", 1),
        ("prod.db.big_days", 2),
    ]
    # Step 22: event_agg v6 no longer reads orders.
    assert uses(steps[22]) == [("prod.sales.customer_revenue", 1), ("prod.sales.order_rank", 1)]
    assert uses(steps[15]) == []
    # The old big_days at step 20 and the re-created one at step 34 are different views.
    old = api.uses(conn, "prod.sales.orders", steps[20], transitive=True)["views"][-1]["view_id"]
    new = api.uses(conn, "prod.sales.orders", steps[34], transitive=True)["views"]
    # One row per direct reader: revenue_by_region reads orders through two views.
    assert [(v["view"], v["depth"], v["path"][-1]) for v in new] == [
        ("prod.db.event_agg", 1, "prod.db.event_agg"),
        ("prod.sales.customer_revenue", 1, "prod.sales.customer_revenue"),
        ("prod.sales.order_rank", 1, "prod.sales.order_rank"),
        ("prod.acme.finance.revenue_by_region", 2, "prod.db.event_agg"),
        ("prod.acme.finance.revenue_by_region", 2, "prod.sales.customer_revenue"),
        ("prod.db.big_days", 2, "prod.db.event_agg"),
    ]
    assert new[-1]["view_id"] != old


CHECKS: list[Check] = [
    show_before_and_after_a_property_only_commit,
    drop_and_recreate_give_a_new_uuid_at_the_same_name,
    history_keeps_versions_expired_from_the_newest_file,
    show_at_each_replacement,
    deps_transitive_across_namespaces,
    uses_transitive_changes_with_time,
]
