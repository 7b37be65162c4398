"""A separate process that queries a store as users do (`open_reader`: the store, or its replica
while a writer holds it) and records when each metadata file first became visible.

    python -m tests.bench.replica_probe STORE LOCATIONS_JSON TIMEOUT_SECONDS  -> {location: seen epoch ms}
"""

from __future__ import annotations

import json
import sys
import time

from viewlineage.indexer.errors import StoreError
from viewlineage.sinks.readers import open_reader

POLL_SECONDS = 0.01


def main() -> None:
    store, listed, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(listed) as file:
        wanted = set(json.load(file))
    seen: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < len(wanted) and time.monotonic() < deadline:
        try:
            with open_reader(store, retry_seconds=0.5) as conn:
                rows = conn.execute("SELECT location FROM files").fetchall()
        except StoreError:
            rows = []
        now = int(time.time() * 1000)
        for (location,) in rows:
            if location in wanted:
                seen.setdefault(location, now)
        time.sleep(POLL_SECONDS)
    json.dump(seen, sys.stdout)


if __name__ == "__main__":
    main()
