"""The query API over HTTP: the CLI's read commands as JSON, for programs and for readers that
must see a follower's batches the moment they commit.

    GET /api/show?view=V[&as_of=T]              GET /api/uses?table=T[&as_of=][&transitive=true]
    GET /api/table?table=T[&as_of=]             GET /api/deps?view=V[&as_of=][&transitive=true]
    GET /api/history?view=V                     GET /api/impact?table=T&drop_column=C|rename_column=A=B
    GET /api/mv-status[?mv=M][&as_of=]                                    |change_type=C=TYPE[&as_of=]
    GET /api/files?location=L[&location=L2...]  GET /api/findings[?code=][&view=][&counts=true]
                                                     [&limit=][&offset=]
    GET /api/quarantine[?limit=][&offset=]      GET /api/graph?name=N[&as_of=][&compare=T0][&depth=D]
    GET /api/diff?view=V[&before=VERSION][&after=VERSION]
    GET /api/table-history?table=T[&limit=][&offset=][&as_of=]
    GET /api/search?q=PART_OF_A_NAME[&limit=]
    GET /api/changes[?since=T][&until=T][&namespace=][&engine=][&dialect=][&kind=][&view=][&limit=][&offset=]

Times (`as_of`) are ISO-8601 or epoch numbers, as on the command line. Answers are the CLI's
`--format json` documents. A question the store cannot answer (an unknown view, a bad time, an
unknown or repeated parameter) is a 400 with `{"error": ...}`; a store that cannot be opened, a 503.
There is no SQL endpoint: a follower answers on its writer's connection.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, overload

import duckdb

from viewlineage.indexer.errors import QueryOutOfMemory, StoreError, UsageError
from viewlineage.queries import api, changes, diff, graph, mviews, search, table_history
from viewlineage.queries import impact as impact_module
from viewlineage.queries.names import parse_time
from viewlineage.queries.output import csv_text, main_rows
from viewlineage.sinks.readers import STORE_NOTICE, answered_within

Reader = Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]]
"""Opens a connection for one request and closes it after."""

PREFIX = "/api/"
COOKIE = "viewlineage_session"
"""The browser session's cookie, which `auth` sets once its token is given (and pages look for)."""
MAX_VALUE_CHARS = 4096
"""The longest query parameter value taken."""


class Parameters:
    """One request's query parameters, checked against what its endpoint takes: an unknown name or
    a repeated one that is not repeatable is an error, so that a misspelling never goes unnoticed."""

    def __init__(self, items: Sequence[tuple[str, str]], endpoint: Endpoint) -> None:
        self._values: dict[str, list[str]] = {}
        for name, value in items:
            if len(value) > MAX_VALUE_CHARS:  # no name, time or location is this long: not echoed back
                raise UsageError(
                    f"query parameter {name[:40]!r} is {len(value):,} characters long; "
                    f"at most {MAX_VALUE_CHARS:,}"
                )
            self._values.setdefault(name, []).append(value)
        unknown = sorted(set(self._values) - endpoint.parameters - COMMON)
        if unknown:
            hints = [_hint(name, endpoint.parameters | COMMON) for name in unknown]
            takes = ", ".join(sorted(endpoint.parameters | COMMON))
            raise UsageError(f"unknown query parameter {', '.join(hints)}; this endpoint takes: {takes}")
        repeated = sorted(n for n, v in self._values.items() if len(v) > 1 and n not in endpoint.repeatable)
        if repeated:
            raise UsageError(f"query parameter given more than once: {', '.join(map(repr, repeated))}")
        self.format = self.optional("format") or "json"
        if self.format not in ("json", "csv"):
            raise UsageError(f"format is json or csv, not {self.format!r}")
        self.rows = self.optional("rows") or endpoint.rows

    def optional(self, name: str) -> str | None:
        values = self._values.get(name)
        return values[0] if values else None

    def required(self, name: str) -> str:
        value = self.optional(name)
        if not value:
            raise UsageError(f"missing query parameter {name!r}")
        return value

    def locations(self) -> list[str]:
        """Every `location`, each a URL or an absolute path: a relative one would mean the server's
        working directory."""
        found = self._values.get("location", [])
        if not found:
            raise UsageError("missing query parameter 'location'")
        for location in found:
            if "://" not in location and not location.startswith("/"):
                raise UsageError(f"a location is a URL or an absolute path, not {location!r}")
        return found

    def as_of(self) -> int | None:
        return self.time("as_of")

    def time(self, name: str) -> int | None:
        value = self.optional(name)
        if value is not None and not value.strip():  # `as_of=` is no time, not "the latest"
            raise UsageError(f"{name} is empty: give a time, or leave the parameter out for the latest state")
        return parse_time(value) if value else None

    @overload
    def number(self, name: str) -> int | None: ...
    @overload
    def number(self, name: str, default: int) -> int: ...
    def number(self, name: str, default: int | None = None) -> int | None:
        value = self.optional(name)
        if value is None:
            return default
        if not value.isdigit() or len(value) > 15:
            raise UsageError(f"{name} is a whole number below 10^15, not {value[:40]!r}")
        return int(value)

    def flag(self, name: str) -> bool:
        """`true`/`1`, `false`/`0`; given with no value (`&transitive`), true."""
        given = self.optional(name)
        value = "false" if given is None else (given or "true").lower()
        if value not in ("true", "false", "1", "0"):
            raise UsageError(f"{name} is true or false, not {value!r}")
        return value in ("true", "1")


def _hint(name: str, known: frozenset[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name)


COMMON = frozenset({"format", "rows"})
"""What every endpoint takes: `format=csv` answers a table of the document as CSV, its main table or
the one `rows` names (`/api/history?view=V&format=csv&rows=property_changes`)."""


@dataclass(frozen=True)
class Endpoint:
    answer: Callable[[duckdb.DuckDBPyConnection, Parameters], Any]
    parameters: frozenset[str]
    repeatable: frozenset[str] = frozenset()
    rows: str | None = None
    """The field of the answer that holds its main table (None: the answer is a list of rows, or a
    record whose fields are the rows)."""
    tabled: Callable[[Any], Any] | None = None
    """The answer as its tables are printed in CSV, when that differs from its JSON (as the CLI's)."""


def _graph(conn: duckdb.DuckDBPyConnection, q: Parameters) -> Any:
    name, depth = q.required("name"), q.optional("depth")
    if depth is not None and not (depth.isdigit() and int(depth) >= 1):
        raise UsageError(f"depth is a whole number from 1, not {depth!r}")
    return graph.lineage_answer(conn, name, q.as_of(), int(depth) if depth else None, q.time("compare"))


def _changes(conn: duckdb.DuckDBPyConnection, q: Parameters) -> Any:
    return changes.changes(
        conn,
        q.time("since"),
        q.time("until"),
        namespace=q.optional("namespace"),
        engine=q.optional("engine"),
        dialect=q.optional("dialect"),
        kind=q.optional("kind"),
        view=q.optional("view"),
        limit=q.number("limit", 50),
        offset=q.number("offset", 0),
    )


def _findings(conn: duckdb.DuckDBPyConnection, q: Parameters) -> Any:
    if q.flag("counts"):
        if q.optional("limit") is not None or q.optional("offset") is not None:
            raise UsageError("counts=true answers every code at once: leave out limit and offset")
        return api.finding_counts(conn, q.optional("code"), q.optional("view"))
    return api.findings(
        conn, q.optional("code"), q.optional("view"), q.number("limit"), q.number("offset", 0)
    )


def _impact(conn: duckdb.DuckDBPyConnection, q: Parameters) -> Any:
    change = impact_module.parse_change(
        q.optional("drop_column"), q.optional("rename_column"), q.optional("change_type")
    )
    return impact_module.impact(conn, q.required("table"), change, q.as_of())


ENDPOINTS: dict[str, Endpoint] = {
    "show": Endpoint(
        lambda conn, q: api.show(conn, q.required("view"), q.as_of()), frozenset({"view", "as_of"})
    ),
    "table": Endpoint(
        lambda conn, q: api.table(conn, q.required("table"), q.as_of()), frozenset({"table", "as_of"})
    ),
    "history": Endpoint(
        lambda conn, q: api.history(conn, q.required("view")), frozenset({"view"}), rows="activations"
    ),
    "deps": Endpoint(
        lambda conn, q: api.deps(conn, q.required("view"), q.as_of(), q.flag("transitive")),
        frozenset({"view", "as_of", "transitive"}),
        rows="reads",
    ),
    "uses": Endpoint(
        lambda conn, q: api.uses(conn, q.required("table"), q.as_of(), q.flag("transitive")),
        frozenset({"table", "as_of", "transitive"}),
        rows="views",
    ),
    "graph": Endpoint(
        _graph,
        frozenset({"name", "as_of", "compare", "depth"}),
        rows="edges",
        tabled=lambda answer: answer | {"edges": graph.edge_rows(answer)["edges"]},  # ends by name
    ),
    "diff": Endpoint(
        lambda conn, q: diff.version_diff(conn, q.required("view"), q.number("before"), q.number("after")),
        frozenset({"view", "before", "after"}),
        rows="lines",
        tabled=lambda answer: answer | {"lines": diff.line_rows(answer)},  # as the CLI's CSV
    ),
    "changes": Endpoint(
        _changes,
        frozenset({"since", "until", "namespace", "engine", "dialect", "kind", "view", "limit", "offset"}),
        rows="changes",
    ),
    "table-history": Endpoint(
        lambda conn, q: table_history.table_history(
            conn, q.required("table"), q.number("limit", 50), q.number("offset", 0), q.as_of()
        ),
        frozenset({"table", "limit", "offset", "as_of"}),
        rows="snapshots",
    ),
    "mv-status": Endpoint(
        lambda conn, q: mviews.mv_status(conn, q.optional("mv"), q.as_of()),
        frozenset({"mv", "as_of"}),
        rows="materialized_views",
    ),
    "impact": Endpoint(
        _impact, frozenset({"table", "as_of", "drop_column", "rename_column", "change_type"}), rows="uses"
    ),
    "files": Endpoint(
        lambda conn, q: api.files(conn, q.locations()), frozenset({"location"}), frozenset({"location"})
    ),
    "findings": Endpoint(_findings, frozenset({"code", "view", "counts", "limit", "offset"})),
    "quarantine": Endpoint(
        lambda conn, q: api.quarantine(conn, q.number("limit"), q.number("offset", 0)),
        frozenset({"limit", "offset"}),
    ),
    "tables": Endpoint(
        lambda conn, q: api.tables(conn, q.as_of(), q.number("limit"), q.number("offset", 0)),
        frozenset({"as_of", "limit", "offset"}),
        rows="tables",
    ),
    "search": Endpoint(
        lambda conn, q: search.search(conn, q.required("q"), q.number("limit", 50)),
        frozenset({"q", "limit"}),
        rows="results",
    ),
}


@dataclass(frozen=True)
class Answer:
    status: int
    document: Any
    csv: str | None = None
    """With `format=csv`, the table asked for as CSV."""
    notice: str | None = None
    """Why the answer may be out of date (`STORE_NOTICE`), sent as the header `NOTICE_HEADER`."""


NOTICE_HEADER = "x-viewlineage-notice"


def answer(reader: Reader, timeout: float, name: str, items: Sequence[tuple[str, str]]) -> Answer:
    """What answers `GET /api/<name>?<items>` within `timeout` seconds."""
    STORE_NOTICE.set(None)
    try:
        with reader() as conn:
            return replace(answer_on(conn, timeout, name, items), notice=STORE_NOTICE.get())
    except StoreError as exc:
        return Answer(503, {"error": str(exc)})
    except duckdb.OutOfMemoryException as exc:  # opening the store, before the question's own limit
        return Answer(503, {"error": f"the store could not be read within query-memory: {exc}"})


def answer_on(
    conn: duckdb.DuckDBPyConnection, timeout: float, name: str, items: Sequence[tuple[str, str]]
) -> Answer:
    """`answer` on an open connection (a page asks several questions on one)."""
    endpoint = ENDPOINTS.get(name)
    if endpoint is None:
        known = ", ".join(PREFIX + known for known in ENDPOINTS)
        return Answer(404, {"error": f"no such endpoint: {PREFIX}{name}; try {known}"})
    try:
        parameters = Parameters(items, endpoint)
        document = answered_within(conn, timeout, lambda conn: endpoint.answer(conn, parameters))
        if parameters.format != "csv":
            return Answer(200, document)
        tabled = endpoint.tabled(document) if endpoint.tabled else document
        return Answer(200, document, csv_text(_table(tabled, parameters.rows)))
    except UsageError as exc:
        return Answer(400, refusal(exc))
    except QueryOutOfMemory as exc:
        # DuckDB holds one database per store file and process: the requests answered at once share
        # its limit (the seventeenth adversarial trial: a light request failed beside heavy ones).
        return Answer(503, {"error": f"{exc}; the requests this server answers at once share that limit"})
    except StoreError as exc:
        return Answer(503, {"error": str(exc)})


def refusal(exc: UsageError) -> dict[str, Any]:
    """A 400's document: the error, and what could be asked instead when something comes close."""
    return {"error": str(exc), **({"did_you_mean": list(exc.suggestions)} if exc.suggestions else {})}


def _table(document: Any, rows: str | None) -> list[dict[str, Any]]:
    if rows is not None and not isinstance(document, dict):
        raise UsageError(f"rows names a table of the answer, which is one table: leave rows={rows!r} out")
    if rows is None or not isinstance(document, dict):
        return main_rows(document, None)
    tables = sorted(key for key, value in document.items() if isinstance(value, list))
    if rows not in tables:
        raise UsageError(f"rows names a table of the answer: {', '.join(tables)}; not {rows!r}")
    return [row if isinstance(row, dict) else {rows: row} for row in document[rows]]


def encode(value: Any) -> bytes:
    """A JSON document as the CLI's `--format json` writes it."""
    return json.dumps(value, default=str, ensure_ascii=False).encode()
