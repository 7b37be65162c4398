"""Bulk indexing for backfills: the pipeline's pure stages, split so parallel engines share them.

1. `index_files`: a partition of listed files -> read (fsspec), parse, validate -> rows of every
   store table except lineage's, plus `lineage_requests`: the SQL the partition needs analysed,
   distinct by lineage memo key. Versions repeated across files have one content hash; requests
   repeated across versions have one key.
2. The engine deduplicates requests by key across the whole job (a version repeated in ten files
   is analysed once), then `analyse_lineage` turns a partition of them into the lineage tables.

Both return `{store table: Arrow table}`; `--engine local` moves them between processes,
`--engine spark` through `mapInArrow`. Neither stage touches the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from .batches import Batch
from .config import ParseConfig, Settings
from .lineage import LineageRequest, extract_lineage
from .pipeline import Indexer, ReadFailure, read_all
from .read import FileRead, ListedFile, Reader, reader_for

LINEAGE_REQUESTS = pa.schema(
    [
        ("lineage_key", pa.string()),
        ("sql", pa.string()),
        ("dialect", pa.string()),
        ("default_catalog", pa.string()),
        ("default_namespace", pa.list_(pa.string())),
        ("view_catalog", pa.string()),
    ]
)


def read_listed(listed: pa.Table, settings: Settings) -> list[FileRead | ReadFailure]:
    """Read every file of a listed partition (in parallel, bounded retries); files gone since
    listing are skipped, other failures become quarantine rows in `index_files`."""
    readers: dict[str, Reader] = {}

    def entry(row: dict[str, Any]) -> tuple[Reader, ListedFile]:
        item = ListedFile(row["location"], row["size"], row["modified_ms"])
        scheme = item.location.split("://", 1)[0] if "://" in item.location else ""
        if scheme not in readers:
            readers[scheme] = reader_for(item.location, settings.s3_endpoint)
        return readers[scheme], item

    return list(read_all((entry(row) for row in listed.to_pylist()), settings))


def index_files(items: Iterable[FileRead | ReadFailure], config: ParseConfig) -> dict[str, pa.Table]:
    """Stage 1 on reads (and read failures) of one partition."""
    batch = Indexer(None, config).build_batch(items, defer_lineage=True)
    tables = batch.to_arrow()
    requests = sorted(batch.lineage_requests.items())
    tables["lineage_requests"] = pa.table(
        {
            "lineage_key": [key for key, _ in requests],
            "sql": [r.sql for _, r in requests],
            "dialect": [r.dialect for _, r in requests],
            "default_catalog": [r.default_catalog for _, r in requests],
            "default_namespace": [list(r.default_namespace) for _, r in requests],
            "view_catalog": [r.view_catalog for _, r in requests],
        },
        schema=LINEAGE_REQUESTS,
    )
    return tables


def analyse_lineage(requests: pa.Table, config: ParseConfig) -> dict[str, pa.Table]:
    """Stage 2: lineage tables for a partition of distinct requests."""
    batch = Batch()
    for row in requests.to_pylist():
        request = LineageRequest(
            row["sql"],
            row["dialect"],
            row["default_catalog"],
            tuple(row["default_namespace"]),
            row["view_catalog"],
        )
        batch.lineage[row["lineage_key"]] = extract_lineage(request, config.lineage)
    return batch.to_arrow()
