"""The Python API over a store: thin typed functions over the SQL macros in `queries/sql/`.

Every function takes a (read-only) connection. Times are epoch milliseconds in, and both epoch ms
and ISO-8601 UTC out; `parse_time` turns user input (ISO-8601, naive = UTC, or epoch ms) into ms.
"""

from __future__ import annotations

import difflib
import itertools
from collections import Counter
from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.parse.locations import escape_undecodable, normalize_location
from viewlineage.indexer.spec.findings import CODES, known_code
from viewlineage.queries import mviews
from viewlineage.queries.names import (
    FOREVER_MS,
    ResolvedTable,
    ResolvedView,
    did_you_mean,
    display_name,
    dotted,
    incarnations,
    iso,
    name_parts,
    parse_time,
    query_rows,
    refuse_id_of_both,
    resolve_table,
    resolve_view,
    tables_named,
    version_copy,
    views_named,
)

MATCHES = ("exact", "namespace-and-name", "other-catalog", "leading-part", "tied-file", "shared-name")
"""How surely a read names a table, surest first (`uses_as_of`, `deps_as_of`)."""


def _version_rows(
    conn: duckdb.DuckDBPyConnection, version_id: int, v: dict[str, Any] | None
) -> dict[str, Any]:
    """Version `version_id` from its `versions` row `v` (None: not stored), with its schema and SQL."""
    if v is None:
        return {"version_id": version_id, "missing": True}
    return _versions_rows(conn, [v])[v["version_id"]]


def _versions_rows(
    conn: duckdb.DuckDBPyConnection, versions: list[dict[str, Any]]
) -> dict[int, dict[str, Any]]:
    """Versions from their `versions` rows, with their schemas and SQL, by version id: two lookups
    for all of them (a view may hold 10,000 versions)."""
    schema_filter, schema_keys = _keyed(sorted({v["schema_hash"] for v in versions if v["schema_hash"]}))
    schemas = {
        row["schema_hash"]: row["columns"]
        for row in query_rows(
            conn, f"SELECT schema_hash, columns FROM schemas WHERE schema_hash {schema_filter}", [schema_keys]
        )
    }
    version_filter, version_keys = _keyed([v["version_hash"] for v in versions])
    representations: dict[str, list[dict[str, Any]]] = {}
    for r in query_rows(
        conn,
        f"""
        SELECT version_hash, ordinal, type, dialect, dialect_raw, sql, document FROM representations
        WHERE version_hash {version_filter} ORDER BY version_hash, ordinal""",
        [version_keys],
    ):
        representations.setdefault(r["version_hash"], []).append(
            {"type": r["type"], "dialect": r["dialect"], "dialect_raw": r["dialect_raw"], "sql": r["sql"]}
            if r["type"] == "sql"
            else {"type": r["type"], "document": r["document"]}
        )
    return {
        v["version_id"]: {
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
            "columns": [dict(column) for column in schemas.get(v["schema_hash"], [])],
            "representations": representations.get(v["version_hash"], []),
        }
        for v in versions
    }


def _keyed(keys: list[str]) -> tuple[str, str | list[str]]:
    """A filter on a key column for `keys`, and its parameter: one key is a point lookup through
    the column's index (`show`); many are one scan (`history`)."""
    return ("= ?", keys[0]) if len(keys) == 1 else ("IN (SELECT unnest(?::VARCHAR[]))", keys)


RELISTED = "reconcile"
"""The removals' `source` of a file a run found gone when it listed the tree again: it went then or
before, when no one was following."""


def drop_note(source: str | None) -> str:
    """What a drop's time is, when it is only the latest it can have been."""
    return ", or before: a re-list found its file gone then" if source == RELISTED else ""


def _live_state(conn: duckdb.DuckDBPyConnection, view: ResolvedView, as_of_ms: int | None) -> dict[str, Any]:
    """The view's `view_at` row at `as_of_ms`; a `UsageError` when it did not exist then (dropped,
    or before its first version): no answer about it may read as "it read nothing"."""
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    state = query_rows(conn, "SELECT * FROM view_at(?, ?)", [view.view_id, at])[0]
    if state["dropped_ms"] is not None and state["dropped_ms"] <= at:
        dropped = _dropped(conn, view.view_id)
        raise UsageError(
            f"view {view.name} was dropped at {iso(state['dropped_ms'])}"
            f"{drop_note(dropped['source'] if dropped else None)} (its newest metadata file "
            f"{state['dropped_location']} was removed); ask as of an earlier time"
        )
    replaced = _replaced(conn, view.view_id)
    if replaced is not None and replaced["replaced_ms"] <= at:
        raise UsageError(
            f"view {view.name} ({view.view_id}) was replaced by a view created at its path at "
            f"{iso(replaced['replaced_ms'])} ({replaced['replaced_by']}); `viewlineage history "
            f"{view.view_id}` lists both; ask as of an earlier time"
        )
    if state["active_version_id"] is None:
        first = query_rows(
            conn, "SELECT min(timestamp_ms) AS ms FROM activations WHERE view_id = ?", [view.view_id]
        )
        if as_of_ms is not None and first and first[0]["ms"] is not None and first[0]["ms"] > at:
            raise UsageError(
                f"view {view.name} was not created yet at {iso(at)}: its first version became current "
                f"at {iso(first[0]['ms'])}"
            )
        when = "any time" if as_of_ms is None else iso(at)
        raise UsageError(f"view {view.name} had no active version at {when}")
    tied = tied_files(conn, [view.view_id], at)
    same_instant = query_rows(
        conn,
        "SELECT version_id FROM unsettled_partners(?, ?, ?) ORDER BY 1",
        [view.view_id, state["active_version_id"], state["activated_ms"]],
    )
    return state | {
        "tied_files": tied[0]["tied_files"] if tied else [],
        "tied_activations": [row["version_id"] for row in same_instant],
    }


def tied_files(conn: duckdb.DuckDBPyConnection, view_ids: list[str], at: int) -> list[dict[str, Any]]:
    """Of these views, those whose file in force at `at` ties with other files of theirs (a
    competing commit, or the uuid in two directories), with those files: `view`, `view_id`,
    `tied_files`. Which file holds each is a guess, so every answer drawn from them says so."""
    if not view_ids:
        return []
    names = _names(conn, set(view_ids), at)
    rows = query_rows(conn, "SELECT * FROM tied_files_of(?, ?) ORDER BY view_id", [view_ids, at])
    return [{"view": names.get(row["view_id"], row["view_id"]), **row} for row in rows]


def show(conn: duckdb.DuckDBPyConnection, ref: str, as_of_ms: int | None = None) -> dict[str, Any]:
    """The view's definition at `as_of_ms` (default: now)."""
    view = resolve_view(conn, ref, as_of_ms)
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    state = _live_state(conn, view, as_of_ms)
    stored = (
        query_rows(conn, "SELECT * FROM versions WHERE version_hash = ?", [state["version_hash"]])
        if state["version_hash"] is not None
        else []
    )
    version = _version_rows(conn, state["active_version_id"], stored[0] if stored else None)
    properties = query_rows(conn, "SELECT properties FROM view_files WHERE location = ?", [state["location"]])
    return {
        "view": view.name,
        "view_id": view.view_id,
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "activated_ms": state["activated_ms"],
        "activated_at": iso(state["activated_ms"]),
        "activated_source": "version-log",
        **version,
        "properties": dict(properties[0]["properties"] or {}),
        "properties_file": state["location"],
        "properties_since_ms": state["commit_ms"],
        "properties_since": iso(state["commit_ms"]),
        "properties_since_source": state["commit_source"],
        "tied_files": state["tied_files"],
        "tied_activations": state["tied_activations"],
        "materialized": mviews.view_materialization(
            conn,
            view.view_id,
            view.name,
            at,
            mviews.ViewHead(
                state["location"],
                state["catalog"],
                state["active_version_id"],
                state["activated_ms"],
                state["version_hash"],
            ),
        ),
    }


def indexed_table(conn: duckdb.DuckDBPyConnection, ref: str, at_ms: int | None = None) -> ResolvedTable:
    """The table `ref` names at `at_ms` (`resolve_table`), whose metadata the store holds; a
    `UsageError` that says so when views read a table of that name but none of its metadata files
    was indexed."""
    try:
        return resolve_table(conn, ref, at_ms)
    except UsageError as exc:
        if " is a view (" in str(exc) or len(name_parts(ref)) < 2:
            raise
        _, parts = table_reference(conn, ref)
        stored = query_rows(conn, "SELECT 1 FROM table_names WHERE name = ?", [parts])
        if not is_named(conn, parts) or stored:
            raise
        raise UsageError(
            f"no metadata file of table {ref!r} was indexed: views read it (`viewlineage uses {ref}`), "
            "but its schema and snapshots are unknown; index the table's directory to know them"
        ) from None


def table_dropped(conn: duckdb.DuckDBPyConnection, table_id: str) -> dict[str, Any] | None:
    """The table's drop (`table_drop`: `dropped_ms`, `source`), if it was dropped."""
    dropped = query_rows(conn, "SELECT dropped_ms, source FROM table_drop(?)", [table_id])
    return dropped[0] if dropped else None


def check_table_not_dropped(conn: duckdb.DuckDBPyConnection, resolved: ResolvedTable, at: int) -> None:
    """A usage error when the table was dropped (`table_drop`) by `at`."""
    dropped = table_dropped(conn, resolved.table_id)
    if dropped and dropped["dropped_ms"] <= at:
        raise UsageError(
            f"table {resolved.name} was dropped at {iso(dropped['dropped_ms'])}"
            f"{drop_note(dropped['source'])} (its newest metadata "
            f"file was removed){'' if at == FOREVER_MS else f', before {iso(at)}'}: ask as of an earlier time"
        )


def table(conn: duckdb.DuckDBPyConnection, ref: str, as_of_ms: int | None = None) -> dict[str, Any]:
    """A table's state at `as_of_ms` (default: now) from its metadata file in force: schema with
    nested fields, current snapshot, refs, properties."""
    resolved = indexed_table(conn, ref, as_of_ms)
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    files = query_rows(
        conn, "SELECT * FROM table_file_as_of(?1, ?2) WHERE commit_ms <= ?2", [resolved.table_id, at]
    )
    if not files:
        raise UsageError(f"table {resolved.name} has no metadata file committed by {iso(at)}")
    check_table_not_dropped(conn, resolved, at)
    f = files[0]
    fields = query_rows(
        conn,
        """
        WITH RECURSIVE fields AS (SELECT * FROM schema_fields WHERE schema_hash = ?1),
        -- Struct order: a schema lists its columns in order, and Iceberg numbers a struct's fields
        -- in order (a field added later is added last); by name, `owner.email` came before `nick`.
        ids(field_id, chain) AS (
            SELECT field_id, [field_id] FROM fields WHERE parent_id IS NULL
            UNION ALL
            SELECT f.field_id, list_append(i.chain, f.field_id)
            FROM fields f JOIN ids i ON f.parent_id = i.field_id
        )
        SELECT f.field_id, f.path, f.type, f.required, f.doc FROM fields f JOIN ids USING (field_id)
        JOIN schemas s USING (schema_hash)
        ORDER BY list_position([c.name FOR c IN s.columns], f.path[1]), ids.chain""",
        [f["current_schema_hash"]],
    )
    refs = query_rows(
        conn,
        "SELECT name, type, snapshot_id FROM table_refs WHERE location = ? ORDER BY name",
        [f["location"]],
    )
    head = query_rows(
        conn, "SELECT snapshot_id, since_ms FROM ref_head_as_of(?, 'main', ?)", [resolved.table_id, at]
    )
    snapshot = (
        query_rows(
            conn,
            "SELECT snapshot_id, parent_snapshot_id, sequence_number, timestamp_ms, operation, summary "
            "FROM snapshots WHERE table_id = ? AND snapshot_id = ? LIMIT 1",
            [resolved.table_id, head[0]["snapshot_id"]],
        )
        if head
        else []
    )
    current = snapshot[0] if snapshot else None
    return {
        "table": resolved.name,
        "table_id": resolved.table_id,
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "location": f["table_location"],
        "format_version": f["format_version"],
        "schema_id": f["current_schema_id"],
        "columns": [
            {
                "id": r["field_id"],
                "path": ".".join(r["path"]),
                "type": r["type"],
                "required": r["required"],
                "doc": r["doc"],
            }
            for r in fields
        ],
        "snapshot": current
        and {
            **{
                key: current[key]
                for key in ("snapshot_id", "parent_snapshot_id", "sequence_number", "operation")
            },
            "committed_ms": current["timestamp_ms"],
            "committed_at": iso(current["timestamp_ms"]),
            "summary": dict(current["summary"] or {}),
        },
        "refs": refs,
        "properties": dict(f["properties"] or {}),
        "properties_file": f["location"],
        "properties_since_ms": f["commit_ms"],
        "properties_since": iso(f["commit_ms"]),
        "properties_since_source": f["commit_source"],
        "incarnations": table_incarnations(conn, resolved.table_id),
    }


def table_incarnations(conn: duckdb.DuckDBPyConnection, table_id: str) -> list[dict[str, Any]]:
    """The other tables that had this table's name (one dropped and created again)."""
    found = []
    for other in query_rows(conn, "SELECT * FROM table_incarnations(?)", [table_id]):
        dropped = table_dropped(conn, other["table_id"])
        found.append(
            {
                "table_id": other["table_id"],
                "table": dotted([other["catalog"], *other["name"]]),
                "first_committed_at": iso(other["first_commit_ms"]),
                "last_committed_at": iso(other["last_commit_ms"]),
                "dropped_at": iso(dropped["dropped_ms"]) if dropped else None,
                "dropped_source": dropped["source"] if dropped else None,
            }
        )
    return found


def _dropped(conn: duckdb.DuckDBPyConnection, view_id: str) -> dict[str, Any] | None:
    rows = query_rows(conn, "SELECT location, dropped_ms, source FROM view_drop(?)", [view_id])
    return rows[0] if rows else None


def _replaced(conn: duckdb.DuckDBPyConnection, view_id: str) -> dict[str, Any] | None:
    """When another view took the view's place at its path, and which (`replaced_views`)."""
    rows = query_rows(
        conn, "SELECT replaced_ms, replaced_by FROM replaced_views() WHERE view_id = ?", [view_id]
    )
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
    stored = query_rows(conn, "SELECT * FROM versions WHERE view_id = ? ORDER BY version_id", [view.view_id])
    copies = Counter(row["version_id"] for row in stored)
    chosen = [row for row in stored if copies[row["version_id"]] == 1] + [  # a version conflict: rare
        copy
        for version_id in sorted(id_ for id_, n in copies.items() if n > 1)
        if (copy := version_copy(conn, view.view_id, version_id)) is not None
    ]
    versions = dict(sorted(_versions_rows(conn, chosen).items()))
    entries = []
    previous: dict[str, Any] | None = None
    for activation in activations:
        version = versions.get(activation["version_id"], {"missing": True, "representations": []})
        diff = _sql_diff(previous, version) if previous is not None else None
        entries.append(
            {
                "version_id": activation["version_id"],
                "activated_ms": activation["timestamp_ms"],
                "activated_at": iso(activation["timestamp_ms"]),
                "engine_name": version.get("engine_name"),
                "engine_version": version.get("engine_version"),
                "diff": diff,
                "sql_changed": None if diff is None else bool(diff),
            }
        )
        previous = version
    dropped = _dropped(conn, view.view_id)
    dropped_ms = dropped["dropped_ms"] if dropped is not None else None
    replaced = _replaced(conn, view.view_id)
    return {
        "view": view.name,
        "view_id": view.view_id,
        "dropped_ms": dropped_ms,
        "dropped_at": iso(dropped_ms),
        "dropped_source": dropped["source"] if dropped is not None else None,
        # Its files still there, another view took its place: it was dropped by then.
        "replaced_ms": replaced["replaced_ms"] if replaced else None,
        "replaced_at": iso(replaced["replaced_ms"]) if replaced else None,
        "replaced_by": replaced["replaced_by"] if replaced else None,
        "versions": list(versions.values()),
        "activations": entries,
        "property_changes": _property_changes(conn, view.view_id),
        "incarnations": _incarnations(conn, view.view_id),
    }


def _property_changes(conn: duckdb.DuckDBPyConnection, view_id: str) -> list[dict[str, Any]]:
    """Each commit that set, changed or removed properties, with what it changed; `property_only`
    when it made no other version current (`ALTER VIEW ... SET TBLPROPERTIES`)."""
    changes = []
    for commit in query_rows(conn, "SELECT * FROM view_commits(?)", [view_id]):
        before, after = dict(commit["previous_properties"] or {}), dict(commit["properties"] or {})
        if before == after:
            continue
        changed = [
            {"key": key, "before": before.get(key), "after": after.get(key)}
            for key in sorted(before.keys() | after.keys())
            if before.get(key) != after.get(key)
        ]
        first = commit["previous_properties"] is None and commit["previous_version_id"] is None
        changes.append(
            {
                "committed_ms": commit["commit_ms"],
                "committed_at": iso(commit["commit_ms"]),
                "committed_source": commit["commit_source"],
                "location": commit["location"],
                "version_id": commit["current_version_id"],
                "property_only": not first and commit["current_version_id"] == commit["previous_version_id"],
                "changes": changed,
            }
        )
    return changes


def _incarnations(conn: duckdb.DuckDBPyConnection, view_id: str) -> list[dict[str, Any]]:
    """The other views that had this view's location or name (one dropped and created again)."""
    found = []
    for other in query_rows(conn, "SELECT * FROM view_incarnations(?)", [view_id]):
        dropped = _dropped(conn, other["view_id"])
        dropped_ms = dropped["dropped_ms"] if dropped is not None else None
        found.append(
            {
                "view_id": other["view_id"],
                "view": display_name(other["catalog"], other["name"], other["view_id"]),
                "first_committed_at": iso(other["first_commit_ms"]),
                "last_committed_at": iso(other["last_commit_ms"]),
                "dropped_at": iso(dropped_ms),
                "dropped_source": dropped["source"] if dropped is not None else None,
            }
        )
    return found


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
    return dotted([row["catalog"], *row["namespace"], row["table_name"]])


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
    state = _live_state(conn, view, as_of_ms)  # (refuses a view another took the place of by then)
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    walk = query_rows(
        conn,
        "SELECT * FROM deps_as_of(?, ?) ORDER BY depth, catalog, namespace, table_name, suffix, pin",
        [view.view_id, at],
    )
    rows = [row for row in walk if row["depth"] == 1 or transitive]
    cycles = _cycles(view.view_id, [(row["view_id"], row["target_view_id"]) for row in walk])
    names = _names(conn, {v for row in walk for v in row["path"]}, at)
    _mark_guessed_catalogs(conn, rows, at)
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
            row["target_view_id"],  # a name two current views hold is two rows
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
                "target": "view" if row["target_view_id"] is not None else _read_target(conn, row, at),
                "view_id": row["target_view_id"],
                "suffix": row["suffix"],
                "pin": row["pin"],
                "catalog_unknown": row["catalog_unknown"],
                "match": row["match"],
            }
        )
    reads.sort(key=lambda r: (r["depth"], r["table"], r["via"], r["view_id"] or ""))
    walked = {view.view_id} | {read["view_id"] for read in reads if read["view_id"] and transitive}
    unknown = [row for row in lineage_unknown(conn, at) if row["view_id"] in walked]
    return {
        "view": view.name,
        "view_id": view.view_id,
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "transitive": transitive,
        "lineage": "unknown" if any(row["view_id"] == view.view_id for row in unknown) else "known",
        "reads": reads,
        "uncertain": sum(read["match"] != "exact" for read in reads),
        "tied_files": state["tied_files"],
        "tied_activations": state["tied_activations"],
        "lineage_unknown": unknown,
        "cycles": [
            {
                "view": names.get(cycle[0], cycle[0]),
                "path": [names.get(v, v) for v in cycle],
                "view_ids": list(cycle),
            }
            for cycle in cycles
        ],
    }


def _cycles(start: str, reads: list[tuple[str, str | None]]) -> list[tuple[str, ...]]:
    """The cycles among views that `start` reads through views (`a` reads `b` reads `a`), which no
    engine can run, each from the view where a depth-first walk (in view id order) came back to it:
    one per way back, not one per path, whose number grows exponentially. A view reading itself is
    one of one view."""
    targets: dict[str, list[str]] = {}
    for reader, read in sorted({(r, t) for r, t in reads if t is not None}):
        targets.setdefault(reader, []).append(read)
    found: set[tuple[str, ...]] = set()
    done: set[str] = set()
    path = [start]
    pending = [iter(targets.get(start, []))]
    while pending:
        target = next(pending[-1], None)
        if target is None:
            done.add(path.pop())
            pending.pop()
        elif target in path:
            found.add((*path[path.index(target) :], target))
        elif target not in done:
            path.append(target)
            pending.append(iter(targets.get(target, [])))
    return sorted(found)


def _mark_guessed_catalogs(conn: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]], at: int) -> None:
    """Make `leading-part` the match of each `deps_as_of` row, and of the rows read through it, whose
    read the indexer resolved on a guess: a name of three parts or more whose first is no known
    catalog (`ext.raw.clicks`), read as a namespace level in the view's catalog though it may name
    a catalog (the indexing finding `catalog-ambiguous`). Nothing indexed need have either name for
    that to be a guess; a read naming its catalog (`prod.ext.raw.clicks`) is none."""
    candidates = [row for row in rows if len(row["namespace"]) > 1]
    if not candidates:
        return
    guessed = {
        (found["view_id"], found["catalog"], tuple(found["namespace"]), found["name"])
        for found in query_rows(
            conn,
            """
            SELECT DISTINCT h.view_id, r.catalog, r.namespace, r.name
            FROM view_heads_as_of(?2) h
            JOIN representations p ON p.version_hash = h.version_hash
            JOIN table_references r ON r.lineage_key = p.lineage_key
            WHERE list_contains(?1, h.view_id) AND r.catalog_source <> 'explicit' AND len(r.namespace) > 1
              AND r.namespace[1] NOT IN (SELECT catalog FROM view_names WHERE catalog IS NOT NULL
                                         UNION SELECT catalog FROM table_names WHERE catalog IS NOT NULL)""",
            [sorted({row["path"][-1] for row in candidates}), at],
        )
    }
    if not guessed:
        return
    leading_part = "leading-part"
    steps = set()  # (reader, view read): reads of views resolved on a guess
    for row in rows:
        if (row["path"][-1], row["catalog"], tuple(row["namespace"]), row["table_name"]) in guessed:
            row["match"] = _least_sure(row["match"], leading_part)
            if row["target_view_id"] is not None:
                steps.add((row["path"][-1], row["target_view_id"]))
    for row in rows:
        if any((reader, read) in steps for reader, read in itertools.pairwise(row["path"])):
            row["match"] = _least_sure(row["match"], leading_part)


def _least_sure(match: str, other: str) -> str:
    return max(match, other, key=MATCHES.index)


def _read_target(conn: duckdb.DuckDBPyConnection, row: dict[str, Any], at: int) -> str:
    """What a read that names no view current at T names: an indexed `table` then; a table of that
    name at another time only, dropped or not yet created (`table-not-current`), or a view
    (`view-not-current`): the read fails then; or nothing indexed (`not-indexed`: a table whose
    metadata was not indexed, most likely)."""
    parts = [*row["namespace"], row["table_name"]]
    # A read matched by its leading part (`prod.db.t` read in no known catalog) names `db.t` too.
    names = [parts, parts[1:]] if row["match"] == "leading-part" and len(row["namespace"]) > 1 else [parts]
    found = query_rows(
        conn,
        """
        SELECT (SELECT list(DISTINCT table_id) FROM table_names WHERE list_contains(?1, name)
                AND (catalog IS NULL OR ?2 IS NULL OR catalog = ?2)) AS tables,
               EXISTS (FROM view_names WHERE list_contains(?1, name)
                       AND (catalog IS NULL OR ?2 IS NULL OR catalog = ?2)) AS view_named""",
        [names, row["catalog"]],
    )[0]
    if found["tables"]:
        current = query_rows(
            conn,
            """
            SELECT table_id FROM table_files WHERE list_contains(?1, table_id) AND commit_ms <= ?2
            EXCEPT SELECT table_id FROM (SELECT unnest(?1) AS table_id) t
            WHERE (SELECT min(dropped_ms) FROM table_drop(t.table_id)) <= ?2""",
            [found["tables"], at],
        )
        return "table" if current else "table-not-current"
    return "view-not-current" if found["view_named"] else "not-indexed"


def lineage_unknown(
    conn: duckdb.DuckDBPyConnection, at: int, transitive: bool = False
) -> list[dict[str, Any]]:
    """The views current at `at` whose reads the store does not know, and why: they may read
    anything, so no answer about what reads a table leaves them out silently. With `transitive`,
    also the views that read one of them, directly or through views."""
    unknown = query_rows(
        conn, "SELECT view_name AS view, view_id, reason FROM lineage_unknown_as_of(?) ORDER BY 1, 2", [at]
    )
    if transitive and unknown:
        unknown += query_rows(
            conn,
            "SELECT view_name AS view, view_id, 'reads ' || through || ', whose lineage is unknown' "
            "AS reason FROM lineage_unknown_readers_as_of(?) ORDER BY 1, 2",
            [at],
        )
    return unknown


def table_reference(conn: duckdb.DuckDBPyConnection, table: str) -> tuple[str | None, list[str]]:
    """`[catalog.]namespace.name` as (catalog, namespace levels and name); the first part is a
    catalog only if the store knows it."""
    parts = name_parts(table)
    if len(parts) < 2:
        hint = did_you_mean(conn, table)
        raise UsageError(
            f"no table or view {table!r} in the store (one it has not indexed is named with its "
            f"namespace){hint.text}",
            hint.names,
        )
    catalog = parts[0] if len(parts) >= 3 and _is_catalog(conn, parts[0]) else None
    if (
        len(parts) == 2
        and _is_catalog(conn, parts[0])
        and not is_named(conn, parts)
        and is_named(conn, parts[1:])
    ):
        catalog = parts[0]  # SQL read a table by its name alone, and a view with no namespace resolved it
    return catalog, parts[1:] if catalog else parts


def read_target(conn: duckdb.DuckDBPyConnection, text: str, at: int) -> tuple[str | None, list[str]]:
    """What views' reads of `text` are matched against: the catalog and name of the indexed table,
    or else the view at `at`, that `text` names, so that `sales.orders` and `prod.sales.orders` (or
    its uuid) are one question, as in `impact`; `text` as written (`table_reference`) when it names
    none. Several are ambiguous, as in `show`, but tables whose directories' names differ only in
    case: their one name is what reads name (each a `shared-name` match)."""
    refuse_id_of_both(conn, text)
    tables = tables_named(conn, text, at)
    if len({(row["catalog"], tuple(row["name"])) for row in tables}) > 1:
        resolve_table(conn, text, at)  # raises: ambiguous
    named = tables or views_named(conn, text, at)
    if len(named) > 1 and not tables:
        resolve_view(conn, text, at)  # raises: ambiguous
    if named and named[0]["name"]:  # (a view with no name is read by none)
        return named[0]["catalog"], list(named[0]["name"])
    return table_reference(conn, text)


def _is_catalog(conn: duckdb.DuckDBPyConnection, name: str) -> bool:
    known = query_rows(
        conn,
        "SELECT EXISTS (FROM view_names WHERE catalog = ?1) "
        "OR EXISTS (FROM table_references WHERE catalog = ?1) AS known",
        [name],
    )
    return bool(known[0]["known"])


def is_named(conn: duckdb.DuckDBPyConnection, parts: list[str]) -> bool:
    """Whether a stored view or table has this name (namespace levels and name), or stored SQL
    reads a table of it (maybe after a leading part: see `uses_as_of`)."""
    found = query_rows(
        conn,
        """
        SELECT EXISTS (FROM table_names WHERE name = ?1) OR EXISTS (FROM view_names WHERE name = ?1)
            OR EXISTS (FROM table_references WHERE name = ?1[-1]
                       AND (list_append(namespace, name) = ?1 OR list_append(namespace, name)[2:] = ?1))
            AS named""",
        [parts],
    )
    return bool(found[0]["named"])


def uses(
    conn: duckdb.DuckDBPyConnection, table: str, as_of_ms: int | None = None, transitive: bool = False
) -> dict[str, Any]:
    """The views reading `table` at `as_of_ms`; with `transitive`, through other views too.
    `table` names an indexed table or a view as `show` takes names, else is
    `[catalog.]namespace.name` (`read_target`)."""
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    catalog, reference = read_target(conn, table, at)
    views = query_rows(
        conn,
        "SELECT view_name AS view, view_id, depth, path_names AS path, catalog_unknown, match "
        "FROM uses_as_of(?, ?, ?) WHERE depth = 1 OR ? ORDER BY depth, path_names",
        [catalog, reference, at, transitive],
    )
    if not views and not is_named(conn, reference):
        hint = did_you_mean(conn, table)
        raise UsageError(
            f"no table or view {table!r} in the store, and no stored SQL reads one of that name{hint.text}",
            hint.names,
        )
    named = tables_named(conn, table, as_of_ms)  # an indexed table of the name: when, was it dropped?
    drop, created_ms = None, None
    if len(named) == 1:
        drop = table_dropped(conn, named[0]["table_id"])
        first = query_rows(
            conn, "SELECT min(commit_ms) AS ms FROM table_files WHERE table_id = ?", [named[0]["table_id"]]
        )
        created_ms = first[0]["ms"]
    dropped = drop if drop and drop["dropped_ms"] <= at else None
    return {
        "table": dotted([catalog, *reference]),
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "transitive": transitive,
        "created_ms": created_ms,
        "created_at": iso(created_ms),
        "not_created_yet": created_ms is not None and at < created_ms,
        "dropped_ms": dropped["dropped_ms"] if dropped else None,
        "dropped_at": iso(dropped["dropped_ms"]) if dropped else None,
        "dropped_source": dropped["source"] if dropped else None,
        "views": views,
        "uncertain": len({view["view_id"] for view in views if view["match"] != "exact"}),
        "lineage_unknown": lineage_unknown(conn, at, transitive),
        "refreshed_into": mviews.refreshed_from(conn, catalog, reference, at),
        "tied": tied_files(conn, sorted({view["view_id"] for view in views}), at),
    }


def _finding_filters(conn: duckdb.DuckDBPyConnection, code: str | None, view: str | None) -> list[str] | None:
    """The view ids `view` names (by name or path, every view that held it, as `changes` takes
    them), after checking `code` is a finding code (None: every view)."""
    if code is not None and not known_code(code):
        close = difflib.get_close_matches(code, sorted(CODES), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UsageError(f"no finding has code {code!r}{hint} (the README lists them under Findings)")
    return incarnations(conn, view) if view is not None else None


def finding_counts(
    conn: duckdb.DuckDBPyConnection, code: str | None = None, view: str | None = None
) -> list[dict[str, Any]]:
    """How many findings of each code and severity, in how many views, most first."""
    return query_rows(
        conn,
        """
        SELECT code, severity, count(*) AS findings, count(DISTINCT view_id) AS views FROM findings
        WHERE (?1 IS NULL OR code = ?1 OR starts_with(code, ?1 || ':'))
          AND (?2 IS NULL OR list_contains(?2, view_id))
        GROUP BY code, severity ORDER BY findings DESC, code, severity""",
        [code, _finding_filters(conn, code, view)],
    )


def findings(
    conn: duckdb.DuckDBPyConnection,
    code: str | None = None,
    view: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """The findings of `code` and `view` (either: any), in a stable order; `limit` of them from
    `offset` (None: all)."""
    view_ids = _finding_filters(conn, code, view)
    _check_page(limit, offset)
    return query_rows(
        conn,
        """
        WITH named AS (
            -- Each view under its latest name: a current one's, else (dropped) any it had.
            SELECT view_id, arg_max(dotted_name(catalog, name), held) AS view
            FROM (
                SELECT view_id, catalog, name, 1 AS held FROM view_heads_as_of(?3)
                UNION ALL SELECT view_id, catalog, name, 0 FROM view_names
            ) GROUP BY view_id
        )
        SELECT f.scope, f.code, f.severity, n.view, f.view_id, f.version_id, f.location, f.position,
               f.message
        FROM findings f LEFT JOIN named n USING (view_id)
        WHERE (?1 IS NULL OR f.code = ?1 OR starts_with(f.code, ?1 || ':'))
          AND (?2 IS NULL OR list_contains(?2, f.view_id))
        ORDER BY f.code, f.view_id, f.version_id, f.location, f.position, f.message
        LIMIT ?4 OFFSET ?5""",
        [code, view_ids, FOREVER_MS, limit, offset],
    )


def quarantine(
    conn: duckdb.DuckDBPyConnection, limit: int | None = None, offset: int = 0
) -> list[dict[str, Any]]:
    """The quarantined files by location; `limit` of them from `offset` (None: all)."""
    _check_page(limit, offset)
    return query_rows(
        conn,
        "SELECT location, reason, message, stored_bytes, modified_ms FROM quarantine ORDER BY location "
        "LIMIT ? OFFSET ?",
        [limit, offset],
    )


def tables(
    conn: duckdb.DuckDBPyConnection, as_of_ms: int | None = None, limit: int | None = None, offset: int = 0
) -> dict[str, Any]:
    """The tables whose metadata is indexed and that were not dropped by `as_of_ms` (default: now),
    by name: each one's id, first and last commit by then; `limit` of them from `offset` (None:
    all), and how many there are (`total`)."""
    _check_page(limit, offset)
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    rows = query_rows(
        conn,
        """
        WITH committed AS (
            SELECT table_id, arg_max(catalog, commit_ms) AS catalog, arg_max(name, commit_ms) AS name,
                   min(commit_ms) AS first_ms, max(commit_ms) AS last_ms
            FROM table_files WHERE commit_ms <= ?1 AND name IS NOT NULL GROUP BY table_id
        ),
        current AS (
            SELECT * FROM committed c
            WHERE coalesce((SELECT min(dropped_ms) FROM table_drop(c.table_id)) > ?1, true)
        )
        SELECT dotted_name(catalog, name) AS table, table_id, first_ms, last_ms, count(*) OVER () AS total
        FROM current ORDER BY lower(dotted_name(catalog, name)), table_id LIMIT ?2 OFFSET ?3""",
        [at, limit, offset],
    )
    return {
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "total": rows[0]["total"] if rows else 0,
        "offset": offset,
        "tables": [
            {
                "table": row["table"],
                "table_id": row["table_id"],
                "first_committed_at": iso(row["first_ms"]),
                "last_committed_at": iso(row["last_ms"]),
            }
            for row in rows
        ],
    }


MAX_PAGE = 500


def _check_page(limit: int | None, offset: int) -> None:
    if limit is not None and not 1 <= limit <= MAX_PAGE:
        raise UsageError(f"limit is 1 to {MAX_PAGE}, not {limit}")
    if offset < 0:
        raise UsageError(f"offset is 0 or more, not {offset}")


MAX_FILES_ASKED = 1000
"""Locations one `files` call takes: each is a point lookup per table, and the list is a query's text."""


def files(conn: duckdb.DuckDBPyConnection, locations: list[str]) -> list[dict[str, Any]]:
    """What the store knows of each of these metadata files, in the order asked: `indexed` (as
    which view or table, since when), `quarantined` (why), `removed` (deleted before it was read)
    or `unknown`; `removed_ms` whenever a removal was reported."""
    if len(locations) > MAX_FILES_ASKED:
        raise UsageError(f"ask about at most {MAX_FILES_ASKED} files at a time, not {len(locations)}")
    if not locations:
        return []
    if not all(location.strip() for location in locations):
        raise UsageError("an empty location names no file")
    wanted = [normalize_location(location) for location in locations]
    # Each table filtered by the list itself: an IN list of constants is a lookup through the
    # table's key index, where a join would read the whole table.
    listed = ", ".join(f"${i}" for i in range(1, len(wanted) + 1))
    rows = query_rows(
        conn,
        f"""
        SELECT w.location, f.kind, coalesce(v.view_id, t.table_id) AS id,
               coalesce(v.catalog, t.catalog) AS catalog, coalesce(v.name, t.name) AS name,
               f.sequence_number, f.ingested_at, q.reason, q.message, r.removed_ms
        FROM (SELECT unnest([{listed}]) AS location) w
        LEFT JOIN (FROM files WHERE location IN ({listed})) f USING (location)
        LEFT JOIN (FROM view_files WHERE location IN ({listed})) v USING (location)
        LEFT JOIN (FROM table_files WHERE location IN ({listed})) t USING (location)
        LEFT JOIN (FROM quarantine WHERE location IN ({listed})) q USING (location)
        LEFT JOIN (SELECT location, min(removed_ms) AS removed_ms FROM removals
                   WHERE location IN ({listed}) GROUP BY location) r USING (location)""",
        wanted,
    )
    found = {row["location"]: row for row in rows}
    return [_file_status(asked, found[location]) for asked, location in zip(locations, wanted, strict=True)]


def _file_status(asked: str, row: dict[str, Any]) -> dict[str, Any]:
    if row["kind"] is not None:
        status = "indexed"
    elif row["reason"] is not None:
        status = "quarantined"
    else:
        status = "removed" if row["removed_ms"] is not None else "unknown"
    indexed = row["ingested_at"]
    return {
        "location": row["location"],
        "asked": escape_undecodable(asked),  # a shell's non-UTF-8 path bytes, as the store spells them
        "status": status,
        "kind": row["kind"],
        "id": row["id"],
        "name": display_name(row["catalog"], row["name"], row["id"]) if row["id"] else None,
        "sequence_number": row["sequence_number"],
        "indexed_at": iso(round(indexed.timestamp() * 1000)) if indexed is not None else None,
        "reason": row["reason"],
        "message": row["message"],
        "removed_ms": row["removed_ms"],
        "removed_at": iso(row["removed_ms"]),
    }


def run_sql(conn: duckdb.DuckDBPyConnection, text: str, max_rows: int | None = None) -> list[dict[str, Any]]:
    """Any SQL on the read-only, sandboxed connection; at most `max_rows` rows and one more, which
    tells the caller there were more (a result is held in memory before it is printed)."""
    try:
        statements = conn.extract_statements(text)
        if len(statements) != 1:  # DuckDB runs them all and keeps the last result; none is no result
            raise UsageError(
                "no SQL statement given"
                if not statements
                else f"one SQL statement at a time: this gives {len(statements)}"
            )
        cursor = conn.execute(statements[0])
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows + 1)
    except duckdb.OutOfMemoryException:
        raise  # the query's limit, not the SQL: said as every command says it (`answered_within`)
    except duckdb.Error as exc:
        # One line: DuckDB's message spans several (a hint, the statement, a caret under the error).
        lines = [line.strip() for line in str(exc).splitlines() if line.strip().strip("^")]
        # A replica is attached under its file's name: the store's is what the user knows.
        database = conn.execute("SELECT current_database()").fetchone()
        text = " ".join(lines)
        if database is not None:
            text = text.replace(f'database "{database[0]}"', "the store")
        raise UsageError(f"SQL failed: {text}") from exc
    return [dict(zip(columns, row, strict=True)) for row in rows]


__all__ = [
    "FOREVER_MS",
    "ResolvedTable",
    "ResolvedView",
    "deps",
    "files",
    "findings",
    "history",
    "iso",
    "parse_time",
    "quarantine",
    "resolve_table",
    "resolve_view",
    "run_sql",
    "show",
    "table",
    "uses",
]
