"""Pydantic models of Iceberg view metadata, format-version 1, one class per spec object in spec
order (https://iceberg.apache.org/view-spec/).

Unlike a catalog, an indexer must not refuse a document for one broken rule: unknown fields are
kept (`extra="allow"`), cross-field rules live in `rules.py` and yield findings, and
`indexer/parse/metadata.py` validates each list element on its own so that one bad version does not
hide the others.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from viewlineage.indexer.spec.base import IcebergModel, Int, Long


class SQLViewRepresentation(IcebergModel):
    type: str
    """Must be `sql`"""
    sql: str
    """A SQL SELECT statement"""
    dialect: str
    """The dialect of the `sql` SELECT statement (e.g., `trino` or `spark`)"""


class ViewVersion(IcebergModel):
    version_id: Int = Field(alias="version-id")
    """ID for the version"""
    schema_id: Int = Field(alias="schema-id")
    """ID of the schema for the view version"""
    timestamp_ms: Long = Field(alias="timestamp-ms")
    """Timestamp when the version was created (ms from epoch)"""
    summary: dict[str, str]
    """A string to string map of summary metadata about the version"""
    representations: list[dict[str, Any]]
    """A list of representations for the view definition (each validated on its own in `parse/`)"""
    default_catalog: str | None = Field(default=None, alias="default-catalog")
    """Catalog name to use when a reference in the SELECT does not contain a catalog"""
    default_namespace: list[str] = Field(alias="default-namespace")
    """Namespace to use when a reference in the SELECT is a single identifier"""


class ViewHistoryEntry(IcebergModel):
    timestamp_ms: Long = Field(alias="timestamp-ms")
    """Timestamp when the view's current-version-id was updated (ms from epoch)"""
    version_id: Int = Field(alias="version-id")
    """ID that current-version-id was set to"""


class ViewMetadataHeader(IcebergModel):
    """The top-level scalar fields of view metadata. Lists are validated element by element."""

    view_uuid: str | None = Field(default=None, alias="view-uuid")
    """A UUID that identifies the view, generated when the view is created"""
    format_version: Int | None = Field(default=None, alias="format-version")
    """An integer version number for the view format; must be 1"""
    location: str | None = None
    """The view's base location; used to create metadata file locations"""
    current_version_id: Int | None = Field(default=None, alias="current-version-id")
    """ID of the current version of the view (`version-id`)"""
    properties: dict[str, str] = Field(default_factory=dict)
    """A string to string map of view properties"""


REQUIRED_TOP_LEVEL = (
    "view-uuid",
    "format-version",
    "location",
    "schemas",
    "current-version-id",
    "versions",
    "version-log",
)
"""Top-level fields the spec requires."""
