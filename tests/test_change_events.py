"""`change_events`: one row per change to a view, the table audit dashboards chart."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.rows import Batch, Removal
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries import api, changes
from viewlineage.queries.names import parse_time
from viewlineage.sinks.readers import open_reader
from viewlineage.sinks.store import Store

from .conftest import settings_for
from .generate import generate
from .metadata_files import View, write

COLUMNS = (
    "changed_ms, view, namespace, kind, version_id, previous_version_id, changed_properties, engine, summary"
)


def test_every_kind_of_change_is_one_row(tmp_path: Path) -> None:
    """(Found by the seventh new-user trial: a drop's previous_version_id was NULL.)"""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "ce000000-0000-4000-8000-000000000001")
    view.commit(1000, "SELECT 1 AS x")
    view.commit(2000, "SELECT 2 AS x", summary={"engine-name": "trino"})
    view.properties["owner"] = "ann"
    view.commit(3000)
    view.log.append({"timestamp-ms": 4000, "version-id": 1})  # made current again: a rollback
    newest = view.commit(4000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(newest), 5000, "watch")]))
    with open_reader(db) as conn:
        rows = conn.execute(f"SELECT {COLUMNS} FROM change_events ORDER BY changed_ms").fetchall()
        times = conn.execute("SELECT DISTINCT changed_at FROM change_events ORDER BY 1 LIMIT 1").fetchall()
    assert rows == [
        (1000, "lake.db.v", "db", "created", 1, None, None, "spark", "created at version 1"),
        (2000, "lake.db.v", "db", "replaced", 2, 1, None, "trino", "version 2 replaced version 1"),
        (
            3000,
            "lake.db.v",
            "db",
            "property-only",
            2,
            2,
            ["owner"],
            "trino",
            "properties owner added; version 2 kept",
        ),
        (
            4000,
            "lake.db.v",
            "db",
            "rolled-back",
            1,
            2,
            None,
            "spark",
            "version 1 current again, after version 2",
        ),
        (
            5000,
            "lake.db.v",
            "db",
            "dropped",
            None,
            1,
            None,
            None,
            "dropped at version 1: its newest metadata file was removed",
        ),
    ]
    assert times == [(datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.UTC),)]


def test_the_sample_warehouse_changes(sample_store: Path) -> None:
    """Spark's own commits: `ALTER VIEW ... SET/UNSET TBLPROPERTIES` are property-only changes,
    and a dotted namespace is one string."""
    with open_reader(sample_store) as conn:
        kinds = conn.execute(
            "SELECT kind, count(*) FROM change_events GROUP BY kind ORDER BY kind"
        ).fetchall()
        properties = conn.execute(
            "SELECT changed_properties FROM change_events WHERE kind = 'property-only' ORDER BY changed_ms"
        ).fetchall()
        namespaces = conn.execute(
            "SELECT DISTINCT namespace, view FROM change_events ORDER BY 1, 2"
        ).fetchall()
    # big_days, dropped and created again (its first files left in place): dropped by then
    assert kinds == [("created", 7), ("dropped", 1), ("property-only", 3), ("replaced", 14)]
    assert properties == [(["refresh", "team"],), (["refresh", "sla_minutes"],), (["sla_minutes"],)]
    assert namespaces == [
        ("acme.finance", "prod.acme.finance.revenue_by_region"),
        ("db", "prod.db.big_days"),
        ("db", "prod.db.event_agg"),
        ("db", "prod.db.event_tags"),
        ("sales", "prod.sales.customer_revenue"),
        ("sales", "prod.sales.order_rank"),
    ]


def test_changes_filter_count_and_page(sample_store: Path) -> None:
    with open_reader(sample_store) as conn:
        everything = changes.changes(conn, limit=2)
        ranged = changes.changes(
            conn, parse_time("2026-11-21T23:17:26Z"), parse_time("2026-11-21T23:17:27Z"), namespace="db"
        )
        second_page = changes.changes(conn, kind="replaced", view="prod.db.event_agg", limit=3, offset=3)
    assert (everything["total"], everything["kinds"]) == (
        25,
        {"created": 7, "dropped": 1, "property-only": 3, "replaced": 14},
    )
    assert everything["by_namespace"] == [
        {"namespace": "db", "changes": 20},
        {"namespace": "sales", "changes": 3},
        {"namespace": "acme.finance", "changes": 2},
    ]
    assert [(c["changed_at"], c["view"], c["summary"]) for c in everything["changes"]] == [
        (
            "2026-11-21T23:17:28.741Z",
            "prod.db.event_agg",
            "version 13 replaced version 12; properties spark.query-column-names changed",
        ),
        (
            "2026-11-21T23:17:28.614Z",
            "prod.sales.customer_revenue",
            "version 2 replaced version 1; properties comment, spark.query-column-names changed",
        ),
    ]
    assert [(c["changed_at"], c["view"], c["kind"]) for c in ranged["changes"]] == [
        ("2026-11-21T23:17:26.940Z", "prod.db.big_days", "property-only"),
        ("2026-11-21T23:17:26.834Z", "prod.db.event_agg", "replaced"),
        ("2026-11-21T23:17:26.399Z", "prod.db.event_agg", "replaced"),
        ("2026-11-21T23:17:26.248Z", "prod.db.big_days", "property-only"),
    ]
    assert ranged["by_day"] == [
        {"day": "2026-11-21", "kind": "property-only", "changes": 2},
        {"day": "2026-11-21", "kind": "replaced", "changes": 2},
    ]
    assert (second_page["total"], [c["version_id"] for c in second_page["changes"]]) == (12, [10, 9, 8])


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (
            {"kind": "renamed"},
            "kind is one of created, first-known, replaced, rolled-back, property-only, dropped, "
            "not 'renamed'",
        ),
        ({"limit": 0}, "limit is 1 to 500, not 0"),
        (
            {"since_ms": 2000, "until_ms": 1000},
            "the range is empty: since 1970-01-01T00:00:02.000Z is not before",
        ),
        ({"view": "nosuch"}, "no view 'nosuch'"),
    ],
)
def test_changes_refuse_what_selects_nothing_by_mistake(
    sample_store: Path, arguments: dict[str, Any], error: str
) -> None:
    with open_reader(sample_store) as conn, pytest.raises(UsageError) as raised:
        changes.changes(conn, **arguments)
    assert str(raised.value).startswith(error)


def test_changes_of_a_view_by_name_cover_the_views_that_held_it(tmp_path: Path) -> None:
    """Found by the fifth adversarial trial: `changes --view NAME` listed only the uuid holding the
    name now, not the view dropped there before it, which `history` links."""
    root = tmp_path / "warehouse"
    first = View(root, "db", "v", "ce000000-0000-4000-8000-000000000011")
    dropped = first.commit(1000, "SELECT 1 AS x")
    View(root, "db", "v", "ce000000-0000-4000-8000-000000000012").commit(3000, "SELECT 2 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(dropped), 2000, "watch")]))
    with open_reader(db) as conn:
        by_name = changes.changes(conn, view="lake.db.v")
        by_id = changes.changes(conn, view="ce000000-0000-4000-8000-000000000012")
    assert [(c["changed_ms"], c["view_id"][-2:], c["kind"]) for c in by_name["changes"]] == [
        (3000, "12", "created"),
        (2000, "11", "dropped"),
        (1000, "11", "created"),
    ]
    assert [(c["changed_ms"], c["kind"]) for c in by_id["changes"]] == [(3000, "created")]


def test_a_replace_that_also_changes_properties_names_them(tmp_path: Path) -> None:
    """Found by the seventh new-user trial: `changed_properties` was NULL for a replace whose commit
    also changed properties (Spark's `spark.query-column-names`, a comment), so Activity showed
    fewer property changes than `history`."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "ce000000-0000-4000-8000-000000000021")
    view.commit(1000, "SELECT 1 AS x")
    view.properties["team"] = "sales"  # found by the eighth new-user trial: a property-only commit
    view.commit(1500)  # after the creation was named by the creation too
    view.properties["comment"] = "counts"
    view.commit(2000, "SELECT 2 AS x")
    view.properties["tier"] = "gold"
    view.commit(2500)
    view.commit(3000, "SELECT 3 AS x")
    # Found by the eighteenth new-user trial: keys newly set were said "changed".
    view.properties["team"] = "finance"
    del view.properties["comment"]
    view.properties["owner"] = "ann"
    view.commit(3500)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with open_reader(db) as conn:
        rows = conn.execute(
            "SELECT changed_ms, kind, changed_properties, summary FROM change_events ORDER BY changed_ms"
        ).fetchall()
    assert rows == [
        (1000, "created", None, "created at version 1"),
        (1500, "property-only", ["team"], "properties team added; version 1 kept"),
        (2000, "replaced", ["comment"], "version 2 replaced version 1; properties comment added"),
        (2500, "property-only", ["tier"], "properties tier added; version 2 kept"),
        (3000, "replaced", None, "version 3 replaced version 2"),
        (
            3500,
            "property-only",
            ["comment", "owner", "team"],
            "properties owner added; team changed; comment removed; version 3 kept",
        ),
    ]


def test_a_version_current_for_the_first_time_is_no_rollback_whatever_its_id(tmp_path: Path) -> None:
    """Found by the eighth adversarial trial: versions numbered 5, -3 and 2, made current -3, 5, 2:
    the last was called "rolled-back ... current again", though 2 had never been current."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "ooo", "ce000000-0000-4000-8000-000000000031")
    for ms, version_id in ((1000, -3), (2000, 5), (3000, 2)):
        view.commit(ms, f"SELECT {version_id} AS x")
        view.versions[-1]["version-id"] = view.log[-1]["version-id"] = version_id
    view.log.append({"timestamp-ms": 4000, "version-id": 5})  # a real rollback
    for written in sorted(root.rglob("*.metadata.json")):
        written.unlink()  # one file holds the whole log
    view.commit(4000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with open_reader(db) as conn:
        rows = conn.execute(
            "SELECT changed_ms, kind, summary FROM change_events ORDER BY changed_ms"
        ).fetchall()
    assert rows == [  # its first file (00000) is gone, and -3 is not version 1: a start unknown
        (
            1000,
            "first-known",
            "version -3 current: the earliest known, as the metadata files of what came before were deleted",
        ),
        (2000, "replaced", "version 5 replaced version -3"),
        (3000, "replaced", "version 2 replaced version 5"),
        (4000, "rolled-back", "version 5 current again, after version 2"),
    ]


def test_a_view_whose_first_files_expired_says_its_start_is_unknown(tmp_path: Path) -> None:
    """Found by the ninth new-user trial: a view whose first metadata files were deleted (Iceberg
    keeps only the last log entries) was "created" at its oldest version still listed, though the
    file's sequence number (00003) shows that the view is older. Its start is unknown now; a view
    whose log still lists version 1, or whose first file is indexed, was created then."""
    root = tmp_path / "warehouse"
    old = View(root, "db", "old", "ce000000-0000-4000-8000-000000000041")
    for ms in (1000, 2000, 3000):
        old.commit(ms, f"SELECT {ms} AS x")
    del old.versions[:2], old.log[:2]  # expired from the metadata
    for written in sorted(root.rglob("*.metadata.json")):
        written.unlink()
    old.commit(3500)  # 00003: no longer lists versions 1 and 2
    old.properties["owner"] = "ann"
    old.commit(4000)
    kept = View(root, "db", "kept", "ce000000-0000-4000-8000-000000000042")
    kept.commit(1500, "SELECT 1 AS x")
    kept.commit(2500, "SELECT 2 AS x")
    (Path(kept.location) / "metadata" / f"00000-{kept.uuid}.metadata.json").unlink()  # log still has 1
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with open_reader(db) as conn:
        rows = conn.execute("SELECT changed_ms, view, kind, summary FROM change_events ORDER BY 1").fetchall()
    assert rows == [
        (1500, "lake.db.kept", "created", "created at version 1"),
        (2500, "lake.db.kept", "replaced", "version 2 replaced version 1"),
        (3000, "lake.db.old", "first-known",
         "version 3 current: the earliest known, as the metadata files of what came before were deleted"),
        (4000, "lake.db.old", "property-only", "properties owner added; version 3 kept"),
    ]  # fmt: skip


def test_two_logs_that_disagree_are_a_finding_and_no_rollback(tmp_path: Path) -> None:
    """Found by the nineteenth adversarial trial: a file logging version 2 at 2000 and the next one
    logging it at 2500: `changes` showed a rollback to version 2 after version 2, with no finding."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "ce000000-0000-4000-8000-000000000051")
    view.commit(1000, "SELECT 1 AS x")
    first = view.commit(2000, "SELECT 2 AS x")
    view.log[-1]["timestamp-ms"] = 2500  # the next file logs version 2 later
    second = view.commit(3000, "SELECT 3 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with open_reader(db) as conn:
        rows = conn.execute("SELECT changed_ms, kind, version_id FROM change_events ORDER BY 1").fetchall()
        found = conn.execute(
            "SELECT version_id, message FROM findings WHERE code = 'log-rewritten'"
        ).fetchall()
    assert rows == [(1000, "created", 1), (2000, "replaced", 2), (3000, "replaced", 3)]
    assert found == [
        (
            2,
            f"version 2 made current at 2000 ms by the log of {first}, which the next file {second} no "
            "longer lists though its log spans that time: a log rewritten or forged; the store takes both "
            "logs as they are",
        )
    ]


def test_tied_files_whose_logs_differ_are_no_rewritten_log(tmp_path: Path) -> None:
    """Two files of one sequence number (a competing commit) log their last version at different
    times by nature: that is `competing-commit`, not a log the next file rewrote."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "ce000000-0000-4000-8000-000000000052")
    view.commit(1000, "SELECT 1 AS x")
    first = view.commit(2000, "SELECT 2 AS x")
    document = json.loads(first.read_text())
    document["version-log"][-1]["timestamp-ms"] = 2100
    write(first.with_name("00001-zz.metadata.json"), document, 2100)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with open_reader(db) as conn:
        codes = conn.execute("SELECT DISTINCT code FROM findings ORDER BY 1").fetchall()
    assert codes == [("competing-commit",)]


def test_a_store_made_before_migration_0025_answers_the_same_once_a_writer_opens_it(tmp_path: Path) -> None:
    """The changes and the findings that compare a view's files are derived with its spans
    (`view_changes`, `view_findings`); a writer opening a store that lacks them derives them from
    the rows already there, and every change and finding is what a fresh index gives."""
    root = tmp_path / "warehouse"
    generate(root, realistic=True)
    View(root, "db", "loop", "ce250000-0000-4000-8000-000000000001").commit(1000, "SELECT * FROM db.loop")
    micro = View(root, "db", "micro", "ce250000-0000-4000-8000-000000000002")
    micro.commit(1_700_000_000_000_000, "SELECT 1 AS x")  # microseconds: out of range, in the future
    both = [
        {"type": "sql", "sql": "SELECT * FROM db.a", "dialect": "spark"},
        {"type": "sql", "sql": "SELECT * FROM db.b", "dialect": "trino"},
    ]
    View(root, "db", "drift", "ce250000-0000-4000-8000-000000000003").commit(1000, "", representations=both)
    gappy = View(root, "db", "gappy", "ce250000-0000-4000-8000-000000000004")
    for ms in (1000, 2000, 3000):
        newest = gappy.commit(ms, f"SELECT {ms} AS x")
    for seen in sorted(newest.parent.iterdir())[:-1]:
        seen.unlink()
    document = json.loads(newest.read_text())
    document["versions"] = [v for v in document["versions"] if v["version-id"] != 2]
    document["version-log"] = [e for e in document["version-log"] if e["version-id"] != 2]
    write(newest, document, 3000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))

    def answers() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        with open_reader(db) as conn:
            events = conn.execute("SELECT * FROM change_events ORDER BY ALL").fetchall()
            findings = conn.execute("SELECT * FROM findings ORDER BY ALL").fetchall()
            return events, findings

    fresh = answers()
    assert len(fresh[0]) == 505  # 500 of the generated views, 5 of the ones above
    assert sorted({row[4] for row in fresh[1]}) == [
        "competing-commit",
        "dialect-drift",
        "future-activation",
        "reads-itself",
        "timestamp-out-of-range",
        "version-conflict",
        "version-gap",
    ]
    with duckdb.connect(str(db)) as conn:  # as a store was before 0025
        for table in ("view_changes", "view_findings", "view_replacements"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DELETE FROM _migrations WHERE id = 25")
    with Store(db, replica_interval=None):
        pass
    assert answers() == fresh


def test_a_view_created_at_another_s_path_later_replaces_it_in_the_store(tmp_path: Path) -> None:
    """Which view took another's place is derived with the spans: the batch that brings the new
    view's file derives it for the old view too, though it brings nothing of it."""
    root = tmp_path / "warehouse"
    old = View(root, "db", "v", "ce260000-0000-4000-8000-000000000001")
    old.commit(1000, "SELECT 1 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    new = View(root, "db", "v", "ce260000-0000-4000-8000-000000000002")  # its files left in place
    new.commit(3000, "SELECT 2 AS x")
    index_locations([str(root)], settings_for(db, f"{root}=prod"))  # indexes the new file alone
    at_once = tmp_path / "at_once.duckdb"
    index_locations([str(root)], settings_for(at_once, f"{root}=prod"))

    def events(store: Path) -> list[tuple[Any, ...]]:
        with open_reader(store) as conn:
            return conn.execute("SELECT * FROM change_events ORDER BY ALL").fetchall()

    assert events(db) == events(at_once)
    with open_reader(db) as conn:
        dropped = conn.execute(
            "SELECT changed_ms, view_id FROM change_events WHERE kind = 'dropped'"
        ).fetchall()
    assert dropped == [(3000, old.uuid)]


def test_findings_of_a_view_by_name_cover_every_view_that_held_it(tmp_path: Path) -> None:
    """Found by the twenty-first new-user trial: `findings --view NAME` reached only the view holding
    the name now, while `changes --view NAME` covers every view that held it."""
    root = tmp_path / "warehouse"
    old = View(root, "db", "v", "ce270000-0000-4000-8000-000000000001")
    old.commit(1000, "SELECT * FROM db.v")  # reads itself
    View(root, "db", "v", "ce270000-0000-4000-8000-000000000002").commit(3000, "SELECT 1 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        by_name = [(f["view_id"], f["code"]) for f in api.findings(conn, view="prod.db.v")]
        counted = api.finding_counts(conn, view="db.v")
        by_id = api.findings(conn, view="ce270000-0000-4000-8000-000000000002")
        changed = [c["view_id"] for c in changes.changes(conn, view="prod.db.v")["changes"]]
    assert by_name == [(old.uuid, "reads-itself")]
    assert [(c["code"], c["findings"], c["views"]) for c in counted] == [("reads-itself", 1, 1)]
    assert by_id == []
    assert sorted(set(changed)) == [old.uuid, "ce270000-0000-4000-8000-000000000002"]


def test_the_changes_of_large_properties_maps_are_said_key_by_key(tmp_path: Path) -> None:
    """Found by the twenty-first adversarial trial: property changes were told apart by looking each
    key up in the other map, and a view of 10^5-key maps took minutes a file to index (now seconds:
    BENCHMARKS.md)."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "big", "ce280000-0000-4000-8000-000000000001")
    view.properties.update({f"key{i:05d}": "0" for i in range(20_000)})
    view.commit(1000, "SELECT 1 AS x")
    view.properties.update({f"key{i:05d}": "1" for i in range(0, 20_000, 2)})  # 10,000 changed
    for i in range(1, 20_000, 4):
        del view.properties[f"key{i:05d}"]  # 5,000 removed
    view.properties.update({f"new{i:05d}": "1" for i in range(3)})
    view.commit(2000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        ((keys, summary),) = conn.execute(
            "SELECT changed_properties, summary FROM change_events WHERE kind = 'property-only'"
        ).fetchall()
    changed = [f"key{i:05d}" for i in range(0, 20_000, 2)]
    removed = [f"key{i:05d}" for i in range(1, 20_000, 4)]
    added = ["new00000", "new00001", "new00002"]
    assert keys == sorted(changed + removed) + added
    assert summary == (
        f"properties {', '.join(added)} added; {', '.join(changed)} changed; {', '.join(removed)} removed; "
        "version 1 kept"
    )


def test_changes_of_a_view_at_one_time_are_listed_in_the_order_of_their_files(tmp_path: Path) -> None:
    """Found by the twenty-first new-user trial: three property-only commits within S3's one-second
    commit times were listed newest first as 00003, 00005, 00004."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "ce290000-0000-4000-8000-000000000001")
    view.commit(1000, "SELECT 1 AS x")
    for key in ("team", "sla", "owner"):
        view.properties[key] = "x"
        os.utime(view.commit(5000), ns=(5_000_000_000, 5_000_000_000))  # one second, as S3 keeps it
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        listed = changes.changes(conn, view="db.v")["changes"]
        rows = conn.execute(
            "SELECT sequence_number, kind FROM change_events ORDER BY changed_ms, sequence_number"
        ).fetchall()
    assert [row["summary"] for row in listed] == [
        "properties owner added; version 1 kept",
        "properties sla added; version 1 kept",
        "properties team added; version 1 kept",
        "created at version 1",
    ]
    assert rows == [(0, "created"), (1, "property-only"), (2, "property-only"), (3, "property-only")]
