"""A table over time: its snapshots (what each commit did, when each became main's current one)
and the evolution of its schema, field by field.

Iceberg keeps every schema a table ever had in each metadata file, and field ids that survive
renames: schemas are compared by field id, so a rename is told from a drop and an add even when
only the newest metadata file was indexed.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.queries.api import indexed_table, table_dropped, table_incarnations
from viewlineage.queries.names import iso, query_rows

SNAPSHOT_COUNTS = {
    "added-records": "added_records",
    "deleted-records": "deleted_records",
    "total-records": "total_records",
    "added-data-files": "added_files",
    "deleted-data-files": "deleted_files",
    "total-data-files": "total_files",
}
"""Snapshot summary counts (Iceberg's names) and the fields that carry them."""
MAX_PAGE = 500


def table_history(
    conn: duckdb.DuckDBPyConnection, ref: str, limit: int = 50, offset: int = 0, as_of_ms: int | None = None
) -> dict[str, Any]:
    """The table's snapshots the store knows, newest first, a page (`offset`, `offset + limit`) at a
    time, with their count, commits per day and operation, and the records at each day's end (as
    the day's last snapshot summary counts them); the times main's current snapshot
    changed on that page's span (a rollback makes an older one current again); and each schema with
    what changed from the one before it. `as_of_ms` says which table a name means (a table dropped
    and created again at its path is another): the one that held it then; its whole history."""
    if not 1 <= limit <= MAX_PAGE:
        raise UsageError(f"limit is 1 to {MAX_PAGE}, not {limit}")
    if offset < 0:
        raise UsageError(f"offset is 0 or more, not {offset}")
    resolved = indexed_table(conn, ref, as_of_ms)
    (answer,) = query_rows(
        conn,
        """
        WITH known AS MATERIALIZED (
            -- One row per snapshot id (a snapshot's copies in several files are one commit).
            SELECT snapshot_id, any_value(parent_snapshot_id) AS parent_snapshot_id,
                   any_value(sequence_number) AS sequence_number, min(timestamp_ms) AS committed_ms,
                   any_value(operation) AS operation, any_value(schema_id) AS schema_id,
                   any_value(summary) AS summary
            FROM snapshots WHERE table_id = $table GROUP BY snapshot_id
        ),
        dated AS (  -- times a timestamp can show (past year 9999 they are findings, not days)
            SELECT *, strftime(make_timestamp(committed_ms * 1000), '%Y-%m-%d') AS day FROM known
            WHERE committed_ms BETWEEN -62135596800000 AND 253402300799999
        )
        SELECT
            (SELECT count(*) FROM known) AS total,
            (SELECT list(row_data) FROM (
                SELECT {'snapshot_id': snapshot_id, 'parent_snapshot_id': parent_snapshot_id,
                        'sequence_number': sequence_number, 'committed_ms': committed_ms,
                        'operation': operation, 'schema_id': schema_id, 'summary': summary} AS row_data
                FROM known ORDER BY committed_ms DESC, snapshot_id DESC LIMIT $limit OFFSET $offset))
                AS page,
            (SELECT list({'day': day, 'operation': operation, 'commits': commits} ORDER BY day, operation)
             FROM (SELECT day, operation, count(*) AS commits FROM dated GROUP BY ALL)) AS by_day,
            (SELECT list({'day': day, 'total_records': total_records} ORDER BY day) FROM (
                SELECT day, arg_max(CASE WHEN regexp_full_match(trim(summary['total-records']), '[0-9]+')
                                         THEN TRY_CAST(trim(summary['total-records']) AS BIGINT) END,
                                    committed_ms) AS total_records
                FROM dated GROUP BY day)) AS records_by_day,
            (SELECT list({'made_current_ms': timestamp_ms, 'snapshot_id': snapshot_id}
                         ORDER BY timestamp_ms DESC, snapshot_id DESC) FROM (
                SELECT DISTINCT timestamp_ms, snapshot_id FROM snapshot_log WHERE table_id = $table
                ORDER BY timestamp_ms DESC LIMIT $limit OFFSET $offset)) AS main_history,
            (SELECT count(*) FROM (SELECT DISTINCT timestamp_ms, snapshot_id FROM snapshot_log
                                   WHERE table_id = $table)) AS main_history_total
        """,
        {"table": resolved.table_id, "limit": limit, "offset": offset},
    )
    drop = table_dropped(conn, resolved.table_id)
    dropped_ms = drop["dropped_ms"] if drop else None
    return {
        "table": resolved.name,
        "table_id": resolved.table_id,
        "dropped_ms": dropped_ms,
        "dropped_at": iso(dropped_ms),
        "dropped_source": drop["source"] if drop else None,
        "total": answer["total"],
        "limit": limit,
        "offset": offset,
        "snapshots": [_snapshot(row) for row in answer["page"] or []],
        "by_day": answer["by_day"] or [],
        "records_by_day": answer["records_by_day"] or [],
        "main_history": [
            {**row, "made_current_at": iso(row["made_current_ms"])} for row in answer["main_history"] or []
        ],
        "main_history_total": answer["main_history_total"],
        "schemas": _schemas(conn, resolved.table_id),
        "incarnations": table_incarnations(conn, resolved.table_id),
    }


def _snapshot(row: dict[str, Any]) -> dict[str, Any]:
    summary = dict(row.pop("summary") or {})
    counts = {field: _count(summary.get(key)) for key, field in SNAPSHOT_COUNTS.items()}
    committed_ms = row.pop("committed_ms")
    return {
        "committed_at": iso(committed_ms),
        "committed_ms": committed_ms,
        **row,
        **counts,
        "summary": summary,
    }


def _count(text: str | None) -> int | None:
    """A summary count (Iceberg writes them as strings); None when absent or not a count (digits
    that fit a BIGINT, as `records_by_day` reads them in SQL: not `0x10`, `1.5`, `-5` or `²`)."""
    if text is None or not _DIGITS.fullmatch(text.strip()):
        return None
    value = int(text.strip())
    return value if value < 2**63 else None


_DIGITS = re.compile(r"[0-9]+")


def _schemas(conn: duckdb.DuckDBPyConnection, table_id: str) -> list[dict[str, Any]]:
    """The table's current schema over time, each with its changes from the one current before it:
    as its indexed metadata files made each current (a change back to an earlier schema included),
    after the schemas only the files' schema lists know of, by id (Iceberg numbers them in order),
    dated by their first snapshot."""
    listed = query_rows(
        conn,
        """
        SELECT t.schema_id, any_value(t.schema_hash) AS schema_hash, min(s.timestamp_ms) AS since_ms
        FROM table_schemas t LEFT JOIN snapshots s ON s.table_id = t.table_id AND s.schema_id = t.schema_id
        WHERE t.table_id = ? GROUP BY t.schema_id ORDER BY t.schema_id""",
        [table_id],
    )
    filed = query_rows(
        conn,
        """
        SELECT commit_ms AS since_ms, current_schema_id AS schema_id, current_schema_hash AS schema_hash
        FROM (SELECT *, lag(current_schema_hash) OVER (
                  ORDER BY commit_ms NULLS FIRST, coalesce(sequence_number, -1), location) AS before
              FROM table_files WHERE table_id = ?)
        WHERE before IS DISTINCT FROM current_schema_hash AND current_schema_hash IS NOT NULL
        ORDER BY commit_ms NULLS FIRST, coalesce(sequence_number, -1), location""",
        [table_id],
    )
    first = filed[0]["schema_id"] if filed else None
    seen = {row["schema_id"] for row in filed}
    earlier = [
        row for row in listed if row["schema_id"] not in seen and (first is None or row["schema_id"] < first)
    ]
    fields = query_rows(
        conn,
        "SELECT schema_hash, field_id, parent_id, path, type, required, doc FROM schema_fields "
        "WHERE schema_hash IN (SELECT schema_hash FROM table_schemas WHERE table_id = ?)",
        [table_id],
    )
    by_schema: dict[str, dict[int, dict[str, Any]]] = {}
    for field in fields:
        by_schema.setdefault(field["schema_hash"], {})[field["field_id"]] = field
    evolution = []
    previous: dict[int, dict[str, Any]] | None = None
    for schema in [*earlier, *filed]:
        now = by_schema.get(schema["schema_hash"], {})
        evolution.append(
            {
                "schema_id": schema["schema_id"],
                "since_ms": schema["since_ms"],
                "since": iso(schema["since_ms"]),
                "columns": sum(1 for field in now.values() if len(field["path"]) == 1),
                "changes": [] if previous is None else _changes(previous, now),
            }
        )
        previous = now
    return evolution


def _changes(before: dict[int, dict[str, Any]], after: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """What changed between two schemas, field by field (by id, so a rename is one change): a
    struct renamed, added or removed is one change, not one more for each field in it."""
    changes = []
    for field_id in sorted(before.keys() | after.keys()):
        old, new = before.get(field_id), after.get(field_id)
        column = ".".join((new or old or {})["path"])
        if old is None or new is None:
            parent = (new or old or {})["parent_id"]
            if parent is not None and (parent in before) != (parent in after):
                continue  # its struct, list or map was added or removed
            changes.append(
                _change("added", field_id, column, None, new["type"])
                if new is not None
                else _change("removed", field_id, column, old["type"] if old else None, None)
            )
            continue
        if old["path"][-1] != new["path"][-1]:  # not a field of a renamed struct
            changes.append(_change("renamed", field_id, column, ".".join(old["path"]), column))
        if old["type"] != new["type"]:
            changes.append(_change("retyped", field_id, column, old["type"], new["type"]))
        if old["required"] != new["required"]:
            kind = "made-required" if new["required"] else "made-optional"
            changes.append(_change(kind, field_id, column, None, None))
        if old["doc"] != new["doc"]:
            changes.append(_change("documented", field_id, column, old["doc"], new["doc"]))
    return changes


def _change(kind: str, field_id: int, column: str, before: Any, after: Any) -> dict[str, Any]:
    return {"change": kind, "field_id": field_id, "column": column, "before": before, "after": after}


def described(change: dict[str, Any]) -> str:
    """A schema change in words: `added c (int)`, `renamed a -> b`, `retyped c: int -> long`."""
    kind, column, before, after = change["change"], change["column"], change["before"], change["after"]
    if kind == "added":
        return f"added {column} ({after})"
    if kind == "removed":
        return f"removed {column} ({before})"
    if kind == "renamed":
        return f"renamed {before} -> {after}"
    if kind == "retyped":
        return f"retyped {column}: {before} -> {after}"
    return f"{kind} {column}"
