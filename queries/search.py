"""Finding views and tables by part of a name: every name a view or table has had (a renamed view
is found by its old name too), best matches first."""

from __future__ import annotations

from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.queries.names import iso, query_rows

MAX_RESULTS = 200


def search(conn: duckdb.DuckDBPyConnection, text: str, limit: int = 50) -> dict[str, Any]:
    """The views and tables one of whose names (`catalog.namespace.name`) holds `text`, compared
    case-insensitively: a name equal to it first, then one ending in it, then the shortest."""
    wanted = text.strip()
    if not wanted:
        raise UsageError("q is empty: give part of a view's or table's name")
    if not 1 <= limit <= MAX_RESULTS:
        raise UsageError(f"limit is 1 to {MAX_RESULTS}, not {limit}")
    rows = query_rows(
        conn,
        """
        WITH named AS (
            SELECT 'view' AS kind, n.view_id AS id, dotted_name(n.catalog, n.name) AS name FROM view_names n
            ANTI JOIN copied_view_names() c
                ON c.view_id = n.view_id AND c.catalog IS NOT DISTINCT FROM n.catalog AND c.name = n.name
            UNION
            SELECT 'table', table_id, dotted_name(catalog, name) FROM table_names
        ),
        found AS (SELECT *, lower(name) AS folded FROM named WHERE contains(lower(name), lower($text)))
        SELECT kind, id, name, count(*) OVER () AS total FROM found
        ORDER BY folded = lower($text) DESC, ends_with(folded, lower($text)) DESC, length(name), name,
                 kind, id
        LIMIT $limit""",
        {"text": wanted, "limit": limit},
    )
    lives = _lives(conn, rows)
    return {
        "q": wanted,
        "total": rows[0]["total"] if rows else 0,
        "results": [
            {**{key: row[key] for key in ("kind", "name", "id")}, **lives[row["id"]]} for row in rows
        ],
    }


def _lives(conn: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """When each found view or table was first committed and, if it was, dropped: what tells apart
    two that held one name (one dropped and created again)."""
    found = query_rows(
        conn,
        """
        WITH found AS (SELECT unnest(?1) AS id, unnest(?2) AS kind)
        SELECT id, (SELECT min(commit_ms) FROM view_files WHERE view_id = id) AS first_ms,
               (SELECT dropped_ms FROM view_drop(id)) AS dropped_ms
        FROM found WHERE kind = 'view'
        UNION ALL
        SELECT id, (SELECT min(commit_ms) FROM table_files WHERE table_id = id),
               (SELECT dropped_ms FROM table_drop(id))
        FROM found WHERE kind = 'table'""",
        [[row["id"] for row in rows], [row["kind"] for row in rows]],
    )
    return {
        row["id"]: {"first_committed_at": iso(row["first_ms"]), "dropped_at": iso(row["dropped_ms"])}
        for row in found
    }
