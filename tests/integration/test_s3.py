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
from viewlineage.indexer.pipeline.reads import ReadFailure, quarantine_read_failure, read_with_retries
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.indexer.sources.read import DECLINE_AFTER, FsspecReader, ListedFile, reader_for

from ..conftest import settings_for
from ..servers import SECRET_KEY, SeaweedS3, free_port, seaweed_s3, upload_warehouse
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
    """The sample warehouse under s3://lake/warehouse/; {url: LastModified ms}."""
    return upload_warehouse(s3, sample_warehouse)


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


def test_announced_objects_are_read_through_obstore_and_s3fs_takes_a_bucket_it_keeps_failing_on(
    s3: SeaweedS3, uploaded: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object an event announced is one GET through obstore, with what a listing through s3fs
    says of it. Where obstore fails and s3fs reads (here obstore's endpoint refuses connections),
    each read still succeeds, and after `DECLINE_AFTER` in a row the bucket is left to s3fs."""
    for key, value in s3.environment.items():
        monkeypatch.setenv(key, value)
    urls = [url for url in sorted(uploaded) if url.endswith(".metadata.json")][: DECLINE_AFTER + 1]
    reader = reader_for(urls[0], s3.endpoint)
    assert isinstance(reader, FsspecReader) and reader.gets is not None
    listed = {item.location: item for item in reader.list(PREFIX)}
    for url in urls:
        read = reader.read(url, 1 << 26, ListedFile(url))
        assert (len(read.data), read.modified_ms) == (listed[url].size, listed[url].modified_ms)
    assert set(reader.gets.stores) == {"lake"} and reader.gets.failures == {}

    elsewhere = reader_for(urls[0], s3.endpoint)
    assert isinstance(elsewhere, FsspecReader) and elsewhere.gets is not None
    elsewhere.gets.endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.warns(RuntimeWarning, match=f"obstore failed on {DECLINE_AFTER} objects in a row"):
        for url in urls[:DECLINE_AFTER]:
            assert elsewhere.read(url, 1 << 26, ListedFile(url)).data == reader.read(url, 1 << 26).data
    assert elsewhere.gets.declined == {"lake"}

    def no_more(*args: object) -> None:
        raise AssertionError("a declined bucket went to obstore")

    monkeypatch.setattr(elsewhere.gets, "get", no_more)
    last = urls[DECLINE_AFTER]
    assert elsewhere.read(last, 1 << 26, ListedFile(last)).data == reader.read(last, 1 << 26).data


def test_keys_obstore_cannot_take_are_read_by_s3fs_or_fail_as_reads(
    s3: SeaweedS3, sample_warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the seventh adversarial trial: a key S3 accepts with a tab in it made obstore raise
    ValueError, and one of 66,000 characters (from an event) made it panic: `consume` died on the
    message at every restart, and `index s3://...` stored nothing at all. obstore's failure now
    leaves the object to s3fs; what neither reads is an unreadable file, and the rest is indexed."""
    for key, value in s3.environment.items():
        monkeypatch.setenv(key, value)
    client = s3.client()
    client.create_bucket(Bucket="keys")
    view = next(sample_warehouse.rglob("*.metadata.json"))
    client.put_object(
        Bucket="keys", Key="wh/db/tabbed/metadata/00000-a\tb.metadata.json", Body=view.read_bytes()
    )
    tabbed = "s3://keys/wh/db/tabbed/metadata/00000-a\tb.metadata.json"
    reader = reader_for(tabbed, s3.endpoint)
    assert reader.read(tabbed, 1 << 26, ListedFile(tabbed)).data == view.read_bytes()
    too_long = "s3://keys/wh/db/x/metadata/00000-" + "a" * 66_000 + ".metadata.json"
    failure = read_with_retries(
        lambda: reader.read(too_long, 1 << 26, ListedFile(too_long)), too_long, attempts=1
    )
    assert isinstance(failure, ReadFailure)
    assert quarantine_read_failure(failure, missing_is_quarantine=True).reason in {
        "unreadable",
        "object-missing",
    }  # type: ignore[union-attr]
    db = tmp_path / "keys.duckdb"
    stats = index_locations(["s3://keys/wh"], settings_for(db, "s3://keys/wh=prod", s3_endpoint=s3.endpoint))
    assert (stats.indexed, stats.quarantined) == (1, 0)
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT location FROM files").fetchall() == [(tabbed,)]
