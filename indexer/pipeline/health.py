"""Health of a long-running source (`consume`, `watch`): outcome counters, lag and batch latency as
Prometheus metrics and as structured log lines, served as `/healthz` and `/metrics` beside the
query API (`viewlineage.queries.web`) on `--metrics-port`.

Outcomes, counted per message or per file event:

    indexed             a new metadata file went into the store
    already-indexed     a re-delivery or duplicate: the file was in the store already
    quarantined         a file that cannot be indexed (reason in the quarantine table)
    object-missing      a created object that was gone when read (quarantined until its delete
                        event arrives; then it counts as deleted before read)
    removed             a delete event, recorded as history
    bad-event           a message that is no notification we know (quarantined, dead-lettered)
    skipped:<reason>    test events, directories, SeaweedFS internals, other event types,
                        keys that are no metadata file, objects outside the allowed prefixes
    unlisted            a directory a listing (the initial scan, reconciliation) could not read:
                        its files are not indexed, nor taken for removed, until a listing reads it
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client import Counter as PromCounter

from viewlineage.indexer.errors import ReadError

STALL_SECONDS = 60.0
"""/healthz turns unhealthy when the main loop has not come round for this long."""


class Health:
    """Counters and log lines for one source process. Thread-safe: the HTTP server reads them."""

    def __init__(self, source: str, log_format: str = "text", stream: TextIO | None = None) -> None:
        self.source = source
        self.log_format = log_format
        self.stream = stream or sys.stderr
        self.registry = CollectorRegistry()
        self._outcomes = PromCounter(
            "viewlineage_outcomes",
            "Messages and file events by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self._batches = Histogram(
            "viewlineage_batch_seconds",
            "Time from a batch's first message to its store commit.",
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self._lag = Gauge("viewlineage_lag_messages", "Messages not yet consumed.", registry=self.registry)
        self.totals: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._last_beat = time.monotonic()
        self.lag: int | None = None
        """Messages not yet consumed after the last batch (`consume`; None for `watch`)."""
        self.last_batch: str | None = None
        """When the last batch was committed (ISO-8601 UTC)."""
        self.problem: str | None = None
        """What keeps the source from making progress though its loop runs (an object store that
        does not answer): /healthz says it, with 503, until it clears."""

    def beat(self) -> None:
        """The main loop came round."""
        self._last_beat = time.monotonic()

    def count(self, outcomes: Mapping[str, int]) -> None:
        with self._lock:
            for outcome, number in outcomes.items():
                if number:
                    self._outcomes.labels(outcome).inc(number)
                    self.totals[outcome] += number

    def batch(
        self, outcomes: Mapping[str, int], seconds: float, lag: int | None = None, **fields: Any
    ) -> None:
        """Count a committed batch and log one line about it."""
        self.count(outcomes)
        self._batches.observe(seconds)
        if lag is not None:
            self._lag.set(lag)
        # ISO-8601 as every time the product prints (`...Z`: found by the twentieth new-user trial)
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self.lag, self.last_batch = lag, now
        counted = {outcome: number for outcome, number in sorted(outcomes.items()) if number}
        self.log("batch", outcomes=counted, seconds=round(seconds, 4), lag=lag, **fields)

    def unlisted(self, errors: list[ReadError]) -> None:
        """Directories a listing could not read (`Reader.unlisted`, which this empties): one log
        line each, and the `unlisted` outcome counts them."""
        for error in errors:
            self.log("unlisted", location=error.location, error=error.message)
        self.count({"unlisted": len(errors)})
        errors.clear()

    def log(self, event: str, **fields: Any) -> None:
        if self.log_format == "json":
            record = {"time": datetime.now(UTC).isoformat(), "source": self.source, "event": event, **fields}
            line = json.dumps(record, default=str)
        else:
            line = " ".join(
                [event, *(f"{key}={_text(value)}" for key, value in fields.items() if value is not None)]
            )
        with self._lock:
            print(line, file=self.stream, flush=True)

    def healthy(self) -> bool:
        return self.problem is None and time.monotonic() - self._last_beat < STALL_SECONDS

    def check(self) -> tuple[bool, dict[str, Any]]:
        """Whether the source is healthy, and the document `/healthz` answers: its status, and its
        outcome counts, lag and last batch's time since it started."""
        ok = self.healthy()
        with self._lock:
            outcomes = dict(sorted(self.totals.items()))
        return ok, {
            "status": "ok" if ok else self.problem or "stalled",
            "source": self.source,
            "outcomes": outcomes,
            "lag": self.lag,
            "last_batch_at": self.last_batch,
        }


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return ",".join(f"{key}:{item}" for key, item in value.items()) or "-"
    return str(value)
