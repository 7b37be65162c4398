"""Bad inputs never stop indexing: each gets its exact reason or finding, and the next file indexes."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import DecompressionBomb, ObjectTooLarge, QuarantineError, TruncatedGzip
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.parse.metadata import ParsedFile, ParsedVersion, decompress, parse_metadata
from viewlineage.indexer.pipeline.health import Health
from viewlineage.indexer.pipeline.indexer import Indexer
from viewlineage.indexer.pipeline.rows import Batch, QuarantinedFile
from viewlineage.indexer.pipeline.runs import gap_batch, index_locations
from viewlineage.indexer.sources.read import FileRead, LocalReader
from viewlineage.indexer.spec.findings import Severity
from viewlineage.queries.cli import cli
from viewlineage.sinks.store import Store

from .conftest import CONFORMANCE, settings_for
from .metadata_files import Table
from .refusals import refusing
from .stores import snapshot

VALID = (CONFORMANCE / "iceberg-spec" / "view-spec__appendixA__00002-metadata.json").read_bytes()


def test_truncated_gzip() -> None:
    with pytest.raises(TruncatedGzip, match="ends early"):
        decompress(gzip.compress(VALID)[:-20], 1 << 20)


def test_corrupt_gzip() -> None:
    data = bytearray(gzip.compress(VALID))
    data[30] ^= 0xFF
    with pytest.raises(TruncatedGzip):
        decompress(bytes(data), 1 << 20)


def test_gzip_bomb_stops_at_the_limit() -> None:
    bomb = gzip.compress(b" " * (8 << 20))
    assert len(bomb) < 20_000
    with pytest.raises(DecompressionBomb, match="1048576-byte limit"):
        decompress(bomb, 1 << 20)


def test_concatenated_gzip_members_are_one_document() -> None:
    half = len(VALID) // 2
    data = gzip.compress(VALID[:half]) + gzip.compress(VALID[half:])
    assert decompress(data, 1 << 20) == (VALID, True, 0)


def test_over_size_file(tmp_path: Path) -> None:
    path = tmp_path / "00001-big.metadata.json"
    path.write_bytes(VALID)
    with pytest.raises(ObjectTooLarge, match=f"{len(VALID)} bytes is over the 100-byte limit"):
        LocalReader().read(str(path), 100)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"{not json", "not-json"),
        (b'"a string"', "not-object"),
        (b"", "not-json"),
        (b'{"refresh-state": 1}', "not-metadata"),
        (b'{"versions": [], "format-version": 1}', "no-identity"),
    ],
)
def test_quarantine_reasons(data: bytes, reason: str) -> None:
    with pytest.raises(QuarantineError) as caught:
        parse_metadata(data, "/w/db/v/metadata/00001-x.metadata.json", ParseConfig())
    assert caught.value.reason == reason


def test_wrong_types_keep_what_can_be_identified() -> None:
    document = json.loads(VALID)
    document["versions"][0]["version-id"] = "one"
    document["properties"] = {"comment": 5}
    document["version-log"].append({"timestamp-ms": 1, "version-id": 2})
    parsed = parse_metadata(json.dumps(document).encode(), "/w/db/v/00001-x.metadata.json", ParseConfig())
    assert parsed.view is not None
    assert [v.version_id for v in parsed.view.versions] == [2]
    assert parsed.view.properties == {}
    assert sorted((f.code, f.path) for f in parsed.findings) == [
        ("invalid-field:comment", "$.properties.comment"),
        ("invalid-field:version-id", "$.versions[0].version-id"),
        ("log-not-monotonic", "$.version-log[2].timestamp-ms"),
        ("log-version-expired", "$.version-log[0].version-id"),
    ]


def test_bad_files_never_stop_index(tmp_path: Path) -> None:
    metadata = tmp_path / "wh" / "db" / "v" / "metadata"
    metadata.mkdir(parents=True)
    (metadata / "00001-a.gz.metadata.json").write_bytes(gzip.compress(VALID)[:-30])
    (metadata / "00002-b.metadata.json").write_bytes(b"{oops")
    (metadata / "00003-c.gz.metadata.json").write_bytes(gzip.compress(b"[" * 10 + b" " * (3 << 20)))
    (metadata / "00004-d.metadata.json").write_bytes(b"x" * 5000)
    (metadata / "00005-e.metadata.json").write_bytes(VALID)
    (metadata / ".00005-e.metadata.json.crc").write_bytes(b"crc")
    db = tmp_path / "store.duckdb"
    stats = index_locations(
        [str(tmp_path / "wh")], settings_for(db, max_decompressed_bytes=1 << 20, max_file_bytes=4000)
    )
    assert (stats.listed, stats.indexed, stats.quarantined) == (5, 1, 4)
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT regexp_extract(location, '0000\\d'), reason FROM quarantine ORDER BY 1"
        ).fetchall()
        indexed = conn.execute("SELECT location FROM files").fetchall()
    assert rows == [
        ("00001", "truncated-gzip"),
        ("00002", "not-json"),
        ("00003", "over-decompressed-limit"),
        ("00004", "over-size-limit"),
    ]
    assert indexed == [(str(metadata / "00005-e.metadata.json"),)]


def test_a_good_read_supersedes_quarantine(tmp_path: Path) -> None:
    metadata = tmp_path / "wh" / "db" / "v" / "metadata"
    metadata.mkdir(parents=True)
    path = metadata / "00001-a.metadata.json"
    path.write_bytes(VALID[:50])
    db = tmp_path / "store.duckdb"
    settings = settings_for(db)
    assert index_locations([str(tmp_path / "wh")], settings).quarantined == 1
    path.write_bytes(VALID)
    assert index_locations([str(tmp_path / "wh")], settings).indexed == 1
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM view_files").fetchone() == (1,)


def test_unknown_dialect_names_are_not_looked_up_in_sqlglot_s_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """sqlglot looks an unknown dialect up in its entry points (~3.6 ms each): a file with 5,000
    representations of `foo` took 18 s, and (the seventeenth adversarial trial) one with 20,000
    distinct names held `watch` for minutes, each name resolved once. The names sqlglot knows are
    read once now, and an unknown one is never asked of it."""
    from sqlglot.dialects.dialect import Dialect

    looked_up: list[str] = []
    get_or_raise = Dialect.get_or_raise.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Dialect], name: str) -> Dialect:
        looked_up.append(name)
        return get_or_raise(cls, name)  # type: ignore[no-any-return]

    monkeypatch.setattr(Dialect, "get_or_raise", classmethod(counted))
    document = json.loads(VALID)
    document["versions"][-1]["representations"] = [
        {"type": "sql", "sql": "SELECT 1", "dialect": f"foo-{n}"} for n in range(5_000)
    ]
    parsed = parse_metadata(
        json.dumps(document).encode(), "/w/db/v/metadata/00002-x.metadata.json", ParseConfig()
    )
    found = [f for f in parsed.findings if f.code == "unknown-dialect"]
    assert len(found) == 5_000
    assert [name for name in looked_up if str(name).startswith("foo-")] == []


def _cli(db: Path, *args: str | bytes, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    command: list[str | bytes] = [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(db), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def test_a_fifo_named_like_a_metadata_file_is_quarantined_not_opened(tmp_path: Path) -> None:
    """A read thread blocked in `open` on a FIFO hung `index` for good."""
    root = tmp_path / "warehouse"
    good = root / "db" / "good" / "metadata" / "00001-fa6506c3-7681-40c8-86dc-e36561f83385.metadata.json"
    fifo = root / "db" / "fifo" / "metadata" / "00001-0d7c0c7e-0000-4000-8000-000000000001.metadata.json"
    for path in (good, fifo):
        path.parent.mkdir(parents=True)
    good.write_bytes(VALID)
    os.mkfifo(fifo)
    db = tmp_path / "store.duckdb"
    result = _cli(db, "index", str(root), "--no-progress", "--format", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["indexed"], summary["quarantined"]) == (1, 1)
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT location, reason FROM quarantine").fetchall() == [
            (str(fifo), "not-a-regular-file")
        ]


def test_a_name_that_is_not_utf8_is_a_percent_encoded_location_that_round_trips(tmp_path: Path) -> None:
    """`b'00000-\\xff.metadata.json'` stopped `index` with UnicodeEncodeError."""
    root = tmp_path / "warehouse"
    directory = root / "db" / "v" / "metadata"
    directory.mkdir(parents=True)
    raw = os.fsencode(directory) + b"/00000-\xff.metadata.json"
    with open(raw, "wb") as handle:
        handle.write(VALID)
    location = f"{directory}/00000-%FF.metadata.json"
    db = tmp_path / "store.duckdb"
    first = index_locations([str(root)], settings_for(db))
    again = index_locations([str(root)], settings_for(db))  # a re-list finds the stored file
    assert (first.indexed, again.indexed, again.already_indexed) == (1, 0, 1)
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT location FROM files").fetchall() == [(location,)]
    for asked in (raw, location.encode()):  # the path as the shell passes it, and as stored
        found = _cli(db, "files", asked, "--format", "json")
        assert found.returncode == 0, found.stderr
        assert [(f["location"], f["status"]) for f in json.loads(found.stdout)] == [(location, "indexed")]


def _deny_listing(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """A directory the process may not list (as root, `chmod 000` does not stop a listing)."""
    scandir = os.scandir

    def refusing(path: Any = ".") -> Any:
        if os.fsdecode(path) == str(denied):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)


def test_an_unreadable_directory_is_reported_and_never_taken_for_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unreadable directory was skipped silently: not counted, not reported."""
    root = tmp_path / "warehouse"
    files = [root / "db" / name / "metadata" / "00001-fa6506c3-7681-40c8-86dc-e36561f83385.metadata.json"
             for name in ("open", "locked")]  # fmt: skip
    for path in files:
        path.parent.mkdir(parents=True)
        path.write_bytes(VALID)
    locked = root / "db" / "locked"
    db = tmp_path / "store.duckdb"
    with monkeypatch.context() as patched:
        _deny_listing(patched, locked)
        stats = index_locations([str(root)], settings_for(db))
    assert (stats.indexed, stats.summary()["unlisted_directories"]) == (1, 1)
    assert stats.unlisted == [f"{locked}: not listed: Permission denied"]
    index_locations([str(root)], settings_for(db))  # readable again: both indexed
    log = io.StringIO()
    health = Health("watch", stream=log)
    with Store(db, replica_interval=None) as store:
        reader = LocalReader()
        with monkeypatch.context() as patched:
            _deny_listing(patched, locked)
            batch, outcomes = gap_batch(Indexer(store, ParseConfig()), reader, str(root), settings_for(db), 9)
        health.unlisted(reader.unlisted)
    assert (batch.removals, outcomes["removed"], reader.unlisted) == ([], 0, [])
    assert health.totals["unlisted"] == 1
    assert log.getvalue() == f"unlisted location={locked} error=not listed: Permission denied\n"


def test_deep_nesting_is_indexed_or_has_a_reason() -> None:
    """A schema nested ~330 levels was quarantined as `internal-error: TypeError: Recursion limit
    reached` (orjson writes 255 levels, reads 1,024). Now it is indexed whole; a value nested past
    what can be written again is `too-deep`; past what JSON parsing accepts, `not-json`."""
    document = json.loads(VALID)
    kind: Any = "int"
    for level in range(300):
        kind = {
            "type": "struct",
            "fields": [{"id": 1000 + level, "name": f"f{level}", "required": False, "type": kind}],
        }
    document["schemas"][0]["fields"].append({"id": 99, "name": "deep", "required": False, "type": kind})
    location = "/w/db/v/metadata/00001-x.metadata.json"
    text = json.dumps(document)
    parsed = parse_metadata(text.encode(), location, ParseConfig())
    assert parsed.view is not None and parsed.view.schemas[0].nested[-1].path[-1] == "f0"
    assert len(parsed.view.schemas[0].nested) == len(json.loads(VALID)["schemas"][0]["fields"]) + 301
    deep_json = '{"a":' * 1_010 + "1" + "}" * 1_010  # within the parser's 1,024 levels
    representation = text.replace('"representations": [', f'"representations": [{deep_json}, ', 1)
    with pytest.raises(QuarantineError) as too_deep:
        parse_metadata(representation.encode(), location, ParseConfig())
    assert too_deep.value.reason == "too-deep"
    deeper = text.replace('"representations": [', f'"representations": [{"[" * 1_100}{"]" * 1_100}, ', 1)
    with pytest.raises(QuarantineError) as unparsed:
        parse_metadata(deeper.encode(), location, ParseConfig())
    assert unparsed.value.reason == "not-json"


def test_sql_over_the_length_limit_is_stored_not_analysed(tmp_path: Path) -> None:
    """A 200 MB SQL string in a 205 KB gzip peaked at 2.7 GB in sqlglot: SQL analysis has a limit."""
    document = json.loads(VALID)
    long_sql = "SELECT " + ", ".join(f"c{n}" for n in range(40)) + " FROM db.t"
    for version in document["versions"]:
        version["representations"] = [{"type": "sql", "sql": long_sql, "dialect": "spark"}]
    path = (
        tmp_path
        / "warehouse"
        / "db"
        / "v"
        / "metadata"
        / "00001-fa6506c3-7681-40c8-86dc-e36561f83385.metadata.json"
    )
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document))
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(tmp_path / "warehouse")], settings_for(db, max_sql_length=len(long_sql) - 1))
    versions = len(document["versions"])
    assert (stats.indexed, stats.lineage_computed, stats.findings["sql-too-long"]) == (1, 0, versions)
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT sql FROM representations").fetchall() == [(long_sql,)] * versions
        assert conn.execute("SELECT count(*) FROM lineage").fetchall() == [(0,)]
    again = tmp_path / "again.duckdb"
    assert index_locations([str(tmp_path / "warehouse")], settings_for(again)).lineage_computed == 1


def test_gzip_members_past_the_limit_are_quarantined() -> None:
    """200,000 empty gzip members took 10 s to decompress."""
    assert decompress(gzip.compress(VALID[:10]) + gzip.compress(VALID[10:]), 1 << 20)[0] == VALID
    with pytest.raises(QuarantineError) as many:
        decompress(gzip.compress(b"") * 1_001 + gzip.compress(VALID), 1 << 20)
    assert many.value.reason == "too-many-gzip-members"


def test_a_socket_named_like_a_metadata_file_is_not_a_regular_file() -> None:
    """Opening a socket fails with ENXIO: it was `unreadable`; like a FIFO it is no regular file."""
    tmp_path = Path(tempfile.mkdtemp(dir="/tmp"))  # a socket's path has at most 107 bytes
    directory = tmp_path / "warehouse" / "db" / "v" / "metadata"
    directory.mkdir(parents=True)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(directory / "00001-v.metadata.json"))
    try:
        db = tmp_path / "store.duckdb"
        assert index_locations([str(tmp_path / "warehouse")], settings_for(db)).quarantined == 1
        with duckdb.connect(str(db), read_only=True) as conn:
            assert conn.execute("SELECT reason FROM quarantine").fetchall() == [("not-a-regular-file",)]
    finally:
        sock.close()
        shutil.rmtree(tmp_path)


@pytest.mark.parametrize(
    ("field", "digits", "outcome"),
    [
        ('"current-version-id" : 2', 400, "invalid-field:current-version-id"),
        ('"current-version-id" : 2', 5_000, "invalid-field:current-version-id"),
        ('"current-version-id" : 2', 1_000_000, "invalid-field:current-version-id"),
        ('"comment" : "Daily event counts"', 5_000, "invalid-field:comment"),
    ],
)
def test_integers_past_a_double_are_a_finding_of_their_field(field: str, digits: int, outcome: str) -> None:
    """orjson refuses a number no double holds (`number is infinity`): the file was `not-json`. The
    standard library reads such integers, so the field is a finding; past 4,300 digits (Python's
    limit) the whole file was `not-json` again, its message advising `sys.set_int_max_str_digits()`
    (found by the fourth adversarial trial)."""
    name, _, _ = field.partition(" : ")
    text = VALID.decode().replace(field, f"{name} : {'9' * digits}", 1)
    assert text != VALID.decode()
    parsed = parse_metadata(text.encode(), "/w/db/v/metadata/00001-x.metadata.json", ParseConfig())
    assert outcome in [finding.code for finding in parsed.findings]
    assert parsed.view is not None and parsed.view.versions


def test_snapshot_ids_of_thousands_of_digits_are_findings(tmp_path: Path) -> None:
    """`int()` refuses 4,300 digits: a Trino snapshot id that long quarantined its table (internal-error)."""
    table = Table(tmp_path / "warehouse", "db", "mv", "44444444-4444-4444-8444-444444444444")
    written = table.commit(1_000, snapshot_id=7, dependsOnTables="db.t=" + "9" * 5_000)
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(tmp_path / "warehouse")], settings_for(db))
    assert (stats.indexed, stats.quarantined, stats.findings["invalid-trino-dependency"]) == (1, 0, 1)
    assert written.exists()


def test_max_sql_length_is_an_option_of_the_indexing_commands(tmp_path: Path) -> None:
    for command in ("index", "watch", "reindex", "consume", "backfill"):
        shown = CliRunner().invoke(cli, [command, "--help"])
        assert "--max-sql-length INTEGER" in shown.output, command


@pytest.mark.parametrize("workers", [1, 2])
def test_rows_the_store_refuses_quarantine_their_file_alone(
    sample_warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """One file of a batch whose rows DuckDB refuses (here its `files` row loses its NOT NULL
    content hash after conversion, as no validation could foresee): that file is quarantined
    `insert-failed`, and the store holds every other file as a run without it would (with two
    workers the rows come from the worker processes, which fork with the patch)."""
    warehouse = tmp_path / "w"
    shutil.copytree(sample_warehouse, warehouse)
    bad = sorted(warehouse.rglob("*.metadata.json"))[3]
    monkeypatch.setattr(Batch, "to_arrow", refusing(Batch.to_arrow, str(bad)))
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(warehouse)], settings_for(db, workers=workers))
    monkeypatch.undo()
    assert stats.indexed + stats.quarantined == stats.listed
    with duckdb.connect(str(db), read_only=True) as conn:
        quarantined = conn.execute("SELECT location, reason, message FROM quarantine").fetchall()
    assert quarantined == [
        (str(bad), "insert-failed", "store: Constraint Error: NOT NULL constraint failed: files.content_hash")
    ]
    bad.unlink()
    without = tmp_path / "without.duckdb"
    index_locations([str(warehouse)], settings_for(without, workers=workers))
    assert snapshot(db, exclude={"quarantine", "view_spans"}) == snapshot(
        without, exclude={"quarantine", "view_spans"}
    )


def test_watch_reports_a_path_it_cannot_look_at_and_quarantines_nothing(tmp_path: Path) -> None:
    """`watch` took a directory under an unreadable one for a file, quarantined it `unreadable`,
    and the row outlived the cause. Now such a path is reported as not listed (a reconciliation reads
    it once it can). Run without the capabilities that let root read anything."""
    locked = tmp_path / "y"
    (locked / "metadata").mkdir(parents=True)
    (locked / "metadata" / "00001-a.metadata.json").write_bytes(VALID)
    script = (
        "import sys\n"
        "from viewlineage.indexer.followers.watch import _expand_directories\n"
        "from viewlineage.indexer.sources.read import LocalReader\n"
        "reader = LocalReader()\n"
        "print(_expand_directories(sys.argv[2:], reader, sys.argv[1]), [str(e) for e in reader.unlisted])\n"
    )
    unprivileged = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", sys.executable]
    paths = [str(locked / "metadata"), str(tmp_path / "gone.metadata.json")]
    locked.chmod(0)
    try:
        shown = subprocess.run(
            [*unprivileged, "-c", script, str(tmp_path), *paths], capture_output=True, text=True, check=True
        ).stdout
    finally:
        locked.chmod(0o755)
    assert shown == f"['{paths[1]}'] ['{paths[0]}: not listed: Permission denied']\n"


@pytest.mark.parametrize("where", ["properties", "summary"])
def test_a_value_nested_past_the_recursion_limit_is_too_deep(where: str) -> None:
    """A property nested 980 levels was quarantined `internal-error: RecursionError`, a summary
    value as deep `too-deep`: both are `too-deep` now."""
    document = json.loads(VALID)
    if where == "properties":
        document["properties"] = {"comment": "DEEP"}
    else:
        document["versions"][0]["summary"]["x"] = "DEEP"
    data = json.dumps(document).replace('"DEEP"', "[" * 980 + "]" * 980).encode()
    quarantined = Indexer(None, ParseConfig()).parse(
        FileRead("/w/db/v/metadata/00001-a.metadata.json", data, 0, "t")
    )
    assert isinstance(quarantined, QuarantinedFile)
    assert quarantined.reason == "too-deep"


def test_a_value_past_its_type_costs_only_itself() -> None:
    """A summary value of 5 dropped its whole version (and `current-version-not-found` followed), a
    field's doc of 5 its whole schema: now the value is left out with its finding, and a field whose
    id is past 32 bits is left out of its schema alone."""
    document = json.loads(
        (CONFORMANCE / "iceberg-spec" / "view-spec__appendixA__00002-metadata.json").read_text()
    )
    document["versions"][1]["summary"]["x"] = 5
    document["schemas"][0]["fields"][0]["doc"] = 5
    document["schemas"][0]["fields"][1]["id"] = 2**31
    parsed = Indexer(None, ParseConfig()).parse(
        FileRead("/w/ns/v/metadata/00001-a.metadata.json", json.dumps(document).encode(), 0, "t")
    )
    assert not isinstance(parsed, QuarantinedFile)
    assert parsed.view is not None
    assert [version.version_id for version in parsed.view.versions] == [1, 2]
    assert [(s.schema_id, [(f["name"], f["doc"]) for f in s.fields]) for s in parsed.view.schemas] == [
        (1, [("event_count", None)])
    ]
    assert [(f.code, f.path) for f in parsed.findings if f.code != "location-mismatch"] == [
        ("invalid-field:doc", "$.schemas[0].fields[0].doc"),
        ("invalid-field:id", "$.schemas[0].fields[1].id"),
        ("invalid-field:x", "$.versions[1].summary.x"),
    ]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda d: d.update({"current-version-id": "2"}), "invalid-field:current-version-id"),
        (lambda d: d.update({"current-version-id": 2.0}), "invalid-field:current-version-id"),
        (lambda d: d.update({"current-version-id": True}), "invalid-field:current-version-id"),
        (lambda d: d.update({"current-version-id": None}), "missing-field:current-version-id"),
        (lambda d: d.update({"format-version": True}), "invalid-field:format-version"),
        (lambda d: d["versions"][1].update({"version-id": "2"}), "invalid-field:version-id"),
        (lambda d: d["versions"][1].update({"schema-id": True}), "invalid-field:schema-id"),
        (lambda d: d["version-log"][1].update({"timestamp-ms": "2"}), "invalid-field:timestamp-ms"),
        (
            lambda d: d["versions"][0].update({"timestamp-ms": 1.573518431292e12}),
            "invalid-field:timestamp-ms",
        ),
    ],
)
def test_a_value_of_another_json_type_is_a_finding_not_a_conversion(change: Any, code: str) -> None:
    """Found by the fourth adversarial trial: `"2"`, `2.0` and `true` were taken for 2, 2 and 1
    (`"version-id": true` showed version 2's SQL as version 1's), and a required field given as
    null was no finding."""
    document = json.loads(VALID)
    change(document)
    parsed = parse_metadata(
        json.dumps(document).encode(), "/w/db/v/metadata/00001-x.metadata.json", ParseConfig()
    )
    assert code in [finding.code for finding in parsed.findings]


def test_an_id_that_is_no_uuid_never_passes_for_another_views(tmp_path: Path) -> None:
    """Found by the fourth adversarial trial: a view-uuid `loc:<directory>` made a file one view with
    the uuid-less view in that directory, showing its SQL under the other's name."""
    root = tmp_path / "warehouse"
    for name, uuid in (("nouuid", None), ("spoof", f"loc:{root}/db/nouuid"), ("odd", "not-a-uuid")):
        document = json.loads(VALID)
        document["location"] = f"{root}/db/{name}"
        document["versions"][1]["representations"][0]["sql"] = f"SELECT * FROM db.t_{name}"
        if uuid is None:
            del document["view-uuid"]
        else:
            document["view-uuid"] = uuid
        path = root / "db" / name / "metadata" / "00001-x.metadata.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(document))
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    shown = {
        name: CliRunner().invoke(cli, ["show", name, "--format", "json", "--db", str(db)]).stdout
        for name in ("prod.db.nouuid", "prod.db.spoof", "bad-uuid:not-a-uuid")
    }
    assert {
        name: (json.loads(out)["view_id"], json.loads(out)["representations"][0]["sql"])
        for name, out in shown.items()
    } == {
        "prod.db.nouuid": (f"loc:{root}/db/nouuid", "SELECT * FROM db.t_nouuid"),
        "prod.db.spoof": (f"bad-uuid:loc:{root}/db/nouuid", "SELECT * FROM db.t_spoof"),
        "bad-uuid:not-a-uuid": ("bad-uuid:not-a-uuid", "SELECT * FROM db.t_odd"),
    }


def test_a_symbolic_link_named_like_a_metadata_file_is_not_followed(tmp_path: Path) -> None:
    """Found by the sixth adversarial trial: `metadata/00000-x.metadata.json -> /etc/passwd` was
    opened and read (a link to a JSON file elsewhere would have been stored, readable through `sql`)."""
    root = tmp_path / "warehouse"
    good = root / "db" / "good" / "metadata" / "00001-fa6506c3-7681-40c8-86dc-e36561f83385.metadata.json"
    good.parent.mkdir(parents=True)
    good.write_bytes(VALID)
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(VALID)
    link = root / "db" / "link" / "metadata" / "00001-0d7c0c7e-0000-4000-8000-000000000002.metadata.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    db = tmp_path / "store.duckdb"
    result = _cli(db, "index", str(root), "--no-progress", "--format", "json")
    assert result.returncode == 0, result.stderr
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT location, reason, message FROM quarantine").fetchall() == [
            (
                str(link),
                "not-a-regular-file",
                f"{link}: a symbolic link (to {str(outside)!r}), not a regular file",
            )
        ]
        assert conn.execute("SELECT count(*) FROM raw_documents").fetchone() == (1,)


def test_a_byte_order_mark_is_no_reason_to_quarantine() -> None:
    """Found by the sixth adversarial trial: a UTF-8 byte-order mark, which JSON parsers may ignore
    and Java's do, quarantined the file as `not-json`."""
    plain = parse_metadata(VALID, "/w/db/v/metadata/00001-x.metadata.json", ParseConfig())
    marked = parse_metadata(b"\xef\xbb\xbf" + VALID, "/w/db/v/metadata/00001-x.metadata.json", ParseConfig())
    assert marked.view == plain.view and marked.findings == plain.findings


def test_bytes_after_the_gzip_stream_are_ignored_with_a_finding() -> None:
    """Found by the sixth adversarial trial: bytes after the gzip stream were dropped silently.
    Java's GZIPInputStream ignores them too, so the document is read; a finding says so."""
    location = "s3://bucket/warehouse/default.db/event_agg/metadata/00001-x.metadata.json"
    assert decompress(gzip.compress(VALID) + b"\0" * 512, 1 << 20) == (VALID, True, 0)
    assert decompress(gzip.compress(VALID) + b"garbage\0\0", 1 << 20) == (VALID, True, 9)
    plain = parse_metadata(gzip.compress(VALID), location, ParseConfig())
    trailed = parse_metadata(gzip.compress(VALID) + b"garbage\0\0", location, ParseConfig())
    assert trailed.view == plain.view
    assert [(f.code, f.severity, f.message, f.path) for f in trailed.findings] == [
        (
            "gzip-trailing-bytes",
            Severity.WARNING,
            "9 bytes after the gzip stream are not gzip; ignored, as Java's readers ignore them",
            "$",
        )
    ]


def test_a_key_written_twice_reads_the_last_value_with_a_finding() -> None:
    """Found by the sixth adversarial trial: a repeated key silently kept its last value (as Java's
    Jackson does). The finding names the key and the object that repeats it."""
    location = "s3://bucket/warehouse/default.db/event_agg/metadata/00001-x.metadata.json"
    text = VALID.decode()
    kept = '"sql" : "SELECT\\n    COUNT(1), CAST(event_ts AS DATE)\\nFROM prod.default.events'
    assert text.count(kept) == 1  # Jackson's pretty printer: a space before each colon
    repeated = text.replace(kept, '"sql" : "SELECT a FROM prod.default.decoy", ' + kept)
    repeated = repeated.replace('"comment" :', '"comment" : "first", "comment" :')
    parsed = parse_metadata(repeated.encode(), location, ParseConfig())
    assert parsed.view is not None and parsed.view.properties == {"comment": "Daily event counts"}
    version = parsed.view.versions[1]
    assert isinstance(version, ParsedVersion) and "decoy" not in (version.representations[0].sql or "")
    said = "times; the last value is read, as Java's readers (Jackson) read it"
    assert [(f.code, f.severity, f.message, f.path) for f in parsed.findings] == [
        ("duplicate-key", Severity.WARNING, f"key 'comment' is written 2 {said}", "$.properties"),
        (
            "duplicate-key",
            Severity.WARNING,
            f"key 'sql' is written 2 {said}",
            "$.versions[1].representations[0]",
        ),
    ]
    # A colon the text escapes inside a string is no key; in a document of over 1 MiB, keys are
    # counted another way.
    escaped = text.replace('"Daily event counts"', '"Daily\\u003a event counts"')
    assert parse_metadata(escaped.encode(), location, ParseConfig()).findings == ()
    large = text.replace('"Daily event counts"', '"' + "a:" * (1 << 20) + '"')
    assert parse_metadata(large.encode(), location, ParseConfig()).findings == ()
    large_repeated = large.replace('"comment" :', '"comment": "first", "comment" :')
    assert [f.path for f in parse_metadata(large_repeated.encode(), location, ParseConfig()).findings] == [
        "$.properties"
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a": "\xff\xfe"}', "not JSON: not UTF-8 text: byte 0xff at offset 7 (invalid start byte)"),
        (
            '{"a": 1}'.encode("utf-16"),
            "not JSON: UTF-16 text (it starts with UTF-16's byte-order mark); metadata JSON is UTF-8",
        ),
    ],
)
def test_a_document_that_is_not_utf8_says_which_byte(data: bytes, message: str) -> None:
    """Found by the seventh adversarial trial: bytes that are no UTF-8 were quarantined as "str is
    not valid UTF-8: surrogates not allowed", which names neither the byte nor the encoding."""
    with pytest.raises(QuarantineError) as refused:
        parse_metadata(data, "/w/db/v/metadata/00001-x.metadata.json", ParseConfig())
    assert (refused.value.reason, str(refused.value)) == ("not-json", message)


@pytest.mark.parametrize("kind", ["foo", "decimal(99999999999999999999,2)", "decimal(39,2)", "fixed[-5]", ""])
def test_a_type_that_is_no_iceberg_type_is_a_finding(kind: str) -> None:
    """Found by the twelfth adversarial trial: such types were indexed without a word, and `impact`
    reasoned from a decimal of 10^20 digits. Now the column's fields are left out with the finding,
    as for any nested type that is not the spec's (Java's library refuses such files); the other
    columns' are kept (the thirteenth adversarial trial: one such type emptied the whole list)."""
    parsed = _with_first_column_typed(kind)
    assert not isinstance(parsed, QuarantinedFile) and parsed.view is not None
    assert [(f.code, f.message) for f in parsed.findings if f.code != "location-mismatch"] == [
        ("invalid-nested-type", f"nested type with type {kind!r} is not an Iceberg type")
    ]
    assert [[field.path for field in schema.nested] for schema in parsed.view.schemas] == [[("event_date",)]]


@pytest.mark.parametrize(
    "kind",
    [
        "decimal(38, 10)",
        "fixed[16]",
        "timestamptz_ns",
        "variant",
        "geometry(srid:4326)",
        "unknown",
        # Found by the thirteenth adversarial trial: Java's library reads these too.
        "Int",
        "DECIMAL(10,2)",
        "TimestampTZ",
        "decimal(010,2)",
    ],
)
def test_every_iceberg_primitive_type_is_one(kind: str) -> None:
    parsed = _with_first_column_typed(kind)
    assert not isinstance(parsed, QuarantinedFile) and parsed.view is not None
    assert [f.code for f in parsed.findings if f.code != "location-mismatch"] == []


def _with_first_column_typed(kind: str) -> ParsedFile | QuarantinedFile:
    """The spec's example view file, its schema's first column of type `kind`, parsed."""
    document = json.loads(
        (CONFORMANCE / "iceberg-spec" / "view-spec__appendixA__00002-metadata.json").read_text()
    )
    document["schemas"][0]["fields"][0]["type"] = kind
    return Indexer(None, ParseConfig()).parse(
        FileRead("/w/ns/v/metadata/00001-a.metadata.json", json.dumps(document).encode(), 0, "t")
    )


def test_healthz_says_when_the_last_batch_was_as_every_time_is_written() -> None:
    """Found by the twentieth new-user trial: the Health page's last batch read `...+00:00` where every
    other time reads `...Z`, in milliseconds."""
    health = Health("watch", stream=io.StringIO())
    health.batch({"indexed": 1}, 0.01)
    assert health.check()[1]["last_batch_at"].endswith("Z")
    assert len(health.check()[1]["last_batch_at"]) == len("2026-11-28T14:48:33.913Z")
