"""Views over `prod.db.orders` that use its columns in every way the impact analysis tells apart:
`SELECT *`, aliases, CTEs, joins, aggregates, windows, nested fields, set operations, subqueries,
views on views, and a view reading a table whose metadata is not indexed. Commit times are epoch ms;
`v_on_alias` exists from 3,000 on, `v_star_of_nested` from 4,000."""

from __future__ import annotations

from pathlib import Path

from .metadata_files import Table, View, schema_of

ADDRESS = {
    "type": "struct",
    "fields": [
        {"id": 20, "name": "city", "required": False, "type": "string"},
        {"id": 21, "name": "zip", "required": False, "type": "string"},
    ],
}
ORDERS = schema_of(
    ("id", "long"),
    ("customer_id", "long"),
    ("amount", "decimal(10, 2)"),
    ("status", "string"),
    ("qty", "int"),
    ("address", ADDRESS),
)
CUSTOMERS = schema_of(("id", "long"), ("name", "string"), ("region", "string"))

VIEWS: dict[str, tuple[str, dict[str, object]]] = {
    "v_star": ("SELECT * FROM db.orders", ORDERS),
    "v_alias": (
        "SELECT id AS order_id, amount AS total FROM db.orders",
        schema_of(("order_id", "long"), ("total", "decimal(10, 2)")),
    ),
    "v_cte": (
        "WITH big AS (SELECT id, amount FROM db.orders WHERE status = 'paid') "
        "SELECT id FROM big WHERE amount > 100",
        schema_of(("id", "long")),
    ),
    "v_join": (
        "SELECT c.name, o.amount FROM db.orders o JOIN db.customers c ON c.id = o.customer_id",
        schema_of(("name", "string"), ("amount", "decimal(10, 2)")),
    ),
    "v_agg": (
        "SELECT customer_id, sum(amount) AS revenue FROM db.orders GROUP BY customer_id",
        schema_of(("customer_id", "long"), ("revenue", "decimal(20, 2)")),
    ),
    "v_window": (
        "SELECT id, rank() OVER (PARTITION BY status ORDER BY amount DESC) AS r FROM db.orders",
        schema_of(("id", "long"), ("r", "int")),
    ),
    "v_struct": (
        "SELECT id, address.city AS city FROM db.orders",
        schema_of(("id", "long"), ("city", "string")),
    ),
    "v_order": ("SELECT id FROM db.orders ORDER BY qty", schema_of(("id", "long"))),
    "v_union": ("SELECT id FROM db.orders UNION ALL SELECT id FROM db.customers", schema_of(("id", "long"))),
    "v_subquery": (
        "SELECT id FROM db.orders WHERE customer_id IN (SELECT id FROM db.customers WHERE region = 'EU')",
        schema_of(("id", "long")),
    ),
    "v_unknown": (
        "SELECT o.status, u.note FROM db.orders o JOIN db.unindexed u ON u.order_id = o.id",
        schema_of(("status", "string"), ("note", "string")),
    ),
}


def build(root: Path) -> None:
    Table(root, "db", "orders", "a1000000-0000-4000-8000-000000000001", schema=ORDERS).commit(1000, 1)
    Table(root, "db", "customers", "a1000000-0000-4000-8000-000000000002", schema=CUSTOMERS).commit(1000, 2)
    for number, (name, (sql, schema)) in enumerate(VIEWS.items(), start=1):
        View(root, "db", name, f"b2000000-0000-4000-8000-{number:012d}", schema=schema).commit(2000, sql)
    on_alias = View(root, "db", "v_on_alias", "c3000000-0000-4000-8000-000000000001",
                    schema=schema_of(("order_id", "long"), ("total", "decimal(10, 2)")))  # fmt: skip
    on_alias.commit(3000, "SELECT order_id, total FROM db.v_alias WHERE total > 0")
    star_of_nested = View(root, "db", "v_star_of_nested", "c3000000-0000-4000-8000-000000000002",
                          schema=schema_of(("order_id", "long"), ("total", "decimal(10, 2)")))  # fmt: skip
    star_of_nested.commit(4000, "SELECT * FROM db.v_on_alias")
