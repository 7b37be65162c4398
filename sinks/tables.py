"""The store's tables as Arrow: each one's schema, key and parent tables.

Column order and types follow `sinks/migrations`; whoever builds rows (`indexer/pipeline/rows.py`,
the backfill engines) builds them to these schemas, and the sinks insert each table with one
statement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

_STRINGS = pa.list_(pa.string())
_MAP = pa.map_(pa.string(), pa.string())
_COLUMN = pa.struct(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("type", pa.string()),
        ("required", pa.bool_()),
        ("doc", pa.string()),
    ]
)
_TS = pa.timestamp("us", tz="UTC")
_READ = pa.struct(
    [
        ("catalog", pa.string()),
        ("namespace", _STRINGS),
        ("name", pa.string()),
        ("suffix", pa.string()),
        ("pin", pa.string()),
        ("catalog_unknown", pa.bool_()),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "raw_documents": pa.schema(
        [("content_hash", pa.string()), ("document", pa.binary()), ("document_bytes", pa.int64())]
    ),
    "files": pa.schema(
        [
            ("location", pa.string()),
            ("content_hash", pa.string()),
            ("kind", pa.string()),
            ("stored_bytes", pa.int64()),
            ("gzip", pa.bool_()),
            ("sequence_number", pa.int64()),
            ("modified_ms", pa.int64()),
            ("modified_source", pa.string()),
            ("ingested_at", _TS),
        ]
    ),
    "quarantine": pa.schema(
        [
            ("location", pa.string()),
            ("reason", pa.string()),
            ("message", pa.string()),
            ("stored_bytes", pa.int64()),
            ("modified_ms", pa.int64()),
            ("quarantined_at", _TS),
        ]
    ),
    "removals": pa.schema([("location", pa.string()), ("removed_ms", pa.int64()), ("source", pa.string())]),
    "view_files": pa.schema(
        [
            ("location", pa.string()),
            ("view_id", pa.string()),
            ("view_uuid", pa.string()),
            ("catalog", pa.string()),
            ("name", _STRINGS),
            ("metadata_location", pa.string()),
            ("format_version", pa.int32()),
            ("current_version_id", pa.int32()),
            ("properties", _MAP),
            ("sequence_number", pa.int64()),
            ("commit_ms", pa.int64()),
            ("commit_source", pa.string()),
            ("last_log_ms", pa.int64()),
            ("last_log_version_id", pa.int32()),
        ]
    ),
    "table_files": pa.schema(
        [
            ("location", pa.string()),
            ("table_id", pa.string()),
            ("table_uuid", pa.string()),
            ("catalog", pa.string()),
            ("name", _STRINGS),
            ("table_location", pa.string()),
            ("format_version", pa.int32()),
            ("last_sequence_number", pa.int64()),
            ("last_updated_ms", pa.int64()),
            ("last_column_id", pa.int32()),
            ("current_schema_id", pa.int32()),
            ("current_schema_hash", pa.string()),
            ("current_snapshot_id", pa.int64()),
            ("properties", _MAP),
            ("sequence_number", pa.int64()),
            ("commit_ms", pa.int64()),
            ("commit_source", pa.string()),
            ("current_refresh_hash", pa.string()),
        ]
    ),
    "table_names": pa.schema([("table_id", pa.string()), ("catalog", pa.string()), ("name", _STRINGS)]),
    "table_schemas": pa.schema(
        [("table_id", pa.string()), ("schema_id", pa.int32()), ("schema_hash", pa.string())]
    ),
    "snapshots": pa.schema(
        [
            ("snapshot_hash", pa.string()),
            ("table_id", pa.string()),
            ("snapshot_id", pa.int64()),
            ("parent_snapshot_id", pa.int64()),
            ("sequence_number", pa.int64()),
            ("timestamp_ms", pa.int64()),
            ("operation", pa.string()),
            ("summary", _MAP),
            ("schema_id", pa.int32()),
            ("manifest_list", pa.string()),
            ("first_row_id", pa.int64()),
            ("added_rows", pa.int64()),
        ]
    ),
    "snapshot_log": pa.schema(
        [("table_id", pa.string()), ("snapshot_id", pa.int64()), ("timestamp_ms", pa.int64())]
    ),
    "metadata_log": pa.schema(
        [("table_id", pa.string()), ("metadata_file", pa.string()), ("timestamp_ms", pa.int64())]
    ),
    "table_refs": pa.schema(
        [
            ("location", pa.string()),
            ("name", pa.string()),
            ("type", pa.string()),
            ("snapshot_id", pa.int64()),
            ("min_snapshots_to_keep", pa.int32()),
            ("max_snapshot_age_ms", pa.int64()),
            ("max_ref_age_ms", pa.int64()),
        ]
    ),
    # Before `versions`: a version's reads are derived from its lineage rows as it is stored, and
    # a table-by-table load goes in this order.
    "lineage": pa.schema(
        [
            ("lineage_key", pa.string()),
            ("rules_version", pa.int32()),
            ("dialect", pa.string()),
            ("computed_at", _TS),
            ("reads", pa.list_(_READ)),
        ]
    ),
    "versions": pa.schema(
        [
            ("version_hash", pa.string()),
            ("view_id", pa.string()),
            ("version_id", pa.int32()),
            ("timestamp_ms", pa.int64()),
            ("schema_id", pa.int32()),
            ("schema_hash", pa.string()),
            ("default_catalog", pa.string()),
            ("default_namespace", _STRINGS),
            ("summary", _MAP),
            ("engine_name", pa.string()),
            ("engine_version", pa.string()),
        ]
    ),
    "file_versions": pa.schema(
        [
            ("location", pa.string()),
            ("ordinal", pa.int32()),
            ("version_id", pa.int32()),
            ("version_hash", pa.string()),
        ]
    ),
    "version_log": pa.schema(
        [
            ("location", pa.string()),
            ("ordinal", pa.int32()),
            ("view_id", pa.string()),
            ("version_id", pa.int32()),
            ("timestamp_ms", pa.int64()),
        ]
    ),
    "activations": pa.schema(
        [("view_id", pa.string()), ("version_id", pa.int32()), ("timestamp_ms", pa.int64())]
    ),
    "view_names": pa.schema([("view_id", pa.string()), ("catalog", pa.string()), ("name", _STRINGS)]),
    "schemas": pa.schema(
        [("schema_hash", pa.string()), ("schema_id", pa.int32()), ("columns", pa.list_(_COLUMN))]
    ),
    "schema_fields": pa.schema(
        [
            ("schema_hash", pa.string()),
            ("field_id", pa.int32()),
            ("parent_id", pa.int32()),
            ("path", _STRINGS),
            ("type", pa.string()),
            ("required", pa.bool_()),
            ("doc", pa.string()),
        ]
    ),
    "version_storage_tables": pa.schema(
        [
            ("version_hash", pa.string()),
            ("catalog", pa.string()),
            ("namespace", _STRINGS),
            ("name", pa.string()),
        ]
    ),
    "mv_definitions": pa.schema(
        [
            ("location", pa.string()),
            ("format", pa.string()),
            ("storage_table_location", pa.string()),
            ("allow_stale_data", pa.bool_()),
            ("refresh_strategy", pa.string()),
            ("refresh_hash", pa.string()),
            ("document", pa.string()),
        ]
    ),
    "mv_refreshes": pa.schema(
        [
            ("refresh_hash", pa.string()),
            ("format", pa.string()),
            ("owner_id", pa.string()),
            ("refresh_id", pa.string()),
            ("snapshot_id", pa.int64()),
            ("view_version_id", pa.int32()),
            ("sequence_number", pa.int64()),
            ("refreshed_ms", pa.int64()),
            ("unknown_reason", pa.string()),
            ("document", pa.string()),
        ]
    ),
    "mv_refresh_sources": pa.schema(
        [
            ("refresh_hash", pa.string()),
            ("ordinal", pa.int32()),
            ("kind", pa.string()),
            ("identifier", pa.string()),
            ("catalog", pa.string()),
            ("namespace", _STRINGS),
            ("name", pa.string()),
            ("uuid", pa.string()),
            ("location", pa.string()),
            ("snapshot_id", pa.int64()),
            ("ref", pa.string()),
            ("view_version_id", pa.int32()),
            ("delta_version", pa.int64()),
            ("properties", _MAP),
        ]
    ),
    "representations": pa.schema(
        [
            ("version_hash", pa.string()),
            ("ordinal", pa.int32()),
            ("type", pa.string()),
            ("dialect_raw", pa.string()),
            ("dialect", pa.string()),
            ("sql", pa.string()),
            ("document", pa.string()),
            ("lineage_key", pa.string()),
        ]
    ),
    "table_references": pa.schema(
        [
            ("lineage_key", pa.string()),
            ("ordinal", pa.int32()),
            ("catalog", pa.string()),
            ("namespace", _STRINGS),
            ("name", pa.string()),
            ("suffix", pa.string()),
            ("pin", pa.string()),
            ("catalog_source", pa.string()),
            ("raw", pa.string()),
        ]
    ),
    "lineage_findings": pa.schema(
        [
            ("lineage_key", pa.string()),
            ("ordinal", pa.int32()),
            ("code", pa.string()),
            ("severity", pa.string()),
            ("message", pa.string()),
            ("position", pa.string()),
        ]
    ),
    "file_findings": pa.schema(
        [
            ("location", pa.string()),
            ("ordinal", pa.int32()),
            ("code", pa.string()),
            ("severity", pa.string()),
            ("message", pa.string()),
            ("path", pa.string()),
        ]
    ),
}
"""Arrow schema of every store table, in insertion order (parents before children)."""

PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "raw_documents": ("content_hash",),
    "files": ("location",),
    "quarantine": ("location",),
    "removals": ("location", "removed_ms", "source"),
    "view_files": ("location",),
    "table_files": ("location",),
    "versions": ("version_hash",),
    "file_versions": ("location", "ordinal"),
    "version_log": ("location", "ordinal"),
    "activations": ("view_id", "version_id", "timestamp_ms"),
    "view_names": ("view_id", "catalog", "name"),
    "schemas": ("schema_hash",),
    "schema_fields": ("schema_hash", "field_id"),
    "table_names": ("table_id", "catalog", "name"),
    "table_schemas": ("table_id", "schema_id", "schema_hash"),
    "snapshots": ("snapshot_hash",),
    "snapshot_log": ("table_id", "snapshot_id", "timestamp_ms"),
    "metadata_log": ("table_id", "metadata_file", "timestamp_ms"),
    "table_refs": ("location", "name"),
    "version_storage_tables": ("version_hash",),
    "mv_definitions": ("location", "format"),
    "mv_refreshes": ("refresh_hash",),
    "mv_refresh_sources": ("refresh_hash", "ordinal"),
    "representations": ("version_hash", "ordinal"),
    "lineage": ("lineage_key",),
    "table_references": ("lineage_key", "ordinal"),
    "lineage_findings": ("lineage_key", "ordinal"),
    "file_findings": ("location", "ordinal"),
}
"""Each table's key. Parent tables enforce theirs (a test compares them with a migrated store);
child tables' keys are unique by construction (see `CHILDREN`), `DEDUPLICATED` ones by insert."""

CHILDREN: dict[str, tuple[tuple[str, ...], str]] = {
    "file_versions": (("view_files",), "location"),
    "version_log": (("view_files",), "location"),
    "file_findings": (("view_files", "table_files"), "location"),
    "representations": (("versions",), "version_hash"),
    "table_references": (("lineage",), "lineage_key"),
    "lineage_findings": (("lineage",), "lineage_key"),
    "schema_fields": (("schemas",), "schema_hash"),
    "table_refs": (("table_files",), "location"),
    "version_storage_tables": (("versions",), "version_hash"),
    "mv_definitions": (("view_files",), "location"),
    "mv_refresh_sources": (("mv_refreshes",), "refresh_hash"),
}
"""Child table -> (its parent tables, the column naming the parent). A child row is inserted only
with a parent row that is new, in the same transaction, so it needs no enforced key."""

DEDUPLICATED = ("activations", "view_names", "table_names", "table_schemas", "snapshot_log", "metadata_log")
"""Tables of rows that many files repeat (log entries, names): each distinct row is
stored once, checked against the stored rows on insert rather than by an enforced key."""

SOURCE_TABLES = ("raw_documents", "files", "quarantine", "removals")
DERIVED_TABLES = tuple(name for name in SCHEMAS if name not in SOURCE_TABLES)


FILE_COLUMN = "_file"
"""Beside the store's columns, a batch's tables may carry the location of the file each row came
from (null for rows that files share, such as lineage's): the store then inserts a batch that
fails file by file, and quarantines the file that fails alone. It is never stored."""
FILE_COLUMN_TYPE = pa.dictionary(pa.int32(), pa.string())


def without_file_column(tables: Mapping[str, pa.Table]) -> dict[str, pa.Table]:
    """The tables as the store holds them (dropping a column copies no data)."""
    return {
        name: table.drop_columns([FILE_COLUMN]) if FILE_COLUMN in table.column_names else table
        for name, table in tables.items()
    }


BACK = "_back"
"""Not a store table: the locations of a batch's files that are back after their removal (deleted
and put back, moved out and in), whose removals go when it is stored (`Store.write_tables`)."""
BACK_SCHEMA = pa.schema([pa.field("location", pa.string(), nullable=False)])


def successive(parts: Sequence[Mapping[str, pa.Table]]) -> dict[str, pa.Table]:
    """`concatenated` for parts built one after the other, stored in one transaction (which takes
    a batch's removals before its files back): a removal that a later part brings the file back
    from (`BACK`) is dropped, and so is a file back that a later part removes again."""
    back: set[str] = set()
    removed: set[str] = set()
    ordered: list[Mapping[str, pa.Table]] = []
    for part in reversed(parts):
        kept = dict(part)
        for name, later in (("removals", back), (BACK, removed)):
            if name in part and later:
                table = part[name]
                kept[name] = table.filter(
                    pc.invert(pc.is_in(table["location"], pa.array(sorted(later), pa.string())))
                )
        if "removals" in part:
            removed.update(part["removals"]["location"].to_pylist())
        if BACK in part:
            back.update(part[BACK]["location"].to_pylist())
        ordered.append(kept)
    return concatenated(ordered[::-1])


def concatenated(parts: Sequence[Mapping[str, pa.Table]]) -> dict[str, pa.Table]:
    """Each store table's rows from every part, in `SCHEMAS` order (raises `pa.ArrowException` when
    a table's schemas differ between parts)."""
    names = [name for name in (*SCHEMAS, BACK) if any(name in part for part in parts)]
    return {name: pa.concat_tables([part[name] for part in parts if name in part]) for name in names}
