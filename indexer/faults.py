"""Crash points for tests: `VIEWLINEAGE_FAULTS="point:N,..."` makes the process kill itself
(SIGKILL: no cleanup, no flush) the Nth time it passes `point`. Crash-safety tests use it to stop
at exact places, such as between a store commit and the offset commit. Unset, it costs nothing."""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Mapping

from viewlineage.indexer.errors import UsageError

ENVIRONMENT_VARIABLE = "VIEWLINEAGE_FAULTS"


class Faults:
    def __init__(self, kill_at: Mapping[str, int]) -> None:
        self.kill_at = dict(kill_at)
        self.passed: Counter[str] = Counter()

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Faults:
        text = (os.environ if environ is None else environ).get(ENVIRONMENT_VARIABLE, "")
        kill_at = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            point, _, count = item.partition(":")
            if not count.isdigit() or int(count) < 1:
                raise UsageError(f"{ENVIRONMENT_VARIABLE}: expected point:N, got {item!r}")
            kill_at[point] = int(count)
        return cls(kill_at)

    def point(self, name: str) -> None:
        if name not in self.kill_at:
            return
        self.passed[name] += 1
        if self.passed[name] == self.kill_at[name]:
            os.kill(os.getpid(), signal.SIGKILL)
