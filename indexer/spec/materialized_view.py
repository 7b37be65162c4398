"""Pydantic models of the materialized-view formats an indexer meets, one class per object of
each proposal, in the proposal's order. None is a released spec, so the models keep unknown
fields and `indexer/parse/materialized_view.py` reports what breaks them as findings.

1. The original proposal (view property and storage-table property `materialized_view_metadata`).
2. The Iceberg MV spec draft, apache/iceberg PR #11041 (`storage-table` on view versions,
   `refresh-state` in the storage table's snapshot summary).
3. Trino's storage tables (snapshot summary `dependsOnTables`, ...): plain strings, no model.
4. PrestoDB's view properties `presto.materialized_view.*`: plain strings, no model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from viewlineage.indexer.spec.base import IcebergModel, Int, Long

# Format 1: the original proposal.


class MaterializedViewMetadata(IcebergModel):
    """The view property `materialized_view_metadata`, a JSON object."""

    storage_table_location: str = Field(alias="storage-table-location")
    """Location of the storage table's metadata (its table location)"""
    allow_stale_data: bool | None = Field(default=None, alias="allow-stale-data")
    """Whether readers may read a stale storage table (reported, not enforced)"""
    refresh_strategy: str | None = Field(default=None, alias="refresh-strategy")
    """`full` or `incremental`"""


class _BaseTable(IcebergModel):
    identifier: str
    """Catalog identifier of the base table: [catalog.]namespace.table"""
    snapshot_reference: Long = Field(alias="snapshot-reference")
    """The base table's snapshot id (a Delta table's version) the refresh read"""


class IcebergMetastoreTable(_BaseTable):
    type: Literal["iceberg-metastore"]
    properties: dict[str, str] = Field(default_factory=dict)


class IcebergFilesystemTable(_BaseTable):
    type: Literal["iceberg-filesystem"]
    location: str
    """The base table's location"""
    properties: dict[str, str] = Field(default_factory=dict)


class DeltaFilesystemTable(_BaseTable):
    type: Literal["deltalake-filesystem"]
    location: str


BaseTable = Annotated[
    IcebergMetastoreTable | IcebergFilesystemTable | DeltaFilesystemTable, Field(discriminator="type")
]


def _id_text(value: object) -> object:
    """The draft leaves a refresh id's type open and writers write numbers: an integer id is its
    decimal text, so that ids compare whatever their spelling."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


RefreshId = Annotated[str, BeforeValidator(_id_text)]


class Refresh(IcebergModel):
    refresh_id: RefreshId = Field(alias="refresh-id")
    version_id: Int = Field(alias="version-id")
    """The view version the refresh materialized"""
    base_tables: list[BaseTable] = Field(alias="base-tables")
    sequence_number: Long | None = Field(default=None, alias="sequence-number")


class StorageTableMetadata(IcebergModel):
    """The storage table's property `materialized_view_metadata`, a JSON object."""

    refreshes: list[Refresh]
    current_refresh_id: RefreshId | None = Field(default=None, alias="current-refresh-id")


# Format 2: the Iceberg MV spec draft (PR #11041).


class StorageTableIdentifier(IcebergModel):
    """A view version's `storage-table`."""

    catalog: str | None = None
    namespace: list[str]
    name: str


class _SourceState(IcebergModel):
    name: str
    namespace: list[str]
    catalog: str | None = None
    uuid: str


class TableSourceState(_SourceState):
    type: Literal["table"]
    snapshot_id: Long = Field(alias="snapshot-id")
    ref: str | None = None
    """The branch or tag read; `main` when absent"""


class ViewSourceState(_SourceState):
    type: Literal["view"]
    version_id: Int = Field(alias="version-id")


SourceState = Annotated[TableSourceState | ViewSourceState, Field(discriminator="type")]


class RefreshState(IcebergModel):
    """The storage table's snapshot summary `refresh-state`, a JSON-encoded string."""

    view_version_id: Int = Field(alias="view-version-id")
    refresh_start_timestamp_ms: Long = Field(alias="refresh-start-timestamp-ms")
    source_states: list[SourceState] = Field(alias="source-states")
