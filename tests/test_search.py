"""`search`: views and tables by part of any name they have had."""

from __future__ import annotations

from pathlib import Path

import pytest

from viewlineage.indexer.errors import UsageError
from viewlineage.queries.search import search
from viewlineage.sinks.readers import open_reader


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
