"""Latency to queryable, and sustained `consume` throughput, on real servers started here.

    python -m tests.bench.latency [--quick]

- `consume`: a file PUT into SeaweedFS -> the filer's notification -> Kafka (Tansu) -> `consume`
  -> store -> a separate process's question returns it, asked in one of two ways per run: over the
  follower's query API (`tests/bench/api_probe.py`, `GET /api/files`), which answers from the
  follower's store, or in SQL on the replica (`tests/bench/replica_probe.py`), published at most
  every 2 s (the default `--replica-interval`). SeaweedFS's own delay (PUT returned -> its
  notification readable in Kafka) is measured apart by a second Kafka consumer, and the store's
  share from `consume`'s batch lines (`store_seconds`: merge into DuckDB and replica publication).
- `watch`: a file written and closed in the watched directory -> the same two questions return it.
- Throughput: notifications for N objects already in the store produced at once; files/s from the
  first batch to the last file visible. For `watch`, N files written at once into its directory.

Files are the seeded generator's (`tests/generate.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
from kafka import KafkaConsumer, KafkaProducer

from ..generate import generate
from ..integration.consume_process import Consume
from ..integration.events import notification
from ..integration.watch_process import Watch
from ..servers import SeaweedS3, seaweed_s3, tansu_broker

ROOT = Path(__file__).parents[2]
REPLICA_INTERVAL = "2"
"""The followers' default: readers of the query API see each batch as it commits; SQL readers
get a replica at most this often (`--replica-interval 0`, one per batch, delays every batch by a
copy of the whole store)."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def summary(values: list[float]) -> str:
    return f"p50 {percentile(values, 50):7.0f} ms  p99 {percentile(values, 99):7.0f} ms  (n={len(values)})"


def report(follower: str, rate: float, what: str, values: list[float], missing: int = 0) -> None:
    unseen = f"  NOT SEEN: {missing}" if missing else ""
    print(f"{follower:8s}{rate:5g} files/s  {what:40s} {summary(values)}{unseen}")


READERS = {"api": "answered by the follower's API", "replica": "in a replica (SQL readers)"}
"""Who asks, one per run (two probes at once would measure each other: each takes CPU from the
follower on this 2-core machine): another process asking the follower's query API, which answers
from the follower's store, or reading the store in SQL as `viewlineage sql` does (the replica,
while a writer runs)."""


def start_probe(
    reader: str, db: Path, api: str | None, locations: list[str], work: Path, timeout: float
) -> subprocess.Popen[str]:
    """A probe process recording when each of `locations` is first seen (JSON on its stdout)."""
    listed = work / f"locations-{time.time_ns()}.json"
    listed.write_text(json.dumps(locations))
    where = str(db) if reader == "replica" else str(api)
    return subprocess.Popen(
        [sys.executable, "-m", f"tests.bench.{reader}_probe", where, str(listed), str(timeout)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def seen_after(probe: subprocess.Popen[str], written: dict[str, int]) -> dict[str, Any]:
    """Milliseconds from each file's write to the probe's first sighting, and how many it never saw."""
    seen = json.loads(probe.communicate()[0])
    latencies = [seen[location] - at for location, at in written.items() if location in seen]
    return {"latency": latencies, "missing": len(written) - len(latencies)}


class KafkaTap(threading.Thread):
    """Records each object's first notification with its Kafka timestamp (SeaweedFS's producer sets
    it when it publishes), so SeaweedFS's own delay does not depend on when the tap reads."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            group_id=f"tap-{time.time_ns()}",
            session_timeout_ms=3000,
            heartbeat_interval_ms=1000,
        )
        self.published: dict[str, int] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            for records in self.consumer.poll(timeout_ms=50).values():
                for record in records:
                    self.published.setdefault(record.key.decode(errors="replace"), record.timestamp)
        self.consumer.close()


def consume_latency(
    work: Path, bootstrap: str, s3: SeaweedS3, files: list[tuple[str, bytes]], rate: float, reader: str
) -> dict[str, Any]:
    prefix = f"rate-{rate:g}-{reader}"
    db = work / f"consume-{prefix}.duckdb"
    run = Consume(
        work, f"consume-{prefix}", db, bootstrap, "filer", s3,
        "--allow-prefix", f"s3://lake/{prefix}", "--replica-interval", REPLICA_INTERVAL,
        group=f"bench-{prefix}",
    )  # fmt: skip
    # Warm up: the first file is measured only once the consumer has joined its group.
    warmup, body = files[-1]
    s3.client().put_object(Bucket="lake", Key=f"{prefix}/warmup/{warmup}", Body=body)
    while not any(r["event"] == "batch" for r in run.records()):
        time.sleep(0.05)
    tap = KafkaTap(bootstrap, "filer")
    tap.start()
    urls = [f"s3://lake/{prefix}/{relative}" for relative, _ in files]
    running = start_probe(reader, db, run.api_url(), urls, work, len(files) / rate + 60)
    client = s3.client()
    put_started: dict[str, int] = {}
    put_at: dict[str, int] = {}
    started = time.monotonic()
    for index, (relative, body) in enumerate(files):
        time.sleep(max(0.0, started + index / rate - time.monotonic()))
        put_started[f"s3://lake/{prefix}/{relative}"] = int(time.time() * 1000)
        client.put_object(Bucket="lake", Key=f"{prefix}/{relative}", Body=body)
        put_at[f"s3://lake/{prefix}/{relative}"] = int(time.time() * 1000)
    results = seen_after(running, put_at)
    time.sleep(1)  # the tap catches up
    tap.stopped.set()
    run.stop()
    published = {f"s3://lake/{key.removeprefix('/buckets/lake/')}": ms for key, ms in tap.published.items()}
    # SeaweedFS publishes while the PUT is still in flight: measured from the PUT's start.
    delays = [published[url] - at for url, at in put_started.items() if url in published]
    store = [
        r["store_seconds"] * 1000 for r in run.records() if r["event"] == "batch" and "store_seconds" in r
    ]
    with duckdb.connect(str(db), read_only=True) as conn:
        indexed = {row[0] for row in conn.execute("SELECT location FROM files").fetchall()}
        unseen = sorted(set(put_at) - indexed)
        why = conn.execute(
            "SELECT location, reason, message FROM quarantine WHERE list_contains(?, location)", [unseen]
        ).fetchall()
    for location, reason, message in why:
        print(f"  not seen: {location} quarantined as {reason}: {message[:160]}")
    return {**results, "seaweedfs": delays, "store": store}


def watch_latency(work: Path, files: list[tuple[str, bytes]], rate: float, reader: str) -> dict[str, Any]:
    root = work / f"watched-{rate:g}-{reader}"
    root.mkdir()
    db = work / f"watch-{rate:g}-{reader}.duckdb"
    run = Watch(root, db, "--replica-interval", REPLICA_INTERVAL, "--metrics-port", "0")
    locations = [str(root / relative) for relative, _ in files]
    running = start_probe(reader, db, run.api_url(), locations, work, len(files) / rate + 60)
    written_at: dict[str, int] = {}
    started = time.monotonic()
    for index, (relative, body) in enumerate(files):
        time.sleep(max(0.0, started + index / rate - time.monotonic()))
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        written_at[str(target)] = int(time.time() * 1000)
    results = seen_after(running, written_at)
    run.stop()
    return results


def watch_throughput(work: Path, files: list[tuple[str, bytes]]) -> float:
    """Files written all at once into a watched directory: files/s from the first write to the
    last file visible to another process."""
    root = work / "watched-burst"
    root.mkdir()
    db = work / "watch-burst.duckdb"
    run = Watch(root, db, "--replica-interval", "1")
    watcher = start_probe("replica", db, None, [str(root / relative) for relative, _ in files], work, 600)
    first = time.time()
    for relative, body in files:
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
    seen = json.loads(watcher.communicate()[0])
    run.stop()
    return len(seen) / (max(seen.values()) / 1000 - first)


def throughput(work: Path, bootstrap: str, s3: SeaweedS3, files: list[tuple[str, bytes]]) -> float:
    client = s3.client()
    client.create_bucket(Bucket="burst")
    for relative, body in files:
        client.put_object(Bucket="burst", Key=relative, Body=body)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for relative, body in files:
        producer.send(
            "burst", key=relative.encode(), value=notification("aws", True, "burst", relative, 0, len(body))
        )
    producer.flush()
    producer.close()
    db = work / "burst.duckdb"
    watcher = start_probe("replica", db, None, [f"s3://burst/{relative}" for relative, _ in files], work, 600)
    run = Consume(
        work, "burst", db, bootstrap, "burst", s3, "--allow-prefix", "s3://burst", "--replica-interval", "1"
    )
    seen = json.loads(watcher.communicate()[0])
    batches = [r for r in run.records() if r["event"] == "batch"]
    run.stop()
    first = datetime.fromisoformat(batches[0]["time"]).timestamp() - batches[0]["seconds"]
    last = max(seen.values()) / 1000
    return len(seen) / (last - first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="few files: a smoke run (CI)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="viewlineage-bench-"))
    views, commits = (4, 5) if args.quick else (50, 20)
    generated = generate(work / "generated", views=views, commits=commits, seed=5)
    files = [
        (path.relative_to(work / "generated").as_posix(), path.read_bytes())
        for path in generated.files
        if path not in generated.malformed
    ]
    plans = [(1.0, files[: 5 if args.quick else 30]), (100.0, files[: 20 if args.quick else 1000])]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    with (
        tansu_broker(work / "tansu") as bootstrap,
        seaweed_s3(work / "seaweed", kafka=(bootstrap, "filer")) as s3,
    ):
        s3.client().create_bucket(Bucket="lake")
        for key, value in s3.environment.items():
            os.environ.setdefault(key, value)
        for rate, chosen in plans:
            for reader, what in READERS.items():
                result = consume_latency(work, bootstrap, s3, chosen, rate, reader)
                report("consume", rate, f"PUT -> {what}", result["latency"], result["missing"])
                report("consume", rate, "SeaweedFS: PUT start -> published to Kafka", result["seaweedfs"])
                report("consume", rate, "store share per batch (merge+replica)", result["store"])
        for rate, chosen in plans:
            for reader, what in READERS.items():
                result = watch_latency(work, chosen, rate, reader)
                report("watch", rate, f"close -> {what}", result["latency"], result["missing"])
        burst = files if not args.quick else files[:20]
        print(f"consume sustained: {throughput(work, bootstrap, s3, burst):.0f} files/s ({len(burst)} files)")
        print(f"watch sustained: {watch_throughput(work, burst):.0f} files/s ({len(burst)} files)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
