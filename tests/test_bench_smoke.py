"""The benchmark suite runs (a small warehouse, every step): CI keeps it working, never timing it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .browser import needs_chromium

pytestmark = pytest.mark.integration


def _bench(suite: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`python -m tests.bench.<suite>` with these arguments, which must succeed."""
    result = subprocess.run(
        [sys.executable, "-m", f"tests.bench.{suite}", *arguments],
        capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[1],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_benchmark_runner_prints_every_row(tmp_path: Path) -> None:
    result = _bench(
        "run", "--views", "12", "--commits", "20", "--sample", "100", "--r-files", "20", "--quick",
        "--work", str(tmp_path),
    )  # fmt: skip
    rows = [
        line.split(" | ")
        for line in result.stdout.splitlines()
        if line.startswith("| worst") or line.startswith("| realistic")
    ]
    labels = [(row[0].strip("| "), row[1]) for row in rows]
    assert labels == [
        (mode, what)
        for mode in ("worst", "realistic")
        for what in [
            "F: read + gunzip + orjson (sample)",
            "P: pyiceberg parse (sample)",
            "R: straightforward (sample's first views)",
            "index (sample)",
            "F: on property-only commits",
            "index: property-only commits (all versions known)",
            "index: re-deliveries (every file indexed before)",
            "index, 1 process (sample)",
            f"index, {os.cpu_count()} workers (sample)",
            "lineage stage (the sample's distinct SQL), 1 process",
            f"lineage stage (the sample's distinct SQL), {os.cpu_count()} workers",
        ]
    ]
    for row in rows:
        assert float(row[3].replace(",", "")) > 0  # files/s
        assert int(row[2].replace(",", "")) >= 20  # files


def test_scale_benchmark_prints_every_row(tmp_path: Path) -> None:
    """The 10^6 benchmark's steps on a tiny warehouse, its queries timed in a process of their own."""
    result = _bench(
        "scale", "--views", "12", "--commits", "5", "--samples", "10", "--write-samples", "10",
        "--work", str(tmp_path),
    )  # fmt: skip
    assert "store: 12 views, 61 versions" in result.stdout
    lines = result.stdout.splitlines()
    rows = [line.split(" | ") for line in lines if line.startswith("| ") and not line.startswith("| query")]
    assert [row[0].strip("| ") for row in rows] == [
        "`show VIEW --as-of T`, first pass",
        "`uses TABLE --transitive --as-of T`, first pass",
        "`show VIEW --as-of T`, second pass",
        "`uses TABLE --transitive --as-of T`, second pass",
        "state of every view as of T (`views_as_of`)",
        "CLI `viewlineage show` (process wall time)",
        "CLI `viewlineage uses --transitive` (process wall time)",
        "HTTP `GET /api/show` through `serve`",
        "HTTP `GET /api/uses?transitive=true` through `serve`",
        "follower transaction: 12 property-only commits (rolled back)",
        "follower transaction: 12 new version commits (rolled back)",
    ]
    for row in rows:
        assert row[1].split()[0] == "10"  # calls timed
        assert float(row[2].removesuffix(" ms").replace(",", "")) > 0  # p50


@needs_chromium
def test_ui_benchmark_prints_every_row(tmp_path: Path) -> None:
    """The web UI's figures on a tiny warehouse: each page's calls through a follower and `serve`,
    each page in Chromium, a lineage graph."""
    result = _bench(
        "ui", "--views", "12", "--commits", "5", "--samples", "1", "--graph-nodes", "12",
        "--work", str(tmp_path),
    )  # fmt: skip
    rows = [
        line.split(" | ")
        for line in result.stdout.splitlines()
        if line.startswith("| ") and not line.startswith(("| page", "| lineage graph"))
    ]
    pages = ["Activity", "Materialized views", "Health", "View", "Lineage", "Impact", "Table", "Findings"]
    cold = "Impact, no analyses kept (a server before its first pass, the CLI)"
    assert [row[0].strip("| ") for row in rows] == [
        *pages, "every call", cold, *pages, "every page", "laid out and drawn", "fit()",
    ]  # fmt: skip
    assert (
        result.stdout.startswith("store ")
        and "\nfollower's first pass: analyses-warm views=" in result.stdout
    )
    assert all(float(row[2].split()[0].strip("*").replace(",", "")) > 0 for row in rows)  # p50
