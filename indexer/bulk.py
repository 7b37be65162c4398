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
from functools import partial

import pyarrow as pa

from .batches import Batch
from .config import ParseConfig, Settings
from .lineage import LineageRequest, extract_lineage
from .pipeline import Indexer, ReadFailure, read_with_retries
from .read import FileRead, ListedFile, reader_for

LISTED = pa.schema([("location", pa.string()), ("size", pa.int64()), ("modified_ms", pa.int64())])
"""A partition of files to index, as listed."""

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
    """Read every file of a listed partition (bounded retries); files gone since listing are
    skipped, other failures become quarantine rows in `index_files`."""
    reads: list[FileRead | ReadFailure] = []
    for row in listed.to_pylist():
        item = ListedFile(row["location"], row["size"], row["modified_ms"])
        reader = reader_for(item.location, settings.s3_endpoint)
        reads.append(
            read_with_retries(
                partial(reader.read, item.location, settings.max_file_bytes, item), item.location
            )
        )
    return reads


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
