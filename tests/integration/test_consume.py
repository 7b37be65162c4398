"""`viewlineage consume` against a real Kafka-protocol broker (Tansu) and a real S3 store (SeaweedFS).

The view metadata is the real-writer sample. Notifications come from SeaweedFS itself (its filer
publishes every change to the broker) or are produced here in the AWS, SNS, EventBridge and MinIO
shapes for objects that really are in the store.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from kafka import KafkaProducer

from viewlineage.indexer.pipeline import index_locations
from viewlineage.queries import api
from viewlineage.sinks.store import open_reader

from ..conftest import settings_for
from ..data.restore_mtimes import SAMPLE
from ..realwriter.scenario_checks import load_steps
from ..servers import SeaweedS3, seaweed_s3, tansu_broker
from ..stores import Snapshot, snapshot
from .consume_process import Consume
from .events import FORMATS, notification

pytestmark = pytest.mark.integration
STEPS = load_steps(SAMPLE)
BUCKET = "fmt"
PREFIX = "ware house+1"  # a space and a plus: keys are form-encoded in AWS records, raw in EventBridge
URL_PREFIX = f"s3://{BUCKET}/{PREFIX}"
BIG_DAYS_OLD = "4314fa7c-bbf3-4c33-9cd2-a483e994ddf4"
GHOST = f"{PREFIX}/db/ghost/metadata/00001-5e2b0c1d-0000-4000-8000-000000000001.gz.metadata.json"
GHOST_DELETED_MS = STEPS[39] + 1000
# Where a file came from is expected to differ: LastModified of the upload against the file's mtime.
TIMES = {"files.modified_ms", "files.modified_source", "view_files.commit_ms", "view_files.commit_source"}


@dataclass(frozen=True)
class Sent:
    key: bytes
    value: bytes


def metadata_files_by_step() -> list[tuple[int, str]]:
    """(step, relative path) of the sample's metadata files, in the order Spark wrote them."""
    steps = json.loads((SAMPLE / "steps.json").read_text())
    return [
        (step["step"], path)
        for step in steps
        for path in step["new_files"]
        if not path.rsplit("/", 1)[-1].startswith(".")
    ]


def big_days_dropped_file() -> str:
    """The first big_days' newest file (step 28), which Iceberg deleted on DROP VIEW (step 32)."""
    (path,) = [path for step, path in metadata_files_by_step() if step == 28 and "big_days" in path]
    return path


def produce(bootstrap: str, topic: str, messages: list[Sent]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for message in messages:
        producer.send(topic, key=message.key, value=message.value)
    producer.flush()
    producer.close()


def without(tables: Snapshot, *names: str) -> Snapshot:
    return {name: rows for name, rows in tables.items() if name not in names}


def replica_counts(db: Path) -> tuple[int, int, int]:
    """(files, removals, quarantine) as another process sees them."""
    replica = Path(f"{db}.replica")
    if not replica.exists():
        return (-1, -1, -1)
    with duckdb.connect(str(replica), read_only=True) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM removals), "
            "(SELECT count(*) FROM quarantine)"
        ).fetchone()
    assert row is not None
    return (int(row[0]), int(row[1]), int(row[2]))


def wait_for_store(
    db: Path, expected: tuple[int, int, int], processes: list[Consume], timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while (found := replica_counts(db)) != expected:
        for process in processes:
            assert process.process.poll() is None, process.log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"{found} != {expected}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with tansu_broker(tmp_path_factory.mktemp("tansu")) as bootstrap:
        yield bootstrap


@pytest.fixture(scope="module")
def plain_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    with seaweed_s3(tmp_path_factory.mktemp("seaweed-plain")) as server:
        yield server


@pytest.fixture(scope="module")
def good_messages(plain_s3: SeaweedS3, sample_warehouse: Path) -> list[Sent]:
    """The sample uploaded under s3://fmt/ware house+1/, and one notification per metadata file in
    the order Spark wrote them, the four formats in turn; the delete Iceberg made on DROP VIEW; and a
    file announced, never readable, then deleted (deleted before read)."""
    client = plain_s3.client()
    client.create_bucket(Bucket=BUCKET)
    for path in sorted(sample_warehouse.rglob("*")):
        if path.is_file():
            client.put_object(
                Bucket=BUCKET,
                Key=f"{PREFIX}/{path.relative_to(sample_warehouse).as_posix()}",
                Body=path.read_bytes(),
            )
    mtimes = json.loads((SAMPLE / "mtimes.json").read_text())
    dropped = f"{PREFIX}/{big_days_dropped_file()}"
    messages = []
    for index, (step, relative) in enumerate(metadata_files_by_step()):
        if step > 32 and len(messages) == index:  # the DROP at step 32 wrote no file, deleted one
            messages.append(Sent(dropped.encode(), notification("aws", False, BUCKET, dropped, STEPS[32])))
        key = f"{PREFIX}/{relative}"
        size = (sample_warehouse / relative).stat().st_size
        created = notification(FORMATS[index % 4], True, BUCKET, key, mtimes[relative] // 1_000_000, size)
        messages.append(Sent(key.encode(), created))
    messages.append(
        Sent(GHOST.encode(), notification("sns", True, BUCKET, GHOST, GHOST_DELETED_MS - 500, 10))
    )
    messages.append(Sent(GHOST.encode(), notification("eventbridge", False, BUCKET, GHOST, GHOST_DELETED_MS)))
    assert len(messages) == 32 + 3
    return messages


def consume(work: Path, name: str, bootstrap: str, topic: str, s3: SeaweedS3, **kwargs: str) -> Consume:
    return Consume(
        work,
        name,
        work / f"{name}.duckdb",
        bootstrap,
        topic,
        s3,
        "--allow-prefix",
        URL_PREFIX,
        "--catalog-map",
        f"{URL_PREFIX}=prod",
        **kwargs,
    )


@pytest.fixture(scope="module")
def clean_store(
    broker: str, plain_s3: SeaweedS3, good_messages: list[Sent], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Every notification once, in order: the store the other runs must equal."""
    produce(broker, "clean", good_messages)
    run = consume(tmp_path_factory.mktemp("clean"), "clean", broker, "clean", plain_s3)
    try:
        run.wait_for_messages(len(good_messages))
    finally:
        run.stop()
    assert run.outcomes() == Counter(
        {"indexed": 32, "removed": 2, "object-missing": 1}  # the ghost, read before its delete came
    )
    return run.db


def test_every_format_indexes_like_a_local_index(
    clean_store: Path, sample_warehouse: Path, tmp_path: Path
) -> None:
    local = tmp_path / "local.duckdb"
    index_locations([str(sample_warehouse)], settings_for(local, f"{sample_warehouse}=prod"))

    def as_s3(text: str) -> str:
        return text.replace(str(sample_warehouse), URL_PREFIX)

    consumed = snapshot(clean_store, exclude=TIMES)
    assert without(consumed, "removals") == without(snapshot(local, exclude=TIMES, rewrite=as_s3), "removals")
    dropped = f"{URL_PREFIX}/{big_days_dropped_file()}"
    assert consumed["removals"] == [
        (dropped, STEPS[32], "aws"),
        (f"s3://{BUCKET}/{GHOST}", GHOST_DELETED_MS, "eventbridge"),
    ]
    assert consumed["quarantine"] == []  # the ghost was deleted before it could be read
    with open_reader(clean_store) as conn:
        assert api.history(conn, BIG_DAYS_OLD)["dropped_ms"] == STEPS[32]
        with pytest.raises(Exception, match="was dropped at"):
            api.show(conn, BIG_DAYS_OLD, STEPS[33])
        assert api.show(conn, "prod.db.event_agg")["version_id"] == 13
        assert [
            (v["view"], v["depth"]) for v in api.uses(conn, "prod.sales.orders", transitive=True)["views"]
        ] == [
            ("prod.sales.customer_revenue", 1),
            ("prod.sales.order_rank", 1),
            ("prod.acme.finance.revenue_by_region", 2),
        ]
