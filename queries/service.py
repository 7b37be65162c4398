"""The query API over HTTP: the CLI's read commands as JSON, for programs and for readers that
must see a follower's batches the moment they commit.

    GET /api/show?view=V[&as_of=T]              GET /api/uses?table=T[&as_of=][&transitive=true]
    GET /api/table?table=T[&as_of=]             GET /api/deps?view=V[&as_of=][&transitive=true]
    GET /api/history?view=V                     GET /api/impact?table=T&drop_column=C|rename_column=A=B
    GET /api/mv-status[?mv=M][&as_of=]                                    |change_type=C=TYPE[&as_of=]
    GET /api/files?location=L[&location=L2...]  GET /api/findings[?code=][&view=]
    GET /api/quarantine

Times (`as_of`) are ISO-8601 or epoch ms, as on the command line. Answers are the CLI's `--format
json` documents; a question the store cannot answer (an unknown view, a bad time) is a 400 with
`{"error": ...}`. There is no SQL endpoint: a follower answers on its writer's connection.

A follower (`watch`, `consume`) serves this next to /healthz and /metrics (`--metrics-port`) and
answers from its own store connection, so a batch is visible here as soon as its transaction
commits, before any replica is published; `viewlineage serve` answers from a store no process
writes, or from the replica of one that another process writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import parse_qs

import duckdb

from viewlineage.indexer.errors import StoreError, UsageError
from viewlineage.indexer.pipeline.health import WsgiApp
from viewlineage.queries import api, mviews
from viewlineage.queries import impact as impact_module

Reader = Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]]
"""Opens a connection for one request and closes it after."""
StartResponse = Callable[[str, list[tuple[str, str]]], Any]

PREFIX = "/api/"


class _Query:
    """One request's parameters: the last value of each, or all of a repeated one."""

    def __init__(self, text: str) -> None:
        self._values = parse_qs(text, keep_blank_values=True)

    def optional(self, name: str) -> str | None:
        values = self._values.get(name)
        return values[-1] if values else None

    def required(self, name: str) -> str:
        value = self.optional(name)
        if not value:
            raise UsageError(f"missing query parameter {name!r}")
        return value

    def every(self, name: str) -> list[str]:
        return self._values.get(name, [])

    def locations(self) -> list[str]:
        """Every `location`, each a URL or an absolute path: a relative one would mean the server's
        working directory."""
        found = self.every("location")
        if not found:
            raise UsageError("missing query parameter 'location'")
        for location in found:
            if "://" not in location and not location.startswith("/"):
                raise UsageError(f"a location is a URL or an absolute path, not {location!r}")
        return found

    def as_of(self) -> int | None:
        value = self.optional("as_of")
        return api.parse_time(value) if value else None

    def flag(self, name: str) -> bool:
        value = (self.optional(name) or "false").lower()
        if value not in ("true", "false", "1", "0"):
            raise UsageError(f"{name} is true or false, not {value!r}")
        return value in ("true", "1")


def _impact(conn: duckdb.DuckDBPyConnection, q: _Query) -> Any:
    change = impact_module.parse_change(
        q.optional("drop_column"), q.optional("rename_column"), q.optional("change_type")
    )
    return impact_module.impact(conn, q.required("table"), change, q.as_of())


ROUTES: dict[str, Callable[[duckdb.DuckDBPyConnection, _Query], Any]] = {
    "show": lambda conn, q: api.show(conn, q.required("view"), q.as_of()),
    "table": lambda conn, q: api.table(conn, q.required("table"), q.as_of()),
    "history": lambda conn, q: api.history(conn, q.required("view")),
    "deps": lambda conn, q: api.deps(conn, q.required("view"), q.as_of(), q.flag("transitive")),
    "uses": lambda conn, q: api.uses(conn, q.required("table"), q.as_of(), q.flag("transitive")),
    "mv-status": lambda conn, q: mviews.mv_status(conn, q.optional("mv"), q.as_of()),
    "impact": _impact,
    "files": lambda conn, q: api.files(conn, q.locations()),
    "findings": lambda conn, q: api.findings(conn, q.optional("code"), q.optional("view")),
    "quarantine": lambda conn, q: api.quarantine(conn),
}


def query_app(reader: Reader) -> WsgiApp:
    """The WSGI application answering `/api/<command>` with connections from `reader`."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        route = ROUTES.get(path.removeprefix(PREFIX)) if path.startswith(PREFIX) else None
        if route is None:
            known = ", ".join(PREFIX + name for name in ROUTES)
            return _json(start_response, "404 Not Found", {"error": f"no such endpoint: {path}; try {known}"})
        if environ.get("REQUEST_METHOD", "GET") != "GET":
            return _json(start_response, "405 Method Not Allowed", {"error": "only GET"})
        try:
            with reader() as conn:
                answer = route(conn, _Query(environ.get("QUERY_STRING", "")))
        except UsageError as exc:
            return _json(start_response, "400 Bad Request", {"error": str(exc)})
        except StoreError as exc:
            return _json(start_response, "503 Service Unavailable", {"error": str(exc)})
        except Exception as exc:  # a bug or a store failure: still an answer in the API's terms
            failure = {"error": f"{type(exc).__name__}: {exc}"}
            return _json(start_response, "500 Internal Server Error", failure)
        return _json(start_response, "200 OK", answer)

    return app


def _json(start_response: StartResponse, status: str, value: Any) -> list[bytes]:
    body = json.dumps(value, default=str, ensure_ascii=False).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
