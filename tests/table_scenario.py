"""A table whose schema evolves, field by field, with commit times the tests name (days from epoch
1): `sales.orders` is created, then a column is renamed and one retyped, one added, then dropped
again (Iceberg makes the earlier schema current again); four snapshots, then main rolled back to
the second. A view reads it; another reads `sales.returns`, whose metadata is not indexed."""

from __future__ import annotations

from pathlib import Path

from .metadata_files import Table, View, schema_of

ORDERS = "e1000000-0000-4000-8000-000000000001"
DAY = 86_400_000


def build(root: Path) -> None:
    orders = Table(
        root, "sales", "orders", ORDERS, schema=schema_of(("id", "long"), ("name", "string"), ("qty", "int"))
    )
    orders.commit(DAY, 11, "append", **{"added-records": "10", "total-records": "10"})
    orders.schema = schema_of(("id", "long"), ("customer", "string"), ("qty", "long"))
    orders.commit(2 * DAY, 12, "append", **{"added-records": "5", "total-records": "15"})
    orders.schema = schema_of(("id", "long"), ("customer", "string"), ("qty", "long"), ("note", "string"))
    orders.commit(2 * DAY + 1000, 13, "delete", **{"deleted-records": "3", "total-records": "12"})
    orders.schema = schema_of(("id", "long"), ("customer", "string"), ("qty", "long"))
    orders.commit(3 * DAY, 14, "overwrite", **{"total-records": "oops"})
    orders.log.append({"timestamp-ms": 3 * DAY + 5000, "snapshot-id": 12})  # a rollback to 12
    orders.commit(3 * DAY + 5000)
    View(root, "sales", "v", "e1000000-0000-4000-8000-000000000002").commit(
        DAY, "SELECT id, customer FROM sales.orders"
    )
    View(root, "sales", "v_returns", "e1000000-0000-4000-8000-000000000003").commit(
        DAY, "SELECT * FROM sales.returns"
    )
