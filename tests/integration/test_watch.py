"""`viewlineage watch` as a real process: ingest while another process queries; bad files."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from viewlineage.sinks.store import open_reader

from ..conftest import CONFORMANCE
from ..generate import generate
from .watch_process import Watch

pytestmark = pytest.mark.integration
VALID = (CONFORMANCE / "iceberg-spec" / "view-spec__appendixA__00001-metadata.json").read_bytes()


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
    assert len(results) >= 10 * 20, len(results)
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
