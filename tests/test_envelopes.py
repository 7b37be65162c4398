"""The Spark engine's envelopes: a store table's rows cross the JVM in cells of bounded size."""

from __future__ import annotations

import pyarrow as pa

from viewlineage.indexer.backfill.spark import ENVELOPE, _pack, _unpack

DOCUMENTS = pa.schema([("content_hash", pa.string()), ("document", pa.binary())])


def test_a_table_is_packed_in_cells_of_bounded_size_and_unpacks_whole() -> None:
    documents = pa.table(
        {
            "content_hash": [f"{n:032x}" for n in range(1000)],
            "document": [bytes([n % 251]) * 1024 for n in range(1000)],
        },
        schema=DOCUMENTS,
    )
    versions = pa.table({"version_id": pa.array([1, 2, 3], pa.int32())})
    cells = _pack(
        {"documents": documents, "versions": versions, "empty": versions.slice(0, 0)}, cell_bytes=64 * 1024
    )
    assert cells.schema == ENVELOPE
    names = cells.column("table").to_pylist()
    assert names == ["documents"] * 17 + ["versions"]  # 1,000 rows of ~1 KiB in cells of 61 rows
    sizes = [len(payload) for payload in cells.column("rows").to_pylist()]
    assert max(sizes[:-1]) < 72 * 1024
    documents_cells = cells.filter(pa.array([name == "documents" for name in names]))
    unpacked = pa.Table.from_batches(list(_unpack(DOCUMENTS)(iter([documents_cells]))), schema=DOCUMENTS)
    assert unpacked.equals(documents)


def test_a_row_larger_than_a_cell_gets_a_cell_of_its_own() -> None:
    large = pa.table({"content_hash": ["a", "b"], "document": [b"x" * 4096, b"y"]}, schema=DOCUMENTS)
    cells = _pack({"documents": large}, cell_bytes=1024)
    assert cells.num_rows == 2
    unpacked = pa.Table.from_batches(list(_unpack(DOCUMENTS)(iter([cells]))), schema=DOCUMENTS)
    assert unpacked.equals(large)
