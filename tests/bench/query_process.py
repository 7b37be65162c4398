"""The query side of `tests.bench.scale`, run as a process of its own: a query service's process.

    python tests/bench/query_process.py DB --samples N --seed S   (prints JSON)

Run by path, not as `tests.bench.…`: it imports the query API and nothing else (no pytest, no
generator). Large answers (`uses` returns thousands of rows) cost the cyclic garbage collector a
pass over every object the process holds, so a harness that measured in its own process, with
pytest and the generator loaded, timed its own heap: `uses` p99 106 ms there against 64 ms here.

On one read-only connection: two passes of seeded random (view, T) for `show` and (table, T) for
`uses --transitive` (the first reads blocks no query read before, the second runs on the cache the
first left, as a long-running service would), then the state of every view at 20 instants. Prints
each series' milliseconds, how many `show` calls found no view current at T, and picks for the
CLI (the first 10) and HTTP timings.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.queries import api


def timed(calls: list[Callable[[], Any]]) -> dict[str, Any]:
    """Milliseconds of each call, and how many raised `UsageError` (a view not there at T)."""
    times, errors = [], 0
    for call in calls:
        started = time.perf_counter()
        try:
            call()
        except UsageError:
            errors += 1
        times.append((time.perf_counter() - started) * 1000)
    return {"times": times, "errors": errors}


def measure(db: str, samples: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    with duckdb.connect(db, read_only=True) as conn:
        versions = conn.execute("SELECT count(*) FROM versions").fetchone()
        view_names = "SELECT DISTINCT 'prod.' || array_to_string(name, '.') FROM view_files ORDER BY 1"
        names = [row[0] for row in conn.execute(view_names).fetchall()]
        table_names = (
            "SELECT DISTINCT array_to_string(namespace, '.') || '.' || name FROM table_references "
            "WHERE name NOT LIKE 'view_%' ORDER BY 1"
        )
        tables = [row[0] for row in conn.execute(table_names).fetchall()]
        span = conn.execute("SELECT min(commit_ms), max(commit_ms) FROM view_files").fetchone()
        low, high = span if span else (0, 0)
        shows = [(rng.choice(names), rng.randint(low, high)) for _ in range(samples)]
        uses = [(rng.choice(tables), rng.randint(low, high)) for _ in range(samples)]
        api.show(conn, *shows[0])  # warm
        series: dict[str, Any] = {}
        for cache in ("first pass", "second pass"):
            shown = [(rng.choice(names), rng.randint(low, high)) for _ in range(samples)]
            series[f"show, {cache}"] = timed([lambda p=pick: api.show(conn, *p) for pick in shown])
            used = [(rng.choice(tables), rng.randint(low, high)) for _ in range(samples)]
            calls = [lambda p=pick: api.uses(conn, p[0], p[1], transitive=True) for pick in used]
            series[f"uses, {cache}"] = timed(calls)
        every = [
            lambda t=t: conn.execute("SELECT * FROM views_as_of(?)", [t]).fetchall() for _, t in shows[:20]
        ]
        series["views_as_of"] = timed(every)  # type: ignore[arg-type]
    counts = {"views": len(names), "versions": versions[0] if versions else 0}
    return {"store": counts, "series": series, "shows": shows, "uses": uses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("db")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(measure(args.db, args.samples, args.seed)))


if __name__ == "__main__":
    main()
