"""The web UI: a page per question, rendered on the server from the `/api/` answers it shows and
links to (its JSON twins, and each table as CSV), as datasette pairs every page with its JSON. Every
state is in the URL. Charts are drawn in the browser, with the vendored Vega-Lite, from the answer
the page embeds.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

import duckdb
import jinja2
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from viewlineage.indexer.errors import StoreError
from viewlineage.queries import graph
from viewlineage.queries.changes import KINDS
from viewlineage.queries.output import cell
from viewlineage.queries.web import api
from viewlineage.sinks.readers import STORE_NOTICE

HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]
"""Whether the process is healthy, and the JSON document `/healthz` answers."""

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("viewlineage.queries.web", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
PAGE_SIZE = 50
TIMELINE_PAGE = 500
"""A view's timeline shows this many changes at a time (a view replaced every hour has thousands)."""


@dataclass(frozen=True)
class Question:
    """One `/api/` call behind a page."""

    endpoint: str
    items: tuple[tuple[str, str], ...]
    optional: bool = False
    """A question whose refusal (400) leaves its part of the page out, not the page an error."""
    linked: tuple[tuple[str, str], ...] | None = None
    """The parameters of the page's JSON link, when not `items` (a page asks for one row more than
    it shows, to know whether there is a next page)."""

    def url(self, **extra: str) -> str:
        query = urlencode([*self.items, *extra.items()])
        return f"{api.PREFIX}{self.endpoint}{'?' if query else ''}{query}"

    def link(self) -> str:
        """The JSON twin of what the page shows."""
        return replace(self, items=self.linked).url() if self.linked is not None else self.url()


def _embedded(value: Any) -> Markup:
    """A JSON document to put inside `<script type="application/json">`: with `<`, `>` and `&` as
    JSON escapes, no text in it can end the script or start a comment."""
    text = json.dumps(value, default=str)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def view_link(row: dict[str, Any]) -> str:
    """The view page of a row's `view_id` (a name may be held by several views over time)."""
    return f"/view?{urlencode({'view': row['view_id']})}"


def node_link(node: dict[str, Any], kept: dict[str, str] | None = None) -> str:
    """A graph node's page: a view's own, a table's lineage (with the parameters `kept`)."""
    if node["kind"] == "view":
        return view_link({"view_id": node["id"]})
    return f"/lineage?{urlencode({'name': node['name'], **(kept or {})})}"


def counted(number: int, noun: str) -> str:
    """`1 commit`, `2 commits`: a count with its noun."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def type_name(kind: Any) -> str:
    """An Iceberg type as a column list names it: `long`, `decimal(10, 2)`; `struct`, `list` or
    `map` for a nested one (as JSON text or an object)."""
    if isinstance(kind, str) and kind.startswith("{"):
        with contextlib.suppress(ValueError):
            kind = json.loads(kind)
    return str(kind.get("type", "?")) if isinstance(kind, dict) else str(kind)


TEMPLATES.filters["embedded"] = _embedded
TEMPLATES.filters["type_name"] = type_name
TEMPLATES.filters["counted"] = counted
TEMPLATES.globals["node_link"] = node_link
TEMPLATES.globals["finding_link"] = lambda row: f"/findings?{urlencode({'code': row['code']})}"
TEMPLATES.globals["mv_link"] = lambda row: view_link(row) if row.get("view_id") else None
TEMPLATES.globals["edge_rows"] = lambda answer: graph.edge_rows(answer)["edges"]
TEMPLATES.filters["cell"] = cell
TEMPLATES.globals["view_link"] = view_link
TEMPLATES.globals["table_link"] = lambda row: f"/table?{urlencode({'table': row['table_id']})}"
TEMPLATES.globals["session_cookie"] = api.COOKIE


class Pages:
    """The pages, each answering from one connection to the store per request."""

    def __init__(self, reader: api.Reader, timeout: float, health: HealthCheck) -> None:
        self.reader = reader
        self.timeout = timeout
        self.health = health

    def routes(self) -> list[Route | Mount]:
        # An editable install links each file into the package: StaticFiles would refuse the links.
        static = StaticFiles(packages=[("viewlineage.queries.web", "static")], follow_symlink=True)
        pages = [
            (
                "/",
                self.activity,
                "Activity",
                ("since", "until", "namespace", "engine", "dialect", "kind", "offset", "limit"),
            ),
            ("/view", self.view, "View", ("view", "before", "after", "offset", "limit")),
            ("/lineage", self.lineage, "Lineage", ("name", "as_of", "compare", "depth")),
            ("/impact", self.impact, "Impact", ("table", "as_of", "column", "change", "target")),
            ("/table", self.table, "Table", ("table", "as_of", "offset", "limit")),
            ("/mvs", self.materialized_views, "Materialized views", ("as_of",)),
            ("/health", self.health_page, "Health", ("offset",)),
            ("/findings", self.findings, "Findings", ("code", "view", "offset")),
            ("/search", self.search, "Search", ("q",)),
        ]
        routes: list[Route | Mount] = [
            Route(path, self._checked(page, title, frozenset(takes))) for path, page, title, takes in pages
        ]
        return [*routes, Mount("/static", static, name="static")]

    def _checked(
        self, page: Callable[[Request], Response], title: str, takes: frozenset[str]
    ) -> Callable[[Request], Response]:
        """`page`, for a request whose parameters it takes, each once (as `/api/` checks them): a
        misspelled or repeated one is a 400 page saying which, never an answer to another question."""

        def checked(request: Request) -> Response:
            names = [name for name, _ in request.query_params.multi_items()]
            unknown = sorted(set(names) - takes)
            repeated = sorted({name for name in names if names.count(name) > 1})
            if unknown:
                expected = ", ".join(sorted(takes)) or "none"
                message = f"unknown parameter {', '.join(unknown)}; this page takes: {expected}"
                return self._error(request, title, Refusal(400, message))
            if repeated:
                message = f"parameter given more than once: {', '.join(repeated)}"
                return self._error(request, title, Refusal(400, message))
            return page(request)

        return checked

    def _render(
        self,
        request: Request,
        template: str,
        title: str,
        questions: dict[str, Question],
        *,
        retry: str | None = None,
        keeps_form: bool = True,
        **context: Any,
    ) -> Response:
        """The page `template` with the answers to `questions`. A question refused (400) leaves its
        part of the page out: an optional one's part says why (`refused`); otherwise the page says
        it at the top (`refusal`, with links asking each name the refusal suggests instead, as the
        parameter `retry`), above the form, so that the input can be mended in place; a page with
        nothing but its answers (`keeps_form` false) is then an error page."""
        answers: dict[str, Any] = {}
        refused: dict[str, str] = {}
        refusal = None
        STORE_NOTICE.set(None)
        try:
            with self.reader() as conn:
                for key, question in questions.items():
                    answered = api.answer_on(conn, self.timeout, question.endpoint, question.items)
                    if answered.status == 400 and (question.optional or keeps_form):
                        answers[key] = None
                        if question.optional:
                            refused[key] = answered.document["error"]
                        else:
                            refusal = refusal or _refusal(request, answered, retry)
                    elif answered.status != 200:
                        return self._error(request, title, _refusal(request, answered, retry))
                    else:
                        answers[key] = answered.document
        except StoreError as exc:
            return self._error(request, title, Refusal(503, str(exc)))
        except duckdb.OutOfMemoryException as exc:  # opening the store, before the question's limit
            message = f"the store could not be read within query-memory: {exc}"
            return self._error(request, title, Refusal(503, message))
        page = TEMPLATES.get_template(template).render(
            title=title,
            request=request,
            answers=answers,
            refused=refused,
            refusal=refusal,
            questions=questions,
            notice=STORE_NOTICE.get(),
            **context,
        )
        return HTMLResponse(page, status_code=refusal.status if refusal else 200)

    def _error(self, request: Request, title: str, refusal: Refusal) -> Response:
        page = TEMPLATES.get_template("error.html").render(
            title=title, request=request, refusal=refusal, questions={}
        )
        return HTMLResponse(page, status_code=refusal.status)

    def activity(self, request: Request) -> Response:
        """Changes across the warehouse: a chart by day and kind, counts by namespace, engine and
        dialect, and the latest changes, a page at a time."""
        filters = _given(request, ("since", "until", "namespace", "engine", "dialect", "kind"))
        offset = request.query_params.get("offset", "0")
        limit, page_size = _limit(request, PAGE_SIZE)
        kept = (*filters, *_given(request, ("limit",)))
        changes = Question("changes", (*filters, ("limit", limit), ("offset", offset)))
        return self._render(
            request,
            "activity.html",
            "Activity",
            {"changes": changes},
            filters=dict(filters),
            kinds=KINDS,
            page_size=page_size,
            page_url=lambda to: f"/?{urlencode([*kept, ('offset', str(to))])}",
            filter_link=lambda field: lambda row: f"/?{urlencode({**dict(kept), field: row[field]})}",
            chart=_activity_chart,
        )

    def view(self, request: Request) -> Response:
        """One view: its timeline, two versions side by side, its SQL per dialect, its property
        changes, findings and earlier or later views at its path."""
        view = request.query_params.get("view", "")
        versions = _given(request, ("before", "after"))
        offset = request.query_params.get("offset", "0")
        limit, page_size = _limit(request, TIMELINE_PAGE)
        kept = _given(request, ("limit",))
        questions = {
            "history": Question("history", (("view", view),)),
            "changes": Question("changes", (("view", view), ("limit", limit), ("offset", offset))),
            # A version the log names but no stored file holds cannot be diffed: the rest still shows.
            "diff": Question("diff", (("view", view), *versions), optional=True),
            "findings": Question("findings", (("view", view),)),
        }
        return self._render(
            request,
            "view.html",
            view or "View",
            questions,
            retry="view",
            keeps_form=False,
            view=view,
            page_size=page_size,
            page_url=lambda to: f"/view?{urlencode([('view', view), *versions, *kept, ('offset', str(to))])}",
        )

    def lineage(self, request: Request) -> Response:
        """What a view or table reads and what reads it at a time, drawn as a layered graph (tables
        and views told apart, uncertain and unknown lineage dashed), with a slider over the days
        views changed, and what changed since another time."""
        asked = _given(request, ("name", "as_of", "compare", "depth"))
        questions = {"days": Question("changes", (("limit", "1"),))}
        if dict(asked).get("name"):
            questions["graph"] = Question("graph", asked)
        kept = {key: value for key, value in asked if key in ("as_of", "depth")}
        return self._render(
            request,
            "lineage.html",
            "Lineage",
            questions,
            retry="name",
            asked=dict(asked),
            # The depth asked stands among the choices (`depth=4` did not show as "all").
            depths=sorted(
                {"1", "2", "3", "5", *[v for k, v in kept.items() if k == "depth" and v.isdigit()]}, key=int
            ),
            # A table's node opens its own lineage at the same time and depth (links, and lineage.js).
            kept=kept,
            node_link=lambda node: node_link(node, kept),
        )

    def impact(self, request: Request) -> Response:
        """Pick a table, a column of its schema at T and a change: the views it breaks, how each uses
        the column and how sure each match is."""
        asked = dict(_given(request, ("table", "as_of", "column", "change", "target")))
        if asked.get("change", "drop") not in _CHANGES:
            choices = ", ".join(_CHANGES)
            message = f"change is one of {choices}, not {asked['change']!r}"
            return self._error(request, "Impact", Refusal(400, message))
        questions = {}
        if "table" in asked:
            at = [("as_of", asked["as_of"])] if "as_of" in asked else []
            # A table only views read has no schema here: its column is typed in. A view's columns
            # are its schema's (the thirteenth new-user trial: the page called a view unindexed).
            questions["table"] = Question("table", (("table", asked["table"]), *at), optional=True)
            questions["view"] = Question("show", (("view", asked["table"]), *at), optional=True)
            change = _CHANGES.get(asked.get("change", ""))
            if "column" in asked and change is not None:
                column = asked["column"]
                value = column if change == "drop_column" else f"{column}={asked.get('target', '')}"
                questions["impact"] = Question("impact", (("table", asked["table"]), *at, (change, value)))
        return self._render(
            request, "impact.html", "Impact", questions, retry="table", asked=asked, changes=_CHANGES
        )

    def table(self, request: Request) -> Response:
        """One table: its state at T, its snapshots over time (commits and records per day, a page
        of snapshots, main's history), its schema's evolution, and the views and MVs reading it."""
        asked = dict(_given(request, ("table", "as_of", "offset", "limit")))
        limit, page_size = _limit(request, PAGE_SIZE)
        # No table asked: the tables there are (found by the twentieth new-user trial: an empty form)
        at = [("as_of", asked["as_of"])] if "as_of" in asked else []
        page = (("limit", limit), ("offset", asked.get("offset", "0")))
        questions = {"tables": Question("tables", (*at, *page))}
        if "table" in asked:
            table = asked["table"]
            questions = {  # a table only views read has no metadata here, but its readers
                "table": Question("table", (("table", table), *at), optional=True),
                "history": Question("table-history", (("table", table), *at, *page), optional=True),
                "readers": Question("uses", (("table", table), *at, ("transitive", "true"))),
            }
        return self._render(
            request,
            "table.html",
            asked.get("table", "Table"),
            questions,
            retry="table",
            asked=asked,
            page_size=page_size,
            page_url=lambda to: f"/table?{urlencode({**asked, 'offset': str(to)})}",
            schema_rows=_schema_rows,
            commits_chart=_commits_chart,
            records_chart=_records_chart,
        )

    def materialized_views(self, request: Request) -> Response:
        """Every materialized view's state at T (FRESH, STALE, UNKNOWN) with its reasons."""
        questions = {"mvs": Question("mv-status", _given(request, ("as_of",)))}
        return self._render(
            request,
            "mvs.html",
            "Materialized views",
            questions,
            asked=dict(questions["mvs"].items),
            mv_rows=_mv_rows,
        )

    def search(self, request: Request) -> Response:
        """Views and tables by part of a name, each linking to its page."""
        asked = dict(_given(request, ("q",)))
        questions = {"search": Question("search", (("q", asked["q"]),))} if "q" in asked else {}
        return self._render(
            request, "search.html", "Search", questions, asked=asked, result_link=_result_link
        )

    def health_page(self, request: Request) -> Response:
        """The process (`/healthz`: for a follower, its outcome counts, lag and last batch), the
        findings by code and the quarantined files."""
        ok, process = self.health()
        offset = request.query_params.get("offset", "0")
        questions = {
            "findings": Question("findings", (("counts", "true"),)),
            # One more than a page: whether there is a next one.
            "quarantine": Question(
                "quarantine",
                (("limit", str(PAGE_SIZE + 1)), ("offset", offset)),
                linked=(("limit", str(PAGE_SIZE)), ("offset", offset)),
            ),
        }
        outcomes = [{"outcome": key, "count": count} for key, count in process.get("outcomes", {}).items()]
        return self._render(
            request,
            "health.html",
            "Health",
            questions,
            ok=ok,
            process=process,
            outcomes=outcomes,
            offset=int(offset) if offset.isdigit() else 0,
            page_size=PAGE_SIZE,
            page_url=lambda to: f"/health?{urlencode({'offset': str(to)})}",
        )

    def findings(self, request: Request) -> Response:
        """The findings of a code or a view, a page at a time, each with where it applies."""
        asked = dict(_given(request, ("code", "view", "offset")))
        filters = tuple((key, asked[key]) for key in ("code", "view") if key in asked)
        offset = asked.get("offset", "0")
        page = (("limit", str(PAGE_SIZE + 1)), ("offset", offset))
        shown = (*filters, ("limit", str(PAGE_SIZE)), ("offset", offset))
        questions = {
            "findings": Question("findings", (*filters, *page), linked=shown),
            "counts": Question("findings", (*filters, ("counts", "true"))),  # for the total
        }
        return self._render(
            request,
            "findings.html",
            "Findings",
            questions,
            retry="view",
            asked=asked,
            offset=int(asked.get("offset", "0")) if asked.get("offset", "0").isdigit() else 0,
            page_size=PAGE_SIZE,
            page_url=lambda to: f"/findings?{urlencode([*filters, ('offset', str(to))])}",
        )


@dataclass(frozen=True)
class Refusal:
    """Why a page cannot show what was asked (its status), and what could be asked instead:
    (name, the page's URL asking for it) pairs."""

    status: int
    error: str
    suggestions: tuple[tuple[str, str], ...] = ()


def _refusal(request: Request, answered: api.Answer, retry: str | None) -> Refusal:
    """The refusal of an `/api/` answer, its suggestions as links to this page with `retry` (the
    parameter naming what was not found) asking each instead, from its first page."""
    if retry is None:
        return Refusal(answered.status, answered.document["error"])
    kept = [(key, value) for key, value in request.query_params.multi_items() if key not in (retry, "offset")]
    suggestions = tuple(
        (name, f"{request.url.path}?{urlencode([(retry, name), *kept])}")
        for name in answered.document.get("did_you_mean", [])
    )
    return Refusal(answered.status, answered.document["error"], suggestions)


def _result_link(row: dict[str, Any]) -> str:
    """A search result's page, by id (a name may be held by several): a view's own, a table's."""
    if row["kind"] == "view":
        return view_link({"view_id": row["id"]})
    return f"/table?{urlencode({'table': row['id']})}"


_CHANGES = {"drop": "drop_column", "rename": "rename_column", "type": "change_type"}
"""The page's change choices and the `/api/impact` parameter each is."""
_COUNTS = {"tickMinStep": 1, "format": "d"}
"""A count's axis: whole numbers only (found by the twentieth new-user trial: ticks at 0.2, 0.4, ...)."""
_KIND_COLOURS = ("#4c78a8", "#9d755d", "#72b7b2", "#f58518", "#b279a2", "#e45756")
"""A colour for each kind of change (`changes.KINDS`), in the chart and its legend."""


def _limit(request: Request, default: int) -> tuple[str, int]:
    """A paged list's `limit` as asked (else `default`), and the page size it makes; one that is
    not a number is passed on as asked, for the `/api/` question to refuse."""
    asked = request.query_params.get("limit", "").strip() or str(default)
    return asked, int(asked) if asked.isdecimal() else default


def _given(request: Request, names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The page's query parameters among `names` that hold a value, in that order."""
    return tuple((name, value) for name in names if (value := request.query_params.get(name, "").strip()))


def _mv_rows(mvs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each materialized view's state as a row, with when its refresh was recorded and since when
    it has been stale (its earliest stale source), as `mv-status` says them."""
    rows = []
    for mv in mvs:
        since = [source["stale_since"] for source in mv["sources"] if source.get("stale_since")]
        refreshed = (mv["refresh"] or {}).get("refreshed_at")
        rows.append({**mv, "refreshed_at": refreshed, "stale_since": min(since) if since else None})
    return rows


def _schema_rows(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A table's schemas as rows, one per change (a schema that changed nothing, one row)."""
    rows: list[dict[str, Any]] = []
    for schema in schemas:
        head = {"schema_id": schema["schema_id"], "since": schema["since"], "columns": schema["columns"]}
        changes = schema["changes"] or [{"change": None, "column": None, "before": None, "after": None}]
        rows.extend(
            {**head, **{key: change[key] for key in ("change", "column", "before", "after")}}
            for change in changes
        )
    return rows


def _daily_chart(
    values: list[dict[str, Any]], mark: dict[str, Any], y: dict[str, Any], height: int = 180
) -> dict[str, Any]:
    """Vega-Lite: `values` by day (UTC) on x, `y` encoded with `mark`."""
    day = {"field": "day", "timeUnit": "utcyearmonthdate", "title": "day (UTC)"}
    if len({value["day"] for value in values}) > 1:
        # A time axis, not one of categories: days without values keep their place (quiet weeks
        # show). A tick a day (labels that would overlap are left out): no day labelled twice.
        x = {
            **day,
            "type": "temporal",
            "axis": {"tickCount": {"interval": "day", "step": 1}, "labelOverlap": True},
        }
    else:  # one day alone is one category: a time axis would span it to the next day's start
        x = {**day, "type": "ordinal", "axis": {"labelAngle": 0}}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "width": "container",
        "height": height,
        "data": {"values": values},
        "mark": {"tooltip": True, **mark},
        "encoding": {"x": x, **y},
    }


def _commits_chart(by_day: list[dict[str, Any]]) -> dict[str, Any]:
    """A table's commits per day, stacked by operation."""
    commits = {
        "field": "commits",
        "type": "quantitative",
        "stack": "zero",
        "title": "commits",
        "axis": _COUNTS,
    }
    return _daily_chart(
        by_day, {"type": "bar"}, {"y": commits, "color": {"field": "operation", "type": "nominal"}}
    )


def _records_chart(records_by_day: list[dict[str, Any]]) -> dict[str, Any]:
    """A table's records at each day's end, from its snapshots' summaries."""
    records = {"field": "total_records", "type": "quantitative", "title": "records", "axis": _COUNTS}
    return _daily_chart(records_by_day, {"type": "line", "point": True}, {"y": records})


def _activity_chart(by_day: list[dict[str, Any]]) -> dict[str, Any]:
    """Changes per day, stacked by kind, in one colour per kind whatever the data."""
    changes = {
        "field": "changes",
        "type": "quantitative",
        "stack": "zero",
        "title": "changes",
        "axis": _COUNTS,
    }
    colour = {
        "field": "kind",
        "type": "nominal",
        "scale": {"domain": list(KINDS), "range": list(_KIND_COLOURS)},
    }
    return _daily_chart(by_day, {"type": "bar"}, {"y": changes, "color": colour}, height=220)
