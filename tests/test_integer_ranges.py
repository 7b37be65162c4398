"""Integers past their spec type's width: one such value stopped `index`, `watch` and `consume` for
good (Arrow refused the whole batch). Each spec field is an `int` (32-bit) or a `long` (64-bit); a
value outside it is a finding on that field, the file is indexed, and so are its neighbours."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from viewlineage.indexer.pipeline import rows
from viewlineage.indexer.pipeline.runs import index_locations

from .conftest import settings_for
from .metadata_files import Table, View, schema_of

INT_PAST = 2**31
LONG_PAST = 2**63
Mutation = Callable[[dict[str, Any]], None]


def _set(*path: str | int, value: object) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        target: Any = document
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


VIEW_FIELDS = [
    ("version-id", _set("versions", 0, "version-id", value=INT_PAST), "$.versions[0].version-id"),
    ("current-version-id", _set("current-version-id", value=INT_PAST), "$.current-version-id"),
    ("version-id", _set("version-log", 0, "version-id", value=INT_PAST), "$.version-log[0].version-id"),
    ("schema-id", _set("versions", 0, "schema-id", value=INT_PAST), "$.versions[0].schema-id"),
    ("schema-id", _set("schemas", 0, "schema-id", value=-(2**31) - 1), "$.schemas[0].schema-id"),
    ("id", _set("schemas", 0, "fields", 0, "id", value=INT_PAST), "$.schemas[0].fields[0].id"),
    ("format-version", _set("format-version", value=INT_PAST), "$.format-version"),
    ("timestamp-ms", _set("versions", 0, "timestamp-ms", value=LONG_PAST), "$.versions[0].timestamp-ms"),
    (
        "timestamp-ms",
        _set("version-log", 0, "timestamp-ms", value=LONG_PAST),
        "$.version-log[0].timestamp-ms",
    ),
]

TABLE_FIELDS = [
    ("last-column-id", _set("last-column-id", value=INT_PAST), "$.last-column-id"),
    ("current-schema-id", _set("current-schema-id", value=INT_PAST), "$.current-schema-id"),
    ("snapshot-id", _set("snapshots", 0, "snapshot-id", value=LONG_PAST), "$.snapshots[0].snapshot-id"),
    ("current-snapshot-id", _set("current-snapshot-id", value=LONG_PAST), "$.current-snapshot-id"),
    ("last-sequence-number", _set("last-sequence-number", value=LONG_PAST), "$.last-sequence-number"),
    ("last-updated-ms", _set("last-updated-ms", value=LONG_PAST), "$.last-updated-ms"),
    (
        "timestamp-ms",
        _set("snapshot-log", 0, "timestamp-ms", value=LONG_PAST),
        "$.snapshot-log[0].timestamp-ms",
    ),
]


def _warehouse(root: Path, kind: str, mutate: Mutation) -> tuple[Path, Path]:
    """A good file and a bad one (the good one's document, mutated, as the next commit)."""
    if kind == "view":
        view = View(root, "db", "v", "11111111-1111-4111-8111-111111111111")
        good = view.commit(1_000, "SELECT id FROM db.t")
    else:
        table = Table(root, "db", "t", "22222222-2222-4222-8222-222222222222")
        good = table.commit(1_000, snapshot_id=7)
    document = json.loads(good.read_text())
    mutate(document)
    bad = good.with_name(good.name.replace("00000-", "00001-"))
    bad.write_text(json.dumps(document))
    return good, bad


def _findings(db: Path, location: Path) -> list[tuple[str, str]]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(
            "SELECT code, path FROM file_findings WHERE location = ? ORDER BY ordinal", [str(location)]
        ).fetchall()


@pytest.mark.parametrize(
    ("kind", "name", "mutate", "path"),
    [("view", *case) for case in VIEW_FIELDS] + [("table", *case) for case in TABLE_FIELDS],
    ids=[f"view:{case[2]}" for case in VIEW_FIELDS] + [f"table:{case[2]}" for case in TABLE_FIELDS],
)
def test_an_integer_past_its_type_is_a_finding_and_the_file_is_indexed(
    tmp_path: Path, kind: str, name: str, mutate: Mutation, path: str
) -> None:
    root = tmp_path / "warehouse"
    good, bad = _warehouse(root, kind, mutate)
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(root)], settings_for(db, workers=1))
    assert (stats.indexed, stats.quarantined) == (2, 0)
    assert (f"invalid-field:{name}", path) in _findings(db, bad)
    assert _findings(db, good) == []


def test_a_nested_field_id_past_int_is_a_finding(tmp_path: Path) -> None:
    nested = {"type": "struct", "fields": [{"id": INT_PAST, "name": "x", "required": False, "type": "int"}]}
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "33333333-3333-4333-8333-333333333333", schema=schema_of(("s", nested)))
    bad = view.commit(1_000, "SELECT s FROM db.t")
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(root)], settings_for(db, workers=1))
    assert (stats.indexed, stats.quarantined) == (1, 0)
    assert _findings(db, bad) == [
        ("invalid-nested-type", "$.schemas[0].fields[0]")
    ]  # the column whose type it is


def test_trino_snapshot_ids_past_long_are_findings(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    table = Table(root, "db", "mv_storage", "44444444-4444-4444-8444-444444444444")
    bad = table.commit(1_000, snapshot_id=7, dependsOnTables=f"db.t={LONG_PAST},db.u=\u00b2")
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(root)], settings_for(db, workers=1))
    assert (stats.indexed, stats.quarantined) == (1, 0)
    assert [code for code, _ in _findings(db, bad)] == ["invalid-trino-dependency"] * 2
    with duckdb.connect(str(db), read_only=True) as conn:
        refresh = conn.execute("SELECT format, snapshot_id, unknown_reason FROM mv_refreshes").fetchall()
    assert refresh == [
        (
            "trino",
            7,
            f"unreadable dependsOnTables entry 'db.t={LONG_PAST}'; "
            "unreadable dependsOnTables entry 'db.u=\u00b2'",
        )
    ]


def test_a_sequence_number_past_long_in_a_file_name_numbers_nothing(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "55555555-5555-4555-8555-555555555555")
    written = view.commit(1_000, "SELECT 1")
    renamed = written.rename(written.with_name(f"{'9' * 20}-{view.uuid}.metadata.json"))
    db = tmp_path / "store.duckdb"
    assert index_locations([str(root)], settings_for(db, workers=1)).indexed == 1
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT location, sequence_number FROM files").fetchall() == [
            (str(renamed), None)
        ]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_file_whose_rows_fail_to_convert_is_quarantined_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """The safety net under validation: a value no rule foresaw (here, a bug planted in row
    building for one file) quarantines that file, and the batch's other files are stored."""
    root = tmp_path / "warehouse"
    views = [View(root, "db", f"v{n}", f"6666666{n}-6666-4666-8666-666666666666") for n in range(4)]
    written = [view.commit(1_000 + n, f"SELECT {n}") for n, view in enumerate(views)]
    poisoned = str(written[2])
    add_file = rows._add_file

    def failing(table_rows: Any, item: rows.IndexedFile, *args: Any) -> None:
        if item.read.location == poisoned:
            raise OverflowError("Python int too large to convert to C long")
        add_file(table_rows, item, *args)

    monkeypatch.setattr(rows, "_add_file", failing)  # before the pool forks: workers inherit it
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(root)], settings_for(db, workers=workers))
    assert (stats.indexed, stats.quarantined) == (3, 1)
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT location, reason, message FROM quarantine").fetchall() == [
            (poisoned, "internal-error", "rows: OverflowError: Python int too large to convert to C long")
        ]
        stored = conn.execute("SELECT location FROM view_files ORDER BY location").fetchall()
    assert stored == [(str(path),) for n, path in enumerate(written) if n != 2]
