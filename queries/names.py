"""Naming things in a store: times in and out, display names, and resolving what a user typed (a
uuid, a location, a name or the tail of one) to one view or one table."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.parse.locations import is_metadata_file_name, normalize_location
from viewlineage.sinks.readers import check_stopped
from viewlineage.sinks.schema import LATEST_MS

FOREVER_MS = LATEST_MS
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


SMALLEST_BARE_MS = 10**11
"""A bare integer this large or larger is epoch milliseconds (1973-03-03 on); a smaller one could be
seconds (1795607008 is 2026 in seconds, 1970 in ms), so it takes a unit."""


def parse_time(text: str) -> int:
    """Epoch ms from ISO-8601 (a naive time is UTC), from an integer with a unit (`s`, `ms`, `us`), or
    from a bare integer of epoch ms of at least 10^11.

    >>> parse_time("2019-11-12T00:27:11.292"), parse_time("1573518431292"), parse_time("1573518431s")
    (1573518431292, 1573518431292, 1573518431000)
    """
    text = text.strip()
    if number := re.fullmatch(r"(-?[0-9]+)(s|ms|us)?", text):
        digits, unit = number.groups()
        if unit is None and abs(int(digits)) < SMALLEST_BARE_MS:
            raise UsageError(
                f"{text!r}: a bare number is epoch milliseconds, from 10^11 on; give its unit "
                f"({digits}s for seconds, {digits}ms, {digits}us) or an ISO-8601 time"
            )
        ms = int(digits) * 1000 if unit == "s" else int(digits) // 1000 if unit == "us" else int(digits)
        if not _FIRST_MS <= ms <= _LAST_MS:  # answers give times as ISO-8601 too
            raise UsageError(f"time out of range (years 1 to 9999 UTC): {text!r}")
        return ms
    try:
        moment = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))  # RFC 3339 allows `t`, `z`
    except ValueError as exc:
        raise UsageError(f"not an ISO-8601 time or an epoch number: {text!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:  # exact: a float timestamp rounds the last microseconds of 9999 into year 10000
        ms = (moment - _EPOCH) // timedelta(milliseconds=1)
    except OverflowError:
        ms = _LAST_MS + 1
    if not _FIRST_MS <= ms <= _LAST_MS:  # an offset can move year 1 or 9999 out of range
        raise UsageError(f"time out of range (years 1 to 9999 UTC): {text!r}")
    return ms


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIRST_MS = int(datetime(1, 1, 1, tzinfo=UTC).timestamp() * 1000)
_LAST_MS = int(datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC).timestamp() * 1000)


def iso(ms: int | None) -> str | None:
    """ISO-8601 UTC with milliseconds; None for a time past what ISO-8601 writes (years 1 to 9999),
    such as microseconds a writer stored as milliseconds: answers keep the raw number beside it."""
    if ms is None or not _FIRST_MS <= ms <= _LAST_MS:
        return None
    moment = _EPOCH + timedelta(milliseconds=ms)  # exact: a float of ms/1000 is not, near 9999
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def display_name(catalog: str | None, name: list[str] | None, view_id: str) -> str:
    if not name:
        return view_id
    return dotted([catalog, *name])


def dotted(parts: list[str | None]) -> str:
    """Name parts (a None catalog left out) joined by `.`, as the `dotted_name` macro joins them
    (`sql/05_names.sql`): a part holding `.`, `"`, `` ` `` or `/` in double quotes, so that every
    name printed can be typed back (`name_parts`)."""
    return ".".join(
        f'"{part.replace(chr(34), chr(34) * 2)}"' if any(c in part for c in '."`/') else part
        for part in parts
        if part is not None
    )


_NAME_PART = re.compile(r'"((?:[^"]|"")*)"|`((?:[^`]|``)*)`|([^./"`]+)')


def name_parts(text: str) -> list[str]:
    """The parts of a typed name: `.` or `/` between them, a part in double quotes or backticks
    taken whole (`db."a.b"`, Spark's db.`a.b`); lower-case, as names are stored."""
    parts, position, text = [], 0, text.strip()
    while position < len(text):
        if text[position] in "./":
            position += 1
            continue
        found = _NAME_PART.match(text, position)
        if found is None:
            raise UsageError(f"unbalanced quote in name {text!r}")
        quoted, ticked, plain = found.groups()
        if quoted is not None:
            parts.append(quoted.replace('""', '"'))
        elif ticked is not None:
            parts.append(ticked.replace("``", "`"))
        else:
            parts.append(plain)
        position = found.end()
    return [part.lower() for part in parts]


@dataclass(frozen=True, slots=True)
class ResolvedView:
    view_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ResolvedTable:
    table_id: str
    name: str


def query_rows(
    conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    check_stopped()  # a question of many statements stops between them (`answered_within`)
    for value in params.values() if isinstance(params, dict) else params or []:
        _check_text(value)
    cursor = conn.execute(sql, params or [])
    columns = [d[0] for d in cursor.description or []]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def _check_text(value: Any) -> None:
    """A usage error for text that is no Unicode: bytes of another encoding in an argument reach
    Python as lone surrogates, which DuckDB refuses with a traceback. (Names and locations in the
    store are text: a local file name that is not UTF-8 is stored with those bytes as `%XX`.)"""
    if isinstance(value, list):
        for item in value:
            _check_text(item)
    elif isinstance(value, str) and not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            raise UsageError(
                f"{value[:80]!r} is not valid UTF-8 text (a location whose name is not UTF-8 is "
                "given with those bytes as %XX)"
            ) from None


def names_an_id(text: str) -> bool:
    """Whether `text` is a view's or table's id (uuid, `loc:` or `bad-uuid:`) rather than a name or path."""
    return bool(_UUID.match(text.lower()) or text.startswith(("loc:", "bad-uuid:")))


def _by_id(conn: duckdb.DuckDBPyConnection, kind: str, text: str) -> list[dict[str, Any]] | None:
    """Views or tables (`kind`) by uuid, `loc:` or `bad-uuid:` id; None when `text` is none."""
    if not names_an_id(text):
        return None
    wanted = text if text.startswith(("loc:", "bad-uuid:")) else text.lower()
    if kind == "view":  # one id, under the name of its file in force (copies elsewhere have others)
        return query_rows(
            conn,
            "SELECT view_id, catalog, name FROM view_files WHERE location = view_location_as_of(?, ?)",
            [wanted, FOREVER_MS],
        )
    return query_rows(
        conn, f"SELECT {kind}_id, catalog, name FROM {kind}_names WHERE {kind}_id = ?", [wanted]
    )


def refuse_id_of_both(conn: duckdb.DuckDBPyConnection, ref: str) -> None:
    """A usage error when `ref` is the uuid of both a table and a view (a file copied with another's
    uuid, or forged), for the commands that take either: which one is meant cannot be told."""
    text = ref.strip()
    tables, views = _by_id(conn, "table", text), _by_id(conn, "view", text)
    if tables and views:
        names = [display_name(row["catalog"], row["name"], text) for row in (*tables, *views)]
        raise UsageError(
            f"{ref!r} is ambiguous: the uuid of table {names[0]} and of view {names[-1]}; "
            "name one by its full name",
            names,
        )


def _is_location(text: str) -> bool:
    """A URL, an absolute or `./` path, or a relative path to a metadata file or to a directory
    holding `metadata/` (`wh/db/orders`, which would otherwise read as a name)."""
    if "://" in text or text.startswith(("/", "file:", ".")):
        return True
    return (is_metadata_file_name(os.path.basename(text)) and os.path.isfile(text)) or os.path.isdir(
        os.path.join(text, "metadata")
    )


def _one(conn: duckdb.DuckDBPyConnection, kind: str, ref: str, rows: list[dict[str, Any]]) -> tuple[str, str]:
    """(id, display name) of the one view or table found, or a usage error saying why not."""
    named = [
        (row[f"{kind}_id"], display_name(row["catalog"], row["name"], row[f"{kind}_id"])) for row in rows
    ]
    if not named:
        hint = did_you_mean(conn, ref, kind)
        raise UsageError(f"no {kind} {ref!r} in the store{hint.text}", hint.names)
    if len(named) > 1:
        names = [name for _, name in named]
        distinct = len(set(names)) == len(names)  # directories whose names differ only in case: ids
        raise UsageError(
            f"{ref!r} is ambiguous: {', '.join(f'{name} ({key})' for key, name in named)}; "
            f"name one by {'its full name or ' if distinct else ''}its uuid",
            names if distinct else [key for key, _ in named],
        )
    return named[0]


def resolve_view(conn: duckdb.DuckDBPyConnection, ref: str, at_ms: int | None = None) -> ResolvedView:
    """A view by uuid, `loc:` id, file or view location, or name: `catalog.ns.view`, or any tail of
    it (`ns.view`, `view`) that names one view; `/` also separates. A name resolves to the uuid that
    held it at `at_ms` (default: the latest)."""
    return ResolvedView(*_one(conn, "view", ref, views_named(conn, ref, at_ms)))


def incarnations(conn: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    """The view `view` names, and unless it names it by id, the views that held its name or path
    before or after it (`view_incarnations`): one dropped and created again there has a new uuid."""
    if not view.strip():  # not every view: a caller that builds the filter from an empty field
        raise UsageError("--view is empty: name a view, or leave the option out for every view")
    view_id = resolve_view(conn, view).view_id
    if names_an_id(view.strip()):
        return [view_id]
    others = query_rows(conn, "SELECT view_id FROM view_incarnations(?)", [view_id])
    return [view_id, *(row["view_id"] for row in others)]


def views_named(conn: duckdb.DuckDBPyConnection, ref: str, at_ms: int | None = None) -> list[dict[str, Any]]:
    """The views `ref` could name (`resolve_view`), as rows of `view_id`, `catalog` and `name`."""
    at = FOREVER_MS if at_ms is None else at_ms
    text = ref.strip()
    rows = _by_id(conn, "view", text)
    if rows is None and _is_location(text):
        # A directory's views: the one its files name at `at` (a view dropped and re-created there),
        # by the names of its files in place (a copy's file is its view's, under the view's name).
        found = query_rows(
            conn,
            """
            SELECT DISTINCT view_id, catalog, name FROM view_files
            WHERE location = ?1 OR rtrim(metadata_location, '/') IN (?1, ?2)
               OR location LIKE ?1 || '/metadata/%'""",
            [normalize_location(text).rstrip("/"), text.rstrip("/")],
        )
        placed = _placed(conn, found)
        copied = sorted({row["view_id"] for row in found} - {row["view_id"] for row in placed})
        if copied:
            placed += query_rows(
                conn,
                """
                SELECT DISTINCT f.view_id, f.catalog, f.name FROM view_files f
                WHERE f.view_id IN (SELECT unnest(?1))
                  AND f.location IN (SELECT location FROM placed_view_locations(f.view_id))
                ORDER BY ALL""",
                [copied],
            )
        rows = _holders(conn, placed, at)
    elif rows is None:
        rows = _holders(conn, _placed(conn, _named(conn, "view", text)), at)
    return _one_row_per_id(rows, "view", name_parts(text) if rows and not _is_location(text) else None)


def _placed(conn: duckdb.DuckDBPyConnection, named: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """These views' names but those only copies of their files elsewhere give (`copied_view_names`)."""
    if not named:
        return named
    return query_rows(
        conn,
        """
        WITH named AS (SELECT unnest(?1, recursive := true))
        SELECT n.view_id, n.catalog, n.name FROM named n
        ANTI JOIN copied_view_names() c
            ON c.view_id = n.view_id AND c.catalog IS NOT DISTINCT FROM n.catalog AND c.name = n.name
        ORDER BY ALL""",
        [named],
    )


def _named(conn: duckdb.DuckDBPyConnection, kind: str, text: str) -> list[dict[str, Any]]:
    """Views or tables (`kind`) with a name whose tail is `text` (`.` or `/` between parts)."""
    parts = name_parts(text)
    return query_rows(
        conn,
        # A tail of the name, or catalog and the whole name (any catalog for a name the store knows
        # none of: `prod.sales.orders` names `sales.orders` indexed without --catalog-map); no list
        # is built per row.
        f"""
        SELECT {kind}_id, catalog, name FROM {kind}_names
        WHERE name[-1] = ?1[-1]
          AND ((len(name) >= len(?1) AND list_slice(name, -len(?1), -1) = ?1)
               OR (len(name) + 1 = len(?1) AND coalesce(catalog, ?1[1]) = ?1[1] AND name = ?1[2:]))
        ORDER BY ALL""",
        [parts],
    )


def resolve_table(conn: duckdb.DuckDBPyConnection, ref: str, at_ms: int | None = None) -> ResolvedTable:
    """A table whose metadata is indexed, by table-uuid, table or file location, or name (any tail
    of `catalog.ns.table`, as for views). Several tables under one name (dropped and re-created):
    the one whose files were committed last by `at_ms` (default: the latest), as for views."""
    return ResolvedTable(*_one(conn, "table", ref, tables_named(conn, ref, at_ms)))


def tables_named(conn: duckdb.DuckDBPyConnection, ref: str, at_ms: int | None = None) -> list[dict[str, Any]]:
    """The tables `ref` could name (`resolve_table`), as rows of `table_id`, `catalog` and `name`."""
    at = FOREVER_MS if at_ms is None else at_ms
    text = ref.strip()
    rows = _by_id(conn, "table", text)
    if rows is None and _is_location(text):
        rows = query_rows(
            conn,
            """
            SELECT DISTINCT table_id, catalog, name FROM table_files
            WHERE location = ?1 OR normalized_location(table_location) IN (?1, normalized_location(?2))
               OR location LIKE ?1 || '/metadata/%'""",
            [normalize_location(text).rstrip("/"), text.rstrip("/")],
        )
    elif rows is None:
        named = _named(conn, "table", text)
        rows = (
            query_rows(
                conn,
                """
                -- Per name and directory, the table whose files were committed last by ?2 (a
                -- table dropped and re-created at its path), else (none yet) the one created
                -- first; directories whose names differ only in case are two.
                WITH named AS (SELECT unnest(?1, recursive := true))
                SELECT DISTINCT table_id, catalog, name FROM (
                    SELECT n.table_id, n.catalog, n.name FROM named n JOIN table_files f USING (table_id)
                    GROUP BY n.table_id, n.catalog, n.name, metadata_directory(f.location)
                    QUALIFY row_number() OVER (
                        PARTITION BY n.catalog, n.name, metadata_directory(f.location)
                        ORDER BY max(f.commit_ms) FILTER (WHERE f.commit_ms <= ?2) DESC NULLS LAST,
                                 min(f.commit_ms), n.table_id) = 1
                )
                ORDER BY ALL""",
                [named, at],
            )
            if named
            else []
        )
    return _one_row_per_id(rows, "table", name_parts(text) if rows and not _is_location(text) else None)


def _one_row_per_id(rows: list[dict[str, Any]], kind: str, typed: list[str] | None) -> list[dict[str, Any]]:
    """One row per view or table (`kind`): one indexed under two names (its metadata under two
    roots, one a copy) is one, under a name with a catalog (a --catalog-map's), the one typed first."""
    chosen: dict[str, dict[str, Any]] = {}
    for row in rows:
        full = [row["catalog"], *row["name"]] if row["catalog"] is not None else list(row["name"] or ())
        rank = (row["catalog"] is None, typed is None or [part.lower() for part in full] != typed)
        kept = chosen.get(row[f"{kind}_id"])
        if kept is None or rank < kept["_rank"]:
            chosen[row[f"{kind}_id"]] = {**row, "_rank": rank}
    return [{key: value for key, value in row.items() if key != "_rank"} for row in chosen.values()]


class Hint(NamedTuple):
    text: str
    """`; did you mean ...?` (empty when nothing is close), for the end of an error message."""
    names: tuple[str, ...]
    """The names it offers (`UsageError.suggestions`)."""


def did_you_mean(conn: duckdb.DuckDBPyConnection, text: str, wanted: str | None = None) -> Hint:
    """`; did you mean ...?` with the stored names of views and tables, and the tables stored SQL
    reads, closest to `text` (compared with and without their catalog, and each tail of their
    names, as names may be typed). When a `wanted` kind ("view", "table") was asked for and `text`
    names the other, it says so."""
    names = query_rows(
        conn,
        """
        SELECT DISTINCT 'view' AS kind, catalog, name FROM view_names WHERE name IS NOT NULL
        UNION SELECT DISTINCT 'table', catalog, name FROM table_names
        UNION SELECT DISTINCT 'table', catalog, list_append(namespace, name) FROM table_references""",
    )
    spelled: dict[str, str] = {}
    kinds: dict[str, set[str]] = {}
    for row in names:
        full = dotted([row["catalog"], *row["name"]])
        for name in (full, *(dotted(row["name"][i:]) for i in range(len(row["name"])))):
            spelled.setdefault(name, full)
            kinds.setdefault(name, set()).add(row["kind"])
    asked = dotted(list(name_parts(text)))
    other = {"view": "table", "table": "view"}.get(wanted or "")
    if other is not None and other in kinds.get(asked, set()):
        command = "show" if other == "view" else "table"
        return Hint(f"; {spelled[asked]} is a {other} (`viewlineage {command} {spelled[asked]}`)", ())
    close = list(
        dict.fromkeys(
            spelled[name]
            for name in difflib.get_close_matches(asked, spelled, n=6, cutoff=0.75)
            if name != asked and spelled[name] != asked
        )
    )[:5]
    return Hint(f"; did you mean {', '.join(close)}?" if close else "", tuple(close))


def _holders(conn: duckdb.DuckDBPyConnection, named: list[dict[str, Any]], at: int) -> list[dict[str, Any]]:
    """One view per name and directory: where views share one (a view dropped and re-created at
    its path), the one whose files with that name were committed last by `at`, else (none yet) the one
    created first. Directories whose names differ only in case hold a view each (`view_heads_as_of`)."""
    if len({(row["catalog"], tuple(row["name"] or ())) for row in named}) == len(named):
        return named
    return query_rows(
        conn,
        """
        WITH named AS (SELECT unnest(?1, recursive := true)),
        files AS (
            -- A view is there from its file's commit, or its version's activation if that came first
            -- (a file written after the version it makes current): as `uses` takes it.
            SELECT f.view_id, f.catalog, f.name, metadata_directory(f.location) AS directory,
                   least(f.commit_ms, coalesce(f.last_log_ms, f.commit_ms)) AS since_ms
            FROM view_files f SEMI JOIN named n
                ON f.view_id = n.view_id AND f.catalog IS NOT DISTINCT FROM n.catalog AND f.name = n.name
        )
        SELECT DISTINCT view_id, catalog, name FROM (
            SELECT view_id, catalog, name FROM files
            GROUP BY view_id, catalog, name, directory
            QUALIFY row_number() OVER (
                PARTITION BY catalog, name, directory
                ORDER BY max(since_ms) FILTER (WHERE since_ms <= ?2) DESC NULLS LAST, min(since_ms),
                         view_id) = 1
        )
        ORDER BY ALL""",
        [named, at],
    )


def version_copy(conn: duckdb.DuckDBPyConnection, view_id: str, version_id: int) -> dict[str, Any] | None:
    """The `versions` row of a view's version; under a version conflict, the preferred copy."""
    copies = "SELECT * FROM {} WHERE view_id = ? AND version_id = ?"
    version = query_rows(conn, copies.format("versions"), [view_id, version_id])
    if len(version) > 1:  # a version conflict: ranking the copies by file is the rare, slower path
        version = query_rows(conn, copies.format("preferred_versions"), [view_id, version_id])
    return version[0] if version else None
