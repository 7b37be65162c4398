"""A warehouse of materialized views in each of the four formats, with commit times the tests
name (epoch ms 100 to 6,000), and the base table `db.events` they read: snapshots S1 at 1,000, S2
at 3,000 (append) and S3 at 5,000 (replace, a compaction)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .metadata_files import Table, View

EVENTS = "11111111-1111-4111-8111-111111111111"
STORE_1 = "22222222-2222-4222-8222-222222222222"
STORE_2 = "33333333-3333-4333-8333-333333333333"
TRINO = "44444444-4444-4444-8444-444444444444"
MV_1 = "55555555-5555-4555-8555-555555555555"
MV_2 = "66666666-6666-4666-8666-666666666666"
PRESTO = "77777777-7777-4777-8777-777777777777"
DIM = "88888888-8888-4888-8888-888888888888"
S1, S2, S3 = 101, 102, 103


def _property_refresh(refresh_id: str, version_id: int, snapshot: int) -> dict[str, Any]:
    return {
        "refresh-id": refresh_id,
        "version-id": version_id,
        "base-tables": [
            {"type": "iceberg-metastore", "identifier": "db.events", "snapshot-reference": snapshot}
        ],
    }


def _refresh_state(view_version: int, snapshot: int, dim_version: int) -> str:
    return json.dumps(
        {
            "view-version-id": view_version,
            "refresh-start-timestamp-ms": 0,
            "source-states": [
                {
                    "type": "table",
                    "name": "events",
                    "namespace": ["db"],
                    "uuid": EVENTS,
                    "snapshot-id": snapshot,
                },
                {"type": "view", "name": "dim", "namespace": ["db"], "uuid": DIM, "version-id": dim_version},
            ],
        }
    )


def build(root: Path) -> None:
    events = Table(root, "db", "events", EVENTS)
    events.commit(1000, S1)
    events.commit(3000, S2, "append")
    events.commit(5000, S3, "replace")

    # Format 1: the MV view names its storage table by location; the storage table's properties
    # list the refreshes and the current one.
    store_1 = Table(root, "db", "mv_one_storage", STORE_1)
    view_1 = View(root, "db", "mv_one", MV_1)
    view_1.properties["materialized_view_metadata"] = json.dumps(
        {"storage-table-location": store_1.location, "allow-stale-data": False, "refresh-strategy": "full"}
    )
    view_1.commit(500, "SELECT id, kind FROM db.events")
    refreshes = [_property_refresh("r1", 1, S1)]
    store_1.properties["materialized_view_metadata"] = json.dumps(
        {"refreshes": refreshes, "current-refresh-id": "r1"}
    )
    store_1.commit(1500)
    refreshes.append(_property_refresh("r2", 1, S2))
    store_1.properties["materialized_view_metadata"] = json.dumps(
        {"refreshes": refreshes, "current-refresh-id": "r2"}
    )
    store_1.commit(4000)
    view_1.commit(6000, "SELECT id FROM db.events")

    # Format 2: the version names its storage table; each refresh is a storage-table snapshot
    # whose summary holds the refresh state, with a view among the sources.
    dim = View(root, "db", "dim", DIM)
    dim.commit(100, "SELECT 1 AS id")
    view_2 = View(root, "db", "mv_two", MV_2)
    view_2.commit(600, "SELECT * FROM db.events JOIN db.dim USING (id)",
                  **{"storage-table": {"namespace": ["db"], "name": "mv_two_storage"}})  # fmt: skip
    store_2 = Table(root, "db", "mv_two_storage", STORE_2)
    store_2.commit(2000, 201, "overwrite", **{"refresh-state": _refresh_state(1, S1, 1)})
    dim.commit(2500, "SELECT 2 AS id")
    store_2.commit(3200, 202, "overwrite", **{"refresh-state": _refresh_state(1, S2, 2)})

    # Format 3: a Trino storage table, addressed by its own name.
    trino = Table(root, "db", "mv_trino", TRINO)
    trino.commit(1200, 301, "append", dependsOnTables=f"db.events={S1}", dependsOnTableFunctions="false",
                 **{"trino-query-start-time": "1970-01-01T00:00:01.100Z"})  # fmt: skip
    trino.commit(5200, 302, "append", dependsOnTables="UNKNOWN", dependsOnTableFunctions="true")

    # Format 4: PrestoDB keeps the base tables and their snapshots in the view's properties.
    presto = View(root, "db", "mv_presto", PRESTO)
    presto.properties.update(
        {
            "presto.materialized_view.base_tables": "db.events,db.missing",
            "presto.materialized_view.base_snapshot.db.events": str(S2),
            "presto.materialized_view.base_snapshot.db.missing": "9",
        }
    )
    presto.commit(3100, "SELECT * FROM db.events")
