"""Real Spark 3.5 + Iceberg 1.10 tables behind two materialized views, refreshed the way the two
Iceberg MV proposals record refreshes, with base-table inserts in between.

    python -m tests.realwriter.spark_mvs "$jars" WAREHOUSE_DIR STEPS_JSON

- Format 1 (`materialized_view_metadata` properties): Spark creates the view `prod.db.mv_one` with
  the property naming its storage table, fills `prod.db.mv_one_storage`, and records each refresh
  in the storage table's properties with `ALTER TABLE ... SET TBLPROPERTIES`.
- Format 2 (the MV spec draft): Spark writes `prod.db.mv_two_storage` with the DataFrame write
  option `snapshot-property.refresh-state`, so the refresh state lands in the snapshot summary. No
  Iceberg release writes a view version's `storage-table`, so the test writes `prod.db.mv_two`'s
  view metadata itself.

STEPS_JSON gets {step name: epoch ms right after the step returned} and the base table's uuid.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from .spark_views import spark_session

MV_ONE_QUERY = "SELECT kind, count(*) AS events FROM prod.db.events GROUP BY kind"


def _head(spark: SparkSession, table: str) -> int:
    rows = spark.sql(
        f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()
    return int(rows[0][0])


def _uuid(warehouse: Path, namespace: str, table: str) -> str:
    newest = sorted((warehouse / namespace / table / "metadata").glob("*.metadata.json"))[-1]
    return str(json.loads(newest.read_text())["table-uuid"])


def _insert(spark: SparkSession, first_id: int, kinds: list[str]) -> None:
    values = ", ".join(f"({first_id + i}, '{kind}')" for i, kind in enumerate(kinds))
    spark.sql(f"INSERT INTO prod.db.events VALUES {values}")


def _refresh_one(spark: SparkSession, refreshes: list[dict[str, Any]], refresh_id: str) -> None:
    """Format 1: materialize, then record the refresh (the base snapshot it read) as current."""
    snapshot = _head(spark, "prod.db.events")
    spark.sql(f"INSERT OVERWRITE prod.db.mv_one_storage {MV_ONE_QUERY}")
    refreshes.append(
        {
            "refresh-id": refresh_id,
            "version-id": 1,
            "base-tables": [
                {"type": "iceberg-metastore", "identifier": "db.events", "snapshot-reference": snapshot}
            ],
        }
    )
    metadata = json.dumps({"refreshes": refreshes, "current-refresh-id": refresh_id}).replace("'", "\\'")
    spark.sql(
        f"ALTER TABLE prod.db.mv_one_storage SET TBLPROPERTIES ('materialized_view_metadata' = '{metadata}')"
    )


def _refresh_two(spark: SparkSession, events_uuid: str) -> None:
    """Format 2: the storage table's new snapshot carries the refresh state in its summary."""
    started = time.time_ns() // 1_000_000
    state = {
        "view-version-id": 1,
        "refresh-start-timestamp-ms": started,
        "source-states": [
            {
                "type": "table",
                "name": "events",
                "namespace": ["db"],
                "uuid": events_uuid,
                "snapshot-id": _head(spark, "prod.db.events"),
            }
        ],
    }
    rows = spark.sql("SELECT kind, count(*) AS events FROM prod.db.events GROUP BY kind")
    rows.writeTo("prod.db.mv_two_storage").option(
        "snapshot-property.refresh-state", json.dumps(state)
    ).overwritePartitions()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("jars")
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("steps", type=Path)
    args = parser.parse_args(argv)
    warehouse: Path = args.warehouse.resolve()
    spark = spark_session(args.jars, warehouse, "viewlineage-mvs")
    steps: dict[str, Any] = {}

    def step(name: str) -> None:
        steps[name] = time.time_ns() // 1_000_000
        time.sleep(0.05)  # distinct commit times between steps

    try:
        spark.sql("CREATE NAMESPACE prod.db")
        spark.sql("CREATE TABLE prod.db.events (id bigint, kind string) USING iceberg")
        _insert(spark, 1, ["view", "click", "view"])
        step("events-1")
        spark.sql("CREATE TABLE prod.db.mv_one_storage (kind string, events bigint) USING iceberg")
        location = spark.sql("DESCRIBE TABLE EXTENDED prod.db.mv_one_storage").where("col_name = 'Location'")
        storage_location = location.collect()[0]["data_type"]
        mv_metadata = json.dumps({"storage-table-location": storage_location, "allow-stale-data": True})
        spark.sql(
            f"CREATE VIEW prod.db.mv_one TBLPROPERTIES ('materialized_view_metadata' = '{mv_metadata}') "
            f"AS {MV_ONE_QUERY}"
        )
        spark.sql("CREATE TABLE prod.db.mv_two_storage (kind string, events bigint) USING iceberg")
        step("created")
        events_uuid = _uuid(warehouse, "db", "events")
        refreshes: list[dict[str, Any]] = []
        _refresh_one(spark, refreshes, "r1")
        _refresh_two(spark, events_uuid)
        step("refreshed-1")
        _insert(spark, 10, ["purchase"])
        step("events-2")
        _refresh_one(spark, refreshes, "r2")
        step("mv-one-refreshed-2")
        _refresh_two(spark, events_uuid)
        step("mv-two-refreshed-2")
        spark.sql(
            "CALL prod.system.rewrite_data_files(table => 'db.events', options => map('rewrite-all', 'true'))"
        )
        step("events-compacted")
    finally:
        spark.stop()
    args.steps.write_text(json.dumps({"steps": steps, "events_uuid": events_uuid}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
