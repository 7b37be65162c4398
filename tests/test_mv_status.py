"""Freshness of materialized views as of T, in each of the four formats, on metadata files whose
commit times the test sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.indexer.spec.materialized_view import StorageTableMetadata
from viewlineage.queries import mviews
from viewlineage.queries.cli import cli
from viewlineage.sinks.readers import open_reader

from .conftest import settings_for
from .metadata_files import Table, View
from .mv_scenario import S1, S2, S3, STORE_1, STORE_2


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
def test_format_1_storage_table_properties(mv_store: Path, at: int, expected: tuple[Any, ...]) -> None:
    result = status(mv_store, "prod.db.mv_one", at)
    assert brief(result) == expected
    assert (result["format"], result["storage_table_id"], result["allow_stale_data"]) == (
        "mv-properties",
        STORE_1,
        False,
    )
    definition_changed = any("definition changed" in reason for reason in result["reasons"])
    assert definition_changed == (at >= 6000)


def test_format_1_reasons_name_the_table_and_the_change(mv_store: Path) -> None:
    assert status(mv_store, "mv_one", 6500)["reasons"] == [
        "the definition changed: version 2 is current since 1970-01-01T00:00:06.000Z, "
        "the refresh materialized version 1",
        f"db.events is at snapshot {S3} on main, the refresh read {S2}: 1 snapshot(s) since: replace "
        "(compaction only: data unchanged)",
    ]
    assert status(mv_store, "mv_one", 1200)["reasons"] == [
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
    mv_store: Path, at: int, expected: tuple[Any, ...]
) -> None:
    result = status(mv_store, "db.mv_two", at)
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
def test_format_3_trino_storage_table_by_its_name(mv_store: Path, at: int, expected: tuple[Any, ...]) -> None:
    result = status(mv_store, "prod.db.mv_trino", at)
    assert brief(result) == expected
    assert (result["format"], result["view_id"]) == ("trino", None)
    if at == 5300:
        assert result["reasons"] == [
            "the refresh cannot be checked: Trino recorded its base tables as UNKNOWN; "
            "it reads table functions"
        ]


def test_format_4_presto_properties(mv_store: Path) -> None:
    result = status(mv_store, "mv_presto", 4000)
    assert result["state"] == "UNKNOWN"
    assert [(s["source"], s["state"], s["reason"]) for s in result["sources"]] == [
        ("db.events", "FRESH", None),
        ("db.missing", "UNKNOWN", "the metadata of db.missing was never indexed"),
    ]
    assert result["refresh"]["refreshed_ms"] == 3100
    # Once events moves on, one stale table outranks the unknown one.
    assert status(mv_store, "mv_presto", 5500)["state"] == "STALE"


def test_every_mv_at_a_time(mv_store: Path) -> None:
    with open_reader(mv_store) as conn:
        result = mviews.mv_status(conn, None, 2200)
    assert [(mv["mv"], mv["state"]) for mv in result["materialized_views"]] == [
        ("prod.db.mv_one", "FRESH"),
        ("prod.db.mv_two", "FRESH"),
        ("prod.db.mv_trino", "FRESH"),
    ]


def test_a_plain_view_is_not_an_mv(mv_store: Path) -> None:
    with (
        open_reader(mv_store) as conn,
        pytest.raises(UsageError, match=r"view prod\.db\.dim is not a materialized view"),
    ):
        mviews.mv_status(conn, "db.dim", 3000)


def test_an_mv_asked_about_before_it_existed_says_so(mv_store: Path) -> None:
    """Found by the fourth new-user trial: "is not a materialized view" at a time before it existed."""
    with open_reader(mv_store) as conn, pytest.raises(UsageError) as raised:
        mviews.mv_status(conn, "db.mv_one", 100)
    assert str(raised.value) == (
        "view prod.db.mv_one did not exist yet at 1970-01-01T00:00:00.100Z: it had no version then"
    )


def test_mv_status_command(mv_store: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "--db",
            str(mv_store),
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
    text = runner.invoke(cli, ["--db", str(mv_store), "mv-status", "--as-of", "1970-01-01T00:00:03.500Z"])
    assert text.exit_code == 0, text.output
    assert [line for line in text.output.splitlines() if line.startswith("prod.")] == [
        "prod.db.mv_one: STALE",
        "prod.db.mv_presto: UNKNOWN",
        "prod.db.mv_two: FRESH",
        "prod.db.mv_trino: STALE",
    ]


def test_storage_table_name_reaches_its_view_mv(mv_store: Path) -> None:
    assert status(mv_store, "db.mv_one_storage", 2000)["mv"] == "prod.db.mv_one"
    assert status(mv_store, "db.mv_two_storage", 2200)["mv"] == "prod.db.mv_two"


def test_the_store_holds_each_format(mv_store: Path) -> None:
    with duckdb.connect(str(mv_store), read_only=True) as conn:
        formats = conn.execute(
            "SELECT format, count(*) FROM mv_refreshes GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert formats == [("mv-properties", 2), ("presto", 1), ("refresh-state", 2), ("trino", 2)]


def _property_mv(root: Path, events: Table) -> View:
    """A format-1 MV over `events` whose storage table records one refresh at 1,500 reading S1."""
    storage = Table(root, "db", "storage", "e5000000-0000-4000-8000-000000000001")
    view = View(root, "db", "mv", "e5000000-0000-4000-8000-000000000002")
    view.properties["materialized_view_metadata"] = json.dumps({"storage-table-location": storage.location})
    view.commit(500, "SELECT id FROM db.events")
    refresh = {
        "refresh-id": "r1",
        "version-id": 1,
        "base-tables": [{"type": "iceberg-metastore", "identifier": "db.events", "snapshot-reference": S1}],
    }
    storage.properties["materialized_view_metadata"] = json.dumps(
        {"refreshes": [refresh], "current-refresh-id": "r1"}
    )
    storage.commit(1500)
    return view


def _indexed(root: Path) -> Path:
    db = root.parent / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    return db


def test_a_new_definition_alone_makes_the_refresh_stale(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    events = Table(root, "db", "events", "e5000000-0000-4000-8000-000000000003")
    events.commit(1000, S1)
    _property_mv(root, events).commit(3000, "SELECT id, kind FROM db.events")
    db = _indexed(root)
    assert status(db, "db.mv", 2000)["state"] == "FRESH"
    late = status(db, "db.mv", 4000)
    assert [s["state"] for s in late["sources"]] == ["FRESH"]
    assert (late["state"], late["version_id"]) == ("STALE", 2)


def test_a_base_table_s_history_comes_from_its_snapshot_log(tmp_path: Path) -> None:
    """Only the base table's newest metadata file is left (older ones expired): its snapshot log
    still says what main pointed at before."""
    root = tmp_path / "warehouse"
    events = Table(root, "db", "events", "e5000000-0000-4000-8000-000000000004")
    events.commit(1000, S1)
    events.commit(3000, S2)
    _property_mv(root, events)
    for old in sorted((Path(events.location) / "metadata").glob("*.metadata.json"))[:-1]:
        old.unlink()
    db = _indexed(root)
    assert [status(db, "db.mv", at)["state"] for at in (2000, 3500)] == ["FRESH", "STALE"]


def test_integer_refresh_ids_are_refresh_ids() -> None:
    """Writers write `refresh-id` and `current-refresh-id` as numbers, which the draft allows, and
    the refresh state was dropped with a validation finding: an integer id is its decimal text."""
    state = StorageTableMetadata.model_validate(
        {
            "refreshes": [{"refresh-id": 7, "version-id": 1, "base-tables": []}],
            "current-refresh-id": 7,
        }
    )
    assert (state.refreshes[0].refresh_id, state.current_refresh_id) == ("7", "7")
    with pytest.raises(ValidationError):
        StorageTableMetadata.model_validate({"refreshes": [], "current-refresh-id": True})


def test_unknown_states_name_their_actual_cause(tmp_path: Path) -> None:
    """A refresh record that does not validate is dropped with a finding: `mv-status` says so, not
    that the storage table was never indexed (which `files` contradicts); a storage table with no
    indexed metadata, and one that several tables answer to, are told apart."""
    root = tmp_path / "warehouse"
    events = Table(root, "db", "events", "e5000000-0000-4000-8000-000000000005")
    events.commit(1000, S1)
    _property_mv(root, events)
    storage = Table(root, "db", "storage", "e5000000-0000-4000-8000-000000000001")
    storage.properties["materialized_view_metadata"] = json.dumps(
        {"refreshes": [{"refresh-id": "r2", "base-tables": "not a list"}], "current-refresh-id": "r2"}
    )
    storage.commit(2000)
    orphan = View(root, "db", "orphan_mv", "e5000000-0000-4000-8000-000000000006")
    orphan.properties["materialized_view_metadata"] = json.dumps(
        {"storage-table-location": f"{root}/db/never_written"}
    )
    orphan.commit(500, "SELECT id FROM db.events")
    db = _indexed(root)
    dropped = status(db, "db.mv", 2500)
    assert (dropped["state"], dropped["reasons"]) == (
        "UNKNOWN",
        [
            "no refresh to check: storage table prod.db.storage names no current refresh: its refresh "
            "records did not validate and were dropped (invalid-mv-metadata at "
            "$.properties.materialized_view_metadata; `viewlineage findings` says why)"
        ],
    )
    never = status(db, "db.orphan_mv", 2500)
    assert never["reasons"] == [
        f"no refresh to check: no metadata file of its storage table {root}/db/never_written was indexed"
    ]


def test_a_source_recorded_under_another_uuid_is_not_fresh(tmp_path: Path) -> None:
    """Found by the ninth adversarial trial: a refresh state whose source `uuid` no indexed table
    has, but whose name and snapshot match the table now at that name, was FRESH: that table is
    not the one the refresh read (one dropped and created again reuses the name, not the uuid)."""
    root = tmp_path / "warehouse"
    Table(root, "db", "events", "e5000000-0000-4000-8000-000000000011").commit(1000, S1)
    view = View(root, "db", "mv", "e5000000-0000-4000-8000-000000000012")
    view.commit(
        600, "SELECT * FROM db.events", **{"storage-table": {"namespace": ["db"], "name": "mv_storage"}}
    )
    read = {"type": "table", "name": "events", "namespace": ["db"], "snapshot-id": S1,
            "uuid": "e5000000-0000-4000-8000-0000000000ff"}  # fmt: skip
    state = {"view-version-id": 1, "refresh-start-timestamp-ms": 0, "source-states": [read]}
    storage = Table(root, "db", "mv_storage", "e5000000-0000-4000-8000-000000000013")
    storage.commit(2000, 201, "overwrite", **{"refresh-state": json.dumps(state)})
    db = _indexed(root)
    [source] = status(db, "db.mv", 3000)["sources"]
    assert (source["state"], source["reason"]) == (
        "UNKNOWN",
        "the refresh read db.events as table e5000000-0000-4000-8000-0000000000ff, which no indexed table "
        "is; db.events is table e5000000-0000-4000-8000-000000000011",
    )


def test_a_trino_source_whose_name_holds_a_dot(tmp_path: Path) -> None:
    """Found by the ninth adversarial trial: Trino writes `dependsOnTables` as `schema.table=id`,
    unquoted, and `tpch.a.b` was taken for table `b` of namespace `tpch.a`. Every split is tried:
    the one table that answers is the source; two that answer make the state UNKNOWN."""
    root = tmp_path / "warehouse"
    Table(root, "tpch", "a.b", "e5000000-0000-4000-8000-000000000021").commit(1000, S1)
    trino = Table(root, "tpch", "mv_dot", "e5000000-0000-4000-8000-000000000022")
    trino.commit(1200, 301, "append", dependsOnTables=f"tpch.a.b={S1}", dependsOnTableFunctions="false")
    db = _indexed(root)
    [one] = status(db, "tpch.mv_dot", 2000)["sources"]
    assert (one["state"], one["table_id"]) == ("FRESH", "e5000000-0000-4000-8000-000000000021")
    Table(root, "tpch/a", "b", "e5000000-0000-4000-8000-000000000023").commit(1100, S2)
    db = _indexed(root)
    [two] = status(db, "tpch.mv_dot", 2000)["sources"]
    assert (two["state"], two["reason"]) == (
        "UNKNOWN",
        "tpch.a.b names 2 indexed tables: e5000000-0000-4000-8000-000000000021, "
        "e5000000-0000-4000-8000-000000000023",
    )
