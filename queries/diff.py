"""Two versions of a view side by side: each dialect's SQL line by line (the rows a side-by-side
diff shows), and what changed in the schema and the defaults."""

from __future__ import annotations

import difflib
from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.queries.names import query_rows, resolve_view, version_copy


def version_diff(
    conn: duckdb.DuckDBPyConnection, ref: str, before_id: int | None = None, after_id: int | None = None
) -> dict[str, Any]:
    """Version `before_id` of view `ref` beside `after_id` (default: the two latest activations;
    a view with one version is compared with nothing)."""
    view = resolve_view(conn, ref)
    activated = [
        row["version_id"]
        for row in query_rows(
            conn,
            "SELECT version_id FROM activations WHERE view_id = ? ORDER BY timestamp_ms, version_id",
            [view.view_id],
        )
    ]
    if after_id is None:
        after_id = activated[-1] if activated else None
    if before_id is None:
        earlier = [v for v in activated[: _last_index(activated, after_id)] if v != after_id]
        before_id = earlier[-1] if earlier else None
    if after_id is None:
        raise UsageError(f"view {view.name} has no activated version")
    before, after = (
        _version(conn, view.view_id, view.name, version_id) if version_id is not None else None
        for version_id in (before_id, after_id)
    )
    assert after is not None
    before_sql = _sql_by_dialect(before)
    after_sql = _sql_by_dialect(after)
    dialects = sorted(before_sql.keys() | after_sql.keys())
    return {
        "view": view.name,
        "view_id": view.view_id,
        "before_version_id": before_id,
        "after_version_id": after_id,
        "dialects": [
            {
                "dialect": dialect,
                "changed": before_sql.get(dialect) != after_sql.get(dialect),
                "rows": side_by_side(before_sql.get(dialect, ""), after_sql.get(dialect, "")),
            }
            for dialect in dialects
        ],
        "columns": _column_changes(before, after),
        "defaults": [
            {"field": field, "before": before.get(field) if before else None, "after": after.get(field)}
            for field in ("default_catalog", "default_namespace", "engine_name", "engine_version")
            if (before.get(field) if before else None) != after.get(field) and (before or after.get(field))
        ],
    }


def line_rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """A diff's SQL lines of every dialect as one table (its CSV and Markdown form)."""
    return [
        {"dialect": dialect["dialect"], **row} for dialect in answer["dialects"] for row in dialect["rows"]
    ]


def _last_index(values: list[int], value: int | None) -> int:
    return max((i for i, v in enumerate(values) if v == value), default=len(values))


def _version(conn: duckdb.DuckDBPyConnection, view_id: str, name: str, version_id: int) -> dict[str, Any]:
    copy = version_copy(conn, view_id, version_id)
    if copy is None:
        raise UsageError(f"view {name} has no stored version {version_id}")
    schema = query_rows(conn, "SELECT columns FROM schemas WHERE schema_hash = ?", [copy["schema_hash"]])
    representations = query_rows(
        conn,
        "SELECT coalesce(dialect, dialect_raw, type) AS dialect, sql FROM representations "
        "WHERE version_hash = ? AND sql IS NOT NULL ORDER BY ordinal",
        [copy["version_hash"]],
    )
    return {
        "default_catalog": copy["default_catalog"],
        "default_namespace": list(copy["default_namespace"] or []),
        "engine_name": copy["engine_name"],
        "engine_version": copy["engine_version"],
        "columns": [dict(column) for column in (schema[0]["columns"] if schema else [])],
        "representations": representations,
    }


def _sql_by_dialect(version: dict[str, Any] | None) -> dict[str, str]:
    return {rep["dialect"]: rep["sql"] for rep in version["representations"]} if version else {}


def side_by_side(before: str, after: str) -> list[dict[str, Any]]:
    """The lines of `before` and `after` aligned: `equal`, `delete` (only before), `insert` (only
    after) and `replace` (a line changed), each with its line numbers on either side."""
    old, new = before.splitlines(), after.splitlines()
    rows: list[dict[str, Any]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            left, right = i1 + k, j1 + k
            has_left, has_right = left < i2, right < j2
            rows.append(
                {
                    "kind": tag
                    if tag != "replace" or (has_left and has_right)
                    else "delete"
                    if has_left
                    else "insert",
                    "before_line": left + 1 if has_left else None,
                    "before": old[left] if has_left else None,
                    "after_line": right + 1 if has_right else None,
                    "after": new[right] if has_right else None,
                }
            )
    return rows


def _column_changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[dict[str, Any]]:
    """Columns added, removed, retyped, made required or optional, re-documented, moved or spelt in
    another case, by name (case-insensitive, as engines resolve them): a view's field ids are given
    afresh with each version (Spark numbers them by position)."""
    old = {column["name"].lower(): (i, column) for i, column in enumerate((before or {}).get("columns", []))}
    new = {column["name"].lower(): (i, column) for i, column in enumerate(after["columns"])}
    changes = []
    for key in [*new, *(key for key in old if key not in new)]:
        (was_at, was), (now_at, now) = old.get(key, (None, None)), new.get(key, (None, None))
        if was is None or now is None:
            what = ["added" if was is None else "removed"]
        else:
            what = [
                change
                for field, change in (
                    ("name", "respelled"),
                    ("type", "retyped"),
                    ("required", "required"),
                    ("doc", "documented"),
                )
                if was.get(field) != now.get(field)
            ] + (["moved"] if was_at != now_at else [])
        name = (now or was or {}).get("name", key)
        if what:
            changes.append(
                {
                    "column": name,
                    "change": ", ".join(what),
                    "before": _described(was),
                    "after": _described(now),
                    "before_position": None if was_at is None else was_at + 1,
                    "after_position": None if now_at is None else now_at + 1,
                }
            )
    return changes


def _described(column: dict[str, Any] | None) -> str | None:
    if column is None:
        return None
    text = f"{column['name']} {column['type']}{' NOT NULL' if column.get('required') else ''}"
    return text + (f" -- {column['doc']}" if column.get("doc") else "")
