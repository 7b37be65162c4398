"""`table-history`: a table's snapshots over time and its schema's evolution, field by field."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.rows import Batch, Removal
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries.cli import cli
from viewlineage.queries.table_history import table_history
from viewlineage.sinks.readers import open_reader
from viewlineage.sinks.store import Store

from . import table_scenario
from .conftest import settings_for
from .metadata_files import Table, schema_of, struct_of

UUID = table_scenario.ORDERS


def test_snapshots_newest_first_a_page_at_a_time(table_store: Path) -> None:
    with open_reader(table_store) as conn:
        first = table_history(conn, "sales.orders", limit=2)
        second = table_history(conn, "sales.orders", limit=2, offset=2)
    assert (first["table"], first["table_id"], first["total"]) == ("prod.sales.orders", UUID, 4)
    assert [(s["snapshot_id"], s["operation"], s["added_records"], s["deleted_records"], s["total_records"],
             s["schema_id"]) for s in first["snapshots"] + second["snapshots"]] == [
        (14, "overwrite", None, None, None, 1),  # "oops" is no count
        (13, "delete", None, 3, 12, 2),
        (12, "append", 5, None, 15, 1),
        (11, "append", 10, None, 10, 0),
    ]  # fmt: skip
    assert first["snapshots"][0]["committed_at"] == "1970-01-04T00:00:00.000Z"
    assert first["by_day"] == [
        {"day": "1970-01-02", "operation": "append", "commits": 1},
        {"day": "1970-01-03", "operation": "append", "commits": 1},
        {"day": "1970-01-03", "operation": "delete", "commits": 1},
        {"day": "1970-01-04", "operation": "overwrite", "commits": 1},
    ]
    assert first["records_by_day"] == [
        {"day": "1970-01-02", "total_records": 10},
        {"day": "1970-01-03", "total_records": 12},
        {"day": "1970-01-04", "total_records": None},
    ]
    assert first["main_history_total"] == 5
    assert [(row["made_current_at"], row["snapshot_id"]) for row in first["main_history"]] == [
        ("1970-01-04T00:00:05.000Z", 12),
        ("1970-01-04T00:00:00.000Z", 14),
    ]


def test_schema_evolution_by_field_id(table_store: Path) -> None:
    with open_reader(table_store) as conn:
        schemas = table_history(conn, "prod.sales.orders")["schemas"]
    assert [(s["schema_id"], s["since"], s["columns"]) for s in schemas] == [
        (0, "1970-01-02T00:00:00.000Z", 3),
        (1, "1970-01-03T00:00:00.000Z", 3),
        (2, "1970-01-03T00:00:01.000Z", 4),
        (1, "1970-01-04T00:00:00.000Z", 3),  # dropped again: Iceberg reuses schema 1
    ]
    assert [[(c["change"], c["column"], c["before"], c["after"]) for c in s["changes"]] for s in schemas] == [
        [],
        [("renamed", "customer", "name", "customer"), ("retyped", "qty", "int", "long")],
        [("added", "note", None, "string")],
        [("removed", "note", "string", None)],
    ]


def test_cli_and_errors(table_store: Path) -> None:
    result = CliRunner().invoke(
        cli, ["table-history", "sales.orders", "--limit", "1", "--db", str(table_store)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:5] == [
        "table: prod.sales.orders",
        f"table_id: {UUID}",
        "total: 4",
        "limit: 1",
        "offset: 0",
    ]
    # The seventeenth new-user trial: the commits per day the README promises were json's alone.
    lines = result.stdout.splitlines()
    assert lines[lines.index("by_day:") : lines.index("by_day:") + 3] == [
        "by_day:",
        "  day         operation  commits",
        "  ----------  ---------  -------",
    ]
    assert "records_by_day:" in lines
    assert (
        "  1          1970-01-03T00:00:00.000Z  3        renamed name -> customer; retyped qty: int -> long"
        in (result.stdout.splitlines())
    )
    csv = CliRunner().invoke(
        cli, ["table-history", "sales.orders", "--format", "csv", "--db", str(table_store)]
    )
    assert csv.stdout.splitlines()[0].startswith("committed_at,committed_ms,snapshot_id,")
    assert len(csv.stdout.splitlines()) == 5
    with open_reader(table_store) as conn:
        with pytest.raises(UsageError, match="limit is 1 to 500, not 0"):
            table_history(conn, "sales.orders", limit=0)
        with pytest.raises(UsageError, match="did you mean"):
            table_history(conn, "sales.order")
    # Found by the fifteenth adversarial trial: an offset past a BIGINT was DuckDB's traceback.
    huge = CliRunner().invoke(
        cli, ["table-history", "sales.orders", "--offset", str(2**63), "--db", str(table_store)]
    )
    assert (huge.exit_code, huge.stderr.splitlines()[-1]) == (
        2,
        f"Error: Invalid value for '--offset': {2**63} is not in the range 0<=x<=999999999999999.",
    )


def test_a_summary_count_that_is_no_count_is_none_in_every_field(tmp_path: Path) -> None:
    """Found by the fourteenth adversarial trial: `total-records` "0x10", "1.5" and "-5" were null
    in the snapshot rows and 16, 2 and -5 in `records_by_day`."""
    root = tmp_path / "warehouse"
    table = Table(root, "db", "t", "d8000000-0000-4000-8000-000000000001")
    for snapshot, (day, count) in enumerate([(1, "0x10"), (2, "1.5"), (3, "-5"), (4, "²"), (5, "7")], 1):
        table.commit(day * 86_400_000, snapshot, **{"total-records": count})
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        history = table_history(conn, "db.t")
    assert [row["total_records"] for row in history["snapshots"]] == [7, None, None, None, None]
    assert [row["total_records"] for row in history["records_by_day"]] == [None, None, None, None, 7]


def test_the_history_of_a_dropped_table_says_when_it_was_dropped(tmp_path: Path) -> None:
    """Found by the fifteenth new-user trial: `table-history` of a dropped table (by name, with
    --as-of while it existed) listed its snapshots with no word of the drop, which `table`,
    `uses` and `impact` say."""
    root = tmp_path / "warehouse"
    table = Table(root, "db", "t", "e9a00000-0000-4000-8000-000000000001", schema=schema_of(("a", "long")))
    table.commit(1000, 1)
    newest = table.commit(2000, 2)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        assert table_history(conn, "db.t")["dropped_at"] is None
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(newest), 3000, "watch")]))
    with open_reader(db) as conn:
        answer = table_history(conn, "db.t", as_of_ms=2500)
    assert (answer["dropped_ms"], answer["dropped_at"], answer["dropped_source"], answer["total"]) == (
        3000,
        "1970-01-01T00:00:03.000Z",
        "watch",
        2,
    )
    text = CliRunner().invoke(
        cli, ["table-history", "db.t", "--as-of", "1970-01-01T00:00:02.500Z", "--db", str(db)]
    )
    assert text.stdout.splitlines()[:3] == [
        "table: prod.db.t",
        "table_id: e9a00000-0000-4000-8000-000000000001",
        "dropped_at: 1970-01-01T00:00:03.000Z",
    ]
    # Found by the nineteenth new-user trial: text (only) left out the table the name held before.
    Table(root, "db", "t", "e9a00000-0000-4000-8000-000000000002", schema=schema_of(("a", "long"))).commit(
        4000, 1
    )
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    later = CliRunner().invoke(cli, ["table-history", "db.t", "--db", str(db)]).stdout.splitlines()
    shown = later.index("other tables that had its name:")
    assert later[1] == "table_id: e9a00000-0000-4000-8000-000000000002"
    assert "e9a00000-0000-4000-8000-000000000001" in later[shown + 3]


def test_a_struct_renamed_added_or_dropped_is_one_change(tmp_path: Path) -> None:
    """Found by the fifteenth new-user trial: `RENAME COLUMN owner TO holder` read as three changes
    (the struct and each of its fields renamed), and adding or dropping a struct as one change per
    field in it."""
    root = tmp_path / "warehouse"
    owner = struct_of(("nick", "string"), ("email", "string"), first_id=3)
    table = Table(
        root,
        "db",
        "t",
        "e9b00000-0000-4000-8000-000000000001",
        schema=schema_of(("id", "long"), ("owner", owner)),
    )
    table.commit(1000, 1)
    table.schema = schema_of(("id", "long"), ("holder", owner))
    table.commit(2000, 2)
    meta = {"id": 5, "name": "meta", "required": False, "type": struct_of(("a", "int"), first_id=6)}
    table.schema = {**schema_of(("id", "long"), ("holder", owner)), "fields": [*table.schema["fields"], meta]}
    table.commit(3000, 3)
    table.schema = schema_of(("id", "long"), ("holder", owner))
    table.commit(4000, 4)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        schemas = table_history(conn, "db.t")["schemas"]
    assert [[(c["change"], c["column"], c["before"], c["after"]) for c in s["changes"]] for s in schemas] == [
        [],
        [("renamed", "holder", "owner", "holder")],
        [("added", "meta", None, "struct")],
        [("removed", "meta", "struct", None)],
    ]
