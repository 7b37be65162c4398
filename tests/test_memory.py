"""Memory for large documents: one document's parse and rows stay within three times its size, and
a store transaction closes once its documents reach `batch-bytes`."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from viewlineage.indexer.pipeline.memory import machine_memory, memory_bound, over_machine
from viewlineage.indexer.pipeline.reads import read_all
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.indexer.sources.read import FileRead, ListedFile, LocalReader
from viewlineage.queries.cli import cli
from viewlineage.sinks.store import SetAside, Store

from .conftest import settings_for
from .stores import snapshot

MiB = 1 << 20

_MEASURE = """
import gzip, resource, sys
import pyarrow as pa
from viewlineage.indexer.config import load_settings
from viewlineage.indexer.pipeline.indexer import Indexer
from viewlineage.indexer.sources.read import FileRead

pa.set_memory_pool(pa.system_memory_pool())  # as the indexing commands do
raw = open(sys.argv[1], "rb").read()
indexer = Indexer(None, load_settings(environ={}, flags={}).parse_config())
indexer.build_batch([FileRead("warm-up", b"{}", 0, "test")])
with open("/proc/self/statm") as statm:
    before = int(statm.read().split()[1]) * resource.getpagesize()
batch = indexer.build_batch([FileRead(sys.argv[1], raw, 0, "test")])
tables = indexer.tables(batch)
assert len(batch.indexed) == 1, batch.quarantined
# VmHWM, not ru_maxrss: Linux carries a forking parent's peak into its child's ru_maxrss.
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
print(len(gzip.decompress(raw)), peak - before)
"""


def _view_document(location: str, sql: str, properties: dict[str, str]) -> dict[str, object]:
    return {
        "view-uuid": "8f1c6a38-5d55-4a8e-9a5b-2b9a4c0e0d11",
        "format-version": 1,
        "location": location,
        "current-version-id": 1,
        "properties": properties,
        "schemas": [
            {
                "type": "struct",
                "schema-id": 0,
                "fields": [{"id": 1, "name": "c", "required": False, "type": "string"}],
            }
        ],
        "versions": [
            {
                "version-id": 1,
                "timestamp-ms": 1_700_000_000_000,
                "schema-id": 0,
                "summary": {"engine-name": "spark"},
                "default-namespace": ["db"],
                "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
            }
        ],
        "version-log": [{"version-id": 1, "timestamp-ms": 1_700_000_000_000}],
    }


def _write_view(root: Path, name: str, sql: str, properties: dict[str, str] | None = None) -> Path:
    metadata = root / "db" / name / "metadata"
    metadata.mkdir(parents=True)
    path = metadata / "00001-8f1c6a38-5d55-4a8e-9a5b-2b9a4c0e0d11.gz.metadata.json"
    document = _view_document(str(root / "db" / name), sql, properties or {})
    path.write_bytes(gzip.compress(json.dumps(document).encode(), compresslevel=1))
    return path


@pytest.mark.parametrize(("sql_mib", "property_mib"), [(48, 0), (0, 48)], ids=["long-sql", "long-property"])
def test_one_document_parses_within_three_times_its_size(
    tmp_path: Path, sql_mib: int, property_mib: int
) -> None:
    """Decompressing, parsing, validating, hashing and building the Arrow rows of one document
    raise the process's resident memory by at most 3x its decompressed size (plus 8 MiB). (The
    document was kept beside its parsed values, a SQL representation's JSON repeated its text,
    hashing copied values twice and a one-member gzip was copied once more: 5x.)"""
    sql = "SELECT c FROM t WHERE x = '" + "a" * (sql_mib * MiB) + "'"
    path = _write_view(tmp_path, "v", sql, {"comment": "b" * (property_mib * MiB)})
    measured = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, check=True
    ).stdout.split()
    size, peak = int(measured[0]), int(measured[1])
    assert size > 48 * MiB
    assert peak <= 3 * size + 8 * MiB, f"{peak / size:.2f}x"


@pytest.mark.parametrize("workers", [1, 2])
def test_a_batch_closes_at_its_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """Four 3 MiB documents under a 4 MiB batch-bytes: two transactions of two files (a batch
    takes files until their sum reaches the limit; with two workers each takes half of it), and
    the store is the one a single batch builds."""
    warehouse = tmp_path / "w"
    for name in "abcd":
        _write_view(warehouse, name, f"SELECT c FROM db.t_{name} WHERE x = '" + "a" * (3 * MiB) + "'")
    one_batch = tmp_path / "one.duckdb"
    stats = index_locations([str(warehouse)], settings_for(one_batch, workers=workers))
    assert stats.indexed == 4
    written: list[int] = []
    write_tables = Store.write_tables

    def counting(self: Store, tables: dict[str, object], *args: object, **kwargs: object) -> SetAside:
        files = tables.get("files")
        written.append(files.num_rows if files is not None else 0)  # type: ignore[attr-defined]
        return write_tables(self, tables, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "write_tables", counting)
    bounded = tmp_path / "bounded.duckdb"
    stats = index_locations([str(warehouse)], settings_for(bounded, workers=workers, batch_bytes=4 * MiB))
    assert stats.indexed == 4
    assert stats.quarantined == 0
    assert [files for files in written if files] == [2, 2]
    assert snapshot(bounded) == snapshot(one_batch)


def test_the_bound_at_the_defaults() -> None:
    bound = memory_bound(settings_for(Path("x.duckdb"), workers=2))
    assert (bound.fixed, bound.reads, bound.parsing, bound.batches, bound.store) == (
        256 * MiB,
        128 * MiB,
        2048 * MiB,
        960 * MiB,
        1280 * MiB,
    )
    assert bound.total == 4672 * MiB


def test_machine_memory_is_the_smaller_of_ram_and_the_container_limit(tmp_path: Path) -> None:
    physical = machine_memory(tmp_path)  # no cgroup files: physical memory
    assert physical is not None and physical > 256 * MiB
    (tmp_path / "memory.max").write_text("max\n")
    assert machine_memory(tmp_path) == physical
    (tmp_path / "memory.max").write_text(f"{512 * MiB}\n")
    assert machine_memory(tmp_path) == 512 * MiB
    (tmp_path / "memory.max").unlink()
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1: no limit
    assert machine_memory(tmp_path) == physical
    assert over_machine(settings_for(Path("x.duckdb"), workers=2), 4671 * MiB) == (
        "these settings let indexing hold up to 4,672 MiB (reads 128 MiB, parsing 2,048 MiB, batches "
        "960 MiB, store 1,280 MiB), more than the 4,671 MiB this machine has: documents near the limits "
        "could exhaust it; lower --max-decompressed-bytes, --batch-bytes or --workers"
    )
    assert over_machine(settings_for(Path("x.duckdb"), workers=2), 4672 * MiB) is None


def test_index_warns_when_its_settings_exceed_the_machine(tmp_path: Path) -> None:
    _write_view(tmp_path / "w", "v", "SELECT c FROM db.t")
    result = CliRunner().invoke(
        cli,
        [
            "--db",
            str(tmp_path / "s.duckdb"),
            "index",
            "--max-decompressed-bytes",
            str(1 << 50),
            str(tmp_path / "w"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "warning: these settings let indexing hold up to " in result.stderr
    assert "1 indexed" in result.stdout


def test_reads_run_ahead_by_batch_bytes(tmp_path: Path) -> None:
    """Ten files listed at 10 MiB each under a 25 MiB batch-bytes: when the first is handed on,
    three have been read (the third took the bytes ahead past the limit), not all ten."""
    reads: list[str] = []

    class CountingReader(LocalReader):
        def read(self, location: str, max_bytes: int, listed: ListedFile | None = None) -> FileRead:
            reads.append(location)
            return super().read(location, max_bytes, listed)

    reader = CountingReader()
    paths = [_write_view(tmp_path, f"v{n}", "SELECT 1") for n in range(10)]
    todo = [(reader, ListedFile(str(path), size=10 * MiB)) for path in paths]
    ahead = read_all(todo, settings_for(tmp_path / "s.duckdb", batch_bytes=25 * MiB))
    first = next(ahead)
    time.sleep(0.5)
    assert isinstance(first, FileRead) and first.location == str(paths[0])
    assert sorted(reads) == [str(path) for path in paths[:3]]
    assert [item.location for item in ahead] == [str(path) for path in paths[1:]]
    assert len(reads) == 10


def test_a_document_of_more_values_than_allowed_is_quarantined(tmp_path: Path) -> None:
    """250 MiB of `[[],[],...]` in a 245 KB gzip file peaked at 8 GB: a list costs 56 bytes as a
    Python object for 3 bytes of text. The values are counted first (commas and brackets) and a
    document with more than max-json-values is quarantined `too-many-values`."""
    path = _write_view(tmp_path / "w", "v", "SELECT 1", {})
    document = json.loads(gzip.decompress(path.read_bytes()))
    document["padding"] = [[]] * 1000
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    db = tmp_path / "s.duckdb"
    stats = index_locations([str(tmp_path / "w")], settings_for(db, max_json_values=1000))
    assert (stats.indexed, stats.quarantined) == (0, 1)
    with Store(db, replica_interval=None) as store:
        ((reason, message),) = store.conn.execute("SELECT reason, message FROM quarantine").fetchall()
    assert reason == "too-many-values"
    assert message.endswith("JSON values, over the max-json-values of 1000")
    assert index_locations([str(tmp_path / "w")], settings_for(tmp_path / "t.duckdb")).indexed == 1
