"""Removals are history: a view whose newest file is removed is dropped from then on; a file deleted
before it could be read gives way to its removal, in whatever order the two arrive."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.indexer import Indexer
from viewlineage.indexer.pipeline.rows import Batch, QuarantinedFile, Removal
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.indexer.sources.read import FileRead
from viewlineage.queries import api
from viewlineage.queries.cli import cli
from viewlineage.sinks.readers import open_reader
from viewlineage.sinks.store import SetAside, Store
from viewlineage.sinks.tables import successive

from .conftest import settings_for
from .data.restore_mtimes import SAMPLE
from .metadata_files import Table, View, schema_of
from .realwriter.scenario_checks import load_steps

STEPS = load_steps(SAMPLE)
BIG_DAYS_OLD = "4314fa7c-bbf3-4c33-9cd2-a483e994ddf4"


@pytest.fixture(params=["removal after its file", "removal before its file"])
def dropped_store(
    request: pytest.FixtureRequest, sample_store: Path, sample_warehouse: Path, tmp_path: Path
) -> Path:
    """The sample store plus the removal Iceberg made on DROP VIEW (step 32): the newest file of the
    first big_days, learned after that file was indexed or (events out of order) before."""
    with open_reader(sample_store) as conn:
        (newest,) = conn.execute(
            "SELECT location FROM view_files WHERE view_id = ? ORDER BY sequence_number DESC LIMIT 1",
            [BIG_DAYS_OLD],
        ).fetchone() or ("",)
    removal = Batch(removals=[Removal(newest, STEPS[32], "watch")])
    db = tmp_path / "dropped.duckdb"
    if request.param == "removal after its file":
        shutil.copyfile(sample_store, db)
        with Store(db, replica_interval=None) as store:
            store.write(removal)
    else:
        with Store(db, replica_interval=None) as store:
            store.write(removal)
        index_locations([str(sample_warehouse)], settings_for(db, f"{sample_warehouse}=prod"))
    return db


def test_a_view_whose_newest_file_is_removed_is_dropped(dropped_store: Path) -> None:
    with open_reader(dropped_store) as conn:
        assert api.show(conn, "prod.db.big_days", STEPS[31])["view_id"] == BIG_DAYS_OLD
        with pytest.raises(UsageError, match=r"view prod.db.big_days was dropped at 2026-11-21T23:17:2"):
            api.show(conn, "prod.db.big_days", STEPS[33])
        assert api.show(conn, "prod.db.big_days", STEPS[34])["view_id"] != BIG_DAYS_OLD  # re-created

        def users(at: int) -> list[str]:
            return [v["view"] for v in api.uses(conn, "prod.db.events", at, transitive=True)["views"]]

        assert "prod.db.big_days" in users(STEPS[31])
        assert "prod.db.big_days" not in users(STEPS[33])
        history = api.history(conn, BIG_DAYS_OLD)
        assert (history["dropped_ms"], [a["version_id"] for a in history["activations"]]) == (STEPS[32], [1])
        assert conn.execute("SELECT count(*) FROM views_as_of(?)", [STEPS[33]]).fetchone() == (5,)


def test_removing_an_older_file_drops_nothing(sample_store: Path, tmp_path: Path) -> None:
    db = tmp_path / "older.duckdb"
    shutil.copyfile(sample_store, db)
    with Store(db, replica_interval=None) as store:
        (oldest,) = store.conn.execute(
            "SELECT location FROM view_files WHERE view_id = ? ORDER BY sequence_number LIMIT 1",
            [BIG_DAYS_OLD],
        ).fetchone() or ("",)
        store.write(Batch(removals=[Removal(oldest, STEPS[30], "seaweedfs")]))
    with open_reader(db) as conn:
        assert api.show(conn, BIG_DAYS_OLD, STEPS[31])["version_id"] == 1
        assert api.history(conn, BIG_DAYS_OLD)["dropped_ms"] is None


@pytest.mark.parametrize("order", ["removal first", "quarantine first", "one transaction"])
def test_deleted_before_read_is_not_quarantine_in_either_order(tmp_path: Path, order: str) -> None:
    missing = QuarantinedFile(
        "s3://lake/w/db/v/metadata/00001-a.gz.metadata.json", "object-missing", "gone", None, None
    )
    never_deleted = QuarantinedFile(
        "s3://lake/w/db/v/metadata/00002-b.gz.metadata.json", "object-missing", "gone", None, None
    )
    removal = Removal(missing.location, 1_000, "aws")
    batches = [Batch(removals=[removal]), Batch(quarantined=[missing, never_deleted])]
    ordered = {
        "removal first": batches,
        "quarantine first": batches[::-1],
        "one transaction": [
            Batch(quarantined=[missing, never_deleted], removals=[removal])
        ],  # no quarantine row yet
    }
    with Store(tmp_path / "s.duckdb", replica_interval=None) as store:
        for batch in ordered[order]:
            store.write(batch)
        stored = [
            store.conn.execute(f"FROM {name} ORDER BY ALL").fetchall() for name in ("quarantine", "removals")
        ]
        store.write(batches[0])  # a duplicate delivery changes nothing
        again = [
            store.conn.execute(f"FROM {name} ORDER BY ALL").fetchall() for name in ("quarantine", "removals")
        ]
    quarantined, removals = stored
    assert [row[:2] for row in quarantined] == [(never_deleted.location, "object-missing")]
    assert removals == [(missing.location, 1_000, "aws")]
    assert again == stored


def test_readers_of_a_store_without_removals_get_no_error(sample_store: Path) -> None:
    with duckdb.connect(str(sample_store), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM removals").fetchone() == (0,)


def test_files_says_what_became_of_each_file(dropped_store: Path, sample_warehouse: Path) -> None:
    """`files`: indexed (as which view, removed since), quarantined (why), removed before it was
    read, or unknown; in the order asked, a local path normalised."""
    unread = "s3://lake/w/db/gone/metadata/00001-a.gz.metadata.json"
    broken = QuarantinedFile("s3://lake/w/db/bad/metadata/00001-b.metadata.json", "not-json", "line 1", 9, 5)
    with Store(dropped_store, replica_interval=None) as store:
        store.write(Batch(quarantined=[broken], removals=[Removal(unread, 2_000, "aws")]))
        (newest, sequence) = store.conn.execute(
            "SELECT location, sequence_number FROM view_files WHERE view_id = ? "
            "ORDER BY sequence_number DESC LIMIT 1",
            [BIG_DAYS_OLD],
        ).fetchone() or ("", 0)
    local = str(Path(newest).relative_to(sample_warehouse.parent))
    with open_reader(dropped_store) as conn:
        found = api.files(conn, ["s3://lake/w/db/never.metadata.json", unread, broken.location, newest])
        relative = api.files(conn, [f"{sample_warehouse.parent}/./{local}"])
    assert [(f["status"], f["kind"], f["id"], f["name"], f["reason"], f["removed_ms"]) for f in found] == [
        ("unknown", None, None, None, None, None),
        ("removed", None, None, None, None, 2_000),
        ("quarantined", None, None, None, "not-json", None),
        ("indexed", "view", BIG_DAYS_OLD, "prod.db.big_days", None, STEPS[32]),
    ]
    assert (found[3]["sequence_number"], found[3]["indexed_at"] is not None) == (sequence, True)
    assert (relative[0]["location"], relative[0]["status"]) == (newest, "indexed")


def test_files_asks_about_a_bounded_number(sample_store: Path) -> None:
    with open_reader(sample_store) as conn:
        assert api.files(conn, []) == []
        with pytest.raises(UsageError, match="at most 1000 files at a time, not 1001"):
            api.files(conn, [f"s3://b/{i}.metadata.json" for i in range(1001)])


def test_index_records_the_files_a_listing_no_longer_holds(tmp_path: Path) -> None:
    """Found by the new-user trial: after Spark's DROP VIEW (its newest file gone), a re-run of
    `index` still showed the view current, and `impact` listed it; only `watch` saw the drop."""
    import pyarrow as pa

    from .metadata_files import View, schema_of

    root = tmp_path / "warehouse"
    gone = View(root, "db", "gone", "da000000-0000-4000-8000-000000000001", schema=schema_of(("x", "int")))
    first = gone.commit(1000, "SELECT x FROM db.t")
    newest = gone.commit(2000, "SELECT x + 1 AS x FROM db.t")
    View(root, "db", "kept", "da000000-0000-4000-8000-000000000002", schema=schema_of(("x", "int"))).commit(
        1000, "SELECT x FROM db.t"
    )
    db = tmp_path / "store.duckdb"
    assert index_locations([str(root)], settings_for(db)).removed == 0
    newest.unlink()
    stats = index_locations([str(root)], settings_for(db))
    assert (stats.removed, stats.indexed) == (1, 0)
    with open_reader(db) as conn:
        with pytest.raises(UsageError, match=r"^view db\.gone was dropped at "):
            api.show(conn, "db.gone")
        assert [v["view"] for v in api.uses(conn, "db.t")["views"]] == ["db.kept"]
        found = api.files(conn, [str(first), str(newest)])
        assert [(f["status"], f["removed_ms"] is not None) for f in found] == [
            ("indexed", False),
            ("indexed", True),
        ]
    assert index_locations([str(root)], settings_for(db)).removed == 0  # recorded once
    with Store(db, replica_interval=None) as store:  # a directory the listing could not read is not gone
        assert store.gone(str(root), pa.array([], pa.string()), [str(root / "db")]) == []
        assert store.gone(str(root), pa.array([], pa.string())) == [
            str(first),
            str(
                root / "db" / "kept" / "metadata" / "00000-da000000-0000-4000-8000-000000000002.metadata.json"
            ),
        ]


def test_a_moved_directory_s_copies_hold_the_view_once_its_files_are_removed(tmp_path: Path) -> None:
    """Found by the fourth adversarial trial: under `watch`, `mv ns ns2` made the view dropped (its
    files in place removed, the moved copies naming the old directory never held it) and `uses`
    said nothing read the table, while an index of the tree as it now is finds the view at ns2."""
    root = tmp_path / "warehouse"
    view = View(root, "ns", "v", "ad000000-0000-4000-8000-000000000001")
    view.commit(1000, "SELECT * FROM db.events")
    newest = view.commit(2000, "SELECT id FROM db.events")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    shutil.move(root / "ns", root / "ns2")  # as `mv` does: the documents still name ns/v
    index_locations([str(root)], settings_for(db, f"{root}=prod"))  # records the old files removed
    fresh = tmp_path / "fresh.duckdb"
    index_locations([str(root)], settings_for(fresh, f"{root}=prod"))
    for store in (db, fresh):
        with open_reader(store) as conn:
            assert api.show(conn, "prod.ns2.v")["version_id"] == 2, store
            assert [v["view"] for v in api.uses(conn, "db.events")["views"]] == ["prod.ns2.v"], store
            assert api.history(conn, "prod.ns2.v")["dropped_ms"] is None, store
    with Store(db, replica_interval=None) as store:  # and once the copies go too, it is dropped
        store.write(
            Batch(removals=[Removal(str(root / "ns2" / "v" / "metadata" / newest.name), 9000, "watch")])
        )
    with open_reader(db) as conn:
        assert api.history(conn, view.uuid)["dropped_ms"] == 9000


def test_migration_0018_derives_again_the_spans_of_views_with_a_removed_file(tmp_path: Path) -> None:
    """A store whose spans were derived under the old rule (the view dropped after its directory
    moved) answers under the new one once a writer applies migration 0018."""
    root = tmp_path / "warehouse"
    View(root, "ns", "v", "ad000000-0000-4000-8000-000000000002").commit(1000, "SELECT * FROM db.events")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    shutil.move(root / "ns", root / "ns2")
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with duckdb.connect(str(db)) as conn:  # as the old rule left them, and before 0018
        conn.execute("UPDATE view_spans SET dropped_ms = 1500 WHERE until_ms = 9223372036854775807")
        conn.execute("DELETE FROM _migrations WHERE id = 18")
        conn.execute("DELETE FROM _stale_spans")
    with Store(db, replica_interval=None):
        pass
    with open_reader(db) as conn:
        assert api.history(conn, "ad000000-0000-4000-8000-000000000002")["dropped_ms"] is None
        assert [v["view"] for v in api.uses(conn, "db.events")["views"]] == ["prod.ns2.v"]


def test_a_drop_a_re_list_found_says_its_time_is_the_latest_it_can_be(tmp_path: Path) -> None:
    """Found by the eighth new-user trial: a view and a table dropped between two `index` runs were
    dated at the second run's listing, and nothing said so: `uses` as of a time between the drop
    and the re-list still listed the dropped view."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "e7000000-0000-4000-8000-000000000001")
    newest = view.commit(1000, "SELECT a FROM db.t")
    table = Table(root, "db", "t", "e7000000-0000-4000-8000-000000000002", schema=schema_of(("a", "long")))
    table_file = table.commit(1000, 1)
    kept = View(root, "db", "kept", "e7000000-0000-4000-8000-000000000003")
    kept_file = kept.commit(1000, "SELECT a FROM db.t")
    db = tmp_path / "store.duckdb"
    settings = settings_for(db, f"{root}=prod")
    index_locations([str(root)], settings)
    newest.unlink()
    table_file.unlink()
    index_locations([str(root)], settings)  # the re-list: both gone
    with Store(db, replica_interval=None) as store:  # a follower saw this one go
        store.write(Batch(removals=[Removal(str(kept_file), 5000, "watch")]))
    with open_reader(db) as conn:
        relisted, watched = api.history(conn, "db.v"), api.history(conn, "db.kept")
        with pytest.raises(
            UsageError,
            match=r"^view prod\.db\.v was dropped at \S+, or before: a re-list found "
            r"its file gone then \(its newest metadata file",
        ):
            api.show(conn, "db.v")
        with pytest.raises(UsageError, match=r"^table prod\.db\.t was dropped at \S+, or before: a re-list "):
            api.table(conn, "db.t")
        with pytest.raises(
            UsageError, match=r"^view prod\.db\.kept was dropped at 1970-01-01T00:00:05\.000Z \(its"
        ):
            api.show(conn, "db.kept")
        summaries = dict(
            conn.execute("SELECT view, summary FROM change_events WHERE kind = 'dropped'").fetchall()
        )
    assert (relisted["dropped_source"], watched["dropped_source"]) == ("reconcile", "watch")
    assert summaries == {
        "prod.db.v": "dropped at version 1: its newest metadata file was removed (found gone by a re-list: "
        "then or before)",
        "prod.db.kept": "dropped at version 1: its newest metadata file was removed",
    }


def test_a_file_put_back_after_a_re_list_found_it_gone_is_there_again(tmp_path: Path) -> None:
    """Found by the ninth adversarial trial: `index`, the view's file deleted, `index` (1 removed),
    the file put back, `index` (already indexed): the view stayed dropped for good."""
    root = tmp_path / "warehouse"
    path = View(root, "db", "back", "e8000000-0000-4000-8000-000000000001").commit(1000, "SELECT a FROM db.t")
    kept = path.read_bytes()
    db = tmp_path / "store.duckdb"
    settings = settings_for(db, f"{root}=prod")
    index_locations([str(root)], settings)
    path.unlink()
    assert index_locations([str(root)], settings).removed == 1
    path.write_bytes(kept)
    index_locations([str(root)], settings)
    with open_reader(db) as conn:
        assert api.show(conn, "db.back")["view_id"] == "e8000000-0000-4000-8000-000000000001"
        assert api.history(conn, "db.back")["dropped_at"] is None


def test_other_content_where_a_re_list_found_a_file_gone_is_location_reused(tmp_path: Path) -> None:
    """Found by the fourteenth adversarial trial: `index`, the view's file deleted, `index` (1
    removed), another view written at that location, `index`: "1 already indexed", the removal gone
    and the first view current again with its old SQL; the new one nowhere. The store keeps the first
    file, removed, and quarantines the second `location-reused`, as a follower does."""
    root = tmp_path / "warehouse"
    path = View(root, "db", "v", "e8100000-0000-4000-8000-000000000001").commit(1000, "SELECT a FROM db.orig")
    db = tmp_path / "store.duckdb"
    settings = settings_for(db, f"{root}=prod")
    index_locations([str(root)], settings)
    path.unlink()
    assert index_locations([str(root)], settings).removed == 1
    written = View(root, "db", "v", "e8100000-0000-4000-8000-000000000002").commit(
        5000, "SELECT a FROM db.new"
    )
    written.rename(path)  # under the first file's name, as a Hadoop catalog writes v1.metadata.json
    stats = index_locations([str(root)], settings)
    assert (stats.indexed, stats.quarantined, stats.already_indexed) == (0, 1, 0)
    with open_reader(db) as conn:
        assert api.history(conn, "e8100000-0000-4000-8000-000000000001")["dropped_source"] == "reconcile"
        assert api.uses(conn, "db.orig")["views"] == []
        assert [(q["location"], q["reason"]) for q in api.quarantine(conn)] == [
            (str(path), "location-reused")
        ]
    # Found by a review: the removal stayed a re-list's, so each run read the file again and set it
    # aside again (a follower: each reconciliation round).
    again = index_locations([str(root)], settings)
    assert (again.indexed, again.quarantined, again.already_indexed) == (0, 0, 1)


def test_uses_of_a_dropped_table_says_it_was_dropped(tmp_path: Path) -> None:
    """Found by the tenth new-user trial: after `DROP TABLE ... PURGE`, `uses` listed the views
    reading the table as exact matches with no word of the drop, while `table` and `impact` refused
    the name as dropped."""
    root = tmp_path / "warehouse"
    table = Table(root, "db", "t", "e7000000-0000-4000-8000-000000000011", schema=schema_of(("a", "long")))
    newest = table.commit(1000, 1)
    View(root, "db", "v", "e7000000-0000-4000-8000-000000000012").commit(1500, "SELECT a FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(newest), 3000, "watch")]))
    with open_reader(db) as conn:
        before, after = api.uses(conn, "db.t", 2000), api.uses(conn, "db.t")
    assert (before["dropped_at"], [v["view"] for v in before["views"]]) == (None, ["prod.db.v"])
    assert (after["dropped_at"], after["dropped_source"], [v["view"] for v in after["views"]]) == (
        "1970-01-01T00:00:03.000Z",
        "watch",
        ["prod.db.v"],
    )
    text = CliRunner().invoke(cli, ["uses", "db.t", "--db", str(db)])
    assert text.stderr == (
        "warning: table prod.db.t was dropped at 1970-01-01T00:00:03.000Z (its newest metadata file was "
        "removed): the views listed read a table that no longer exists\n"
    )


def test_uses_before_the_table_was_created_says_it_did_not_exist_yet(tmp_path: Path) -> None:
    """Found by the sixteenth new-user trial: `uses` at a time before the table's first metadata
    file answered its views (or none) with no word, while `table` and `impact` refused the time."""
    root = tmp_path / "warehouse"
    table = Table(root, "db", "t", "e7000000-0000-4000-8000-000000000021", schema=schema_of(("a", "long")))
    table.commit(2000, 1)
    View(root, "db", "v", "e7000000-0000-4000-8000-000000000022").commit(1000, "SELECT a FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        early, late = api.uses(conn, "db.t", 1500), api.uses(conn, "db.t", 2500)
    assert (early["created_at"], early["not_created_yet"], [v["view"] for v in early["views"]]) == (
        "1970-01-01T00:00:02.000Z",
        True,
        ["prod.db.v"],
    )
    assert (late["created_ms"], late["not_created_yet"], [v["view"] for v in late["views"]]) == (
        2000,
        False,
        ["prod.db.v"],
    )
    args = ["uses", "db.t", "--db", str(db), "--as-of"]
    assert CliRunner().invoke(cli, [*args, "1970-01-01T00:00:01.500Z"]).stderr == (
        "warning: table prod.db.t has no metadata file committed by 1970-01-01T00:00:01.500Z (its first is "
        "of 1970-01-01T00:00:02.000Z): the views listed read a table that did not exist yet\n"
    )
    assert CliRunner().invoke(cli, [*args, "1970-01-01T00:00:02.500Z"]).stderr == ""


@pytest.mark.parametrize("order", ["removal, then the file back", "the file, then its removal"])
def test_a_removal_and_the_file_back_in_one_transaction_keep_their_order(tmp_path: Path, order: str) -> None:
    """Found under load in the twelfth round: a follower's removal and the file back, built one
    after the other and stored in one transaction, left the view dropped (a transaction inserts
    files before removals). `successive` keeps their order."""
    root = tmp_path / "warehouse"
    path = View(root, "db", "v", "e9200000-0000-4000-8000-000000000001").commit(1000, "SELECT 1 AS x")
    db = tmp_path / "store.duckdb"
    settings = settings_for(db, f"{root}=prod")
    index_locations([str(root)], settings)
    back = Indexer(None, settings.parse_config()).build_batch(
        [FileRead(str(path), path.read_bytes(), 1000, "mtime")]
    )
    back.back = [str(path)]
    removal = Batch(removals=[Removal(str(path), 2000, "watch")])
    parts = [removal.to_arrow(), back.to_arrow()]
    with Store(db, replica_interval=None) as store:
        store.write_tables(successive(parts if order.startswith("removal") else parts[::-1]), follower=True)
        removals = store.conn.execute("SELECT location FROM removals").fetchall()
    assert removals == ([] if order.startswith("removal") else [(str(path),)])


def test_a_re_list_forgets_objects_announced_then_gone_whose_delete_was_lost(tmp_path: Path) -> None:
    """Found by the twelfth adversarial trial: an `object-missing` row (announced, gone when read)
    whose delete event never came outlived every re-list that showed nothing is there."""
    root = tmp_path / "warehouse"
    View(root, "db", "v", "e9400000-0000-4000-8000-000000000001").commit(1000, "SELECT 1 AS x")
    gone = str(root / "db" / "ghost" / "metadata" / "00001-a.metadata.json")
    elsewhere = str(tmp_path / "other" / "00001-b.metadata.json")
    db = tmp_path / "store.duckdb"
    with Store(db, replica_interval=None) as store:
        store.write(
            Batch(
                quarantined=[
                    QuarantinedFile(location, "object-missing", "gone", None, None)
                    for location in (gone, elsewhere)
                ]
            )
        )
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        assert conn.execute("SELECT location FROM quarantine").fetchall() == [(elsewhere,)]


def test_a_location_reused_in_the_batch_of_its_removal_keeps_the_removal(tmp_path: Path) -> None:
    """Found by the thirteenth adversarial trial: `consume` of a delete and a create with other
    content in one batch quarantined the new file (`location-reused`) and dropped the removal with
    it, so the first file's view was current again; `watch` kept it."""
    root = tmp_path / "warehouse"
    path = View(root, "db", "v", "e9900000-0000-4000-8000-000000000001").commit(1000, "SELECT a FROM db.old")
    db = tmp_path / "store.duckdb"
    settings = settings_for(db, f"{root}=prod")
    index_locations([str(root)], settings)
    other = {**json.loads(path.read_text()), "view-uuid": "e9900000-0000-4000-8000-000000000002"}
    batch = Indexer(None, settings.parse_config()).build_batch(
        [FileRead(str(path), json.dumps(other).encode(), 3000, "mtime")]
    )
    batch.removals.append(Removal(str(path), 2000, "aws"))
    batch.back = [str(path)]
    with Store(db, replica_interval=None) as store:
        set_aside = store.write_tables(successive([batch.to_arrow()]), follower=True)
        assert set_aside.reasons() == {str(path): "location-reused"}
        # What a write returns is its own: the next batch reports nothing it did not set aside.
        elsewhere = Batch(removals=[Removal(str(root / "elsewhere.metadata.json"), 4000, "aws")])
        assert store.write_tables(elsewhere.to_arrow(), follower=True) == SetAside()
    with open_reader(db) as conn:
        assert conn.execute("SELECT location, removed_ms FROM removals ORDER BY 2").fetchall() == [
            (str(path), 2000),
            (str(root / "elsewhere.metadata.json"), 4000),
        ]
        assert conn.execute("SELECT reason FROM quarantine").fetchall() == [("location-reused",)]
        assert api.history(conn, "e9900000-0000-4000-8000-000000000001")["dropped_ms"] == 2000
