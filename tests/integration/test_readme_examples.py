"""The README's indexing and follower examples, run as written against the test servers: only the
addresses change (the S3 endpoint, the broker, a local folder, Spark's master, a free port)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from viewlineage.sinks.readers import open_reader

from ..conftest import ROOT
from ..servers import SeaweedS3, seaweed_s3, tansu_broker, upload_warehouse
from .consume_process import KAFKA_CONFIG

pytestmark = [pytest.mark.integration, pytest.mark.spark]
README = (ROOT / "README.md").read_text()


def readme_command(name: str) -> list[str]:
    """The README's `viewlineage <name> ...` example of its "Using it" section, as arguments."""
    block = README.split("## Using it", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    (line,) = [
        line for line in block.replace("\\\n", " ").splitlines() if line.startswith(f"viewlineage {name} ")
    ]
    return shlex.split(line, comments=True)[1:]


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, sample_warehouse: Path
) -> Iterator[tuple[SeaweedS3, str]]:
    with (
        tansu_broker(tmp_path_factory.mktemp("tansu")) as broker,
        seaweed_s3(tmp_path_factory.mktemp("s3")) as s3,
    ):
        upload_warehouse(s3, sample_warehouse)
        yield s3, broker


def as_here(arguments: list[str], s3: SeaweedS3, broker: str, local: Path) -> list[str]:
    text = shlex.join(arguments)
    for written, here in {
        "http://127.0.0.1:8333": s3.endpoint,
        "http://seaweedfs:8333": s3.endpoint,
        "kafka:9092": broker,
        "/data/warehouse": str(local),
        "--master yarn": "--master 'local[1]'",
        "--metrics-port 9464": "--metrics-port 0",
    }.items():
        text = text.replace(written, here)
    return shlex.split(text)


def run(arguments: list[str], db: Path, s3: SeaweedS3, tmp_path: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "viewlineage.queries.cli", *arguments, "--db", str(db)]
    if arguments[0] == "consume":
        (tmp_path / "kafka.toml").write_text(KAFKA_CONFIG)
        command += ["--kafka-config", str(tmp_path / "kafka.toml")]
    log = (tmp_path / f"{arguments[0]}.log").open("w")
    return subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, text=True, env={**os.environ, **s3.environment}
    )


def views_in(db: Path) -> int:
    with open_reader(db) as conn:
        return int(conn.execute("SELECT count(DISTINCT view_id) FROM view_files").fetchall()[0][0])


@pytest.mark.parametrize("command", ["index", "backfill"])
def test_the_indexing_examples_run_as_written(
    command: str, servers: tuple[SeaweedS3, str], sample_store: Path, tmp_path: Path
) -> None:
    s3, broker = servers
    db = tmp_path / f"{command}.duckdb"
    process = run(as_here(readme_command(command), s3, broker, tmp_path), db, s3, tmp_path)
    assert process.wait(600) == 0, (tmp_path / f"{command}.log").read_text()
    assert views_in(db) == views_in(sample_store)


@pytest.mark.parametrize(("command", "ready"), [("watch", "watching"), ("consume", "consuming")])
def test_the_follower_examples_run_as_written(
    command: str, ready: str, servers: tuple[SeaweedS3, str], sample_warehouse: Path, tmp_path: Path
) -> None:
    s3, broker = servers
    local = tmp_path / "warehouse"
    shutil.copytree(sample_warehouse, local)
    db = tmp_path / f"{command}.duckdb"
    process = run(as_here(readme_command(command), s3, broker, local), db, s3, tmp_path)
    log = tmp_path / f"{command}.log"
    deadline = time.monotonic() + 60
    while not re.search(rf"\b{ready}\b", log.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0, log.read_text()
