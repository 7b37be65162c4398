"""Pydantic models of Iceberg table metadata, format-versions 1 to 3, as far as an indexer reads
them (https://iceberg.apache.org/spec/#table-metadata): identity, schemas, snapshots, refs and
logs. Partition specs, sort orders and statistics stay in the stored document.

As for views (`view.py`), unknown fields are kept and lists are validated element by element in
`indexer/parse/table.py`, so one broken snapshot does not hide the others.
"""

from __future__ import annotations

from pydantic import Field

from viewlineage.indexer.spec.base import IcebergModel, Int, Long


class Snapshot(IcebergModel):
    snapshot_id: Long = Field(alias="snapshot-id")
    """A unique long ID"""
    parent_snapshot_id: Long | None = Field(default=None, alias="parent-snapshot-id")
    """The snapshot ID of the snapshot's parent; omitted for any snapshot with no parent"""
    sequence_number: Long | None = Field(default=None, alias="sequence-number")
    """A monotonically increasing long that tracks the order of changes to a table (v2+)"""
    timestamp_ms: Long = Field(alias="timestamp-ms")
    """A timestamp when the snapshot was created, used for garbage collection and table inspection"""
    manifest_list: str | None = Field(default=None, alias="manifest-list")
    """The location of a manifest list for this snapshot (v1 may list `manifests` instead)"""
    summary: dict[str, str] = Field(default_factory=dict)
    """A string map summarizing the snapshot changes, including `operation` (optional in v1)"""
    schema_id: Int | None = Field(default=None, alias="schema-id")
    """ID of the table's current schema when the snapshot was created"""
    first_row_id: Long | None = Field(default=None, alias="first-row-id")
    """The first `_row_id` assigned to the first row in the first data file (v3)"""
    added_rows: Long | None = Field(default=None, alias="added-rows")
    """The upper bound of the number of rows with assigned row IDs (v3)"""


class SnapshotReference(IcebergModel):
    snapshot_id: Long = Field(alias="snapshot-id")
    """A reference's snapshot ID. The tagged snapshot or latest snapshot of a branch."""
    type: str
    """Type of the reference, `tag` or `branch`"""
    min_snapshots_to_keep: Int | None = Field(default=None, alias="min-snapshots-to-keep")
    """For `branch` type only, a positive number for the minimum number of snapshots to keep"""
    max_snapshot_age_ms: Long | None = Field(default=None, alias="max-snapshot-age-ms")
    """For `branch` type only, a positive number for the max age of snapshots to keep"""
    max_ref_age_ms: Long | None = Field(default=None, alias="max-ref-age-ms")
    """For snapshot references except the `main` branch, the max age of the reference"""


class SnapshotLogEntry(IcebergModel):
    timestamp_ms: Long = Field(alias="timestamp-ms")
    """When the table's current snapshot changed"""
    snapshot_id: Long = Field(alias="snapshot-id")
    """The snapshot made current"""


class MetadataLogEntry(IcebergModel):
    timestamp_ms: Long = Field(alias="timestamp-ms")
    """When the previous metadata file was replaced"""
    metadata_file: str = Field(alias="metadata-file")
    """The previous metadata file's location"""


class TableMetadataHeader(IcebergModel):
    """The top-level scalar fields of table metadata. Lists and maps of objects are validated
    element by element."""

    format_version: Int | None = Field(default=None, alias="format-version")
    """An integer version number for the format: 1, 2 or 3"""
    table_uuid: str | None = Field(default=None, alias="table-uuid")
    """A UUID that identifies the table (optional in v1)"""
    location: str | None = None
    """The table's base location"""
    last_sequence_number: Long | None = Field(default=None, alias="last-sequence-number")
    """The table's highest assigned sequence number (v2+)"""
    last_updated_ms: Long | None = Field(default=None, alias="last-updated-ms")
    """Timestamp in milliseconds from the unix epoch when the table was last updated"""
    last_column_id: Int | None = Field(default=None, alias="last-column-id")
    """The highest assigned column ID for the table"""
    current_schema_id: Int | None = Field(default=None, alias="current-schema-id")
    """ID of the table's current schema (v1 may have only `schema`)"""
    current_snapshot_id: Long | None = Field(default=None, alias="current-snapshot-id")
    """ID of the current table snapshot; -1 or absent when there is none"""
    properties: dict[str, str] = Field(default_factory=dict)
    """A string to string map of table properties"""
