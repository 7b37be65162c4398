"""Writing small table and view metadata files whose times a test controls: each file's mtime and
last-updated-ms (or newest log entry) is the commit time the test names."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "kind", "required": False, "type": "string"},
    ],
}


def schema_of(*columns: tuple[str, Any]) -> dict[str, Any]:
    """A schema with these (name, Iceberg type) columns, field ids in order."""
    fields = [
        {"id": i, "name": name, "required": False, "type": kind} for i, (name, kind) in enumerate(columns, 1)
    ]
    return {"type": "struct", "schema-id": 0, "fields": fields}


def struct_of(*fields: tuple[str, Any], first_id: int) -> dict[str, Any]:
    """An Iceberg struct type of these (name, type) fields, numbered from `first_id` in order."""
    members = [
        {"id": i, "name": name, "required": False, "type": kind}
        for i, (name, kind) in enumerate(fields, first_id)
    ]
    return {"type": "struct", "fields": members}


def write(path: Path, document: dict[str, Any], ms: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))
    return path


@dataclass
class _Written:
    """A table or view whose every commit writes the next metadata file under `root/<ns>/<name>`."""

    root: Path
    namespace: str
    name: str
    uuid: str
    log: list[dict[str, Any]] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    schema: dict[str, Any] = field(default_factory=lambda: SCHEMA)
    files: int = 0

    @property
    def location(self) -> str:
        return str(self.root / self.namespace / self.name)

    def _next_file(self) -> Path:
        self.files += 1
        return Path(self.location) / "metadata" / f"{self.files - 1:05d}-{self.uuid}.metadata.json"


@dataclass
class Table(_Written):
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    schemas: list[dict[str, Any]] = field(default_factory=list)
    """Every schema the table had, as Iceberg keeps them: a new `schema` gets the next schema-id."""

    @property
    def head(self) -> int | None:
        return self.log[-1]["snapshot-id"] if self.log else None

    def commit(
        self, ms: int, snapshot_id: int | None = None, operation: str = "append", **summary: str
    ) -> Path:
        """A new metadata file at `ms`: with a snapshot when `snapshot_id` is given (it becomes
        main's head), else only the current properties."""
        fields = [schema["fields"] for schema in self.schemas]
        if self.schema["fields"] not in fields:
            self.schemas.append({**self.schema, "schema-id": len(self.schemas)})
            fields.append(self.schema["fields"])
        schema_id = fields.index(self.schema["fields"])
        if snapshot_id is not None:
            snapshot = {
                "snapshot-id": snapshot_id,
                "sequence-number": len(self.snapshots) + 1,
                "timestamp-ms": ms,
                "summary": {"operation": operation, **summary},
                "manifest-list": f"{self.location}/metadata/snap-{snapshot_id}.avro",
                "schema-id": schema_id,
            }
            if self.head is not None:
                snapshot["parent-snapshot-id"] = self.head
            self.snapshots.append(snapshot)
            self.log.append({"timestamp-ms": ms, "snapshot-id": snapshot_id})
        document: dict[str, Any] = {
            "format-version": 2,
            "table-uuid": self.uuid,
            "location": self.location,
            "last-sequence-number": len(self.snapshots),
            "last-updated-ms": ms,
            "last-column-id": max((f["id"] for schema in self.schemas for f in schema["fields"]), default=0),
            "current-schema-id": schema_id,
            "schemas": list(self.schemas),
            "properties": dict(self.properties),
            "snapshots": list(self.snapshots),
            "snapshot-log": list(self.log),
        }
        if self.head is not None:
            document["current-snapshot-id"] = self.head
            document["refs"] = {"main": {"snapshot-id": self.head, "type": "branch"}}
        return write(self._next_file(), document, ms)


@dataclass
class View(_Written):
    versions: list[dict[str, Any]] = field(default_factory=list)

    def commit(self, ms: int, sql: str | None = None, **version_fields: Any) -> Path:
        """A new metadata file at `ms`: with a new current version when `sql` is given."""
        if sql is not None:
            version_id = len(self.versions) + 1
            self.versions.append(
                {
                    "version-id": version_id,
                    "schema-id": 0,
                    "timestamp-ms": ms,
                    "summary": {"engine-name": "spark"},
                    "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
                    "default-namespace": [self.namespace],
                    **version_fields,
                }
            )
            self.log.append({"timestamp-ms": ms, "version-id": version_id})
        document = {
            "view-uuid": self.uuid,
            "format-version": 1,
            "location": self.location,
            "current-version-id": self.log[-1]["version-id"],
            "properties": dict(self.properties),
            "schemas": [self.schema],
            "versions": list(self.versions),
            "version-log": list(self.log),
        }
        return write(self._next_file(), document, ms)
