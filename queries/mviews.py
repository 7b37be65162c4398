"""Materialized views as of T: which storage table holds an MV's data, the refresh in force, and
whether it was FRESH, STALE or UNKNOWN then, with the reason.

A refresh records the snapshot of every base table it read (and, where the format says, the MV
version it materialized). At T the MV is STALE when a base table's ref points elsewhere than the
recorded snapshot, or when the MV's definition has a newer version than the one refreshed; UNKNOWN
when a base table cannot be checked (not Iceberg, never indexed, ambiguous, table functions); FRESH
otherwise. STALE outranks UNKNOWN: one stale base table is enough to know.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.queries.names import (
    FOREVER_MS,
    did_you_mean,
    display_name,
    iso,
    query_rows,
    resolve_table,
    resolve_view,
)

FRESH, STALE, UNKNOWN = "FRESH", "STALE", "UNKNOWN"
MAIN = "main"
COMPACTION = "replace"
"""The snapshot operation that rewrites files without changing data."""


@dataclass(frozen=True, slots=True)
class Materialized:
    """An MV as found at T: the view (None for a Trino storage table) and its storage table."""

    name: str
    view_id: str | None
    catalog: str | None
    format: str
    storage_table_id: str | None
    storage_table: str | None
    """How the MV names its storage table, for messages when it was never indexed."""
    storage_candidates: int = 1
    """How many indexed tables the MV's storage-table reference names: 0 never indexed, 2+ ambiguous."""
    allow_stale_data: bool | None = None
    refresh_strategy: str | None = None
    version_id: int | None = None
    """The MV's current version at T, where a view defines it."""
    version_since_ms: int | None = None
    refresh_hash: str | None = None
    """Format 4: the refresh its view file records."""


def mv_status(
    conn: duckdb.DuckDBPyConnection, ref: str | None, as_of_ms: int | None = None
) -> dict[str, Any]:
    """The freshness of one MV (by view name, or by storage-table name), or of every MV, at `as_of_ms`."""
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    found = [_find(conn, ref, at)] if ref is not None else _every(conn, at)
    return {
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "materialized_views": [_status(conn, mv, at) for mv in found],
    }


def _find(conn: duckdb.DuckDBPyConnection, ref: str, at: int) -> Materialized:
    try:
        view = resolve_view(conn, ref, at)
    except UsageError:
        view = None
    if view is not None:
        found = _view_mv(conn, view.view_id, view.name, at)
        if found is None:
            state = query_rows(
                conn, "SELECT active_version_id, dropped_ms FROM view_at(?, ?)", [view.view_id, at]
            )
            when = iso(at) if at != FOREVER_MS else "any time"
            if not state or state[0]["active_version_id"] is None:
                raise UsageError(f"view {view.name} did not exist yet at {when}: it had no version then")
            if state[0]["dropped_ms"] is not None and state[0]["dropped_ms"] <= at:
                raise UsageError(
                    f"view {view.name} was dropped at {iso(state[0]['dropped_ms'])}, before {when}"
                )
            raise UsageError(f"view {view.name} is not a materialized view at {when}")
        return found
    try:
        table = resolve_table(conn, ref, at)
    except UsageError:
        hint = did_you_mean(conn, ref)
        raise UsageError(
            f"no materialized view {ref!r} in the store: no view, and no storage table, of that name"
            f"{hint.text}",
            hint.names,
        ) from None
    found = _storage_table_mv(conn, table.table_id, table.name, at)
    if found is None:
        raise UsageError(f"table {table.name} records no materialized-view refresh by {iso(at)}")
    return found


def _every(conn: duckdb.DuckDBPyConnection, at: int) -> list[Materialized]:
    heads = query_rows(
        conn,
        """
        SELECT DISTINCT h.view_id, h.catalog, h.name FROM view_heads_as_of(?1) h
        WHERE EXISTS (FROM mv_definitions d WHERE d.location = h.file_location)
           OR EXISTS (FROM versions v JOIN version_storage_tables USING (version_hash)
                      WHERE v.view_id = h.view_id AND v.version_id = h.version_id)
        ORDER BY h.catalog, h.name, h.view_id""",
        [at],
    )
    found = [
        mv
        for head in heads
        if (
            mv := _view_mv(
                conn, head["view_id"], display_name(head["catalog"], head["name"], head["view_id"]), at
            )
        )
    ]
    claimed = {mv.storage_table_id for mv in found}
    tables = query_rows(
        conn,
        """
        SELECT DISTINCT r.owner_id AS table_id, n.catalog, n.name FROM mv_refreshes r
        JOIN table_names n ON n.table_id = r.owner_id
        WHERE r.format = 'trino'
          AND EXISTS (FROM table_files f WHERE f.table_id = r.owner_id AND f.commit_ms <= ?)
        ORDER BY n.catalog, n.name, r.owner_id""",
        [at],
    )
    for table in tables:
        if table["table_id"] not in claimed:
            name = display_name(table["catalog"], table["name"], table["table_id"])
            if (mv := _storage_table_mv(conn, table["table_id"], name, at)) is not None:
                found.append(mv)
                claimed.add(table["table_id"])
    return found


@dataclass(frozen=True, slots=True)
class ViewHead:
    """A view at T: its file in force and its current version."""

    location: str
    catalog: str | None
    version_id: int
    activated_ms: int
    version_hash: str | None
    """The current version's content (the preferred copy under a conflict); None if not stored."""


def _head(conn: duckdb.DuckDBPyConnection, view_id: str, at: int) -> ViewHead | None:
    """The view at `at`; None before its first version or once dropped."""
    rows = query_rows(
        conn,
        """
        SELECT location, catalog, active_version_id, activated_ms, version_hash, dropped_ms
        FROM view_at(?1, ?2)""",
        [view_id, at],
    )
    if not rows or rows[0]["active_version_id"] is None or (rows[0]["dropped_ms"] or FOREVER_MS + 1) <= at:
        return None
    row = rows[0]
    return ViewHead(
        row["location"], row["catalog"], row["active_version_id"], row["activated_ms"], row["version_hash"]
    )


def _view_mv(
    conn: duckdb.DuckDBPyConnection, view_id: str, name: str, at: int, head: ViewHead | None = None
) -> Materialized | None:
    head = head or _head(conn, view_id, at)
    if head is None:
        return None
    version_id, since, catalog = head.version_id, head.activated_ms, head.catalog
    definition = query_rows(conn, "SELECT * FROM mv_definitions WHERE location = ?", [head.location])
    if definition:
        d = definition[0]
        location = d["storage_table_location"]
        at_location = _tables_at_location(conn, location) if location else []
        storage_id = at_location[0] if len(at_location) == 1 else None
        storage_name = _table_name(conn, storage_id, at) if storage_id else location
        return Materialized(
            name=name,
            view_id=view_id,
            catalog=catalog,
            format=d["format"],
            storage_table_id=storage_id,
            storage_table=storage_name,
            storage_candidates=len(at_location),
            allow_stale_data=d["allow_stale_data"],
            refresh_strategy=d["refresh_strategy"],
            version_id=version_id,
            version_since_ms=since,
            refresh_hash=d["refresh_hash"],
        )
    storage = query_rows(
        conn,
        "SELECT catalog, namespace, name FROM version_storage_tables WHERE version_hash = ?",
        [head.version_hash],
    )
    if not storage:
        return None
    s = storage[0]
    storage_catalog = s["catalog"] or catalog
    candidates = _tables_named(conn, storage_catalog, [*s["namespace"], s["name"]])
    return Materialized(
        name=name,
        view_id=view_id,
        catalog=catalog,
        format="refresh-state",
        storage_table_id=candidates[0] if len(candidates) == 1 else None,
        storage_table=display_name(storage_catalog, [*s["namespace"], s["name"]], s["name"]),
        storage_candidates=len(candidates),
        version_id=version_id,
        version_since_ms=since,
    )


def _storage_table_mv(
    conn: duckdb.DuckDBPyConnection, table_id: str, name: str, at: int
) -> Materialized | None:
    """A storage table addressed by its own name: a Trino one (its definition lives in a metastore
    this product does not read), or the storage table of a view-defined MV."""
    owners = query_rows(
        conn,
        """
        SELECT DISTINCT f.view_id, f.catalog, f.name FROM mv_definitions d JOIN view_files f USING (location)
        JOIN table_files t
          ON normalized_location(t.table_location) = normalized_location(d.storage_table_location)
        WHERE t.table_id = ?1
        UNION
        SELECT DISTINCT n.view_id, n.catalog, n.name
        FROM version_storage_tables st JOIN versions v USING (version_hash) JOIN view_names n USING (view_id)
        JOIN table_names t ON list_append(st.namespace, st.name) = t.name
         AND coalesce(st.catalog, n.catalog) IS NOT DISTINCT FROM t.catalog
        WHERE t.table_id = ?1
        ORDER BY ALL""",
        [table_id],
    )
    for owner in owners:
        view_name = display_name(owner["catalog"], owner["name"], owner["view_id"])
        mv = _view_mv(conn, owner["view_id"], view_name, at)
        if mv is not None and mv.storage_table_id == table_id:
            return mv
    formats = query_rows(
        conn, "SELECT DISTINCT format FROM mv_refreshes WHERE owner_id = ? ORDER BY 1", [table_id]
    )
    if not formats:
        return None
    catalog = query_rows(conn, "SELECT catalog FROM table_file_as_of(?, ?)", [table_id, at])
    return Materialized(
        name=name,
        view_id=None,
        catalog=catalog[0]["catalog"] if catalog else None,
        format=formats[-1]["format"],
        storage_table_id=table_id,
        storage_table=name,
    )


def _table_name(conn: duckdb.DuckDBPyConnection, table_id: str, at: int) -> str:
    rows = query_rows(conn, "SELECT catalog, name FROM table_file_as_of(?, ?)", [table_id, at])
    return display_name(rows[0]["catalog"], rows[0]["name"], table_id) if rows else table_id


def _tables_at_location(conn: duckdb.DuckDBPyConnection, location: str) -> list[str]:
    rows = query_rows(
        conn,
        "SELECT DISTINCT table_id FROM table_files "
        "WHERE normalized_location(table_location) = normalized_location(?) ORDER BY 1",
        [location],
    )
    return [row["table_id"] for row in rows]


def _tables_named(conn: duckdb.DuckDBPyConnection, catalog: str | None, parts: list[str]) -> list[str]:
    """Tables under this name. Without a catalog any catalog matches; a recorded identifier whose
    first part is a catalog (`catalog.ns.table`) is tried that way when the whole name matches none."""
    attempts = [(catalog, parts)]
    if len(parts) >= 3 and catalog is None:
        attempts.append((parts[0], parts[1:]))
    for wanted_catalog, wanted in attempts:
        rows = query_rows(
            conn,
            """
            SELECT DISTINCT table_id FROM table_names
            WHERE name = ?1 AND (?2 IS NULL OR catalog IS NULL OR catalog = ?2) ORDER BY 1""",
            [[part.lower() for part in wanted], wanted_catalog],
        )
        if rows:
            return [row["table_id"] for row in rows]
    return []


def _refresh(conn: duckdb.DuckDBPyConnection, mv: Materialized, at: int) -> tuple[dict[str, Any] | None, str]:
    """The refresh in force at `at`, with when it happened; or None and why there is none."""
    if mv.format == "presto":
        rows = query_rows(
            conn,
            """
            SELECT r.*, (SELECT min(f.commit_ms) FROM mv_definitions d JOIN view_files f USING (location)
                         WHERE f.view_id = ?2 AND d.refresh_hash = r.refresh_hash) AS recorded_ms
            FROM mv_refreshes r WHERE r.refresh_hash = ?1""",
            [mv.refresh_hash, mv.view_id],
        )
        return (rows[0], "") if rows else (None, "its properties record no refresh")
    if mv.storage_table_id is None:
        if mv.storage_candidates > 1:
            return (
                None,
                f"{mv.storage_candidates} indexed tables answer to its storage table {mv.storage_table}",
            )
        return None, f"no metadata file of its storage table {mv.storage_table} was indexed"
    if mv.format == "mv-properties":
        rows = query_rows(
            conn,
            """
            SELECT r.*, (SELECT min(commit_ms) FROM table_files
                         WHERE table_id = ?1 AND current_refresh_hash = r.refresh_hash) AS recorded_ms
            FROM table_file_as_of(?1, ?2) f JOIN mv_refreshes r ON r.refresh_hash = f.current_refresh_hash
            WHERE f.commit_ms <= ?2""",
            [mv.storage_table_id, at],
        )
        if rows:
            return rows[0], ""
        return None, f"storage table {mv.storage_table} names no current refresh{_dropped_records(conn, mv)}"
    head = query_rows(conn, "SELECT snapshot_id FROM ref_head_as_of(?, 'main', ?)", [mv.storage_table_id, at])
    if not head:
        return None, f"storage table {mv.storage_table} had no snapshot"
    rows = query_rows(
        conn,
        "SELECT *, refreshed_ms AS recorded_ms FROM mv_refreshes WHERE owner_id = ? AND snapshot_id = ?",
        [mv.storage_table_id, head[0]["snapshot_id"]],
    )
    if not rows:
        snapshot, dropped = head[0]["snapshot_id"], _dropped_records(conn, mv)
        return None, f"the current snapshot {snapshot} of {mv.storage_table} records no refresh{dropped}"
    return rows[0], ""


REFRESH_FINDINGS = ("invalid-mv-metadata", "invalid-refresh-state", "mv-current-refresh-not-found")


def _dropped_records(conn: duckdb.DuckDBPyConnection, mv: Materialized) -> str:
    """Why a storage table's refresh records were not kept, when its files' findings say: a record
    that does not validate is dropped with a finding."""
    findings = query_rows(
        conn,
        """
        SELECT DISTINCT f.code, f.path FROM file_findings f JOIN table_files t USING (location)
        WHERE t.table_id = ? AND list_contains(?, f.code) ORDER BY ALL""",
        [mv.storage_table_id, list(REFRESH_FINDINGS)],
    )
    if not findings:
        return ""
    listed = "; ".join(f"{row['code']} at {row['path']}" for row in findings)
    return (
        f": its refresh records did not validate and were dropped ({listed}; `viewlineage findings` says why)"
    )


def _status(conn: duckdb.DuckDBPyConnection, mv: Materialized, at: int) -> dict[str, Any]:
    refresh, missing = _refresh(conn, mv, at)
    result: dict[str, Any] = {
        "mv": mv.name,
        "view_id": mv.view_id,
        "format": mv.format,
        "storage_table": mv.storage_table,
        "storage_table_id": mv.storage_table_id,
        "allow_stale_data": mv.allow_stale_data,
        "refresh_strategy": mv.refresh_strategy,
        "version_id": mv.version_id,
    }
    if refresh is None:
        return {
            **result,
            "state": UNKNOWN,
            "reasons": [f"no refresh to check: {missing}"],
            "refresh": None,
            "sources": [],
        }
    reasons: list[str] = []
    states: list[str] = []
    if refresh["unknown_reason"]:
        states.append(UNKNOWN)
        reasons.append(f"the refresh cannot be checked: {refresh['unknown_reason']}")
    if (
        refresh["view_version_id"] is not None
        and mv.version_id is not None
        and refresh["view_version_id"] != mv.version_id
    ):
        states.append(STALE)
        reasons.append(
            f"the definition changed: version {mv.version_id} is current since {iso(mv.version_since_ms)}, "
            f"the refresh materialized version {refresh['view_version_id']}"
        )
    sources = []
    for source in query_rows(
        conn,
        "SELECT * FROM mv_refresh_sources WHERE refresh_hash = ? ORDER BY ordinal",
        [refresh["refresh_hash"]],
    ):
        # Only the refresh-state format records namespace and name apart; the others write them
        # joined by dots, so a name holding a dot is split by guesswork.
        checked = _source_state(conn, source, mv.catalog, at, dotted=mv.format != "refresh-state")
        states.append(checked["state"])
        if checked["state"] != FRESH:
            reasons.append(checked["reason"])
        sources.append(checked)
    state = STALE if STALE in states else UNKNOWN if UNKNOWN in states else FRESH
    return {
        **result,
        "state": state,
        "reasons": reasons,
        "refresh": {
            "refresh_id": refresh["refresh_id"],
            "snapshot_id": refresh["snapshot_id"],
            "view_version_id": refresh["view_version_id"],
            "refreshed_ms": refresh["recorded_ms"],
            "refreshed_at": iso(refresh["recorded_ms"]),
        },
        "sources": sources,
    }


def _source_state(
    conn: duckdb.DuckDBPyConnection, source: dict[str, Any], mv_catalog: str | None, at: int, dotted: bool
) -> dict[str, Any]:
    recorded = {
        "source": source["identifier"],
        "kind": source["kind"],
        "recorded_snapshot_id": source["snapshot_id"],
        "recorded_version_id": source["view_version_id"],
        "ref": source["ref"] or (MAIN if source["kind"] == "table" else None),
    }
    if source["kind"] == "delta-table":
        return {
            **recorded,
            "state": UNKNOWN,
            "reason": f"{source['identifier']} is a Delta Lake table, which is not indexed",
        }
    if source["kind"] == "view":
        return _view_source_state(conn, source, recorded, at)
    if source["snapshot_id"] is None:
        return {**recorded, "state": UNKNOWN, "reason": f"no snapshot of {source['identifier']} was recorded"}
    table_id, why = _source_table(conn, source, mv_catalog, dotted)
    if table_id is None:
        return {**recorded, "state": UNKNOWN, "reason": why}
    ref = recorded["ref"]
    head = query_rows(conn, "SELECT snapshot_id, since_ms FROM ref_head_as_of(?, ?, ?)", [table_id, ref, at])
    if not head:
        return {
            **recorded,
            "table_id": table_id,
            "state": UNKNOWN,
            "reason": f"{source['identifier']} had no snapshot on {ref}",
        }
    current = head[0]["snapshot_id"]
    checked = {**recorded, "table_id": table_id, "snapshot_id": current}
    if current == source["snapshot_id"]:
        return {**checked, "state": FRESH, "reason": None}
    since = query_rows(
        conn,
        "SELECT * FROM snapshots_since(?, ?, ?) ORDER BY depth DESC",
        [table_id, current, source["snapshot_id"]],
    )
    reached = bool(since) and since[0]["parent_snapshot_id"] == source["snapshot_id"]
    operations = [row["operation"] for row in since]
    first = since[0] if reached else None
    stale_since = first["timestamp_ms"] if first else head[0]["since_ms"]
    unchanged = reached and all(op == COMPACTION for op in operations)
    detail = (
        f"{len(since)} snapshot(s) since: {', '.join(str(op) for op in operations)}"
        + (" (compaction only: data unchanged)" if unchanged else "")
        if reached
        else f"snapshot {current} does not descend from the recorded one as far as indexed snapshots show"
    )
    return {
        **checked,
        "state": STALE,
        "stale_since_ms": stale_since,
        "stale_since": iso(stale_since),
        "first_snapshot_after": first["snapshot_id"] if first else None,
        "operations_since": operations if reached else None,
        "data_unchanged": unchanged,
        "reason": f"{source['identifier']} is at snapshot {current} on {ref}, "
        f"the refresh read {source['snapshot_id']}: {detail}",
    }


def _source_table(
    conn: duckdb.DuckDBPyConnection, source: dict[str, Any], mv_catalog: str | None, dotted: bool
) -> tuple[str | None, str]:
    """The indexed table a refresh's source record names: by uuid, else location, else name; with
    why not when none or several can be told. A table found by location or name whose uuid is not
    the one recorded is another table than the refresh read (one dropped and created again)."""
    if source["uuid"]:
        rows = query_rows(
            conn, "SELECT DISTINCT table_id FROM table_files WHERE table_uuid = ?", [source["uuid"]]
        )
        if rows:
            return rows[0]["table_id"], ""
    found, why = _source_table_by_name(conn, source, mv_catalog, dotted)
    if not source["uuid"] or found is None:
        return found, why
    held = query_rows(conn, "SELECT DISTINCT table_uuid FROM table_files WHERE table_id = ?", [found])
    return None, (
        f"the refresh read {source['identifier']} as table {source['uuid']}, which no indexed table is; "
        f"{source['identifier']} is table {', '.join(str(row['table_uuid']) for row in held)}"
    )


def _source_table_by_name(
    conn: duckdb.DuckDBPyConnection, source: dict[str, Any], mv_catalog: str | None, dotted: bool
) -> tuple[str | None, str]:
    """`dotted`: the source was recorded as one dotted identifier, so each way of splitting it into
    namespace levels and a name (Trino's `tpch.a.b` is table `a.b` of schema `tpch`, or table `b`
    of `tpch.a`) is tried, and more than one table answering is ambiguous."""
    if source["location"]:
        at_location = _tables_at_location(conn, source["location"])
        if len(at_location) == 1:
            return at_location[0], ""
    catalog = source["catalog"] or mv_catalog
    pieces = str(source["identifier"]).split(".")
    readings = (
        [[*pieces[:i], ".".join(pieces[i:])] for i in range(1, len(pieces))]
        if dotted and not source["catalog"] and len(pieces) > 2
        else [[*source["namespace"], source["name"]]]
    )
    candidates = sorted({table for parts in readings for table in _tables_named(conn, catalog, parts)})
    if len(candidates) == 1:
        return candidates[0], ""
    if candidates:
        return None, f"{source['identifier']} names {len(candidates)} indexed tables: {', '.join(candidates)}"
    return None, f"the metadata of {source['identifier']} was never indexed"


def _view_source_state(
    conn: duckdb.DuckDBPyConnection, source: dict[str, Any], recorded: dict[str, Any], at: int
) -> dict[str, Any]:
    rows = query_rows(conn, "SELECT DISTINCT view_id FROM view_names WHERE view_id = ?", [source["uuid"]])
    if not rows:
        return {
            **recorded,
            "state": UNKNOWN,
            "reason": f"the metadata of view {source['identifier']} was never indexed",
        }
    current = query_rows(
        conn, "SELECT version_id, activated_ms FROM view_current_version(?, ?)", [source["uuid"], at]
    )
    if not current:
        return {**recorded, "state": UNKNOWN, "reason": f"view {source['identifier']} had no version"}
    version_id = current[0]["version_id"]
    if version_id == source["view_version_id"]:
        return {**recorded, "version_id": version_id, "state": FRESH, "reason": None}
    since = current[0]["activated_ms"]
    return {
        **recorded,
        "version_id": version_id,
        "state": STALE,
        "stale_since_ms": since,
        "stale_since": iso(since),
        "reason": f"view {source['identifier']} is at version {version_id} since {iso(since)}, "
        f"the refresh read version {source['view_version_id']}",
    }


def view_materialization(
    conn: duckdb.DuckDBPyConnection, view_id: str, name: str, at: int, head: ViewHead
) -> dict[str, Any] | None:
    """The freshness of view `view_id` (at `head`) at `at` when it is a materialized view then."""
    found = _view_mv(conn, view_id, name, at, head)
    return _status(conn, found, at) if found is not None else None


def refreshed_from(
    conn: duckdb.DuckDBPyConnection, catalog: str | None, parts: list[str], at: int
) -> list[dict[str, Any]]:
    """The MVs whose refresh in force at `at` read the table named `parts` (namespace levels, then
    the name; any catalog when `catalog` is None), with their freshness: the edges refresh records
    draw, Trino storage tables' included (their SQL is in a metastore this product does not read)."""
    owners = query_rows(
        conn,
        """
        SELECT DISTINCT r.owner_id, r.format
        FROM mv_refresh_sources s JOIN mv_refreshes r USING (refresh_hash)
        WHERE list_append(s.namespace, s.name) = ?1
          AND (?2 IS NULL OR s.catalog IS NULL OR s.catalog = ?2)""",
        [parts, catalog],
    )
    found: dict[str, Materialized] = {}
    for owner in owners:
        if owner["format"] == "presto":
            names = query_rows(
                conn, "SELECT catalog, name FROM view_file_as_of(?, ?)", [owner["owner_id"], at]
            )
            named = (
                display_name(names[0]["catalog"], names[0]["name"], owner["owner_id"])
                if names
                else owner["owner_id"]
            )
            mv = _view_mv(conn, owner["owner_id"], named, at)
        else:
            mv = _storage_table_mv(conn, owner["owner_id"], _table_name(conn, owner["owner_id"], at), at)
        if mv is not None:
            found.setdefault(mv.name, mv)
    wanted = ".".join(parts)
    readers = []
    for name in sorted(found):
        status = _status(conn, found[name], at)
        sources = [s for s in status["sources"] if s["source"].endswith(wanted)]
        if sources:
            readers.append({"mv": name, "state": status["state"], "table_state": sources[0]["state"],
                            "recorded_snapshot_id": sources[0]["recorded_snapshot_id"],
                            "refreshed_at": status["refresh"]["refreshed_at"]})  # fmt: skip
    return readers
