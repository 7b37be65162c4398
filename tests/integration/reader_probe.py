"""A separate process that queries a store while it is written: one JSON line per query.

Usage: reader_probe.py STORE SECONDS RATE
"""

from __future__ import annotations

import json
import sys
import time

from viewlineage.queries import api
from viewlineage.sinks.readers import open_reader


def main() -> None:
    store, seconds, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            with open_reader(store) as conn:
                row = conn.execute("SELECT count(*) FROM version_log").fetchone()
                views = api.run_sql(conn, "SELECT count(*) AS n FROM views_as_of(9e15::BIGINT)")
            print(
                json.dumps(
                    {
                        "ok": True,
                        "seconds": time.monotonic() - started,
                        "log_entries": row[0] if row else 0,
                        "views": views[0]["n"],
                    }
                ),
                flush=True,
            )
        except Exception as exc:  # the probe reports every failure; the test asserts there are none
            print(
                json.dumps({"ok": False, "seconds": time.monotonic() - started, "error": repr(exc)}),
                flush=True,
            )
        time.sleep(max(0.0, 1 / rate - (time.monotonic() - started)))


if __name__ == "__main__":
    main()
