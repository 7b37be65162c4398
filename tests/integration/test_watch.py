"""`viewlineage watch` as a real process: ingest while another process queries; bad files."""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.followers import watch as watch_module
from viewlineage.sinks.readers import open_reader

from ..conftest import CONFORMANCE, settings_for
from ..generate import generate
from ..metadata_files import Table, View, schema_of
from ..refusals import refusing_environment
from .consume_process import get_json
from .watch_process import Watch

pytestmark = pytest.mark.integration
VALID = (CONFORMANCE / "iceberg-spec" / "view-spec__appendixA__00001-metadata.json").read_bytes()
VALID_UUID = "fa6506c3-7681-40c8-86dc-e36561f83385"


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, Watch]]:
    root = tmp_path / "warehouse"
    root.mkdir()
    watch = Watch(root, tmp_path / "store.duckdb")
    try:
        yield root, watch
    finally:
        watch.stop()


def test_queries_from_another_process_while_watch_ingests(
    watched: tuple[Path, Watch], tmp_path: Path
) -> None:
    root, watch = watched
    source = tmp_path / "generated"
    generated = generate(source, views=50, commits=20, seed=11)
    good = [path for path in generated.files if path not in generated.malformed]
    assert len(good) >= 1000
    probe = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.reader_probe", str(watch.db), "25", "12"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    time.sleep(1)
    for path in good:
        target = root / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    watch.wait_until("SELECT count(*) FROM files", len(good))
    output, _ = probe.communicate(timeout=60)
    results = [json.loads(line) for line in output.splitlines()]
    failures = [r for r in results if not r["ok"]]
    assert failures == []
    assert len(results) >= 25, len(results)  # readers ran throughout (how many: the machine's load)
    assert max(r["seconds"] for r in results) < 2.0
    counts = [r["log_entries"] for r in results]
    assert counts == sorted(counts), "a reader saw the store go back in time"
    assert counts[-1] > counts[0]


def test_watch_retries_files_still_being_written_and_quarantines_stable_bad_ones(
    watched: tuple[Path, Watch],
) -> None:
    root, watch = watched
    metadata = root / "default.db" / "event_agg" / "metadata"
    metadata.mkdir(parents=True)
    compressed = gzip.compress(VALID)
    slow = metadata / "00001-slow.gz.metadata.json"
    with slow.open("wb") as handle:  # closed half-written: the watch must wait, not quarantine
        handle.write(compressed[: len(compressed) // 2])
    time.sleep(0.5)
    with slow.open("ab") as handle:
        handle.write(compressed[len(compressed) // 2 :])
    (metadata / "00002-bad.metadata.json").write_bytes(b'{"view-uuid": ')
    (root / "other").mkdir()
    (root / "other" / "00001-bomb.gz.metadata.json").write_bytes(gzip.compress(b" " * (300 << 20)))
    watch.wait_until("SELECT count(*) FROM quarantine", 2, timeout=30)
    watch.wait_until("SELECT count(*) FROM files", 1)
    with open_reader(watch.db) as conn:
        assert conn.execute(
            "SELECT regexp_extract(location, '[^/]+$'), reason FROM quarantine ORDER BY 1"
        ).fetchall() == [
            ("00001-bomb.gz.metadata.json", "over-decompressed-limit"),
            ("00002-bad.metadata.json", "not-json"),
        ]
        assert conn.execute("SELECT name FROM view_files").fetchall() == [(["default", "event_agg"],)]
    # A later good write of a quarantined path supersedes its row; the next good file still indexes.
    good = metadata / "00002-bad.metadata.json"
    tmp = metadata / ".00002-bad.tmp"
    tmp.write_bytes(VALID)
    os.replace(tmp, good)
    watch.wait_until("SELECT count(*) FROM quarantine", 1)
    watch.wait_until("SELECT count(*) FROM files", 2)


def test_deletions_are_history_and_reconciliation_catches_what_watch_missed(
    tmp_path: Path, sample_warehouse: Path
) -> None:
    root = tmp_path / "warehouse"
    shutil.copytree(sample_warehouse / "db" / "big_days", root / "db" / "big_days")
    metadata = sorted(
        p for p in (root / "db" / "big_days" / "metadata").iterdir() if not p.name.startswith(".")
    )
    db = tmp_path / "store.duckdb"
    watch = Watch(root, db)
    try:
        watch.wait_until("SELECT count(*) FROM files", len(metadata))
        before_ms = int(time.time() * 1000)
        metadata[-1].unlink()  # seen by inotify: removed now
        watch.wait_until("SELECT count(*) FROM removals WHERE source = 'watch'", 1)
    finally:
        watch.stop()
    metadata[-2].unlink()  # while no watch runs: only a re-list can tell
    watch = Watch(root, db, "--reconcile-every", "0.5")
    try:
        watch.wait_until("SELECT count(*) FROM removals WHERE source = 'reconcile'", 1)
    finally:
        watch.stop()
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute("SELECT location, removed_ms, source FROM removals ORDER BY source").fetchall()
    assert [(location, source) for location, _, source in rows] == [
        (str(metadata[-2]), "reconcile"),
        (str(metadata[-1]), "watch"),
    ]
    assert before_ms <= rows[1][1] <= before_ms + 5000


def test_watch_answers_queries_over_http_from_its_own_store(tmp_path: Path) -> None:
    """The follower's query API reads the store it writes: a batch is there as soon as it commits,
    while readers of the replica (published at most hourly here) still see the store as it began."""
    root = tmp_path / "warehouse"
    root.mkdir()
    watch = Watch(root, tmp_path / "store.duckdb", "--replica-interval", "3600", "--metrics-port", "0")
    try:
        api = watch.api_url()
        view_file = root / "db" / "events_by_day" / "metadata" / "00001-a.metadata.json"
        view_file.parent.mkdir(parents=True)
        view_file.write_bytes(VALID)
        files = f"{api}files?{urllib.parse.urlencode({'location': str(view_file)})}"
        deadline = time.monotonic() + 30
        while (status := get_json(files))[1][0]["status"] != "indexed":
            assert status[0] == 200 and time.monotonic() < deadline, (status, watch.log.read_text())
            time.sleep(0.05)
        assert watch.count("SELECT count(*) FROM files") == 0  # the replica is the empty store
        found = status[1][0]
        assert (found["kind"], found["id"], found["name"]) == ("view", VALID_UUID, "db.events_by_day")
        code, shown = get_json(f"{api}show?view=db.events_by_day")
        assert (code, shown["view_id"], shown["version_id"]) == (200, VALID_UUID, 1)
        assert [r["sql"] for r in shown["representations"]] == [
            "SELECT\n    COUNT(1), CAST(event_ts AS DATE)\nFROM events\nGROUP BY 2"
        ]
        code, used = get_json(f"{api}uses?table=prod.default.events&transitive=true")
        assert (code, [(v["view"], v["depth"]) for v in used["views"]]) == (200, [("db.events_by_day", 1)])
        assert get_json(f"{api}show?view=db.nothing") == (400, {"error": "no view 'db.nothing' in the store"})
        assert get_json(f"{api}uses") == (400, {"error": "missing query parameter 'table'"})
        assert get_json(f"{api}uses?table=db.events&transitive=maybe") == (
            400,
            {"error": "transitive is true or false, not 'maybe'"},
        )
        code, missing = get_json(f"{api}nothing")
        assert (code, missing["error"].split(";")[0]) == (404, "no such endpoint: /api/nothing")
    finally:
        watch.stop()


def test_an_integer_past_its_type_stops_nothing(watched: tuple[Path, Watch]) -> None:
    """A view file with a version-id past 32 bits once killed `watch`, and again at every restart;
    now it is indexed with a finding on the field, and `watch` goes on to the next file."""
    root, watch = watched
    document = json.loads(VALID)
    document["versions"][0]["version-id"] = 2**31
    wide = root / "db" / "wide" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
    wide.parent.mkdir(parents=True)
    wide.write_text(json.dumps(document))
    good = root / "db" / "good" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
    good.parent.mkdir(parents=True)
    good.write_bytes(VALID)
    watch.wait_until("SELECT count(*) FROM files", 2)
    assert watch.process.poll() is None
    code = "invalid-field:version-id"
    assert (
        watch.count(f"SELECT count(*) FROM file_findings WHERE location = '{wide}' AND code = '{code}'") == 1
    )


def test_a_fifo_and_a_name_that_is_not_utf8_stop_nothing(tmp_path: Path) -> None:
    """A FIFO named like a metadata file blocked `watch`'s read thread (later files were never
    indexed, SIGTERM no longer stopped it); a name that is not UTF-8 stopped it with
    UnicodeEncodeError. Now the FIFO is quarantined, the name indexed as %XX, and SIGTERM stops
    `watch` at once."""
    root = tmp_path / "warehouse"
    fifo = root / "db" / "fifo" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)  # there before the initial scan
    watch = Watch(root, tmp_path / "store.duckdb")
    try:
        directory = root / "db" / "bytes" / "metadata"
        directory.mkdir(parents=True)
        with open(os.fsencode(directory) + b"/00001-\xff.metadata.json", "wb") as handle:
            handle.write(VALID)
        good = root / "db" / "good" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
        good.parent.mkdir(parents=True)
        good.write_bytes(VALID)
        watch.wait_until("SELECT count(*) FROM files", 2)
        assert (
            watch.count(f"SELECT count(*) FROM files WHERE location = '{directory}/00001-%FF.metadata.json'")
            == 1
        )
        assert (
            watch.count(
                f"SELECT count(*) FROM quarantine WHERE location = '{fifo}' AND reason = 'not-a-regular-file'"
            )
            == 1
        )
        watch.process.send_signal(signal.SIGTERM)
        assert watch.process.wait(10) is not None
    finally:
        watch.stop()


def test_files_moved_in_or_linked_are_indexed_without_a_relist(
    watched: tuple[Path, Watch], tmp_path: Path
) -> None:
    """A file moved in from outside the watched tree, or hard-linked into it, sends no close: watchdog
    reports a creation, which `watch` ignored until a re-list."""
    root, watch = watched
    directories = [root / "db" / name / "metadata" for name in ("moved", "linked", "renamed")]
    for directory in directories:  # watched (and listed) before the files below appear
        directory.mkdir(parents=True)
        (directory / f"00001-{VALID_UUID}.metadata.json").write_bytes(VALID)
    watch.wait_until("SELECT count(*) FROM files", 3, timeout=30)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    moved, linked = outside / "a.metadata.json", outside / "b.metadata.json"
    moved.write_bytes(VALID)
    linked.write_bytes(VALID)
    second = f"00002-{VALID_UUID}.metadata.json"
    os.rename(moved, directories[0] / second)
    os.link(linked, directories[1] / second)
    temporary = directories[2] / "00002.metadata.json.tmp"  # a tool that writes, then renames
    temporary.write_bytes(VALID)
    temporary.rename(directories[2] / second)
    watch.wait_until("SELECT count(*) FROM files", 6, timeout=30)
    assert watch.count("SELECT count(*) FROM quarantine") == 0


def test_polling_follows_a_tree_without_inotify(tmp_path: Path) -> None:
    """`--poll-seconds`: for mounts that send no inotify events, the tree is listed instead."""
    root = tmp_path / "warehouse"
    root.mkdir()
    watch = Watch(root, tmp_path / "store.duckdb", "--poll-seconds", "0.2")
    try:
        written = root / "db" / "written" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
        written.parent.mkdir(parents=True)
        written.write_bytes(VALID)
        moved = tmp_path / "a.metadata.json"
        moved.write_bytes(VALID)
        (root / "db" / "moved" / "metadata").mkdir(parents=True)
        os.rename(moved, root / "db" / "moved" / "metadata" / f"00001-{VALID_UUID}.metadata.json")
        watch.wait_until("SELECT count(*) FROM files", 2, timeout=30)
    finally:
        watch.stop()


def test_past_the_inotify_watch_limit_watch_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Exhausted(watch_module.Observer):  # type: ignore[misc, name-defined]
        def start(self) -> None:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(watch_module, "Observer", Exhausted)
    (tmp_path / "warehouse").mkdir()
    with pytest.raises(UsageError, match=r"fs.inotify.max_user_watches is \d+.*--poll-seconds 5"):
        watch_module.watch_directory(
            str(tmp_path / "warehouse"), settings_for(tmp_path / "s.duckdb", workers=1)
        )


def test_mounts_that_send_no_inotify_events_are_recognised() -> None:
    mounts = "/dev/sda1 / ext4 rw 0 0\nserver:/e /mnt/nfs nfs4 rw 0 0\nx /mnt/a\\040b fuse.sshfs rw 0 0\n"
    found = [
        watch_module._eventless_mount(path, mounts)
        for path in ("/mnt/nfs/w", "/mnt/a b/w", "/mnt/nfsx", "/w")
    ]
    assert found == ["nfs4", "fuse.sshfs", None, None]


def test_a_file_out_of_sight_is_not_taken_for_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polling reports the files of a directory that became unreadable as deleted: they were
    recorded as removed, and their views as dropped. A deletion is recorded only for a file gone."""
    removals: queue.Queue[Any] = queue.Queue()
    handler = watch_module._Handler(queue.Queue(), removals)
    gone = tmp_path / "db" / "v" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
    hidden = tmp_path / "db" / "w" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
    hidden.parent.mkdir(parents=True)
    hidden.write_bytes(VALID)
    lstat = os.lstat

    def unreadable_parent(path: Any) -> Any:
        if str(path) == str(hidden):
            raise PermissionError(13, "Permission denied", str(path))
        return lstat(path)

    monkeypatch.setattr(os, "lstat", unreadable_parent)
    handler._removed(str(gone))
    handler._removed(str(hidden))
    assert [removal.location for removal in removals.queue] == [str(gone)]


def test_a_file_created_empty_and_filled_later_is_not_quarantined(watched: tuple[Path, Watch]) -> None:
    """Found by the eighth new-user trial: a metadata file Spark had created was closed empty and
    filled over a second later; `watch` took the empty file, unchanged for 0.1 s, as stable and
    quarantined it (`not-json`), and its metrics kept counting that quarantine."""
    root, watch = watched
    path = root / "db" / "late" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
    path.parent.mkdir(parents=True)
    path.touch()  # closed empty: an inotify close
    time.sleep(1.0)
    path.write_bytes(VALID)
    watch.wait_until("SELECT count(*) FROM files", 1, timeout=30)
    assert re.findall(r"^batch outcomes=(\S+)", watch.log.read_text(), re.M) == ["indexed:1"]
    assert watch.count("SELECT count(*) FROM quarantine") == 0


def test_polling_reads_a_file_again_once_it_is_complete(tmp_path: Path) -> None:
    """Polling sends no close: a file seen half-written stayed quarantined (`not-json`)."""
    root = tmp_path / "warehouse"
    root.mkdir()
    watch = Watch(root, tmp_path / "store.duckdb", "--poll-seconds", "0.3")
    try:
        path = root / "db" / "slow" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
        path.parent.mkdir(parents=True)
        with path.open("wb") as handle:
            handle.write(VALID[:100])
            handle.flush()
            watch.wait_until("SELECT count(*) FROM quarantine", 1, timeout=30)  # stable, so quarantined
            handle.write(VALID[100:])
        watch.wait_until("SELECT count(*) FROM files", 1, timeout=30)
        assert watch.count("SELECT count(*) FROM quarantine") == 0
    finally:
        watch.stop()


def test_a_file_whose_rows_the_store_refuses_stops_nothing(tmp_path: Path) -> None:
    """The store refuses one file's rows: `watch` quarantines it (`insert-failed`) and goes on; the
    next file of the same view, which repeats the refused file's version (and so was parsed
    without it), is stored with that version in full."""
    root = tmp_path / "warehouse"
    metadata = root / "db" / "event_agg" / "metadata"
    metadata.mkdir(parents=True)
    env = {**os.environ, **refusing_environment("00001-")}
    watch = Watch(root, tmp_path / "store.duckdb", env=env)
    try:
        first = metadata / f"00001-{VALID_UUID}.metadata.json"
        first.write_bytes(VALID)
        watch.wait_until("SELECT count(*) FROM quarantine WHERE reason = 'insert-failed'", 1)
        second = metadata / f"00002-{VALID_UUID}.metadata.json"
        second.write_bytes(
            (CONFORMANCE / "iceberg-spec" / "view-spec__appendixA__00002-metadata.json").read_bytes()
        )
        watch.wait_until("SELECT count(*) FROM files", 1)
        watch.wait_until(f"SELECT count(*) FROM versions WHERE view_id = '{VALID_UUID}'", 2)
        assert watch.process.poll() is None
        assert watch.count(f"SELECT count(*) FROM quarantine WHERE location = '{first}'") == 1
        assert watch.count("SELECT count(*) FROM representations") == 2
        log = watch.log.read_text()
        assert f"quarantined location={first} reason=insert-failed\nbatch outcomes=quarantined:1 " in log
    finally:
        watch.stop()


def test_a_file_moved_out_and_back_is_there_again(watched: tuple[Path, Watch], tmp_path: Path) -> None:
    """The newest file of a view moved out (a removal: the view is dropped) and back: the view
    stayed dropped for good, and a later `index` kept it so. Now the file is stored again and its
    removal cleared: the store matches a clean run of the tree."""
    root, watch = watched
    metadata = root / "ns" / "v" / "metadata"
    metadata.mkdir(parents=True)
    (metadata / f"00001-{VALID_UUID}.metadata.json").write_bytes(VALID)
    newest = metadata / f"00002-{VALID_UUID}.metadata.json"
    newest.write_bytes(
        (CONFORMANCE / "iceberg-spec" / "view-spec__appendixA__00002-metadata.json").read_bytes()
    )
    watch.wait_until("SELECT count(*) FROM files", 2)
    aside = tmp_path / "aside.json"
    newest.rename(aside)
    watch.wait_until("SELECT count(*) FROM removals", 1)
    assert watch.count("SELECT count(*) FROM views_as_of(4611686018427387904)") == 0  # dropped
    aside.rename(newest)
    watch.wait_until("SELECT count(*) FROM removals", 0)
    watch.wait_until("SELECT count(*) FROM views_as_of(4611686018427387904)", 1)
    assert watch.count("SELECT count(*) FROM files") == 2


def test_a_file_deleted_and_written_again_at_once_is_there(
    watched: tuple[Path, Watch], tmp_path: Path
) -> None:
    """Found by the tenth adversarial trial: `cp F; rm F; cp F` in quick succession, in directories
    watched already, left the view dropped (4 times in 5) while its file was on disk: the removal
    was stored after the file, which the store already held, was skipped as indexed. Under load
    (the twelfth round's machine), a file back while its removal waited for the store thread was
    skipped as indexed too, and a removal stored in one transaction with the file back stayed."""
    root, watch = watched
    staged = [
        View(tmp_path / "staged", "e", f"v{n}", f"ee000000-0000-4000-8000-00000000000{n}").commit(
            1000, "SELECT 1 AS x"
        )
        for n in range(5)
    ]
    for n in range(5):
        (root / "e" / f"v{n}" / "metadata").mkdir(parents=True)
    time.sleep(2)  # watched by now
    copies = [f"cp {source} {root / source.relative_to(tmp_path / 'staged')}" for source in staged]
    # as the trial wrote them, gone and back in one batch
    subprocess.run(
        ["sh", "-c", "; ".join(f"{copy}; rm {copy.split()[-1]}; {copy}" for copy in copies)], check=True
    )
    watch.wait_until("SELECT count(*) FROM files", 5)
    time.sleep(2)  # the removals' events are handled by now
    assert watch.count("SELECT count(*) FROM removals") == 0
    assert watch.count("SELECT count(*) FROM views_as_of(4611686018427387904)") == 5


def test_a_location_written_again_with_other_content_keeps_the_first(
    watched: tuple[Path, Watch], tmp_path: Path
) -> None:
    """Found by the eleventh adversarial trial: a Hadoop catalog's `v1.metadata.json` deleted by
    DROP and written again by CREATE (another table, another uuid) mixed the two documents: the
    first file's row came back with the second table's snapshots beside it, which a rebuild did
    not give. The store keeps the first file (removed) and quarantines the second as reused."""
    root, watch = watched
    first = Table(tmp_path / "staged-1", "db", "t", "aa000000-0000-4000-8000-000000000001").commit(1000, 11)
    second = Table(tmp_path / "staged-2", "db", "t", "bb000000-0000-4000-8000-000000000002")
    second.schema = schema_of(("id", "long"), ("extra", "string"))
    second = second.commit(2000, 22)
    target = root / "db" / "t" / "metadata" / "v1.metadata.json"
    target.parent.mkdir(parents=True)
    shutil.copy(first, target)
    watch.wait_until("SELECT count(*) FROM files", 1)
    target.unlink()
    watch.wait_until("SELECT count(*) FROM removals", 1)
    shutil.copy(second, target)
    watch.wait_until("SELECT count(*) FROM quarantine WHERE reason = 'location-reused'", 1)
    with open_reader(watch.db) as conn:
        assert conn.execute("SELECT location, table_uuid FROM table_files").fetchall() == [
            (str(target), "aa000000-0000-4000-8000-000000000001")
        ]
        assert conn.execute("SELECT snapshot_id FROM snapshots").fetchall() == [(11,)]
        assert conn.execute("SELECT count(*) FROM raw_documents").fetchall() == [(1,)]
        assert conn.execute("SELECT location FROM removals").fetchall() == [(str(target),)]


def test_a_directory_moved_in_is_not_followed_through_its_links(
    watched: tuple[Path, Watch], tmp_path: Path
) -> None:
    """Found by the twelfth adversarial trial: a directory moved into the tree holding a link to a
    view directory outside it (`linked -> /elsewhere/v`) or to itself (`self -> .`) gave views
    built from files outside the tree, or twice. A listing does not descend into such links, and
    now neither do watchdog's events for the directory moved in."""
    root, watch = watched
    outside = tmp_path / "outside" / "v"
    (outside / "metadata").mkdir(parents=True)
    (outside / "metadata" / f"00001-{VALID_UUID}.metadata.json").write_bytes(VALID)
    staged = tmp_path / "stage" / "ns"
    own = staged / "own" / "metadata" / "00001-b1000000-0000-4000-8000-000000000001.metadata.json"
    own.parent.mkdir(parents=True)
    own.write_text(VALID.decode().replace(VALID_UUID, "b1000000-0000-4000-8000-000000000001"))
    (staged / "linked").symlink_to(outside)
    (staged / "self").symlink_to(".")
    time.sleep(1)  # watched by now
    staged.rename(root / "ns")
    watch.wait_until("SELECT count(*) FROM files", 1)
    time.sleep(2)  # the events of the links' contents are handled by now
    with open_reader(watch.db) as conn:
        assert conn.execute("SELECT location FROM files").fetchall() == [
            (str(root / "ns" / "own" / "metadata" / own.name),)
        ]
        assert conn.execute("SELECT count(*) FROM quarantine").fetchall() == [(0,)]


def test_polling_counts_each_file_once(tmp_path: Path) -> None:
    """Polling reports a file until the store has it: a batch still being written had its files
    read and counted `indexed` again (3,503 for 2,003 files). Each is counted once now."""
    root = tmp_path / "warehouse"
    root.mkdir()
    watch = Watch(root, tmp_path / "store.duckdb", "--poll-seconds", "0.1", "--batch-files", "50")
    try:
        generate(root, views=60, commits=10)
        files = len(list(root.rglob("*.metadata.json")))
        watch.wait_until("SELECT (SELECT count(*) FROM files) + (SELECT count(*) FROM quarantine)", files)
        stored = watch.count("SELECT count(*) FROM files")
        time.sleep(1)
    finally:
        watch.stop()
    counted = sum(int(n) for n in re.findall(r"(?<![\w-])indexed:(\d+)", watch.log.read_text()))
    assert counted == stored


def test_a_directory_moved_out_of_the_tree_is_removed(watched: tuple[Path, Watch], tmp_path: Path) -> None:
    """Found by the sixth adversarial trial: a view's directory, a `metadata/` directory or a whole
    namespace moved out of the tree recorded no removal (inotify reports the directory alone), so
    the views stayed current until an `index` of the tree."""
    root, watch = watched
    generate(root, views=6, commits=2, seed=3)
    files = sorted(root.rglob("*.metadata.json"))
    watch.wait_until("SELECT (SELECT count(*) FROM files) + (SELECT count(*) FROM quarantine)", len(files))
    with open_reader(watch.db) as conn:
        indexed = {row[0] for row in conn.execute("SELECT location FROM files").fetchall()}
    namespaces = sorted(path for path in root.iterdir() if path.is_dir())
    view = sorted(path for path in namespaces[0].iterdir() if path.is_dir())[0]
    under = [*(view.rglob("*.metadata.json")), *(namespaces[-1].rglob("*.metadata.json"))]
    moved = [path for path in under if str(path) in indexed]
    assert namespaces[0] != namespaces[-1] and len(moved) >= 2
    view.rename(tmp_path / "aside-view")
    namespaces[-1].rename(tmp_path / "aside-namespace")
    watch.wait_until("SELECT count(*) FROM removals", len(moved))
    with open_reader(watch.db) as conn:
        removed = conn.execute("SELECT location, source FROM removals ORDER BY 1").fetchall()
    assert removed == [(str(path), "watch") for path in sorted(moved)]


def test_a_follower_publishes_snapshots_for_bi_tools(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    root.mkdir()
    published = tmp_path / "bi"
    watch = Watch(root, tmp_path / "store.duckdb", "--publish-dir", str(published), "--publish-every", "1")
    try:
        generate(root, views=5, commits=3, seed=7)
        files = len(list(root.rglob("*.metadata.json")))
        watch.wait_until("SELECT (SELECT count(*) FROM files) + (SELECT count(*) FROM quarantine)", files)
        changes = watch.count("SELECT count(*) FROM change_events")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the next round after the last batch
            with contextlib.suppress(duckdb.Error), duckdb.connect() as reader:
                found = reader.execute(f"SELECT count(*) FROM '{published / 'changes.parquet'}'").fetchone()
                if found == (changes,):
                    break
            time.sleep(0.2)
        else:
            raise AssertionError(f"no snapshot of {changes} changes: {watch.log.read_text()[-2000:]}")
    finally:
        watch.stop()
    assert re.search(r"^published directory=\S+ seconds=\S+ changes=\d+ ", watch.log.read_text(), re.M)


def test_a_view_dropped_while_watch_was_down_is_dropped_when_it_starts(tmp_path: Path) -> None:
    """Found by the ninth new-user trial: `DROP VIEW` while `watch` was stopped deleted the view's
    only file; started again, `watch` indexed what was new and went on calling the view current."""
    root = tmp_path / "warehouse"
    path = root / "db" / "gone" / "metadata" / f"00001-{VALID_UUID}.metadata.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(VALID)
    db = tmp_path / "store.duckdb"
    watch = Watch(root, db)
    watch.wait_until("SELECT count(*) FROM files", 1)
    watch.stop()
    path.unlink()
    watch = Watch(root, db)
    try:
        watch.wait_until("SELECT count(*) FROM removals WHERE source = 'reconcile'", 1, timeout=30)
        assert watch.count("SELECT count(*) FROM views_as_of(9e15::BIGINT)") == 0
    finally:
        watch.stop()
