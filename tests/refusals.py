"""Rows the store refuses, as no validation could foresee: a file's `files` row loses its NOT NULL
content hash after its rows are converted."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pyarrow as pa

from viewlineage.indexer.pipeline.rows import Batch

ToArrow = Callable[[Batch, datetime | None], dict[str, pa.Table]]


def refusing(to_arrow: ToArrow, needle: str) -> ToArrow:
    """`Batch.to_arrow`, nulling the content hash of the files whose location contains `needle`."""

    def converted(batch: Batch, now: datetime | None = None) -> dict[str, pa.Table]:
        tables = to_arrow(batch, now)
        if "files" in tables:
            files = tables["files"]
            hashes = [
                None if needle in location else content_hash
                for location, content_hash in zip(
                    files["location"].to_pylist(), files["content_hash"].to_pylist(), strict=True
                )
            ]
            tables["files"] = files.set_column(1, "content_hash", pa.array(hashes, pa.string()))
        return tables

    return converted


def refusing_environment(needle: str) -> dict[str, str]:
    """Environment variables that make a process started with them refuse as `refusing` does
    (`hooks/refusing/sitecustomize.py` runs at its start-up)."""
    hook = Path(__file__).parent / "hooks" / "refusing"
    return {
        "PYTHONPATH": os.pathsep.join([str(hook), str(Path(__file__).parents[1])]),
        "VIEWLINEAGE_TEST_REFUSE": needle,
    }
