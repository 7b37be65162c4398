"""`viewlineage index s3://...` against a real S3-compatible server (SeaweedFS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from viewlineage.indexer.errors import TransientReadError
from viewlineage.indexer.pipeline import (
    ReadFailure,
    index_locations,
    quarantine_read_failure,
    read_with_retries,
)
from viewlineage.indexer.read import ListedFile, reader_for

from ..conftest import settings_for
from ..servers import SECRET_KEY, SeaweedS3, seaweed_s3
from ..stores import OBJECT_TIMES, snapshot

pytestmark = pytest.mark.integration
PREFIX = "s3://lake/warehouse"
# Where a file came from is expected to differ: LastModified of the upload against the file's mtime.


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    with seaweed_s3(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


@pytest.fixture(scope="module")
def uploaded(s3: SeaweedS3, sample_warehouse: Path) -> dict[str, int]:
    """The sample warehouse (with its .crc side files) under s3://lake/warehouse/; {url: LastModified ms}."""
    client = s3.client()
    client.create_bucket(Bucket="lake")
    for path in sorted(sample_warehouse.rglob("*")):
        if path.is_file():
            key = f"warehouse/{path.relative_to(sample_warehouse).as_posix()}"
            client.put_object(Bucket="lake", Key=key, Body=path.read_bytes())
    listed = client.list_objects_v2(Bucket="lake", Prefix="warehouse/")["Contents"]
    return {f"s3://lake/{o['Key']}": int(o["LastModified"].timestamp() * 1000) for o in listed}


def _index_cli(s3: SeaweedS3, db: Path, secret: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "viewlineage.queries.cli",
            "--db",
            str(db),
            "index",
            PREFIX,
            "--catalog-map",
            f"{PREFIX}=prod",
            "--s3-endpoint",
            s3.endpoint,
            "--no-progress",
            "--format",
            "json",
        ],
        env={**os.environ, **s3.environment, "AWS_SECRET_ACCESS_KEY": secret},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_index_s3_equals_indexing_the_same_files_locally(
    s3: SeaweedS3, uploaded: dict[str, int], sample_warehouse: Path, tmp_path: Path
) -> None:
    db = tmp_path / "s3.duckdb"
    result = _index_cli(s3, db, SECRET_KEY)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["files"], summary["indexed"], summary["quarantined"], summary["table_files"]) == (
        32,
        32,
        0,
        8,
    )
    local = tmp_path / "local.duckdb"
    index_locations([str(sample_warehouse)], settings_for(local, f"{sample_warehouse}=prod"))

    def as_s3(text: str) -> str:
        return text.replace(str(sample_warehouse), PREFIX)

    assert snapshot(db, exclude=OBJECT_TIMES) == snapshot(local, exclude=OBJECT_TIMES, rewrite=as_s3)
    # Times come from the object store: LastModified, never the ingest time.
    with duckdb.connect(str(db), read_only=True) as conn:
        found = conn.execute("SELECT location, modified_ms, modified_source FROM files ORDER BY 1").fetchall()
    assert len(found) == 32
    assert found == [(url, uploaded[url], "last-modified") for url in sorted(uploaded) if "/." not in url]


def test_wrong_credentials_fail_clearly_and_are_never_printed(
    s3: SeaweedS3, uploaded: dict[str, int], tmp_path: Path
) -> None:
    result = _index_cli(s3, tmp_path / "denied.duckdb", "not-the-secret")
    assert result.returncode == 1, result.stdout
    assert "not-the-secret" not in result.stdout + result.stderr
    assert result.stderr == (
        "error: s3://lake/warehouse: permission denied: The request signature we calculated does not "
        "match the signature you provided. Check your key and signing method.\n"
    )


def test_an_announced_object_shorter_than_its_event_is_retried_not_quarantined(
    s3: SeaweedS3, uploaded: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SeaweedFS notifies, and serves the object, while the upload is in flight: fewer bytes than
    the event announced is a transient read, retried, never a `not-json` quarantine."""
    for key, value in s3.environment.items():
        monkeypatch.setenv(key, value)
    url = next(url for url in sorted(uploaded) if url.endswith(".metadata.json"))
    reader = reader_for(url, s3.endpoint)
    whole = reader.read(url, 1 << 26, ListedFile(url))
    size = len(whole.data)
    assert whole.modified_ms == uploaded[url]
    with pytest.raises(TransientReadError, match=f"{size} of the {size + 1} bytes announced"):
        reader.read(url, 1 << 26, ListedFile(url, size + 1))
    failure = read_with_retries(lambda: reader.read(url, 1 << 26, ListedFile(url, size + 1)), url, attempts=2)
    assert isinstance(failure, ReadFailure) and isinstance(failure.error, TransientReadError)
    assert quarantine_read_failure(failure, missing_is_quarantine=True).reason == "unreadable"  # type: ignore[union-attr]
    assert reader.read(url, 1 << 26, ListedFile(url, size)).data == whole.data
