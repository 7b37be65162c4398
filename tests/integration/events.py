"""Notification messages as the real senders shape them (see ../shared/conformance/s3-events/)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from urllib.parse import quote_plus

FORMATS = ("aws", "sns", "eventbridge", "minio")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _record(event_name: str, bucket: str, key: str, ms: int, size: int) -> dict[str, object]:
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "eventTime": _iso(ms),
        "eventName": event_name,
        "s3": {
            "s3SchemaVersion": "1.0",
            "bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
            "object": {"key": quote_plus(key, safe="/"), "size": size, "sequencer": f"{ms:016X}"},
        },
    }


def notification(form: str, created: bool, bucket: str, key: str, ms: int, size: int = 0) -> bytes:
    """One message announcing that `key` was created (or removed), in the format `form`."""
    action = "ObjectCreated:Put" if created else "ObjectRemoved:Delete"
    if form == "aws":
        document: dict[str, object] = {"Records": [_record(action, bucket, key, ms, size)]}
    elif form == "sns":
        document = {
            "Type": "Notification",
            "MessageId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{bucket}/{key}/{action}")),
            "TopicArn": "arn:aws:sns:eu-west-1:123456789012:lake-metadata",
            "Subject": "Amazon S3 Notification",
            "Message": json.dumps({"Records": [_record(action, bucket, key, ms, size)]}),
            "Timestamp": _iso(ms),
        }
    elif form == "eventbridge":
        document = {
            "version": "0",
            "detail-type": "Object Created" if created else "Object Deleted",
            "source": "aws.s3",
            "time": _iso(ms),
            "detail": {"bucket": {"name": bucket}, "object": {"key": key, "size": size}},
        }
    elif form == "minio":
        record = _record(f"s3:{action}", bucket, key, ms, size)
        document = {"EventName": f"s3:{action}", "Key": f"{bucket}/{key}", "Records": [record]}
    else:
        raise ValueError(form)
    return json.dumps(document).encode()


TEST_EVENT = json.dumps(
    {
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": "2026-11-21T10:00:00.000Z",
        "Bucket": "fmt",
        "RequestId": "5582815E1AEA5ADF",
        "HostId": "8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE",
    }
).encode()
