"""`viewlineage watch` as a real subprocess, with helpers that query the store as another process."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from viewlineage.sinks.readers import open_reader


class Watch:
    def __init__(
        self,
        root: Path,
        db: Path,
        *options: str,
        env: dict[str, str] | None = None,
        ready_timeout: float = 30,
    ) -> None:
        self.db = db
        self.log = root.parent / "watch.log"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "viewlineage.queries.cli",
                "--db",
                str(db),
                "watch",
                str(root),
                "--replica-interval",
                "0.3",
                "--settle-seconds",
                "3",
                *options,
            ],
            stderr=self.log.open("w"),
            stdout=subprocess.DEVNULL,
            env=env,
        )
        self.wait_for("watching", ready_timeout)

    def wait_for(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, f"no {text!r} in: {self.log.read_text()}"
            time.sleep(0.05)

    def api_url(self) -> str:
        """Where the query API answers (with `--metrics-port`): `http://host:port/api/`."""
        (url,) = re.findall(r"^serving .*api=(\S+)", self.log.read_text(), re.M)
        return url

    def count(self, sql: str) -> int:
        with open_reader(self.db) as conn:
            row = conn.execute(sql).fetchone()
            return int(row[0]) if row else 0

    def wait_until(self, sql: str, expected: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while (found := self.count(sql)) != expected:
            assert time.monotonic() < deadline, (
                f"{sql}: {found} != {expected}; log: {self.log.read_text()[-2000:]}"
            )
            time.sleep(0.1)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
