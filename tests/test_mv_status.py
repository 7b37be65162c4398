"""Freshness of materialized views as of T, in each of the four formats, on metadata files whose
commit times the test sets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline import index_locations
from viewlineage.queries import mviews
from viewlineage.queries.cli import cli
from viewlineage.sinks.store import open_reader

from .conftest import settings_for
from .metadata_files import Table, View

EVENTS = "11111111-1111-4111-8111-111111111111"
STORE_1 = "22222222-2222-4222-8222-222222222222"
STORE_2 = "33333333-3333-4333-8333-333333333333"
TRINO = "44444444-4444-4444-8444-444444444444"
MV_1 = "55555555-5555-4555-8555-555555555555"
MV_2 = "66666666-6666-4666-8666-666666666666"
PRESTO = "77777777-7777-4777-8777-777777777777"
DIM = "88888888-8888-4888-8888-888888888888"
S1, S2, S3 = 101, 102, 103


def _property_refresh(refresh_id: str, version_id: int, snapshot: int) -> dict[str, Any]:
    return {
        "refresh-id": refresh_id,
        "version-id": version_id,
        "base-tables": [
            {"type": "iceberg-metastore", "identifier": "db.events", "snapshot-reference": snapshot}
        ],
    }


def _refresh_state(view_version: int, snapshot: int, dim_version: int) -> str:
    return json.dumps(
        {
            "view-version-id": view_version,
            "refresh-start-timestamp-ms": 0,
            "source-states": [
                {
                    "type": "table",
                    "name": "events",
                    "namespace": ["db"],
                    "uuid": EVENTS,
                    "snapshot-id": snapshot,
                },
                {"type": "view", "name": "dim", "namespace": ["db"], "uuid": DIM, "version-id": dim_version},
            ],
        }
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("mv") / "warehouse"
    events = Table(root, "db", "events", EVENTS)
    events.commit(1000, S1)
    events.commit(3000, S2, "append")
    events.commit(5000, S3, "replace")

    # Format 1: the MV view names its storage table by location; the storage table's properties
    # list the refreshes and the current one.
    store_1 = Table(root, "db", "mv_one_storage", STORE_1)
    view_1 = View(root, "db", "mv_one", MV_1)
    view_1.properties["materialized_view_metadata"] = json.dumps(
        {"storage-table-location": store_1.location, "allow-stale-data": False, "refresh-strategy": "full"}
    )
    view_1.commit(500, "SELECT id, kind FROM db.events")
    refreshes = [_property_refresh("r1", 1, S1)]
    store_1.properties["materialized_view_metadata"] = json.dumps(
        {"refreshes": refreshes, "current-refresh-id": "r1"}
    )
    store_1.commit(1500)
    refreshes.append(_property_refresh("r2", 1, S2))
    store_1.properties["materialized_view_metadata"] = json.dumps(
        {"refreshes": refreshes, "current-refresh-id": "r2"}
    )
    store_1.commit(4000)
    view_1.commit(6000, "SELECT id FROM db.events")

    # Format 2: the version names its storage table; each refresh is a storage-table snapshot
    # whose summary holds the refresh state, with a view among the sources.
    dim = View(root, "db", "dim", DIM)
    dim.commit(100, "SELECT 1 AS id")
    view_2 = View(root, "db", "mv_two", MV_2)
    view_2.commit(600, "SELECT * FROM db.events JOIN db.dim USING (id)",
                  **{"storage-table": {"namespace": ["db"], "name": "mv_two_storage"}})  # fmt: skip
    store_2 = Table(root, "db", "mv_two_storage", STORE_2)
    store_2.commit(2000, 201, "overwrite", **{"refresh-state": _refresh_state(1, S1, 1)})
    dim.commit(2500, "SELECT 2 AS id")
    store_2.commit(3200, 202, "overwrite", **{"refresh-state": _refresh_state(1, S2, 2)})

    # Format 3: a Trino storage table, addressed by its own name.
    trino = Table(root, "db", "mv_trino", TRINO)
    trino.commit(1200, 301, "append", dependsOnTables=f"db.events={S1}", dependsOnTableFunctions="false",
                 **{"trino-query-start-time": "1970-01-01T00:00:01.100Z"})  # fmt: skip
    trino.commit(5200, 302, "append", dependsOnTables="UNKNOWN", dependsOnTableFunctions="true")

    # Format 4: PrestoDB keeps the base tables and their snapshots in the view's properties.
    presto = View(root, "db", "mv_presto", PRESTO)
    presto.properties.update(
        {
            "presto.materialized_view.base_tables": "db.events,db.missing",
            "presto.materialized_view.base_snapshot.db.events": str(S2),
            "presto.materialized_view.base_snapshot.db.missing": "9",
        }
    )
    presto.commit(3100, "SELECT * FROM db.events")

    db = root.parent / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    yield db


def status(db: Path, mv: str, at: int) -> dict[str, Any]:
    with open_reader(db) as conn:
        [result] = mviews.mv_status(conn, mv, at)["materialized_views"]
        return result


def brief(result: dict[str, Any]) -> tuple[Any, ...]:
    return (
        result["state"],
        (result["refresh"] or {}).get("refreshed_ms"),
        [
            (
                s["source"],
                s["state"],
                s.get("stale_since_ms"),
                s.get("operations_since"),
                s.get("data_unchanged"),
            )
            for s in result["sources"]
        ],
    )


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (1200, ("UNKNOWN", None, [])),
        (2000, ("FRESH", 1500, [("db.events", "FRESH", None, None, None)])),
        (3500, ("STALE", 1500, [("db.events", "STALE", 3000, ["append"], False)])),
        (4500, ("FRESH", 4000, [("db.events", "FRESH", None, None, None)])),
        (5500, ("STALE", 4000, [("db.events", "STALE", 5000, ["replace"], True)])),
        (6500, ("STALE", 4000, [("db.events", "STALE", 5000, ["replace"], True)])),
    ],
)
def test_format_1_storage_table_properties(store: Path, at: int, expected: tuple[Any, ...]) -> None:
    result = status(store, "prod.db.mv_one", at)
    assert brief(result) == expected
    assert (result["format"], result["storage_table_id"], result["allow_stale_data"]) == (
        "mv-properties",
        STORE_1,
        False,
    )
    definition_changed = any("definition changed" in reason for reason in result["reasons"])
    assert definition_changed == (at >= 6000)


def test_format_1_reasons_name_the_table_and_the_change(store: Path) -> None:
    assert status(store, "mv_one", 6500)["reasons"] == [
        "the definition changed: version 2 is current since 1970-01-01T00:00:06.000Z, "
        "the refresh materialized version 1",
        f"db.events is at snapshot {S3} on main, the refresh read {S2}: 1 snapshot(s) since: replace "
        "(compaction only: data unchanged)",
    ]
    assert status(store, "mv_one", 1200)["reasons"] == [
        "no refresh to check: storage table prod.db.mv_one_storage names no current refresh"
    ]


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (1900, ("UNKNOWN", None, [])),
        (
            2200,
            ("FRESH", 0, [("db.events", "FRESH", None, None, None), ("db.dim", "FRESH", None, None, None)]),
        ),
        (
            2700,
            ("STALE", 0, [("db.events", "FRESH", None, None, None), ("db.dim", "STALE", 2500, None, None)]),
        ),
        (
            3300,
            ("FRESH", 0, [("db.events", "FRESH", None, None, None), ("db.dim", "FRESH", None, None, None)]),
        ),
        (
            5100,
            (
                "STALE",
                0,
                [("db.events", "STALE", 5000, ["replace"], True), ("db.dim", "FRESH", None, None, None)],
            ),
        ),
    ],
)
def test_format_2_refresh_state_in_the_storage_snapshot(
    store: Path, at: int, expected: tuple[Any, ...]
) -> None:
    result = status(store, "db.mv_two", at)
    assert brief(result) == expected
    assert (result["format"], result["storage_table_id"]) == ("refresh-state", STORE_2)


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (1300, ("FRESH", 1100, [("db.events", "FRESH", None, None, None)])),
        (4000, ("STALE", 1100, [("db.events", "STALE", 3000, ["append"], False)])),
        (5300, ("UNKNOWN", 5200, [])),
    ],
)
def test_format_3_trino_storage_table_by_its_name(store: Path, at: int, expected: tuple[Any, ...]) -> None:
    result = status(store, "prod.db.mv_trino", at)
    assert brief(result) == expected
    assert (result["format"], result["view_id"]) == ("trino", None)
    if at == 5300:
        assert result["reasons"] == [
            "the refresh cannot be checked: Trino recorded its base tables as UNKNOWN; "
            "it reads table functions"
        ]


def test_format_4_presto_properties(store: Path) -> None:
    result = status(store, "mv_presto", 4000)
    assert result["state"] == "UNKNOWN"
    assert [(s["source"], s["state"], s["reason"]) for s in result["sources"]] == [
        ("db.events", "FRESH", None),
        ("db.missing", "UNKNOWN", "the metadata of db.missing was never indexed"),
    ]
    assert result["refresh"]["refreshed_ms"] == 3100
    # Once events moves on, one stale table outranks the unknown one.
    assert status(store, "mv_presto", 5500)["state"] == "STALE"


def test_every_mv_at_a_time(store: Path) -> None:
    with open_reader(store) as conn:
        result = mviews.mv_status(conn, None, 2200)
    assert [(mv["mv"], mv["state"]) for mv in result["materialized_views"]] == [
        ("prod.db.mv_one", "FRESH"),
        ("prod.db.mv_two", "FRESH"),
        ("prod.db.mv_trino", "FRESH"),
    ]


def test_a_plain_view_is_not_an_mv(store: Path) -> None:
    with (
        open_reader(store) as conn,
        pytest.raises(UsageError, match=r"view prod\.db\.dim is not a materialized view"),
    ):
        mviews.mv_status(conn, "db.dim", 3000)


def test_mv_status_command(store: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "--db",
            str(store),
            "mv-status",
            "db.mv_one",
            "--as-of",
            "1970-01-01T00:00:03.500Z",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    [mv] = json.loads(result.output)["materialized_views"]
    assert (mv["state"], mv["sources"][0]["stale_since"]) == ("STALE", "1970-01-01T00:00:03.000Z")
    text = runner.invoke(cli, ["--db", str(store), "mv-status", "--as-of", "1970-01-01T00:00:03.500Z"])
    assert text.exit_code == 0, text.output
    assert [line for line in text.output.splitlines() if line.startswith("prod.")] == [
        "prod.db.mv_one: STALE",
        "prod.db.mv_presto: UNKNOWN",
        "prod.db.mv_two: FRESH",
        "prod.db.mv_trino: STALE",
    ]


def test_storage_table_name_reaches_its_view_mv(store: Path) -> None:
    assert status(store, "db.mv_one_storage", 2000)["mv"] == "prod.db.mv_one"


def test_the_store_holds_each_format(store: Path) -> None:
    with duckdb.connect(str(store), read_only=True) as conn:
        formats = conn.execute(
            "SELECT format, count(*) FROM mv_refreshes GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert formats == [("mv-properties", 2), ("presto", 1), ("refresh-state", 2), ("trino", 2)]
