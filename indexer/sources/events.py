"""Object-store notifications -> `ObjectEvent`s: a pure function of a message's key and value.

The format is detected per message:

- AWS S3 notifications (`Records[]`; `eventName` such as `ObjectCreated:Put`, keys form-URL-encoded),
  also inside an SNS envelope (`Type: Notification`, `Message` holds the JSON as a string); the
  `s3:TestEvent` sent when notifications are configured is skipped;
- EventBridge (`detail-type: Object Created|Object Deleted`, `detail.object.key` NOT URL-encoded);
- MinIO's Kafka target (`EventName` or `EventType`, `Key` = `bucket/decoded key`, AWS-shaped `Records`);
- SeaweedFS filer notifications: protobuf `filer_pb.EventNotification`, the Kafka key being the filer
  path `/buckets/<bucket>/<key>`; directories, `.system` and multipart staging (`.uploads`) are skipped.

A message that is none of these raises `EventDecodeError`: the consumer quarantines it and moves on.
"""

from __future__ import annotations

import dataclasses
import enum
import posixpath
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote_plus

import orjson
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from viewlineage.indexer.errors import ViewLineageError


class EventDecodeError(ViewLineageError):
    """A message that is not an object-store notification we know. `reason` is a stable code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class EventKind(enum.StrEnum):
    CREATED = "created"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class ObjectEvent:
    kind: EventKind
    url: str
    """`s3://bucket/key`, the key decoded."""
    event_ms: int | None
    """When the store says it happened (AWS `eventTime`, SeaweedFS: the Kafka timestamp)."""
    source: str
    """The detected format: `aws`, `sns`, `eventbridge`, `minio` or `seaweedfs`."""
    size: int | None = None
    etag: str | None = None
    removed_version: str | None = None
    """A removal of one version of the object for good (`ObjectRemoved:Delete` with a versionId,
    in a versioned bucket): the key may still hold others, so the object may still be there."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A notification that names no object to act on, with why (`test-event`, `directory`, ...)."""

    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class Decoded:
    events: tuple[ObjectEvent, ...]
    skipped: tuple[Skipped, ...] = ()


class _Model(BaseModel):
    """Notification shapes: only what we use is declared; everything else is ignored."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class _S3Bucket(_Model):
    name: str


class _S3Object(_Model):
    key: str
    size: int | None = None
    etag: str | None = Field(default=None, alias="eTag")
    version_id: str | None = Field(default=None, alias="versionId")


class _S3Entity(_Model):
    bucket: _S3Bucket
    object: _S3Object


class _Record(_Model):
    event_name: str = Field(alias="eventName")
    event_time: str | None = Field(default=None, alias="eventTime")
    s3: _S3Entity


class _Records(_Model):
    records: list[_Record] = Field(alias="Records")


class _MinioEnvelope(_Records):
    event_name: str | None = Field(default=None, alias="EventName")
    event_type: str | None = Field(default=None, alias="EventType")
    key: str = Field(alias="Key")


class _BridgeObject(_Model):
    key: str
    size: int | None = None
    etag: str | None = None
    version_id: str | None = Field(default=None, alias="version-id")


class _BridgeDetail(_Model):
    bucket: _S3Bucket
    object: _BridgeObject
    deletion_type: str | None = Field(default=None, alias="deletion-type")


class _EventBridge(_Model):
    detail_type: str = Field(alias="detail-type")
    time: str | None = None
    detail: _BridgeDetail


# AWS event names (without MinIO's `s3:` prefix) that create or remove an object; everything else
# (restore, replication, tagging, ACL, tiering) changes no metadata file.
_CREATED = ("ObjectCreated:",)
_REMOVED = ("ObjectRemoved:", "LifecycleExpiration:Delete", "LifecycleExpiration:DeleteMarkerCreated")
_BRIDGE_KINDS = {"Object Created": EventKind.CREATED, "Object Deleted": EventKind.REMOVED}


def _kind(event_name: str) -> EventKind | None:
    name = event_name.removeprefix("s3:")
    if name.startswith(_CREATED):
        return EventKind.CREATED
    if name.startswith(_REMOVED):
        return EventKind.REMOVED
    return None


def _removed_version(event_name: str, version_id: str | None) -> str | None:
    """The version a removal deleted for good, if it names one (a delete marker, or a bucket
    without versioning (`null`), removes the object itself)."""
    if not event_name.removeprefix("s3:").startswith(("ObjectRemoved:Delete", "LifecycleExpiration:Delete")):
        return None
    if "DeleteMarkerCreated" in event_name or version_id in (None, "", "null"):
        return None
    return version_id


def _time_ms(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def decode_message(key: bytes | None, value: bytes | None, timestamp_ms: int | None = None) -> Decoded:
    """The object events in one Kafka message; raises `EventDecodeError` for anything else."""
    if not value:
        raise EventDecodeError("empty-message", "the message has no value")
    if value.lstrip()[:1] == b"{":
        try:
            document = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise EventDecodeError("not-json", f"not JSON: {exc}") from exc
        return _decode_json(document, "aws")
    if key is None or not key.startswith(b"/"):  # no filer path: JSON of another kind (`[]`), or none
        try:
            other = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise EventDecodeError(
                "unknown-event-format", "neither JSON nor a SeaweedFS filer notification"
            ) from None
        return _decode_json(other, "aws")
    return _decode_seaweedfs(key, value, timestamp_ms)


def _decode_json(document: Any, source: str) -> Decoded:
    if not isinstance(document, dict):
        kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
        kind = kinds.get(type(document), "null")
        raise EventDecodeError("unknown-event-format", f"a JSON {kind}, not an event (an object)")
    try:
        if document.get("Event") == "s3:TestEvent":
            return Decoded((), (Skipped("test-event", str(document.get("Bucket", ""))),))
        if document.get("Type") == "Notification" and isinstance(document.get("Message"), str):
            try:
                inner = orjson.loads(document["Message"])
            except orjson.JSONDecodeError as exc:
                raise EventDecodeError("not-json", f"SNS Message is not JSON: {exc}") from exc
            return _decode_json(inner, "sns")
        if "detail-type" in document:
            return _decode_eventbridge(_EventBridge.model_validate(document))
        if "Records" in document and ("EventName" in document or "EventType" in document):
            return _decode_minio(_MinioEnvelope.model_validate(document))
        if "Records" in document:
            return _decode_records(_Records.model_validate(document).records, source)
    except ValidationError as exc:
        raise EventDecodeError("invalid-event", f"malformed {source} event: {exc}") from exc
    raise EventDecodeError("unknown-event-format", f"no known event shape; keys: {sorted(document)[:8]}")


def _decode_records(records: list[_Record], source: str) -> Decoded:
    events: list[ObjectEvent] = []
    skipped: list[Skipped] = []
    for record in records:
        url = f"s3://{record.s3.bucket.name}/{unquote_plus(record.s3.object.key)}"
        kind = _kind(record.event_name)
        if kind is None:
            skipped.append(Skipped("not-create-or-remove", f"{record.event_name} {url}"))
            continue
        obj = record.s3.object
        removed_version = _removed_version(record.event_name, obj.version_id)
        events.append(
            ObjectEvent(kind, url, _time_ms(record.event_time), source, obj.size, obj.etag, removed_version)
        )
    return Decoded(tuple(events), tuple(skipped))


def _decode_minio(envelope: _MinioEnvelope) -> Decoded:
    """MinIO's records are AWS-shaped (keys URL-encoded); its `Key` is `bucket/key`, decoded."""
    decoded = _decode_records(envelope.records, "minio")
    if len(decoded.events) == 1 and "/" in envelope.key:
        return Decoded((_replace_url(decoded.events[0], f"s3://{envelope.key}"),), decoded.skipped)
    return decoded


def _replace_url(event: ObjectEvent, url: str) -> ObjectEvent:
    return dataclasses.replace(event, url=url)


def _decode_eventbridge(event: _EventBridge) -> Decoded:
    url = f"s3://{event.detail.bucket.name}/{event.detail.object.key}"
    kind = _BRIDGE_KINDS.get(event.detail_type)
    if kind is None:
        return Decoded((), (Skipped("not-create-or-remove", f"{event.detail_type} {url}"),))
    obj = event.detail.object
    permanent = kind is EventKind.REMOVED and event.detail.deletion_type == "Permanently Deleted"
    removed_version = obj.version_id if permanent and obj.version_id not in (None, "", "null") else None
    return Decoded(
        (ObjectEvent(kind, url, _time_ms(event.time), "eventbridge", obj.size, obj.etag, removed_version),)
    )


def _filer_messages() -> tuple[type[Message], type[Message]]:
    """The parts of SeaweedFS's `filer.proto` we read, built at import time: no generated code to
    keep in step with the protobuf runtime. Undeclared fields are kept as unknown fields."""
    proto = descriptor_pb2.FileDescriptorProto(name="viewlineage_filer.proto", package="viewlineage_filer")
    field = descriptor_pb2.FieldDescriptorProto
    optional, repeated = field.LABEL_OPTIONAL, field.LABEL_REPEATED

    def message(name: str, *fields: tuple[str, int, int, str | None, int]) -> descriptor_pb2.DescriptorProto:
        described = proto.message_type.add(name=name)
        for field_name, number, kind, type_name, label in fields:
            added = described.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                added.type_name = type_name
        return described

    message(
        "FuseAttributes",
        ("file_size", 1, field.TYPE_UINT64, None, optional),
        ("mtime", 2, field.TYPE_INT64, None, optional),
        ("mime", 7, field.TYPE_STRING, None, optional),
        ("md5", 14, field.TYPE_BYTES, None, optional),
    )
    entry = message(
        "Entry",
        ("name", 1, field.TYPE_STRING, None, optional),
        ("is_directory", 2, field.TYPE_BOOL, None, optional),
        ("attributes", 4, field.TYPE_MESSAGE, ".viewlineage_filer.FuseAttributes", optional),
        ("extended", 5, field.TYPE_MESSAGE, ".viewlineage_filer.Entry.ExtendedEntry", repeated),
    )
    extended = entry.nested_type.add(name="ExtendedEntry")
    extended.options.map_entry = True
    extended.field.add(name="key", number=1, type=field.TYPE_STRING, label=optional)
    extended.field.add(name="value", number=2, type=field.TYPE_BYTES, label=optional)
    message(
        "EventNotification",
        ("old_entry", 1, field.TYPE_MESSAGE, ".viewlineage_filer.Entry", optional),
        ("new_entry", 2, field.TYPE_MESSAGE, ".viewlineage_filer.Entry", optional),
        ("delete_chunks", 3, field.TYPE_BOOL, None, optional),
        ("new_parent_path", 4, field.TYPE_STRING, None, optional),
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return (
        message_factory.GetMessageClass(pool.FindMessageTypeByName("viewlineage_filer.EventNotification")),
        message_factory.GetMessageClass(pool.FindMessageTypeByName("viewlineage_filer.Entry")),
    )


EventNotification, FilerEntry = _filer_messages()


def _filer_url(path: str) -> str | Skipped:
    """`/buckets/<bucket>/<key>` -> `s3://bucket/key`, or why the path names no S3 object."""
    parts = path.split("/")
    if len(parts) < 4 or parts[0] != "" or parts[1] != "buckets" or not parts[2] or not parts[3]:
        return Skipped("not-a-bucket-object", path)
    if parts[2] == ".system" or ".uploads" in parts[3:-1]:
        return Skipped("seaweedfs-internal", path)
    return f"s3://{parts[2]}/{'/'.join(parts[3:])}"


def _decode_seaweedfs(key: bytes, value: bytes, timestamp_ms: int | None) -> Decoded:
    """A filer notification, its Kafka key the filer path (`/buckets/...`)."""
    try:
        notification: Any = EventNotification.FromString(value)
        path = key.decode()
    except (DecodeError, UnicodeDecodeError) as exc:
        raise EventDecodeError("undecodable", f"not a SeaweedFS filer notification: {exc}") from exc
    old = notification.old_entry if notification.HasField("old_entry") else None
    new = notification.new_entry if notification.HasField("new_entry") else None
    entry = new if new is not None else old
    if entry is None:
        raise EventDecodeError("undecodable", f"SeaweedFS notification for {path} carries no entry")
    if entry.is_directory:
        return Decoded((), (Skipped("directory", path),))
    events: list[ObjectEvent] = []
    skipped: list[Skipped] = []

    def add(kind: EventKind, entry_path: str, entry: Any) -> None:
        url = _filer_url(entry_path)
        if isinstance(url, Skipped):
            skipped.append(url)
            return
        attributes = entry.attributes
        etag = entry.extended.get("Seaweed-X-Amz-ETag")
        events.append(
            ObjectEvent(
                kind,
                url,
                timestamp_ms,
                "seaweedfs",
                attributes.file_size if kind is EventKind.CREATED else None,
                etag.decode(errors="replace") if etag else None,
            )
        )

    directory = posixpath.dirname(path)
    new_path = None if new is None else posixpath.join(notification.new_parent_path or directory, new.name)
    if old is not None and (new is None or new_path != path):
        add(EventKind.REMOVED, path, old)  # a delete, or the source of a rename
    if new is not None and new_path is not None:
        add(EventKind.CREATED, new_path, new)  # a create, an overwrite, or the target of a rename
    return Decoded(tuple(events), tuple(skipped))


__all__ = ["Decoded", "EventDecodeError", "EventKind", "ObjectEvent", "Skipped", "decode_message"]
