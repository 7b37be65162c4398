"""The Python API over a store: thin typed functions over the SQL macros in `queries/sql/`.

Every function takes a (read-only) connection. Times are epoch milliseconds in, and both epoch ms
and ISO-8601 UTC out; `parse_time` turns user input (ISO-8601, naive = UTC, or epoch ms) into ms.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.locations import normalize_location

FOREVER_MS = 2**62
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def parse_time(text: str) -> int:
    """Epoch ms from ISO-8601 (a naive time is UTC) or from an integer of epoch ms.

    >>> parse_time("2019-11-12T00:27:11.292"), parse_time("1573518431292")
    (1573518431292, 1573518431292)
    """
    text = text.strip()
    if re.fullmatch(r"-?\d{10,}", text):
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"not an ISO-8601 time or epoch ms: {text!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def iso(ms: int | None) -> str | None:
    """ISO-8601 UTC with milliseconds."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def display_name(catalog: str | None, name: list[str] | None, view_id: str) -> str:
    if not name:
        return view_id
    return ".".join(([catalog] if catalog else []) + list(name))


@dataclass(frozen=True, slots=True)
class ResolvedView:
    view_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ResolvedTable:
    table_id: str
    name: str


def query_rows(
    conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None
) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, params or [])
    columns = [d[0] for d in cursor.description or []]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def resolve_view(conn: duckdb.DuckDBPyConnection, ref: str, at_ms: int | None = None) -> ResolvedView:
    """A view by uuid, `loc:` id, file or view location, or name: `catalog.ns.view`, or any tail of
    it (`ns.view`, `view`) that names one view; `/` also separates. A name resolves to the uuid that
    held it at `at_ms` (default: the latest)."""
    at = FOREVER_MS if at_ms is None else at_ms
    text = ref.strip()
    if _UUID.match(text.lower()) or text.startswith("loc:"):
        rows = query_rows(
            conn,
            "SELECT view_id, catalog, name FROM view_names WHERE view_id = ?",
            [text.lower() if not text.startswith("loc:") else text],
        )
    elif "://" in text or text.startswith(("/", "file:", ".")):
        location = normalize_location(text).rstrip("/")
        rows = query_rows(
            conn,
            """
            SELECT DISTINCT view_id, catalog, name FROM view_files
            WHERE location = ?1 OR rtrim(metadata_location, '/') IN (?1, ?2)
               OR location LIKE ?1 || '/metadata/%'""",
            [location, text.rstrip("/")],
        )
    else:
        rows = _holders(conn, _named(conn, "view", text), at)
    if not rows:
        raise UsageError(f"no view {ref!r} in the store")
    if len(rows) > 1:
        listed = ", ".join(
            f"{display_name(r['catalog'], r['name'], r['view_id'])} ({r['view_id']})" for r in rows
        )
        raise UsageError(f"{ref!r} is ambiguous: {listed}")
    row = rows[0]
    return ResolvedView(row["view_id"], display_name(row["catalog"], row["name"], row["view_id"]))


def _named(conn: duckdb.DuckDBPyConnection, kind: str, text: str) -> list[dict[str, Any]]:
    """Views or tables (`kind`) with a name whose tail is `text` (`.` or `/` between parts)."""
    parts = [part.lower() for part in re.split(r"[./]", text) if part]
    return query_rows(
        conn,
        f"""
        SELECT {kind}_id, catalog, name FROM (
            SELECT *, list_concat(CASE WHEN catalog IS NULL THEN [] ELSE [catalog] END, name) AS full_name
            FROM {kind}_names)
        WHERE len(full_name) >= len(?1) AND list_slice(full_name, -len(?1), -1) = ?1
        ORDER BY ALL""",
        [parts],
    )


def resolve_table(conn: duckdb.DuckDBPyConnection, ref: str) -> ResolvedTable:
    """A table whose metadata is indexed, by table-uuid, table or file location, or name (any tail
    of `catalog.ns.table`, as for views). Several tables under one name (dropped and re-created):
    the one whose files came last."""
    text = ref.strip()
    if _UUID.match(text.lower()) or text.startswith("loc:"):
        rows = query_rows(
            conn,
            "SELECT table_id, catalog, name FROM table_names WHERE table_id = ?",
            [text.lower() if not text.startswith("loc:") else text],
        )
    elif "://" in text or text.startswith(("/", "file:", ".")):
        location = normalize_location(text).rstrip("/")
        rows = query_rows(
            conn,
            """
            SELECT DISTINCT table_id, catalog, name FROM table_files
            WHERE location = ?1 OR rtrim(table_location, '/') IN (?1, ?2)
               OR location LIKE ?1 || '/metadata/%'""",
            [location, text.rstrip("/")],
        )
    elif named := _named(conn, "table", text):
        rows = query_rows(
            conn,
            """
            WITH named AS (SELECT unnest(?1, recursive := true))
            SELECT n.table_id, n.catalog, n.name FROM named n JOIN table_files f USING (table_id)
            GROUP BY n.table_id, n.catalog, n.name
            QUALIFY row_number() OVER (
                PARTITION BY n.catalog, n.name ORDER BY max(f.commit_ms) DESC NULLS LAST, n.table_id) = 1
            ORDER BY ALL""",
            [named],
        )
    else:
        rows = []
    if not rows:
        raise UsageError(f"no table {ref!r} whose metadata is in the store")
    if len(rows) > 1:
        listed = ", ".join(
            f"{display_name(r['catalog'], r['name'], r['table_id'])} ({r['table_id']})" for r in rows
        )
        raise UsageError(f"{ref!r} is ambiguous: {listed}")
    row = rows[0]
    return ResolvedTable(row["table_id"], display_name(row["catalog"], row["name"], row["table_id"]))


def _holders(conn: duckdb.DuckDBPyConnection, named: list[dict[str, Any]], at: int) -> list[dict[str, Any]]:
    """One view per name: where views share one (a view dropped and re-created at its path), the
    one whose files with that name were committed last by `at`, else the one that came last."""
    if len({(row["catalog"], tuple(row["name"] or ())) for row in named}) == len(named):
        return named
    return query_rows(
        conn,
        """
        WITH named AS (SELECT unnest(?1, recursive := true))
        SELECT f.view_id, f.catalog, f.name FROM view_files f SEMI JOIN named n
            ON f.view_id = n.view_id AND f.catalog IS NOT DISTINCT FROM n.catalog AND f.name = n.name
        GROUP BY f.view_id, f.catalog, f.name
        QUALIFY row_number() OVER (
            PARTITION BY catalog, name
            ORDER BY max(commit_ms) FILTER (WHERE commit_ms <= ?2) DESC NULLS LAST, min(commit_ms) DESC,
                     view_id) = 1
        ORDER BY ALL""",
        [named, at],
    )


def _version_rows(conn: duckdb.DuckDBPyConnection, view_id: str, version_id: int) -> dict[str, Any]:
    copies = "SELECT * FROM {} WHERE view_id = ? AND version_id = ?"
    version = query_rows(conn, copies.format("versions"), [view_id, version_id])
    if len(version) > 1:  # a version conflict: ranking the copies by file is the rare, slower path
        version = query_rows(conn, copies.format("preferred_versions"), [view_id, version_id])
    if not version:
        return {"version_id": version_id, "missing": True}
    v = version[0]
    # Point lookups by key, each through its index: a join would read every schema.
    schema = query_rows(conn, "SELECT columns FROM schemas WHERE schema_hash = ?", [v["schema_hash"]])
    representations = query_rows(
        conn,
        """
        SELECT ordinal, type, dialect, dialect_raw, sql, document FROM representations
        WHERE version_hash = ? ORDER BY ordinal""",
        [v["version_hash"]],
    )
    return {
        "version_id": v["version_id"],
        "version_hash": v["version_hash"],
        "created_ms": v["timestamp_ms"],
        "created_at": iso(v["timestamp_ms"]),
        "engine_name": v["engine_name"],
        "engine_version": v["engine_version"],
        "default_catalog": v["default_catalog"],
        "default_namespace": list(v["default_namespace"]),
        "summary": dict(v["summary"] or {}),
        "schema_id": v["schema_id"],
        "columns": [dict(column) for column in (schema[0]["columns"] if schema else [])],
        "representations": [
            {"type": r["type"], "dialect": r["dialect"], "dialect_raw": r["dialect_raw"], "sql": r["sql"]}
            if r["type"] == "sql"
            else {"type": r["type"], "document": r["document"]}
            for r in representations
        ],
    }


def show(conn: duckdb.DuckDBPyConnection, ref: str, as_of_ms: int | None = None) -> dict[str, Any]:
    """The view's definition at `as_of_ms` (default: now)."""
    view = resolve_view(conn, ref, as_of_ms)
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    dropped = _dropped(conn, view.view_id)
    if dropped is not None and dropped["dropped_ms"] <= at:
        raise UsageError(
            f"view {view.name} was dropped at {iso(dropped['dropped_ms'])} (its newest metadata file "
            f"{dropped['location']} was removed); ask with an earlier --as-of"
        )
    current = query_rows(conn, "SELECT * FROM view_current_version(?, ?)", [view.view_id, at])
    if not current:
        raise UsageError(f"view {view.name} had no active version at {iso(at) if as_of_ms else 'any time'}")
    state = query_rows(conn, "SELECT * FROM view_file_as_of(?, ?)", [view.view_id, at])[0]
    return {
        "view": view.name,
        "view_id": view.view_id,
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "activated_ms": current[0]["activated_ms"],
        "activated_at": iso(current[0]["activated_ms"]),
        "activated_source": "version-log",
        **_version_rows(conn, view.view_id, current[0]["version_id"]),
        "properties": dict(state["properties"] or {}),
        "properties_file": state["location"],
        "properties_since_ms": state["commit_ms"],
        "properties_since": iso(state["commit_ms"]),
        "properties_since_source": state["commit_source"],
    }


def _dropped(conn: duckdb.DuckDBPyConnection, view_id: str) -> dict[str, Any] | None:
    rows = query_rows(conn, "SELECT location, dropped_ms FROM view_drop(?)", [view_id])
    return rows[0] if rows else None


def history(conn: duckdb.DuckDBPyConnection, ref: str) -> dict[str, Any]:
    """Every version and every activation of a view, with the SQL diff between activations."""
    view = resolve_view(conn, ref)
    activations = query_rows(
        conn,
        """
        SELECT version_id, timestamp_ms FROM activations WHERE view_id = ?
        ORDER BY timestamp_ms, version_id""",
        [view.view_id],
    )
    version_ids = query_rows(
        conn,
        "SELECT DISTINCT version_id FROM versions WHERE view_id = ? ORDER BY 1",
        [view.view_id],
    )
    versions = {
        row["version_id"]: _version_rows(conn, view.view_id, row["version_id"]) for row in version_ids
    }
    entries = []
    previous: dict[str, Any] | None = None
    for activation in activations:
        version = versions.get(activation["version_id"], {"missing": True, "representations": []})
        entries.append(
            {
                "version_id": activation["version_id"],
                "activated_ms": activation["timestamp_ms"],
                "activated_at": iso(activation["timestamp_ms"]),
                "engine_name": version.get("engine_name"),
                "engine_version": version.get("engine_version"),
                "diff": _sql_diff(previous, version) if previous is not None else None,
            }
        )
        previous = version
    dropped = _dropped(conn, view.view_id)
    dropped_ms = dropped["dropped_ms"] if dropped is not None else None
    return {
        "view": view.name,
        "view_id": view.view_id,
        "dropped_ms": dropped_ms,
        "dropped_at": iso(dropped_ms),
        "versions": list(versions.values()),
        "activations": entries,
    }


def _sql_diff(before: dict[str, Any], after: dict[str, Any]) -> str:
    def text(version: dict[str, Any]) -> list[str]:
        lines = []
        for rep in version.get("representations", []):
            if rep.get("sql") is not None:
                lines.append(f"-- {rep.get('dialect_raw') or rep.get('dialect')}\n")
                lines.extend(line + "\n" for line in rep["sql"].splitlines())
        return lines

    return "".join(
        difflib.unified_diff(
            text(before), text(after), f"v{before.get('version_id')}", f"v{after.get('version_id')}", n=2
        )
    )


def _reference_name(row: dict[str, Any]) -> str:
    parts = [*([row["catalog"]] if row["catalog"] else []), *row["namespace"], row["table_name"]]
    return ".".join(parts)


def _names(conn: duckdb.DuckDBPyConnection, view_ids: set[str], at: int) -> dict[str, str]:
    """Display names of these views at `at` (a view with several names: the one its file had then)."""
    rows = query_rows(
        conn,
        "SELECT view_id, catalog, name FROM view_names WHERE list_contains(?, view_id)",
        [sorted(view_ids)],
    )
    named: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["view_id"] in named:
            row = query_rows(
                conn, "SELECT view_id, catalog, name FROM view_file_as_of(?, ?)", [row["view_id"], at]
            )[0]
        named[row["view_id"]] = row
    return {v: display_name(r["catalog"], r["name"], v) for v, r in named.items()}


def deps(
    conn: duckdb.DuckDBPyConnection, ref: str, as_of_ms: int | None = None, transitive: bool = False
) -> dict[str, Any]:
    """The tables a view reads at `as_of_ms`; with `transitive`, through the views it reads too."""
    view = resolve_view(conn, ref, as_of_ms)
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    rows = query_rows(
        conn,
        "SELECT * FROM deps_as_of(?, ?) WHERE depth = 1 OR ? ORDER BY depth, catalog, namespace, "
        "table_name, suffix, pin",
        [view.view_id, at, transitive],
    )
    names = _names(conn, {v for row in rows for v in row["path"]}, at)
    seen: set[tuple[Any, ...]] = set()
    reads = []
    for row in rows:
        key = (
            row["catalog"],
            tuple(row["namespace"]),
            row["table_name"],
            row["suffix"],
            row["pin"],
            tuple(row["path"]),
        )
        if key in seen:
            continue
        seen.add(key)
        reads.append(
            {
                "table": _reference_name(row),
                "depth": row["depth"],
                "via": [names.get(v, v) for v in row["path"]],
                "is_view": row["target_view_id"] is not None,
                "view_id": row["target_view_id"],
                "suffix": row["suffix"],
                "pin": row["pin"],
                "catalog_unknown": row["catalog_unknown"],
            }
        )
    reads.sort(key=lambda r: (r["depth"], r["table"], r["via"]))
    return {
        "view": view.name,
        "view_id": view.view_id,
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "transitive": transitive,
        "reads": reads,
    }


def _is_catalog(conn: duckdb.DuckDBPyConnection, name: str) -> bool:
    known = query_rows(
        conn,
        "SELECT EXISTS (FROM view_names WHERE catalog = ?1) "
        "OR EXISTS (FROM table_references WHERE catalog = ?1) AS known",
        [name],
    )
    return bool(known[0]["known"])


def uses(
    conn: duckdb.DuckDBPyConnection, table: str, as_of_ms: int | None = None, transitive: bool = False
) -> dict[str, Any]:
    """The views reading `table` at `as_of_ms`; with `transitive`, through other views too.
    `table` is `[catalog.]namespace.name`; the first part is a catalog only if the store knows it."""
    parts = [part.lower() for part in re.split(r"[./]", table.strip()) if part]
    if len(parts) < 2:
        raise UsageError(f"name the table with its namespace: {table!r}")
    catalog = parts[0] if len(parts) >= 3 and _is_catalog(conn, parts[0]) else None
    reference = parts[1:] if catalog else parts
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    rows = query_rows(
        conn,
        "SELECT * FROM uses_as_of(?, ?, ?) WHERE depth = 1 OR ? ORDER BY depth, path",
        [catalog, reference, at, transitive],
    )
    names = _names(conn, {v for row in rows for v in row["path"]}, at)
    views = [
        {
            "view": names.get(row["view_id"], row["view_id"]),
            "view_id": row["view_id"],
            "depth": row["depth"],
            "path": [names.get(v, v) for v in row["path"]],
            "catalog_unknown": row["catalog_unknown"],
        }
        for row in rows
    ]
    views.sort(key=lambda v: (v["depth"], v["path"]))
    return {
        "table": ".".join(([catalog] if catalog else []) + reference),
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "transitive": transitive,
        "views": views,
    }


def findings(
    conn: duckdb.DuckDBPyConnection, code: str | None = None, view: str | None = None
) -> list[dict[str, Any]]:
    view_id = resolve_view(conn, view).view_id if view else None
    return query_rows(
        conn,
        """
        SELECT scope, code, severity, view_id, version_id, location, position, message FROM findings
        WHERE (?1 IS NULL OR code = ?1 OR code LIKE ?1 || ':%') AND (?2 IS NULL OR view_id = ?2)
        ORDER BY code, view_id, version_id, location, position""",
        [code, view_id],
    )


def quarantine(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    return query_rows(
        conn, "SELECT location, reason, message, stored_bytes, modified_ms FROM quarantine ORDER BY location"
    )


def run_sql(conn: duckdb.DuckDBPyConnection, text: str) -> list[dict[str, Any]]:
    """Any SQL on the read-only, sandboxed connection."""
    try:
        return query_rows(conn, text)
    except duckdb.Error as exc:
        raise UsageError(f"SQL failed: {exc}") from exc
