"""`viewlineage consume` as a real subprocess with JSON logs, and helpers to follow its progress."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from ..servers import SeaweedS3

KAFKA_CONFIG = "session_timeout_ms = 3000\nheartbeat_interval_ms = 1000\n"
"""Tansu makes a join wait half the session timeout: keep it short (see ../shared/infra.md)."""


class Consume:
    def __init__(
        self,
        work: Path,
        name: str,
        db: Path,
        bootstrap: str,
        topic: str,
        s3: SeaweedS3,
        *options: str,
        faults: str = "",
        group: str | None = None,
        environment: dict[str, str] | None = None,
    ) -> None:
        self.db = db
        self.log = work / f"{name}.log"
        config = work / "kafka.toml"
        config.write_text(KAFKA_CONFIG)
        environment = {**os.environ, **s3.environment, **(environment or {})}
        environment.pop("VIEWLINEAGE_FAULTS", None)
        if faults:
            environment["VIEWLINEAGE_FAULTS"] = faults
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "viewlineage.queries.cli",
                "--db",
                str(db),
                "consume",
                "--bootstrap-servers",
                bootstrap,
                "--topic",
                topic,
                "--group",
                group or f"{name}-group",
                "--s3-endpoint",
                s3.endpoint,
                "--kafka-config",
                str(config),
                "--replica-interval",
                "0.3",
                "--log-format",
                "json",
                "--metrics-port",
                "0",
                *options,
            ],
            stderr=self.log.open("a"),
            stdout=subprocess.DEVNULL,
            env=environment,
        )

    def records(self) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [json.loads(line) for line in lines if line.startswith("{")]

    def outcomes(self) -> Counter[str]:
        totals: Counter[str] = Counter()
        for record in self.records():
            if record["event"] == "batch":
                totals.update(record["outcomes"])
        return totals

    def messages(self) -> int:
        return sum(r["messages"] for r in self.records() if r["event"] == "batch")

    def wait_for_messages(self, count: int, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while self.messages() < count:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, (
                f"{self.messages()} of {count} messages: {self.log.read_text()[-3000:]}"
            )
            time.sleep(0.1)

    def metrics(self) -> str:
        (serving,) = [r for r in self.records() if r["event"] == "serving"]
        with urllib.request.urlopen(serving["metrics"], timeout=5) as response:
            return str(response.read().decode())

    def health(self) -> tuple[int, Any]:
        (serving,) = [r for r in self.records() if r["event"] == "serving"]
        return get_json(serving["healthz"])

    def api_url(self) -> str:
        """Where the query API answers: `http://host:port/api/`."""
        (serving,) = [r for r in self.records() if r["event"] == "serving"]
        return str(serving["api"])

    def api(self, command: str, **parameters: Any) -> tuple[int, Any]:
        """GET /api/<command> from this process's query API."""
        return get_json(f"{self.api_url()}{command}?{urllib.parse.urlencode(parameters, doseq=True)}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def get_json(url: str) -> tuple[int, Any]:
    """Status and JSON body of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
