"""The web UI's figures (issue 27): each page's `/api/` calls through a follower's warm store and
through `serve`, each page rendered in headless Chromium, and a lineage graph of many nodes.

    python -m tests.bench.ui [--store DB --warehouse DIR] [--views N --commits M] [--samples S]
                             [--graph-nodes 500] [--work DIR]

Without `--store`, a realistic warehouse of `--views` x `--commits` is generated and indexed in
`--work` (kept: a second run reuses it). The pages asked are sampled from the store (seeded):
Activity, View, Lineage (depth 2), Impact (a column's drop), Table, Materialized views, Health and
Findings. Each page links the `/api/` calls it shows (its JSON twins): those links are the calls
timed, in two passes, one request at a time on one kept-alive connection, by this process:
- warm: `viewlineage watch WAREHOUSE --metrics-port`, a follower answering from the store it
  writes, once it has listed the tree (nothing new to index: it is idle);
- `serve`: every request opens the newest replica (or the store), as `serve` does.
Then each page through `serve` in Chromium (`/usr/bin/chromium`): from navigation to its load
event and every chart and graph drawn (its data is in the page: no request is pending then).
Last, a warehouse of one table and `--graph-nodes` - 1 views reading it, and one another, in
chains of up to eight: its lineage page laid out by dagre, then `fit()` on the drawn graph (the
first interaction a user makes).
"""

from __future__ import annotations

import argparse
import html
import http.client
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from viewlineage.queries import api
from viewlineage.queries.analyses import ANALYSES
from viewlineage.queries.impact import impact, parse_change
from viewlineage.sinks.readers import open_reader
from viewlineage.sinks.store import Store

from ..browser import launched
from ..generate import generate
from ..integration.watch_process import Watch
from ..metadata_files import Table, View, schema_of
from .latency import percentile

_SERVING = re.compile(r"serving \S+ at (http://\S+)/api/")
_API_LINK = re.compile(r'href="(/api/[^"]+)"')
_WARM = re.compile(r"^analyses-warm .*$", re.M)


def sample_pages(db: Path, samples: int, seed: int) -> list[tuple[str, str]]:
    """(page, path) pairs: each page kind once per sample, on seeded random views and tables."""
    rng = random.Random(seed)
    with open_reader(db) as conn:
        views = [
            row[0] for row in conn.execute("SELECT DISTINCT view_id FROM view_files ORDER BY 1").fetchall()
        ]
        tables = [
            row[0] for row in conn.execute("SELECT DISTINCT table_id FROM table_files ORDER BY 1").fetchall()
        ]
        codes = [row[0] for row in conn.execute("SELECT DISTINCT code FROM findings ORDER BY 1").fetchall()]
        pages: list[tuple[str, str]] = [
            ("Activity", "/"),
            ("Materialized views", "/mvs"),
            ("Health", "/health"),
        ]
        for _ in range(samples):
            view, table = rng.choice(views), rng.choice(tables) if tables else None
            pages.append(("View", f"/view?{urllib.parse.urlencode({'view': view})}"))
            name = api.show(conn, view)["view"]
            pages.append(("Lineage", f"/lineage?{urllib.parse.urlencode({'name': name, 'depth': '2'})}"))
            if table is not None:
                columns = api.table(conn, table)["columns"]
                asked = {"table": table, "column": rng.choice(columns)["path"], "change": "drop"}
                pages.append(("Impact", f"/impact?{urllib.parse.urlencode(asked)}"))
                pages.append(("Table", f"/table?{urllib.parse.urlencode({'table': table})}"))
            if codes:
                pages.append(("Findings", f"/findings?{urllib.parse.urlencode({'code': rng.choice(codes)})}"))
    return pages


class Client:
    """GETs on one kept-alive connection, as a dashboard's backend or a browser tab asks."""

    def __init__(self, base: str) -> None:
        parsed = urllib.parse.urlsplit(base)
        self.connection = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port, timeout=120)

    def get(self, path: str) -> tuple[int, bytes]:
        self.connection.request("GET", path)
        response = self.connection.getresponse()
        return response.status, response.read()

    def timed(self, path: str) -> tuple[float, int]:
        """Milliseconds of the GET, and its status."""
        started = time.perf_counter()
        status, _ = self.get(path)
        return (time.perf_counter() - started) * 1000, status


def api_calls(client: Client, pages: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(page, call) for every `/api/` call each page shows (its JSON twins, linked from it)."""
    calls: list[tuple[str, str]] = []
    for page, path in pages:
        status, body = client.get(path)
        if status != 200:
            print(f"page {path}: {status} {body[:300]!r}", flush=True)
        calls += [(page, html.unescape(link)) for link in _API_LINK.findall(body.decode())]
    return list(dict.fromkeys(calls))


def time_calls(base: str, calls: list[tuple[str, str]], passes: int = 2) -> dict[str, list[float]]:
    """Milliseconds of each call, by page, over `passes` passes; a call that fails is printed (and
    timed: the page shows its error)."""
    client = Client(base)
    times: dict[str, list[float]] = {}
    for _ in range(passes):
        for page, call in calls:
            elapsed, status = client.timed(call)
            if status != 200:
                print(f"call {call}: {status} after {elapsed:,.0f} ms", flush=True)
            times.setdefault(page, []).append(elapsed)
    return times


@contextmanager
def serving(db: Path) -> Iterator[str]:
    """`viewlineage serve` on a free port: its base URL."""
    with tempfile.TemporaryDirectory() as logs:
        log = Path(logs) / "serve.log"
        with log.open("w") as written:
            command = [
                sys.executable,
                "-m",
                "viewlineage.queries.cli",
                "--db",
                str(db),
                "serve",
                "--port",
                "0",
            ]
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=written)
        try:
            deadline = time.monotonic() + 60
            while not (found := _SERVING.search(log.read_text())):
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            warm_pass(log, process)
            yield found.group(1)
        finally:
            process.terminate()
            process.wait(30)


def warm_pass(log: Path, process: subprocess.Popen[bytes], timeout: float = 7200) -> str:
    """Waits for the server's first pass over the views current now (its `analyses-warm` line, a
    warm server's state: see `viewlineage.queries.warm`), and returns that line."""
    deadline = time.monotonic() + timeout
    while not (found := _WARM.search(log.read_text())):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)
    return found.group(0)


def cold_impact_times(db: Path, pages: list[tuple[str, str]], questions: int) -> list[float]:
    """Milliseconds of the Impact page's question in a process with no analyses kept (a server
    asked before its first warm pass ends, or the CLI), for the first `questions` Impact pages."""
    query = [urllib.parse.urlsplit(path).query for page, path in pages if page == "Impact"]
    asked = [dict(urllib.parse.parse_qsl(each)) for each in query]
    times = []
    with open_reader(db) as conn:
        for question in asked[:questions]:
            ANALYSES.clear()
            started = time.perf_counter()
            impact(conn, question["table"], parse_change(question["column"], None, None))
            times.append((time.perf_counter() - started) * 1000)
    return times


def render_times(base: str, pages: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Milliseconds from navigation to the load event and every chart and graph drawn, by page."""
    times: dict[str, list[float]] = {}
    with launched() as browser:
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        for page, path in pages:
            started = time.perf_counter()
            tab.goto(base + path, wait_until="load")
            tab.wait_for_function(
                "[...document.querySelectorAll('[data-spec-id], [data-graph-id]')]"
                ".every((target) => target.dataset.drawn === 'true')"
            )
            times.setdefault(page, []).append((time.perf_counter() - started) * 1000)
        tab.close()
    return times


def index(db: Path, root: Path) -> None:
    """`viewlineage index` of `root` (its catalog `prod`) into `db`, as a process of its own."""
    command = [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(db), "index", str(root)]
    subprocess.run(
        [*command, "--catalog-map", f"{root}=prod", "--no-progress"], check=True, capture_output=True
    )


def graph_warehouse(root: Path, nodes: int) -> str:
    """One table and `nodes` - 1 views: each reads the table or the view before it, in chains of up
    to eight (a layered graph as lineage has it). The table's name."""
    Table(root, "db", "base", "f0000000-0000-4000-8000-000000000000", schema=schema_of(("id", "int"))).commit(
        1000, 1
    )
    for number in range(1, nodes):
        read = "db.base" if number % 8 == 1 else f"db.v{number - 1:04d}"
        View(root, "db", f"v{number:04d}", f"f0000000-0000-4000-8000-{number:012d}").commit(
            2000, f"SELECT id FROM {read}"
        )
    return "prod.db.base"


def graph_times(work: Path, nodes: int, runs: int = 5) -> dict[str, list[float]]:
    """The lineage page of a `graph_warehouse`'s table: laid out and drawn, then fitted (ms)."""
    root = work / f"graph{nodes}" / "warehouse"
    db = root.parent / "store.duckdb"
    if not db.exists():
        table = graph_warehouse(root, nodes)
        index(db, root)
    else:
        table = "prod.db.base"
    times: dict[str, list[float]] = {"laid out and drawn": [], "fit()": []}
    with serving(db) as base, launched() as browser:
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        for _ in range(runs):
            started = time.perf_counter()
            tab.goto(f"{base}/lineage?{urllib.parse.urlencode({'name': table})}", wait_until="load")
            tab.wait_for_selector("#graph[data-drawn=true]")
            times["laid out and drawn"].append((time.perf_counter() - started) * 1000)
            drawn = tab.evaluate("window.lineageGraph.nodes().length")
            assert drawn == nodes, f"{drawn} nodes drawn, not {nodes}"
            times["fit()"].append(
                tab.evaluate("(() => { const t = performance.now(); window.lineageGraph.fit(); "
                             "return performance.now() - t; })()")
            )  # fmt: skip
        tab.close()
    return times


def rows(times: dict[str, list[float]]) -> Iterator[tuple[str, int, float, float]]:
    for page, values in times.items():
        yield page, len(values), percentile(values, 50), percentile(values, 99)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", type=Path)
    parser.add_argument("--warehouse", type=Path)
    parser.add_argument("--views", type=int, default=200)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--graph-nodes", type=int, default=500)
    parser.add_argument("--cold-questions", type=int, default=5, help="Impact questions, nothing kept")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "viewlineage-bench-ui")
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    db, warehouse = args.store, args.warehouse
    if db is None:
        warehouse = work / f"realistic-{args.views}x{args.commits}"
        db = work / f"realistic-{args.views}x{args.commits}.duckdb"
        if not warehouse.exists():
            generate(
                warehouse,
                args.views,
                args.commits,
                namespaces=10,
                realistic=True,
                workers=os.cpu_count() or 1,
            )
        if not db.exists():
            index(db, warehouse)
    assert warehouse is not None, "--store needs --warehouse (the tree the follower watches)"
    with Store(db, replica_interval=None):  # as a writer opens it: this release's queries installed
        pass
    with open_reader(db) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM view_files), (SELECT count(*) FROM versions)"
        ).fetchone()
    print(f"store {db}: {counts[0]:,} view files, {counts[1]:,} versions" if counts else f"store {db}")
    pages = sample_pages(db, args.samples, args.seed)
    follower = Watch(warehouse, db, "--metrics-port", "0", ready_timeout=7200)
    try:
        print(f"follower's first pass: {warm_pass(follower.log, follower.process)}", flush=True)
        base = follower.api_url().removesuffix("/api/")
        calls = api_calls(Client(base), pages)
        warm = time_calls(base, calls)
    finally:
        follower.stop()
    with serving(db) as base:
        cold = time_calls(base, calls)
        rendered = render_times(base, pages)
    print(f"{len(calls)} distinct /api/ calls behind {len(pages)} pages, two passes each")
    print("| page | calls timed | warm follower p50 | p99 | `serve` p50 | p99 |")
    print("|---|---|---|---|---|---|")
    for (page, n, p50, p99), (_, _, cold50, cold99) in zip(rows(warm), rows(cold), strict=True):
        print(f"| {page} | {n} | {p50:,.1f} ms | {p99:,.1f} ms | {cold50:,.1f} ms | {cold99:,.1f} ms |")
    every_warm = [value for values in warm.values() for value in values]
    every_cold = [value for values in cold.values() for value in values]
    print(
        f"| every call | {len(every_warm)} | {percentile(every_warm, 50):,.1f} ms | "
        f"**{percentile(every_warm, 99):,.1f} ms** (target < 200) | {percentile(every_cold, 50):,.1f} ms | "
        f"{percentile(every_cold, 99):,.1f} ms |"
    )
    cold_impact = cold_impact_times(db, pages, args.cold_questions)
    print(
        f"| Impact, no analyses kept (a server before its first pass, the CLI) | {len(cold_impact)} | "
        f"{percentile(cold_impact, 50):,.1f} ms | {percentile(cold_impact, 99):,.1f} ms | | |"
    )
    print("| page in Chromium, through `serve` (load, every chart drawn) | n | p50 | p99 |")
    print("|---|---|---|---|")
    for page, n, p50, p99 in rows(rendered):
        print(f"| {page} | {n} | {p50:,.0f} ms | {p99:,.0f} ms |")
    every = [value for values in rendered.values() for value in values]
    print(
        f"| every page | {len(every)} | {percentile(every, 50):,.0f} ms | "
        f"**{percentile(every, 99):,.0f} ms** (target < 1 s) |"
    )
    print(f"| lineage graph of {args.graph_nodes} nodes | n | p50 | p99 |")
    print("|---|---|---|---|")
    for what, n, p50, p99 in rows(graph_times(work, args.graph_nodes)):
        print(f"| {what} | {n} | {p50:,.1f} ms | {p99:,.1f} ms |")


if __name__ == "__main__":
    main()
