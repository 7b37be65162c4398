"""`search`: views and tables by part of any name they have had."""

from __future__ import annotations

from pathlib import Path

import pytest

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.rows import Batch, Removal
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries.search import search
from viewlineage.sinks.readers import open_reader
from viewlineage.sinks.store import Store

from .conftest import settings_for
from .metadata_files import View


def test_names_holding_the_text_best_first(sample_store: Path) -> None:
    with open_reader(sample_store) as conn:
        found = search(conn, "EVENT")
        exact = search(conn, "prod.db.events")
        first = search(conn, "e", limit=2)
    assert [(r["kind"], r["name"]) for r in found["results"]] == [
        ("table", "prod.db.events"),
        ("view", "prod.db.event_agg"),
        ("view", "prod.db.event_tags"),
    ]
    assert [r["name"] for r in exact["results"]] == ["prod.db.events"]
    assert (first["total"], [r["name"] for r in first["results"]]) == (
        8,
        ["prod.sales.customer_revenue", "prod.db.events"],  # ending in it, then the shortest
    )


def test_an_empty_text_or_a_bad_limit_is_refused(sample_store: Path) -> None:
    with open_reader(sample_store) as conn:
        with pytest.raises(UsageError, match="q is empty"):
            search(conn, "  ")
        with pytest.raises(UsageError, match="limit is 1 to 200, not 0"):
            search(conn, "x", limit=0)


def test_two_views_that_held_one_name_are_told_apart(tmp_path: Path) -> None:
    """A view dropped and created again at its path is two results of one name: when each was first
    committed and when the first was dropped tell them apart (found by the seventh UI trial)."""
    root = tmp_path / "warehouse"
    old = View(root, "db", "v", "ef000000-0000-4000-8000-000000000001")
    old_file = old.commit(1000, "SELECT 1 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(old_file), 2000, "watch")]))
    old_file.unlink()
    View(root, "db", "v", "ef000000-0000-4000-8000-000000000002").commit(3000, "SELECT 2 AS x")
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        found = search(conn, "db.v")["results"]
    assert found == [
        {"kind": "view", "name": "prod.db.v", "id": "ef000000-0000-4000-8000-000000000001",
         "first_committed_at": "1970-01-01T00:00:01.000Z", "dropped_at": "1970-01-01T00:00:02.000Z"},
        {"kind": "view", "name": "prod.db.v", "id": "ef000000-0000-4000-8000-000000000002",
         "first_committed_at": "1970-01-01T00:00:03.000Z", "dropped_at": None},
    ]  # fmt: skip
