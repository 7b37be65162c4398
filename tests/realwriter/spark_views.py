"""Writes a sample Iceberg warehouse with real Spark + Iceberg (Java) view metadata.

    jars=$(/work/shared/iceberg-spark/setup.sh .cache/iceberg-spark | tail -1)
    python -m tests.realwriter.spark_views "$jars" /tmp/vl-spark-wh tests/data/sample

Runs a fixed scenario of SQL statements (namespaces, tables, inserts, a view replaced more than ten
times, views on views across namespaces, property-only commits, a drop and re-create) against
Iceberg's JDBC catalog on a sqlite file inside WAREHOUSE_DIR, and records what the reference
implementation wrote.

Why files are captured after every step instead of copying the warehouse at the end: on DROP VIEW,
Iceberg (CatalogUtil.dropViewMetadata, gc.enabled defaults to true) deletes the view's current metadata
file and its .crc, so the dropped view's last state would be lost; its older metadata files stay on disk
as orphans. Capturing per step also ties every file to the statement that wrote it. After each
statement returns, every file whose name contains ``metadata.json`` (view metadata
``NNNNN-<uuid>.gz.metadata.json``, table metadata ``NNNNN-<uuid>.metadata.json`` and Hadoop's
``.<name>.crc`` side files) not seen before is copied to OUT_DIR/warehouse/<relative path> with
``shutil.copy2`` (mtime kept). Nothing else is copied: no data or manifest files, no sqlite catalog.

OUT_DIR also gets:
- ``mtimes.json``: {relative path: st_mtime_ns of the original file}, since git does not keep mtimes;
- ``steps.json``: [{"step", "sql", "finished_ms", "new_files"}], ``finished_ms`` being epoch
  milliseconds taken right after the statement returned, ``new_files`` the paths first seen after it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from textwrap import dedent
from typing import Any

from pyspark.sql import SparkSession

STEP_PAUSE_S = 0.05


def _sql(text: str) -> str:
    return dedent(text).strip()


EVENTS_BATCH_1 = _sql("""
    INSERT INTO prod.db.events VALUES
      (1, TIMESTAMP '2026-03-02 08:15:00', 'view:page'),
      (2, TIMESTAMP '2026-03-02 08:16:30', 'click:button'),
      (3, TIMESTAMP '2026-03-02 09:01:10', 'purchase:checkout'),
      (4, TIMESTAMP '2026-03-02 23:59:59', 'heartbeat'),
      (5, TIMESTAMP '2026-03-03 10:00:00', 'view:page'),
      (6, TIMESTAMP '2026-03-03 10:05:00', 'view:search'),
      (7, TIMESTAMP '2026-03-03 10:07:45', 'click:link'),
      (8, TIMESTAMP '2026-03-04 17:30:00', 'heartbeat')
""")

EVENTS_BATCH_2 = _sql("""
    INSERT INTO prod.db.events VALUES
      (9, TIMESTAMP '2026-03-04 18:00:00', 'view:page'),
      (10, TIMESTAMP '2026-03-04 18:02:00', 'click:button'),
      (11, TIMESTAMP '2026-03-04 18:03:00', 'purchase:checkout'),
      (12, TIMESTAMP '2026-03-05 07:45:00', 'view:page'),
      (13, NULL, 'view:page')
""")

# The scenario. Every entry is one statement, executed in order and recorded as one step.
SCENARIO: list[str] = [
    # Namespaces, one of them two levels deep.
    "CREATE NAMESPACE prod.db COMMENT 'Product analytics'",
    "CREATE NAMESPACE prod.sales WITH DBPROPERTIES ('team' = 'sales-eng')",
    "CREATE NAMESPACE prod.acme.finance COMMENT 'Finance reporting for ACME'",
    # Tables and data.
    _sql("""
        CREATE TABLE prod.db.events (id bigint, event_ts timestamp, kind string)
        USING iceberg
        PARTITIONED BY (days(event_ts))
    """),
    _sql("""
        CREATE TABLE prod.sales.orders (
          order_id bigint,
          customer_id bigint,
          amount decimal(10,2),
          order_ts timestamp)
        USING iceberg
        TBLPROPERTIES ('write.format.default' = 'parquet')
    """),
    "CREATE TABLE prod.sales.customers (customer_id bigint, name string, region string) USING iceberg",
    EVENTS_BATCH_1,
    _sql("""
        INSERT INTO prod.sales.customers VALUES
          (100, 'Initech', 'AMER'),
          (101, 'Umbrella', 'EMEA'),
          (102, 'Globex', 'APAC'),
          (103, 'Hooli', 'AMER')
    """),
    _sql("""
        INSERT INTO prod.sales.orders VALUES
          (5000, 100, 120.00, TIMESTAMP '2026-03-02 09:01:00'),
          (5001, 101, 75.50, TIMESTAMP '2026-03-02 11:20:00'),
          (5002, 100, 42.10, TIMESTAMP '2026-03-03 14:00:00'),
          (5003, 102, 980.00, TIMESTAMP '2026-03-04 18:03:00')
    """),
    # event_agg version 1: created while the current catalog is still spark_catalog.
    _sql("""
        CREATE VIEW prod.db.event_agg (event_count COMMENT 'Count of events', event_date)
        COMMENT 'Daily event counts'
        AS SELECT COUNT(1), CAST(event_ts AS DATE) FROM prod.db.events GROUP BY 2
    """),
    "USE prod.db",
    # event_agg version 2: filter.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg (
          event_count COMMENT 'Count of events, heartbeats excluded',
          event_date COMMENT 'UTC calendar day')
        COMMENT 'Daily event counts'
        AS SELECT COUNT(*), to_date(event_ts)
        FROM prod.db.events
        WHERE kind <> 'heartbeat'
        GROUP BY to_date(event_ts)
    """),
    EVENTS_BATCH_2,
    # event_agg version 3: unqualified table name, resolved through the current namespace prod.db.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg
        COMMENT 'Daily event counts per kind'
        AS SELECT CAST(event_ts AS DATE) AS event_date, kind, COUNT(*) AS event_count
        FROM events
        WHERE event_ts IS NOT NULL
        GROUP BY 1, 2
    """),
    # View on a view; `event_agg` is unqualified and resolves through the current namespace.
    "CREATE VIEW prod.db.big_days AS SELECT * FROM event_agg WHERE event_count > 2",
    # event_agg version 4: CTE.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg
        COMMENT 'Daily distinct events'
        AS WITH clean AS (
          SELECT id, event_ts, lower(trim(kind)) AS kind
          FROM prod.db.events
          WHERE event_ts IS NOT NULL AND kind <> 'heartbeat'
        )
        SELECT to_date(event_ts) AS event_date, COUNT(DISTINCT id) AS event_count
        FROM clean
        GROUP BY to_date(event_ts)
    """),
    "USE prod.sales",
    _sql("""
        CREATE VIEW prod.sales.customer_revenue (
          customer_id,
          name,
          region,
          revenue COMMENT 'Sum of order amounts',
          order_count,
          last_order_ts)
        COMMENT 'Lifetime revenue per customer'
        AS WITH paid AS (
          SELECT customer_id, SUM(amount) AS revenue, COUNT(*) AS order_count, MAX(order_ts) AS last_order_ts
          FROM orders
          GROUP BY customer_id
        )
        SELECT c.customer_id, c.name, c.region,
               COALESCE(p.revenue, 0), COALESCE(p.order_count, 0), p.last_order_ts
        FROM customers c
        LEFT JOIN paid p ON p.customer_id = c.customer_id
    """),
    # Window functions.
    _sql("""
        CREATE VIEW prod.sales.order_rank
        COMMENT 'Orders ranked per customer, with running totals'
        AS SELECT order_id, customer_id, amount, order_ts,
               RANK() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS amount_rank,
               SUM(amount) OVER (
                 PARTITION BY customer_id ORDER BY order_ts
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_total
        FROM prod.sales.orders
    """),
    # event_agg version 5: two CTEs joined to the sales schema, written while prod.sales is current.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg
        COMMENT 'Daily events next to daily orders'
        AS WITH daily_events AS (
          SELECT to_date(event_ts) AS event_date, COUNT(*) AS event_count
          FROM prod.db.events
          WHERE event_ts IS NOT NULL
          GROUP BY 1
        ), daily_orders AS (
          SELECT to_date(order_ts) AS order_date, COUNT(*) AS order_count, SUM(amount) AS revenue
          FROM prod.sales.orders
          GROUP BY 1
        )
        SELECT e.event_date, e.event_count, COALESCE(o.order_count, 0) AS order_count, o.revenue
        FROM daily_events e
        LEFT JOIN daily_orders o ON o.order_date = e.event_date
    """),
    "ALTER VIEW prod.db.big_days SET TBLPROPERTIES ('team' = 'growth-team', 'refresh' = 'daily')",
    # event_agg version 6: HAVING.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg (event_date, event_count COMMENT 'Events on busy days')
        AS SELECT to_date(event_ts), COUNT(*)
        FROM prod.db.events
        WHERE event_ts IS NOT NULL
        GROUP BY to_date(event_ts)
        HAVING COUNT(*) > 1
    """),
    # A view in the two-level namespace reading a view in another namespace and a scalar subquery.
    _sql("""
        CREATE VIEW prod.acme.finance.revenue_by_region
        COMMENT 'Revenue per region with the busiest event day for context'
        AS SELECT r.region,
               SUM(r.revenue) AS revenue,
               SUM(r.order_count) AS order_count,
               (SELECT MAX(event_count) FROM prod.db.event_agg) AS peak_daily_events
        FROM prod.sales.customer_revenue r
        GROUP BY r.region
    """),
    "ALTER VIEW prod.db.big_days SET TBLPROPERTIES ('refresh' = 'hourly', 'sla_minutes' = '30')",
    # event_agg version 7: conditional aggregation.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg
        COMMENT 'Daily events split by kind'
        AS SELECT to_date(event_ts) AS event_date,
               COUNT(*) AS event_count,
               SUM(CASE WHEN kind LIKE 'view:%' THEN 1 ELSE 0 END) AS views,
               SUM(CASE WHEN kind LIKE 'click:%' THEN 1 ELSE 0 END) AS clicks,
               SUM(CASE WHEN kind LIKE 'purchase:%' THEN 1 ELSE 0 END) AS purchases
        FROM prod.db.events
        WHERE event_ts IS NOT NULL
        GROUP BY to_date(event_ts)
    """),
    _sql("""
        INSERT INTO prod.sales.orders VALUES
          (5004, 103, 15.25, TIMESTAMP '2026-03-05 08:00:00'),
          (5005, 101, 310.00, TIMESTAMP '2026-03-05 09:30:00')
    """),
    # event_agg version 8: window function over an aggregate subquery.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg
        COMMENT 'Daily events with a 7-day rolling sum'
        AS SELECT event_date, event_count,
               SUM(event_count) OVER (ORDER BY event_date ROWS BETWEEN 6 PRECEDING AND CURRENT ROW)
                 AS rolling_7d
        FROM (
          SELECT to_date(event_ts) AS event_date, COUNT(*) AS event_count
          FROM prod.db.events
          WHERE event_ts IS NOT NULL
          GROUP BY to_date(event_ts)
        ) daily
    """),
    "ALTER VIEW prod.db.big_days UNSET TBLPROPERTIES ('sla_minutes')",
    # Spark-specific syntax: LATERAL VIEW explode.
    _sql("""
        CREATE VIEW prod.db.event_tags
        COMMENT 'One row per kind component'
        AS SELECT e.id, e.event_ts, t.pos, t.tag
        FROM prod.db.events e
        LATERAL VIEW posexplode(split(e.kind, ':')) t AS pos, tag
    """),
    # event_agg version 9: join through orders to customers.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg
        COMMENT 'Daily events and the regions that ordered that day'
        AS SELECT to_date(e.event_ts) AS event_date,
               COUNT(DISTINCT e.id) AS event_count,
               COUNT(DISTINCT c.region) AS ordering_regions
        FROM prod.db.events e
        LEFT JOIN prod.sales.orders o ON to_date(o.order_ts) = to_date(e.event_ts)
        LEFT JOIN prod.sales.customers c ON c.customer_id = o.customer_id
        WHERE e.event_ts IS NOT NULL
        GROUP BY to_date(e.event_ts)
    """),
    "USE prod.db",
    "DROP VIEW prod.db.big_days",
    # event_agg version 10: UNION ALL of two sources.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg
        COMMENT 'Daily activity: events and orders'
        AS SELECT event_date, SUM(n) AS event_count
        FROM (
          SELECT to_date(event_ts) AS event_date, 1 AS n FROM events WHERE event_ts IS NOT NULL
          UNION ALL
          SELECT to_date(order_ts) AS event_date, 1 AS n FROM prod.sales.orders
        ) activity
        GROUP BY event_date
    """),
    # big_days again: same path, new view uuid, different SQL.
    _sql("""
        CREATE VIEW prod.db.big_days (event_date, event_count COMMENT 'Events that day')
        COMMENT 'Days with more than three events'
        TBLPROPERTIES ('team' = 'growth-team')
        AS SELECT event_date, event_count
        FROM event_agg
        WHERE event_count > 3
        ORDER BY event_date
    """),
    # event_agg version 11: local time zone.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg
        COMMENT 'Daily event counts, Berlin calendar days'
        AS SELECT to_date(from_utc_timestamp(event_ts, 'Europe/Berlin')) AS event_date,
               COUNT(*) AS event_count
        FROM prod.db.events
        WHERE event_ts IS NOT NULL
        GROUP BY 1
    """),
    # revenue_by_region version 2: UNION ALL with a total row.
    _sql("""
        CREATE OR REPLACE VIEW prod.acme.finance.revenue_by_region
        COMMENT 'Revenue per region plus a total row'
        AS SELECT region, SUM(revenue) AS revenue, SUM(order_count) AS order_count,
               CAST(NULL AS BIGINT) AS peak_daily_events
        FROM prod.sales.customer_revenue
        GROUP BY region
        UNION ALL
        SELECT 'ALL', SUM(revenue), SUM(order_count),
               (SELECT MAX(event_count) FROM prod.db.event_agg)
        FROM prod.sales.customer_revenue
    """),
    # event_agg version 12: view properties given at replace time.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg (event_count COMMENT 'Count of events', event_date)
        COMMENT 'Daily event counts'
        TBLPROPERTIES ('team' = 'analytics', 'tier' = 'gold')
        AS SELECT COUNT(*), to_date(event_ts)
        FROM prod.db.events
        WHERE event_ts IS NOT NULL AND kind NOT IN ('heartbeat')
        GROUP BY to_date(event_ts)
    """),
    # customer_revenue version 2.
    _sql("""
        CREATE OR REPLACE VIEW prod.sales.customer_revenue
        COMMENT 'Lifetime revenue per customer, customers with orders only'
        AS WITH paid AS (
          SELECT customer_id, SUM(amount) AS revenue, COUNT(*) AS order_count, MAX(order_ts) AS last_order_ts
          FROM prod.sales.orders
          WHERE amount > 0
          GROUP BY customer_id
        )
        SELECT c.customer_id, c.name, c.region, p.revenue, p.order_count, p.last_order_ts
        FROM prod.sales.customers c
        JOIN paid p USING (customer_id)
    """),
    # event_agg version 13, the last: 13 versions in all, so the oldest have expired.
    _sql("""
        CREATE OR REPLACE VIEW prod.db.event_agg (
          event_date COMMENT 'UTC calendar day',
          event_count COMMENT 'Count of events',
          distinct_kinds)
        COMMENT 'Daily event counts'
        AS WITH typed AS (
          SELECT to_date(event_ts) AS event_date, split(kind, ':')[0] AS kind_family
          FROM events
          WHERE event_ts IS NOT NULL
        )
        SELECT event_date, COUNT(*), COUNT(DISTINCT kind_family)
        FROM typed
        GROUP BY event_date
    """),
]

# Read after the scenario to check that every view still resolves; not recorded as steps.
FINAL_VIEWS = [
    "prod.db.event_agg",
    "prod.db.big_days",
    "prod.db.event_tags",
    "prod.sales.customer_revenue",
    "prod.sales.order_rank",
    "prod.acme.finance.revenue_by_region",
]


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("jars", help="value for spark.jars (last line of iceberg-spark/setup.sh)")
    parser.add_argument("warehouse", type=Path, help="warehouse directory to create (must be empty)")
    parser.add_argument("out_dir", type=Path, help="where to write warehouse/, mtimes.json, steps.json")
    return parser.parse_args(argv)


def _require_empty(path: Path) -> None:
    if path.exists() and any(path.iterdir()):
        raise SystemExit(f"{path} is not empty; remove it first so the run starts clean")


def spark_session(jars: str, warehouse: Path, app: str = "viewlineage-realwriter") -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.jars", jars)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.prod", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.prod.type", "jdbc")
        .config("spark.sql.catalog.prod.uri", f"jdbc:sqlite:{warehouse}/catalog.db")
        .config("spark.sql.catalog.prod.jdbc.schema-version", "V1")
        .config("spark.sql.catalog.prod.warehouse", warehouse.as_uri())
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _capture_new_files(warehouse: Path, out_warehouse: Path, mtimes: dict[str, int]) -> list[str]:
    """Copies metadata files (and their .crc files) not captured yet; returns their relative paths."""
    new_files: list[str] = []
    for path in sorted(warehouse.rglob("*")):  # pathlib's glob includes dot files such as .crc
        if "metadata.json" not in path.name or not path.is_file():
            continue
        rel = path.relative_to(warehouse).as_posix()
        mtime_ns = path.stat().st_mtime_ns
        if rel in mtimes:
            if mtimes[rel] != mtime_ns:
                raise RuntimeError(f"{rel} was rewritten in place after it was captured")
            continue
        dest = out_warehouse / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
        mtimes[rel] = mtime_ns
        new_files.append(rel)
    return new_files


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    warehouse: Path = args.warehouse.resolve()
    out_dir: Path = args.out_dir.resolve()
    _require_empty(warehouse)
    _require_empty(out_dir)
    warehouse.mkdir(parents=True, exist_ok=True)
    out_warehouse = out_dir / "warehouse"
    out_warehouse.mkdir(parents=True, exist_ok=True)

    mtimes: dict[str, int] = {}
    steps: list[dict[str, Any]] = []
    spark = spark_session(args.jars, warehouse)
    try:
        for number, statement in enumerate(SCENARIO, start=1):
            spark.sql(statement)
            finished_ms = time.time_ns() // 1_000_000
            new_files = _capture_new_files(warehouse, out_warehouse, mtimes)
            steps.append(
                {"step": number, "sql": statement, "finished_ms": finished_ms, "new_files": new_files}
            )
            print(
                f"step {number:2d}: {len(new_files)} new file(s): {statement.splitlines()[0]}",
                file=sys.stderr,
            )
            time.sleep(STEP_PAUSE_S)
        for view in FINAL_VIEWS:
            rows = spark.sql(f"SELECT COUNT(*) FROM {view}").collect()[0][0]
            print(f"{view}: {rows} row(s)", file=sys.stderr)
    finally:
        spark.stop()

    _write_json(out_dir / "mtimes.json", dict(sorted(mtimes.items())))
    _write_json(out_dir / "steps.json", steps)
    print(f"captured {len(mtimes)} file(s) in {len(steps)} steps into {out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
