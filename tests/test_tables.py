"""Table metadata (spec v1-v3): what is parsed from each format version, and what the store holds
for the real-writer sample's tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.parse.config import CatalogMapEntry, ParseConfig
from viewlineage.indexer.parse.metadata import parse_metadata
from viewlineage.indexer.parse.table import KnownSnapshot, ParsedRef, ParsedTable
from viewlineage.indexer.pipeline.rows import Batch, Removal
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries import api
from viewlineage.queries.cli import cli
from viewlineage.queries.impact import impact, parse_change
from viewlineage.queries.table_history import table_history
from viewlineage.sinks.readers import open_reader
from viewlineage.sinks.store import Store

from .conftest import settings_for
from .metadata_files import Table, View, schema_of, struct_of, write
from .realwriter.scenario_checks import load_steps

SAMPLE = Path(__file__).parent / "data" / "sample"

UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"
NESTED = {
    "type": "struct",
    "schema-id": 1,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {
            "id": 2,
            "name": "address",
            "required": False,
            "type": {
                "type": "struct",
                "fields": [
                    {"id": 5, "name": "city", "required": True, "type": "string", "doc": "town"},
                    {"id": 6, "name": "zip", "required": False, "type": "int"},
                ],
            },
        },
        {
            "id": 3,
            "name": "tags",
            "required": False,
            "type": {"type": "list", "element-id": 7, "element": "string", "element-required": True},
        },
        {
            "id": 4,
            "name": "scores",
            "required": False,
            "type": {
                "type": "map",
                "key-id": 8,
                "key": "string",
                "value-id": 9,
                "value": {"type": "list", "element-id": 10, "element": "double", "element-required": False},
                "value-required": False,
            },
        },
    ],
}


def v1_table() -> dict[str, Any]:
    """A v1 document as early writers wrote it: one `schema`, no refs, no uuid, no sequence numbers."""
    return {
        "format-version": 1,
        "location": "s3://bucket/wh/db/t",
        "last-updated-ms": 1700000002000,
        "last-column-id": 2,
        "schema": {"type": "struct", "fields": [{"id": 1, "name": "x", "required": False, "type": "int"}]},
        "partition-spec": [],
        "properties": {"owner": "a"},
        "current-snapshot-id": 20,
        "snapshots": [
            {"snapshot-id": 10, "timestamp-ms": 1700000001000, "manifests": ["s3://m1.avro"]},
            {
                "snapshot-id": 20,
                "parent-snapshot-id": 10,
                "timestamp-ms": 1700000002000,
                "summary": {"operation": "append"},
                "manifest-list": "s3://l2.avro",
            },
        ],
        "snapshot-log": [
            {"timestamp-ms": 1700000001000, "snapshot-id": 10},
            {"timestamp-ms": 1700000002000, "snapshot-id": 20},
        ],
    }


def v3_table() -> dict[str, Any]:
    return {
        "format-version": 3,
        "table-uuid": UUID.upper(),
        "location": "s3://bucket/wh/db/u",
        "last-sequence-number": 2,
        "last-updated-ms": 1700000009000,
        "last-column-id": 10,
        "current-schema-id": 1,
        "schemas": [
            {
                "type": "struct",
                "schema-id": 0,
                "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}],
            },
            NESTED,
        ],
        "properties": {},
        "current-snapshot-id": 3051729675574597004,
        "next-row-id": 150,
        "refs": {
            "main": {"snapshot-id": 3051729675574597004, "type": "branch"},
            "audit": {"snapshot-id": 3055729675574597004, "type": "tag", "max-ref-age-ms": 86400000},
        },
        "snapshots": [
            {
                "snapshot-id": 3051729675574597004,
                "sequence-number": 1,
                "timestamp-ms": 1700000008000,
                "summary": {"operation": "append"},
                "manifest-list": "s3://a.avro",
                "schema-id": 1,
                "first-row-id": 0,
                "added-rows": 100,
            },
            {
                "snapshot-id": 3055729675574597004,
                "parent-snapshot-id": 3051729675574597004,
                "sequence-number": 2,
                "timestamp-ms": 1700000009000,
                "summary": {"operation": "replace"},
                "manifest-list": "s3://b.avro",
                "schema-id": 1,
                "first-row-id": 100,
                "added-rows": 50,
            },
        ],
        "metadata-log": [
            {"timestamp-ms": 1700000008500, "metadata-file": "s3://bucket/wh/db/u/metadata/v1.metadata.json"}
        ],
    }


def parsed(document: dict[str, Any], known: frozenset[str] = frozenset()) -> tuple[ParsedTable, list[str]]:
    location = "s3://bucket/wh/db/t/metadata/v2.metadata.json"
    config = ParseConfig(catalog_map=(CatalogMapEntry("s3://bucket/wh", "prod"),))
    result = parse_metadata(orjson.dumps(document), location, config, known)
    assert result.table is not None
    return result.table, sorted(f.code for f in result.findings)


def test_a_v1_table_without_uuid_or_refs() -> None:
    table, codes = parsed(v1_table())
    assert codes == ["missing-table-uuid"]
    assert (table.table_id, table.format_version, table.current_schema_id) == (
        "loc:s3://bucket/wh/db/t",
        1,
        0,
    )
    assert (table.current_snapshot_id, table.last_sequence_number) == (20, None)
    assert str(table.name) == "prod.db.t"
    # No refs in v1: main is the current snapshot.
    assert table.refs == (ParsedRef("main", "branch", 20, None, None, None),)
    assert [(s.snapshot_id, s.parent_snapshot_id, s.operation) for s in table.snapshots] == [  # type: ignore[union-attr]
        (10, None, None),
        (20, 10, "append"),
    ]
    assert [(e.snapshot_id, e.timestamp_ms) for e in table.snapshot_log] == [
        (10, 1700000001000),
        (20, 1700000002000),
    ]


def test_a_v1_table_without_a_current_snapshot() -> None:
    document = {**v1_table(), "current-snapshot-id": -1, "snapshots": [], "snapshot-log": []}
    table, codes = parsed(document)
    assert (table.current_snapshot_id, table.refs, codes) == (None, (), ["missing-table-uuid"])


def test_a_v3_table_with_nested_fields_tags_and_row_lineage() -> None:
    table, codes = parsed(v3_table())
    assert codes == []
    assert (table.table_id, table.current_schema_id, table.last_sequence_number) == (UUID, 1, 2)
    assert table.current_schema_hash == table.schema_hashes[1] != table.schema_hashes[0]
    assert [(r.name, r.type, r.max_ref_age_ms) for r in table.refs] == [
        ("audit", "tag", 86400000),
        ("main", "branch", None),
    ]
    newest = table.snapshots[1]
    assert not isinstance(newest, KnownSnapshot)
    assert (newest.sequence_number, newest.first_row_id, newest.added_rows, newest.operation) == (
        2,
        100,
        50,
        "replace",
    )
    nested = {schema.schema_id: schema for schema in table.schemas}[1].nested
    assert [(f.field_id, f.parent_id, ".".join(f.path), f.type, f.required) for f in nested] == [
        (1, None, "id", "long", True),
        (2, None, "address", "struct", False),
        (5, 2, "address.city", "string", True),
        (6, 2, "address.zip", "int", False),
        (3, None, "tags", "list", False),
        (7, 3, "tags.element", "string", True),
        (4, None, "scores", "map", False),
        (8, 4, "scores.key", "string", True),
        (9, 4, "scores.value", "list", False),
        (10, 9, "scores.value.element", "double", False),
    ]
    assert nested[2].doc == "town"
    assert [(e.metadata_file, e.timestamp_ms) for e in table.metadata_log] == [
        ("s3://bucket/wh/db/u/metadata/v1.metadata.json", 1700000008500)
    ]


def test_known_snapshots_are_identified_by_hash_only() -> None:
    first, _ = parsed(v3_table())
    hashes = frozenset(s.snapshot_hash for s in first.snapshots)
    again, codes = parsed(v3_table(), known=hashes)
    assert codes == []
    assert all(isinstance(s, KnownSnapshot) for s in again.snapshots)
    assert [s.snapshot_hash for s in again.snapshots] == [s.snapshot_hash for s in first.snapshots]


def test_broken_table_rules_become_findings_and_the_rest_is_indexed() -> None:
    document = v3_table()
    document["format-version"] = 4
    document["current-snapshot-id"] = 99
    document["current-schema-id"] = 7
    document["refs"]["dangling"] = {"snapshot-id": 98, "type": "branch"}
    document["snapshots"].append({"snapshot-id": "not a number", "timestamp-ms": 1})
    del document["last-column-id"]
    table, codes = parsed(document)
    assert codes == [
        "bad-format-version",
        "current-schema-not-found",
        "current-snapshot-not-found",
        "invalid-field:snapshot-id",
        "missing-field:last-column-id",
        "ref-snapshot-not-found",
    ]
    assert len(table.snapshots) == 2
    assert table.current_schema_hash is None


def test_the_sample_tables_in_the_store(sample_store: Path) -> None:
    with duckdb.connect(str(sample_store), read_only=True) as conn:
        tables = conn.execute(
            "SELECT catalog, name, format_version, count(*), max(last_sequence_number) FROM table_files "
            "GROUP BY ALL ORDER BY name"
        ).fetchall()
        assert tables == [
            ("prod", ["db", "events"], 2, 3, 2),
            ("prod", ["sales", "customers"], 2, 2, 1),
            ("prod", ["sales", "orders"], 2, 3, 2),
        ]
        events = conn.execute(
            "SELECT s.sequence_number, s.operation, s.summary['added-records'], s.parent_snapshot_id IS NULL "
            "FROM snapshots s JOIN table_names n USING (table_id) WHERE n.name = ['db', 'events'] "
            "ORDER BY s.sequence_number"
        ).fetchall()
        assert events == [(1, "append", "8", True), (2, "append", "5", False)]
        # The snapshot log (union over files) agrees with the snapshots, and main points at the last.
        logged = conn.execute(
            "SELECT count(*) FROM snapshot_log l JOIN snapshots s USING (table_id, snapshot_id) "
            "WHERE l.timestamp_ms = s.timestamp_ms"
        ).fetchone()
        assert logged == (5,)
        heads = conn.execute(
            "SELECT f.name, r.snapshot_id = f.current_snapshot_id FROM table_files f "
            "JOIN table_refs r USING (location) WHERE r.name = 'main' "
            "QUALIFY row_number() OVER (PARTITION BY f.table_id ORDER BY f.sequence_number DESC) = 1 "
            "ORDER BY f.name"
        ).fetchall()
        assert heads == [
            (["db", "events"], True),
            (["sales", "customers"], True),
            (["sales", "orders"], True),
        ]
        columns = conn.execute(
            "SELECT list(sf.path[1] || ':' || sf.type ORDER BY sf.field_id) FROM table_files f "
            "JOIN schema_fields sf ON sf.schema_hash = f.current_schema_hash "
            "WHERE f.name = ['sales', 'orders'] GROUP BY f.location ORDER BY f.location DESC LIMIT 1"
        ).fetchone()
        assert columns == (
            ["order_id:long", "customer_id:long", "amount:decimal(10, 2)", "order_ts:timestamptz"],
        )
        # Every file but the first logs the file it replaced.
        replaced = conn.execute("SELECT count(*) FROM metadata_log").fetchone()
        assert replaced == (5,)


def test_table_as_of_each_insert(sample_store: Path) -> None:
    """prod.sales.orders as Spark wrote it: created empty, then two inserts (scenario steps 9 and 26)."""
    steps = load_steps(SAMPLE)
    with open_reader(sample_store) as conn:
        created, first, second = (api.table(conn, "sales.orders", steps[step]) for step in (5, 9, 26))
        with pytest.raises(UsageError, match="has no metadata file committed by"):
            api.table(conn, "sales.orders", steps[1])
    assert [c["path"] for c in created["columns"]] == ["order_id", "customer_id", "amount", "order_ts"]
    assert created["columns"][2]["type"] == "decimal(10, 2)"
    assert (created["snapshot"], created["refs"], created["properties"]["write.format.default"]) == (
        None,
        [],
        "parquet",
    )
    assert (first["snapshot"]["sequence_number"], first["snapshot"]["operation"]) == (1, "append")
    assert first["snapshot"]["summary"]["added-records"] == "4"
    assert (second["snapshot"]["sequence_number"], second["snapshot"]["summary"]["total-records"]) == (2, "6")
    assert second["snapshot"]["parent_snapshot_id"] == first["snapshot"]["snapshot_id"]
    assert second["refs"] == [
        {"name": "main", "type": "branch", "snapshot_id": second["snapshot"]["snapshot_id"]}
    ]
    assert steps[25] < second["snapshot"]["committed_ms"] <= steps[26]


def test_table_columns_list_each_struct_s_fields_after_it(tmp_path: Path) -> None:
    """Field ids do not say the order: v3_table's nested ids interleave its top-level ones."""
    root = tmp_path / "warehouse"
    write(root / "db" / "u" / "metadata" / "00000-u.metadata.json", v3_table(), 1700000009000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        columns = api.table(conn, "db.u")["columns"]
    assert [c["path"] for c in columns] == [
        "id",
        "address",
        "address.city",
        "address.zip",
        "tags",
        "tags.element",
        "scores",
        "scores.key",
        "scores.value",
        "scores.value.element",
    ]


def test_a_struct_s_fields_are_listed_in_their_order_not_by_name(tmp_path: Path) -> None:
    """Found by the sixteenth new-user trial: `owner.email` was listed before `owner.nick`, which
    the struct holds first (by name, not in order)."""
    root = tmp_path / "warehouse"
    schema = schema_of(
        ("cust_id", "long"), ("owner", struct_of(("nick", "string"), ("email", "string"), first_id=3))
    )
    Table(root, "db", "c", "e9900000-0000-4000-8000-000000000001", schema=schema).commit(1000, 1)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        columns = api.table(conn, "db.c")["columns"]
    assert [c["path"] for c in columns] == ["cust_id", "owner", "owner.nick", "owner.email"]


def test_a_table_name_resolves_to_the_table_that_held_it_at_the_time(tmp_path: Path) -> None:
    """Found by the seventh new-user trial: a table dropped and created again under its name was
    asked about by name as of a time before, and `table` and `impact` took the new table (and
    refused: no file by then), while `uses` and `graph` answered for the old one."""
    root = tmp_path / "warehouse"
    old = Table(
        root,
        "db",
        "t",
        "e1000000-0000-4000-8000-000000000001",
        schema=schema_of(("id", "long"), ("score", "int")),
    )
    old.commit(1000, 1)
    old.commit(2000, 2)
    new = Table(root, "db", "t", "e1000000-0000-4000-8000-000000000002", schema=schema_of(("id", "long")))
    new.commit(5000, 3)
    View(root, "db", "v", "e1000000-0000-4000-8000-000000000003").commit(1500, "SELECT score FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        before, now = api.table(conn, "db.t", 3000), api.table(conn, "db.t")
        dropped = impact(conn, "db.t", parse_change("score", None, None), 3000)
        with pytest.raises(UsageError, match=r"prod\.db\.t has no column 'score' at that time \(columns"):
            impact(conn, "db.t", parse_change("score", None, None))
        with pytest.raises(UsageError, match=r"table prod\.db\.t has no metadata file committed by 1970"):
            api.table(conn, "db.t", 500)  # before either: the one created first, not yet
    assert (before["table_id"], [c["path"] for c in before["columns"]]) == (old.uuid, ["id", "score"])
    assert (now["table_id"], [c["path"] for c in now["columns"]]) == (new.uuid, ["id"])
    assert (dropped["table_id"], dropped["views"]) == (old.uuid, ["prod.db.v"])
    # Each links the other (found after the seventh trial: nothing said the name had two tables).
    assert now["incarnations"] == [
        {
            "table_id": old.uuid,
            "table": "prod.db.t",
            "first_committed_at": "1970-01-01T00:00:01.000Z",
            "last_committed_at": "1970-01-01T00:00:02.000Z",
            "dropped_at": None,
            "dropped_source": None,
        }
    ]
    assert [(i["table_id"], i["first_committed_at"]) for i in before["incarnations"]] == [
        (new.uuid, "1970-01-01T00:00:05.000Z")
    ]
    with open_reader(db) as conn:  # found by the eighth new-user trial: table-history said nothing
        assert table_history(conn, "db.t")["incarnations"] == now["incarnations"]
    exported = CliRunner().invoke(cli, ["table-history", "db.t", "--format", "csv", "--db", str(db)])
    assert exported.stderr.splitlines() == [
        "warning: earlier or later views or tables at the same path: prod.db.t (not in this table; "
        "--format text, json or markdown lists them)"
    ]


def test_a_table_whose_newest_file_was_removed_is_dropped(tmp_path: Path) -> None:
    """Found by the seventh new-user trial: after `DROP TABLE ... PURGE` (its files removed), `table`
    showed it as a live table, and `deps` of a view reading it said `target: table`."""
    root = tmp_path / "warehouse"
    table = Table(root, "db", "t", "e4000000-0000-4000-8000-000000000001", schema=schema_of(("id", "long")))
    table.commit(1000, 1)
    newest = table.commit(2000, 2)
    View(root, "db", "v", "e4000000-0000-4000-8000-000000000002").commit(1500, "SELECT id FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(newest), 5000, "watch")]))
    with open_reader(db) as conn:
        assert api.table(conn, "db.t", 4000)["snapshot"]["snapshot_id"] == 2
        with pytest.raises(UsageError, match=r"^table prod\.db\.t was dropped at 1970-01-01T00:00:05\.000Z"):
            api.table(conn, "db.t")
        with pytest.raises(UsageError, match=r"^table prod\.db\.t was dropped at"):
            impact(conn, "db.t", parse_change("id", None, None))
        targets = [(api.deps(conn, "db.v", at)["reads"][0]["target"]) for at in (4000, 6000)]
    assert targets == ["table", "table-not-current"]


def test_a_table_whose_metadata_a_second_root_holds_too_is_one_table(tmp_path: Path) -> None:
    """Found by the twelfth adversarial trial: a backup copy of a table's metadata indexed as its
    own root gave the table a second name (no catalog), and every way of naming it, its full name
    and its uuid included, was refused as ambiguous between the two."""
    from .metadata_files import Table, View, schema_of

    root, backup = tmp_path / "warehouse", tmp_path / "backup"
    uuid = "d4000000-0000-4000-8000-000000000001"
    for where in (root, backup):
        Table(where, "db", "events", uuid, schema=schema_of(("id", "int"))).commit(1000, 1)
    View(root, "db", "reader", "d4000000-0000-4000-8000-000000000002").commit(
        2000, "SELECT id FROM db.events"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    index_locations([str(backup)], settings_for(db))
    with open_reader(db) as conn:
        named = [api.uses(conn, name)["table"] for name in ("prod.db.events", "db.events", uuid)]
        assert named == ["prod.db.events"] * 3
        assert api.table(conn, "prod.db.events")["table_id"] == uuid
