"""Decoding notification messages: every sample of ../shared/conformance/s3-events/, and SeaweedFS
filer notifications built with the same protobuf fields SeaweedFS sends (field numbers from its
filer.proto; the integration tests decode real ones)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from viewlineage.indexer.parse.locations import normalize_location
from viewlineage.indexer.sources.events import (
    EventDecodeError,
    EventKind,
    EventNotification,
    ObjectEvent,
    Skipped,
    decode_message,
)

from .conftest import CONFORMANCE

EVENTS = CONFORMANCE / "s3-events"
KEY = "warehouse/sales/daily revenue/metadata/00003-6f1c2b8e-3b1d-4d7e-9a4e-2f0c5b7d9e11.gz.metadata.json"
ETAG = "d41d8cd98f00b204e9800998ecf8427e"
CREATED = EventKind.CREATED

EXPECTED: dict[str, tuple[list[ObjectEvent], list[Skipped]]] = {
    "aws-docs__object-created-put.json": (
        [ObjectEvent(CREATED, "s3://mybucket/HappyFace.jpg", 0, "aws", 1024, ETAG)],
        [],
    ),
    "aws-docs__s3-test-event.json": ([], [Skipped("test-event", "bucketname")]),
    "aws-lambda-go__s3-event.json": (
        [ObjectEvent(CREATED, "s3://sourcebucket/Happy Face.jpg", 123, "aws", 1024, ETAG)],
        [],
    ),
    "aws-lambda-go__s3-event-with-decoded.json": (
        [ObjectEvent(CREATED, "s3://sourcebucket/Happy Face.jpg", 123, "aws", 1024, ETAG)],
        [],
    ),
    "constructed__eventbridge-object-created.json": (
        [ObjectEvent(CREATED, f"s3://lake-bucket/{KEY}", 1772446530000, "eventbridge", 1873, ETAG)],
        [],
    ),
    "constructed__sns-envelope-object-created.json": (
        [ObjectEvent(CREATED, f"s3://lake-bucket/{KEY}", 1772446530123, "sns", 1873, ETAG)],
        [],
    ),
    "minio-docs__kafka-notification.json": (
        [
            ObjectEvent(
                CREATED,
                "s3://images/myphoto.jpg",
                1568137314000,
                "minio",
                6474,
                "430f89010c77aa34fc8760696da62d08-1",
            )
        ],
        [],
    ),
}
OTHER_EVENT_TYPES = {
    "aws-lambda-go__s3-glacier-event.json": "s3:ObjectRestore:Completed s3://example-bucket/glacier-test.txt",
    "aws-lambda-go__s3-intelligenttier-event.json": (
        "s3:IntelligentTiering:TransitionAccess s3://example-bucket/intelligent-tier-test.dat"
    ),
    "aws-lambda-go__s3-lifecycle-event.json": "s3:LifecycleTransition s3://example-bucket/lifecycle-test.dat",
    "aws-lambda-go__s3-replication-event.json": (
        "s3:Replication:OperationFailedReplication s3://amzn-s3-demo-bucket1/replication-test.png"
    ),
    "aws-lambda-go__s3-restore-event.json": "s3:ObjectRestore:Completed s3://example-bucket/glacier-test.txt",
}


def test_every_sample_has_an_expectation() -> None:
    assert sorted(p.name for p in EVENTS.iterdir()) == sorted([*EXPECTED, *OTHER_EVENT_TYPES])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample(name: str) -> None:
    decoded = decode_message(None, (EVENTS / name).read_bytes())
    assert (list(decoded.events), list(decoded.skipped)) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(OTHER_EVENT_TYPES))
def test_other_event_types_are_skipped(name: str) -> None:
    decoded = decode_message(None, (EVENTS / name).read_bytes())
    assert (decoded.events, decoded.skipped) == (
        (),
        (Skipped("not-create-or-remove", OTHER_EVENT_TYPES[name]),),
    )


@pytest.mark.parametrize(
    ("event_name", "kind"),
    [
        ("ObjectRemoved:Delete", EventKind.REMOVED),
        ("ObjectRemoved:DeleteMarkerCreated", EventKind.REMOVED),
        ("LifecycleExpiration:Delete", EventKind.REMOVED),
        ("s3:ObjectCreated:CompleteMultipartUpload", EventKind.CREATED),
        ("ObjectCreated:Copy", EventKind.CREATED),
    ],
)
def test_event_names(event_name: str, kind: EventKind) -> None:
    value = (
        b'{"Records": [{"eventName": "' + event_name.encode() + b'", "eventTime": "2026-01-01T00:00:00Z", '
        b'"s3": {"bucket": {"name": "b"}, "object": {"key": "a%2Bb+c/x.metadata.json"}}}]}'
    )
    (event,) = decode_message(None, value).events
    assert (event.kind, event.url, event.event_ms) == (kind, "s3://b/a+b c/x.metadata.json", 1767225600000)


@pytest.mark.parametrize(
    ("value", "message"),
    [  # found by the tenth adversarial trial: valid JSON was "neither JSON nor a filer notification"
        (b"[]", "a JSON array, not an event (an object)"),
        (b'"s"', "a JSON string, not an event (an object)"),
        (b"null", "a JSON null, not an event (an object)"),
        (b"\x00\x01", "neither JSON nor a SeaweedFS filer notification"),
    ],
)
def test_what_is_not_an_event_says_what_it_is(value: bytes, message: str) -> None:
    with pytest.raises(EventDecodeError) as caught:
        decode_message(None, value)
    assert (caught.value.reason, str(caught.value)) == ("unknown-event-format", message)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"", "empty-message"),
        (b"{not json", "not-json"),
        (b"[1, 2]", "unknown-event-format"),
        (b'{"hello": "world"}', "unknown-event-format"),
        (b'{"Records": [{"eventName": "ObjectCreated:Put"}]}', "invalid-event"),
        (b'{"Type": "Notification", "Message": "{oops"}', "not-json"),
        (b"\x00\x01 binary without a filer key", "unknown-event-format"),
    ],
)
def test_poison_messages(value: bytes, reason: str) -> None:
    with pytest.raises(EventDecodeError) as caught:
        decode_message(b"k" if value.startswith(b"\x00") else None, value)
    assert caught.value.reason == reason


def _filer(old: dict[str, Any] | None = None, new: dict[str, Any] | None = None, parent: str = "") -> bytes:
    message: Any = EventNotification()
    for field, entry in (("old_entry", old), ("new_entry", new)):
        if entry is None:
            continue
        target = getattr(message, field)
        target.name = entry["name"]
        target.is_directory = entry.get("dir", False)
        target.attributes.file_size = entry.get("size", 0)
        target.attributes.mtime = 1_795_300_000
        if "etag" in entry:
            target.extended["Seaweed-X-Amz-ETag"] = entry["etag"].encode()
    if parent:
        message.new_parent_path = parent
    return bytes(message.SerializeToString())


def test_seaweedfs_create_delete_rename_and_skips() -> None:
    path = b"/buckets/lake/w/db/v/metadata/00001-a.gz.metadata.json"
    created = decode_message(
        path, _filer(new={"name": "00001-a.gz.metadata.json", "size": 7, "etag": "e1"}), 99
    )
    assert created.events == (
        ObjectEvent(CREATED, "s3://lake/w/db/v/metadata/00001-a.gz.metadata.json", 99, "seaweedfs", 7, "e1"),
    )
    deleted = decode_message(path, _filer(old={"name": "00001-a.gz.metadata.json"}), 100)
    assert [(e.kind, e.url, e.event_ms) for e in deleted.events] == [
        (EventKind.REMOVED, "s3://lake/w/db/v/metadata/00001-a.gz.metadata.json", 100)
    ]
    renamed = decode_message(
        path,
        _filer(
            old={"name": "00001-a.gz.metadata.json"},
            new={"name": "00002-b.gz.metadata.json"},
            parent="/buckets/lake/w/db/u/metadata",
        ),
        101,
    )
    assert [(e.kind, e.url) for e in renamed.events] == [
        (EventKind.REMOVED, "s3://lake/w/db/v/metadata/00001-a.gz.metadata.json"),
        (EventKind.CREATED, "s3://lake/w/db/u/metadata/00002-b.gz.metadata.json"),
    ]
    overwritten = decode_message(
        path, _filer(old={"name": "00001-a.gz.metadata.json"}, new={"name": "00001-a.gz.metadata.json"})
    )
    assert [e.kind for e in overwritten.events] == [EventKind.CREATED]
    assert decode_message(b"/buckets/lake/w", _filer(new={"name": "w", "dir": True})).skipped == (
        Skipped("directory", "/buckets/lake/w"),
    )
    staging = b"/buckets/lake/.uploads/abc/0001.part"
    assert decode_message(staging, _filer(new={"name": "0001.part"})).skipped == (
        Skipped("seaweedfs-internal", staging.decode()),
    )
    system = b"/buckets/.system/owners/admin/lake"
    assert decode_message(system, _filer(new={"name": "lake"})).skipped == (
        Skipped("seaweedfs-internal", system.decode()),
    )
    with pytest.raises(EventDecodeError) as caught:
        decode_message(path, b"\xff\xff\xff")
    assert caught.value.reason == "undecodable"


@pytest.mark.parametrize(
    ("event_name", "version_id", "removed_version"),
    [
        ("ObjectRemoved:Delete", "3HL4kqtJlcpXroDTDmJ", "3HL4kqtJlcpXroDTDmJ"),
        ("s3:ObjectRemoved:Delete", "3HL4kqtJlcpXroDTDmJ", "3HL4kqtJlcpXroDTDmJ"),
        ("ObjectRemoved:DeleteMarkerCreated", "3HL4kqtJlcpXroDTDmJ", None),
        ("ObjectRemoved:Delete", "null", None),  # a bucket without versioning
        ("ObjectRemoved:Delete", None, None),
        ("ObjectCreated:Put", "3HL4kqtJlcpXroDTDmJ", None),
    ],
)
def test_a_removal_names_the_version_it_deleted_for_good(
    event_name: str, version_id: str | None, removed_version: str | None
) -> None:
    obj: dict[str, Any] = {"key": "wh/db/v/metadata/00001-x.metadata.json"}
    if version_id is not None:
        obj["versionId"] = version_id
    record = {
        "eventName": event_name,
        "eventTime": "2026-11-21T10:00:00Z",
        "s3": {"bucket": {"name": "b"}, "object": obj},
    }
    (event,) = decode_message(None, json.dumps({"Records": [record]}).encode()).events
    assert event.removed_version == removed_version


@pytest.mark.parametrize(
    "key",
    [
        "wh/db/dd/zz/../metadata/00000-x.metadata.json",
        "wh/db/ee1/metadata/./00000-x.metadata.json",
        "wh/db//ee2/metadata/00000-x.metadata.json",
        "wh/db/ee3/metadata//00000-x.metadata.json",
    ],
)
def test_an_object_key_is_kept_as_it_is(key: str) -> None:
    """Found by the ninth adversarial trial: keys were cleaned as paths, so a delete of
    `wh/db/dd/zz/../metadata/X`, another object in S3, removed `wh/db/dd/metadata/X` and dropped its view."""
    record = {
        "eventName": "ObjectRemoved:Delete",
        "eventTime": "2026-11-21T10:00:00Z",
        "s3": {"bucket": {"name": "lake"}, "object": {"key": key}},
    }
    (event,) = decode_message(None, json.dumps({"Records": [record]}).encode()).events
    assert normalize_location(event.url) == f"s3://lake/{key}"  # as `consume` stores its removal


def test_a_removal_dated_in_the_future_counts_from_when_it_is_consumed(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the twelfth adversarial trial: `ObjectRemoved:Delete` with `eventTime`
    9999-12-31 dropped the view at that time, so it was current now and dropped too. (A delete
    asks the object store whether the object is there now, and since when: a real one answers.)"""

    from viewlineage.indexer.followers.consume import EventIngest
    from viewlineage.indexer.parse.config import ParseConfig
    from viewlineage.indexer.pipeline.indexer import Indexer

    from .conftest import settings_for
    from .servers import seaweed_s3

    key = "wh/db/v/metadata/00001-x.metadata.json"
    with seaweed_s3(tmp_path / "s3") as s3:
        s3.client().create_bucket(Bucket="lake")  # the object is gone: the delete counts
        for name, value in s3.environment.items():
            monkeypatch.setenv(name, value)
        settings = settings_for(tmp_path / "s.duckdb", s3_endpoint=s3.endpoint)
        removals = _removals_of(EventIngest(Indexer(None, ParseConfig()), settings, None), key)
    (clamped, before, after), (kept, _, _) = removals
    assert before <= clamped <= after
    assert kept == 1_767_323_045_000


def _removals_of(ingest: Any, key: str) -> list[tuple[int, int, int]]:
    """The removal time of a delete dated in the future, then of one dated in the past, each with
    the clock's time before and after it was consumed."""
    import time

    from viewlineage.indexer.followers.consume import Message

    removals = []
    for when in ("9999-12-31T23:59:59.000Z", "2026-01-02T03:04:05.000Z"):
        record = {
            "eventName": "ObjectRemoved:Delete",
            "eventTime": when,
            "s3": {"bucket": {"name": "lake"}, "object": {"key": key}},
        }
        message = Message("t", 0, 0, None, json.dumps({"Records": [record]}).encode(), None)
        before = int(time.time() * 1000)
        (removal,) = ingest.build([message]).batch.removals
        removals.append((removal.removed_ms, before, int(time.time() * 1000)))
    return removals
