"""The web application `serve` and a follower's `--metrics-port` run: the query API (`api`) under
`/api/`, the pages of the web UI (`pages`), `/healthz` for orchestrators and, for a follower,
`/metrics` for Prometheus."""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from viewlineage.indexer.errors import StoreError
from viewlineage.queries.web import api
from viewlineage.queries.web.pages import HealthCheck, Pages


def json_response(status: int, value: Any) -> Response:
    return Response(api.encode(value), status, media_type="application/json")


def store_health(reader: api.Reader) -> HealthCheck:
    """`serve`'s health: whether a request can open the store (or its replica) now."""

    def check() -> tuple[bool, dict[str, Any]]:
        try:
            with reader() as conn:
                conn.execute("SELECT 1").fetchall()
        except StoreError as exc:
            return False, {"status": "store-unavailable", "error": str(exc)}
        return True, {"status": "ok"}

    return check


def web_app(
    reader: api.Reader, timeout: float, health: HealthCheck, registry: CollectorRegistry | None = None
) -> Starlette:
    """The routes, answering every error (404, 405, a bug) as JSON `{"error": ...}` too; a query
    runs at most `timeout` seconds."""

    def query(request: Request) -> Response:
        name, items = request.path_params["name"], request.query_params.multi_items()
        answered = api.answer(reader, timeout, name, items)
        # A header is the one place every answer has (a CSV, a JSON list) for a notice
        # (Header values are Latin-1: a store's path in other scripts is escaped, `\u5546`.)
        notice = (
            {api.NOTICE_HEADER: answered.notice.encode("ascii", "backslashreplace").decode()}
            if answered.notice
            else {}
        )
        if answered.csv is not None:
            rows = request.query_params.get("rows", "")
            part = f"-{rows}" if rows.replace("_", "").isalnum() else ""  # the table asked for, by name
            disposition = f'attachment; filename="{name}{part}.csv"'
            return Response(
                answered.csv, media_type="text/csv", headers={"content-disposition": disposition, **notice}
            )
        response = json_response(answered.status, answered.document)
        response.headers.update(notice)
        return response

    def healthz(request: Request) -> Response:
        ok, document = health()
        return json_response(200 if ok else 503, document)

    routes: list[BaseRoute] = [Route(api.PREFIX + "{name}", query), Route("/healthz", healthz)]
    if registry is not None:
        routes.append(
            Route(
                "/metrics",
                lambda request: Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST),
            )
        )

    routes += Pages(reader, timeout, health).routes()

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404 and request.url.path.startswith("/static/"):
            # Open without a token (`auth.OPEN_PATHS`): the pages and endpoints are not listed here.
            return json_response(404, {"error": f"no such file: {request.url.path}"})
        if exc.status_code == 404:
            known = [api.PREFIX + name for name in api.ENDPOINTS] + [
                route.path for route in routes[1:] if isinstance(route, Route)
            ]
            return json_response(404, {"error": f"no such page: {request.url.path}; try {', '.join(known)}"})
        return json_response(exc.status_code, {"error": exc.detail})

    async def failure(request: Request, exc: Exception) -> Response:
        # A bug or a store failure: still an answer in the API's terms.
        return json_response(500, {"error": f"{type(exc).__name__}: {exc}"})

    return Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: failure})
