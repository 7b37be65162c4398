"""A separate process that asks a follower's query API (`GET /api/files`) when each metadata file
first became visible, as a program using the API would.

    python -m tests.bench.api_probe API_URL LOCATIONS_JSON TIMEOUT_SECONDS  ->  JSON {location: seen epoch ms}

LOCATIONS_JSON lists the locations in the order they are written. Each poll asks about the first
`WINDOW` not yet seen (files are written in order and become visible batch by batch, so these are
the ones in flight), every `POLL_SECONDS`: a reading is late by half that on average. Asking more
often, or about more files, would measure the probe: the follower answers on the CPU that also
indexes (200 files a request cost it 18 ms, 64 files 9 ms).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

POLL_SECONDS = 0.025
WINDOW = 64


def main() -> None:
    api, listed, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(listed) as file:
        pending: list[str] = json.load(file)
    seen: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        query = urllib.parse.urlencode({"location": pending[:WINDOW]}, doseq=True)
        try:
            with urllib.request.urlopen(f"{api}files?{query}", timeout=10) as response:
                answer = json.loads(response.read())
        except (urllib.error.URLError, ConnectionError):
            answer = []  # not serving yet
        now = int(time.time() * 1000)
        for found in answer:
            if found["status"] == "indexed":
                seen.setdefault(found["asked"], now)
        pending = [location for location in pending if location not in seen]
        time.sleep(POLL_SECONDS)
    json.dump(seen, sys.stdout)


if __name__ == "__main__":
    main()
