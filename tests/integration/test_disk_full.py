"""A full disk at any point ends a writer with one clear line, and once space is free a run of the
same command completes the store. The disk is a small tmpfs mounted by the test (as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from viewlineage.indexer.errors import StoreError
from viewlineage.sinks.spool import Spool

from ..generate import generate
from ..stores import snapshot

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _index(db: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "viewlineage.queries.cli",
            "--db",
            str(db),
            "index",
            str(root),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_index_on_a_full_disk_says_so_in_one_line_and_a_rerun_completes(
    small_disk: Path, tmp_path: Path
) -> None:
    """It ended with two chained tracebacks (FatalException: Failed to create checkpoint)."""
    root = tmp_path / "warehouse"
    generate(root, views=100, commits=20, seed=3)
    full = _index(small_disk / "store.duckdb", root)
    assert full.returncode == 1
    assert "Traceback" not in full.stderr
    (line,) = full.stderr.splitlines()
    assert line.startswith(f"error: {small_disk / 'store.duckdb'}: ")
    assert "No space left on device" in line and "free space on its disk, run the command again" in line
    subprocess.run(["mount", "-o", "remount,size=400m", "tmpfs", str(small_disk)], check=True)
    resumed = _index(small_disk / "store.duckdb", root)
    assert resumed.returncode == 0, resumed.stderr
    clean = tmp_path / "clean.duckdb"
    assert _index(clean, root).returncode == 0
    assert snapshot(small_disk / "store.duckdb") == snapshot(clean)


def test_a_spool_segment_on_a_full_disk_is_a_store_error_and_leaves_nothing(small_disk: Path) -> None:
    spool = Spool(small_disk / "store.duckdb")
    rows = pa.table({"location": [f"/w/{n:09d}/" + "x" * 200 for n in range(80_000)]})
    with pytest.raises(StoreError, match=r"spool segment not written in .*No space left on device"):
        spool.put({"removals": rows})
    assert spool.pending() == []
    assert [path.name for path in spool.path.iterdir()] == []


def test_reindex_on_a_full_disk_says_so_in_one_line_and_a_rerun_completes(
    small_disk: Path, tmp_path: Path
) -> None:
    """`reindex` whose first COMMIT found the disk full ended with a traceback."""
    root = tmp_path / "warehouse"
    generate(root, views=20, commits=10, seed=5)
    clean = tmp_path / "clean.duckdb"
    assert _index(clean, root).returncode == 0
    db = small_disk / "store.duckdb"
    shutil.copy(clean, db)
    filler = small_disk / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True, check=False)
    command = [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(db), "reindex"]
    full = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert full.returncode == 1
    (line,) = full.stderr.splitlines()
    assert line.startswith(f"error: {db}: ") and "No space left on device" in line
    filler.unlink()
    subprocess.run(["mount", "-o", "remount,size=400m", "tmpfs", str(small_disk)], check=True)
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert snapshot(db) == snapshot(clean)
