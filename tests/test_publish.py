"""`publish`: a snapshot of the store at a fixed path, one Parquet file per table, that BI tools
(which open a path as often as they like) read whole while new snapshots replace it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import duckdb
from click.testing import CliRunner

from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries.cli import cli
from viewlineage.queries.publish import TABLES, publish
from viewlineage.sinks.readers import open_reader

from .conftest import settings_for
from .metadata_files import View

CHECK = "SELECT count(*), max(changed_ms), min(view) FROM '{}'"


def test_a_snapshot_holds_every_table_as_the_store_answers(sample_store: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["publish", str(tmp_path / "bi"), "--db", str(sample_store)])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"published directory={tmp_path / 'bi'} seconds=")
    assert result.stderr.endswith(" changes=25 views=6 reads=8 findings=24 quarantine=0\n")
    assert sorted(path.name for path in (tmp_path / "bi").iterdir()) == sorted(f"{t}.parquet" for t in TABLES)
    with open_reader(sample_store) as conn:
        expected = conn.execute("SELECT count(*), max(changed_ms), min(view) FROM change_events").fetchone()
    with duckdb.connect() as reader:
        assert reader.execute(CHECK.format(tmp_path / "bi" / "changes.parquet")).fetchone() == expected
        views = reader.execute(
            f"SELECT view, namespace FROM '{tmp_path / 'bi' / 'views.parquet'}'"
        ).fetchall()
    assert ("prod.acme.finance.revenue_by_region", "acme.finance") in views


def test_readers_connecting_in_a_loop_see_whole_snapshots(
    sample_store: Path, table_store: Path, tmp_path: Path
) -> None:
    """Two stores published in turn into one directory, as fast as they can be, while readers open
    the file by its path again and again: each query reads one whole snapshot of one of them."""
    directory = tmp_path / "bi"
    snapshots = {}
    for store in (sample_store, table_store):
        with open_reader(store) as conn:
            publish(conn, directory)
        with duckdb.connect() as reader:
            snapshots[store] = reader.execute(CHECK.format(directory / "changes.parquet")).fetchone()
    assert len(set(snapshots.values())) == 2
    stop, published, seen, problems = threading.Event(), [0], [], []

    def publisher() -> None:
        connections = {store: open_reader(store) for store in snapshots}
        while not stop.is_set():
            for conn in connections.values():
                publish(conn, directory)
                published[0] += 1
        for conn in connections.values():
            conn.close()

    def reader() -> None:
        while not stop.is_set():
            try:
                with duckdb.connect() as conn:  # a new connection each time, as a dashboard's refresh
                    seen.append(conn.execute(CHECK.format(directory / "changes.parquet")).fetchone())
            except duckdb.Error as exc:
                problems.append(str(exc))

    threads = [threading.Thread(target=publisher), *(threading.Thread(target=reader) for _ in range(3))]
    for thread in threads:
        thread.start()
    # Enough of both to have raced, however loaded the machine (tests run two at a time): at most 60 s.
    deadline = time.monotonic() + 60
    while (published[0] < 10 or len(seen) < 100) and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join()
    assert problems == []
    assert published[0] >= 10 and len(seen) >= 100, (published[0], len(seen))
    assert set(seen) == set(snapshots.values())  # both, and nothing else: never half of one


def test_the_readme_dashboard_queries_run_on_a_snapshot(sample_store: Path, tmp_path: Path) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = readme.split("<!-- dashboards:start -->", 1)[1].split("<!-- dashboards:end -->", 1)[0]
    sql = block.split("```sql", 1)[1].split("```", 1)[0].replace("/srv/viewlineage/bi", str(tmp_path))
    statements = [s for s in sql.split(";") if s.strip()]
    with open_reader(sample_store) as conn:
        publish(conn, tmp_path)
    with duckdb.connect() as reader:
        reader.execute("SET TimeZone = 'Asia/Tokyo'")  # the sixth UI trial's: a day later than UTC's
        answers = [reader.execute(s).fetchall() for s in statements if "SELECT" in s]
    assert len(answers) == 7 and all(answers)
    assert answers[0] == [
        (answers[0][0][0], "created", 7),
        (answers[0][0][0], "dropped", 1),
        (answers[0][0][0], "property-only", 3),
        (answers[0][0][0], "replaced", 14),
    ]  # the sample: one day
    assert answers[4][0] == ("prod.db.events", 2)


def test_a_read_of_a_name_two_views_hold_is_published_as_such(tmp_path: Path) -> None:
    """`reads.parquet` spelt `match` from four of the six kinds: a `shared-name` read was null."""
    root = tmp_path / "warehouse"
    View(root, "db", "CaseV", "e9000000-0000-4000-8000-000000000001").commit(1000, "SELECT a FROM db.t")
    View(root, "db", "casev", "e9000000-0000-4000-8000-000000000002").commit(1000, "SELECT a FROM db.u")
    View(root, "db", "reader", "e9000000-0000-4000-8000-000000000003").commit(1000, "SELECT a FROM db.casev")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        publish(conn, tmp_path / "bi")
    with duckdb.connect() as conn:
        reads = tmp_path / "bi" / "reads.parquet"
        found = conn.execute(
            f"SELECT view, reads, match FROM '{reads}' WHERE view = 'prod.db.reader'"
        ).fetchall()
    assert found == [("prod.db.reader", "prod.db.casev", "shared-name")] * 2


def test_published_views_say_which_have_unknown_lineage(tmp_path: Path) -> None:
    """Found by the eleventh adversarial trial: `views.parquet` had no word of a view whose SQL
    does not parse, so a dashboard over it took that view for one that reads nothing."""
    root = tmp_path / "warehouse"
    View(root, "db", "good", "e9100000-0000-4000-8000-000000000001").commit(1000, "SELECT a FROM db.t")
    View(root, "db", "bad", "e9100000-0000-4000-8000-000000000002").commit(1000, "SELECT a FROM WHERE")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        publish(conn, tmp_path / "bi")
    with duckdb.connect() as conn:
        found = conn.execute(
            f"SELECT view, lineage_unknown FROM '{tmp_path / 'bi' / 'views.parquet'}' ORDER BY view"
        ).fetchall()
    assert found == [
        ("prod.db.bad", "sql-parse-error at 1:19: Expected table name but got 'WHERE'"),
        ("prod.db.good", None),
    ]


def test_a_full_disk_leaves_no_partial_file(sample_store: Path, tmp_path: Path) -> None:
    """Found by the eleventh adversarial trial: a publish that ran out of disk left its
    `.partial` file behind, holding the space it had taken. /dev/full fails every write with
    ENOSPC, as a full disk does."""
    bi = tmp_path / "bi"
    bi.mkdir()
    (bi / ".changes.parquet.partial").symlink_to("/dev/full")
    result = CliRunner().invoke(cli, ["publish", str(bi), "--db", str(sample_store)])
    assert result.exit_code == 1
    assert "No space left on device" in result.stderr
    assert list(bi.iterdir()) == []
