"""Parsed files and lineage results -> one Arrow table per store table.

Column order and types are the store's (`sinks/tables.py`); the sink inserts each table with one
statement.
Rows are built column-wise in plain lists, the cheapest way to feed `pa.table`.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa

from viewlineage.indexer.lineage.tables import LINEAGE_RULES_VERSION, Lineage, LineageRequest
from viewlineage.indexer.parse.materialized_view import RecordedRefresh
from viewlineage.indexer.parse.metadata import KnownVersion, ParsedFile
from viewlineage.indexer.parse.table import KnownSnapshot, ParsedTable
from viewlineage.indexer.pipeline.collector import collector_paused
from viewlineage.indexer.sources.read import FileRead
from viewlineage.indexer.spec.elements import ParsedSchema
from viewlineage.sinks.tables import BACK, BACK_SCHEMA, FILE_COLUMN, FILE_COLUMN_TYPE, SCHEMAS


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """A file that parsed, with the read facts the store keeps."""

    read: FileRead
    parsed: ParsedFile
    lineage_keys: Mapping[tuple[str, int], str]
    """(version_hash, representation ordinal) -> lineage key, for SQL in a known dialect."""


@dataclass(frozen=True, slots=True)
class QuarantinedFile:
    location: str
    reason: str
    message: str
    stored_bytes: int | None
    modified_ms: int | None

    def __post_init__(self) -> None:
        # A message is read by people: one event of 100,000 invalid records made one of 16 MB.
        if len(self.message) > MAX_MESSAGE_CHARS:
            more = len(self.message) - MAX_MESSAGE_CHARS
            object.__setattr__(
                self, "message", f"{self.message[:MAX_MESSAGE_CHARS]}… ({more:,} more characters)"
            )


MAX_MESSAGE_CHARS = 2_000
"""The longest quarantine message kept."""


@dataclass(frozen=True, slots=True)
class Removal:
    """A file that went away, and who reported it."""

    location: str
    removed_ms: int
    source: str


@dataclass(slots=True)
class Batch:
    """What one store transaction takes: files, quarantined files, removals, new lineage results."""

    indexed: list[IndexedFile] = field(default_factory=list)
    quarantined: list[QuarantinedFile] = field(default_factory=list)
    removals: list[Removal] = field(default_factory=list)
    back: list[str] = field(default_factory=list)
    """Locations of its files that are back after their removal: their removals go (`BACK`)."""
    lineage: dict[str, Lineage] = field(default_factory=dict)
    lineage_requests: dict[str, LineageRequest] = field(default_factory=dict)
    """Lineage the files need and nobody computed yet (bulk engines compute it job-wide)."""
    include_source: bool = True
    """False when re-deriving from stored documents (`reindex`): source rows already exist."""
    deferred: list[FileRead] = field(default_factory=list)
    """Files left unparsed for a later batch: this one reached its decompressed bytes."""

    def __len__(self) -> int:
        return len(self.indexed) + len(self.quarantined) + len(self.removals)

    def to_arrow(self, now: datetime | None = None) -> dict[str, pa.Table]:
        """The batch's rows as one Arrow table per store table. Should one file's rows fail to build
        or convert, each file is converted on its own, and those that fail alone move from `indexed`
        to `quarantined` (`internal-error`): one file never fails the others."""
        now = now or datetime.now(UTC)
        with collector_paused():
            try:
                return self._tables(now)
            except Exception:  # a bug or a value no validation foresaw; isolated below
                self._quarantine_unconvertible(now)
                return self._tables(now)

    def _quarantine_unconvertible(self, now: datetime) -> None:
        kept = []
        for item in self.indexed:
            try:
                Batch([item], include_source=self.include_source)._tables(now)
            except Exception as exc:  # as in `Indexer.parse`: this file's alone
                message = f"rows: {type(exc).__name__}: {str(exc)[:200]}"
                self.quarantined.append(
                    QuarantinedFile(
                        item.read.location,
                        "internal-error",
                        message,
                        len(item.read.data),
                        item.read.modified_ms,
                    )
                )
            else:
                kept.append(item)
        self.indexed = kept

    def _tables(self, now: datetime) -> dict[str, pa.Table]:
        rows: dict[str, list[tuple[object, ...]]] = {name: [] for name in SCHEMAS}
        owners = _Owners(rows)
        for item in self.indexed:
            _add_file(rows, item, now, self.include_source)
            owners.took(item.read.location)
        for q in self.quarantined:
            rows["quarantine"].append((q.location, q.reason, q.message, q.stored_bytes, q.modified_ms, now))
            owners.took(q.location)
        for r in self.removals:
            rows["removals"].append((r.location, r.removed_ms, r.source))
            owners.took(r.location)
        for key, lineage in sorted(self.lineage.items()):
            _add_lineage(rows, key, lineage, now)
        tables = {
            name: _table(name, table_rows).append_column(FILE_COLUMN, owners.column(name))
            for name, table_rows in rows.items()
            if table_rows
        }
        if self.back:
            tables[BACK] = pa.table({"location": self.back}, schema=BACK_SCHEMA)
        return tables


class _Owners:
    """Which file each row of a batch's tables came from (`FILE_COLUMN`). A file's rows are
    appended together, so each file owns a run of every table; rows after the last run (lineage)
    are shared."""

    def __init__(self, rows: dict[str, list[tuple[object, ...]]]) -> None:
        self.rows = rows
        self.locations: list[str] = []
        self.ends: dict[str, list[int]] = {name: [] for name in rows}

    def took(self, location: str) -> None:
        self.locations.append(location)
        for name, table_rows in self.rows.items():
            self.ends[name].append(len(table_rows))

    def column(self, name: str) -> pa.DictionaryArray:
        indices: list[int | None] = []
        start = 0
        for owner, end in enumerate(self.ends[name]):
            indices += [owner] * (end - start)
            start = end
        indices += [None] * (len(self.rows[name]) - start)
        return pa.DictionaryArray.from_arrays(
            pa.array(indices, FILE_COLUMN_TYPE.index_type), pa.array(self.locations, pa.string())
        )


def _table(name: str, rows: list[tuple[object, ...]]) -> pa.Table:
    schema = SCHEMAS[name]
    columns = list(zip(*rows, strict=True))
    return pa.table(
        [pa.array(column, type=f.type) for column, f in zip(columns, schema, strict=True)], schema=schema
    )


def commit_time(
    modified_ms: int | None, modified_source: str | None, document_ms: int | None, document_source: str
) -> tuple[int | None, str | None]:
    """A file's commit time: its object time, never earlier than the newest time its document
    records (a view's newest log entry, a table's last-updated-ms)."""
    if modified_ms is None or (document_ms is not None and document_ms > modified_ms):
        return document_ms, document_source if document_ms is not None else None
    return modified_ms, modified_source


def _add_file(
    rows: dict[str, list[tuple[object, ...]]], item: IndexedFile, now: datetime, include_source: bool
) -> None:
    read, parsed = item.read, item.parsed
    location = parsed.location
    if include_source:
        # Undecompressed, the bytes read are the document.
        stored = read.data if parsed.gzip else gzip.compress(read.data, compresslevel=1, mtime=0)
        rows["raw_documents"].append((parsed.content_hash, stored, parsed.document_bytes))
        rows["files"].append(
            (
                location,
                parsed.content_hash,
                parsed.kind,
                len(read.data),
                parsed.gzip,
                parsed.sequence_number,
                read.modified_ms,
                read.modified_source,
                now,
            )
        )
    for ordinal, f in enumerate(parsed.findings):
        rows["file_findings"].append((location, ordinal, f.code, str(f.severity), f.message, f.path))
    if parsed.table is not None:
        _add_table(rows, location, read, parsed.sequence_number, parsed.table)
        return
    view = parsed.view
    assert view is not None
    last_log = max(view.log, key=lambda e: e.timestamp_ms, default=None)
    last_log_ms = last_log.timestamp_ms if last_log else None
    commit_ms, commit_source = commit_time(read.modified_ms, read.modified_source, last_log_ms, "version-log")
    catalog, name = (view.name.catalog, list(view.name.parts)) if view.name else (None, None)
    rows["view_names"].append((view.view_id, catalog, name))
    rows["view_files"].append(
        (
            location,
            view.view_id,
            view.view_uuid,
            catalog,
            name,
            view.metadata_location,
            view.format_version,
            view.current_version_id,
            list(view.properties.items()),
            parsed.sequence_number,
            commit_ms,
            commit_source,
            last_log_ms,
            last_log.version_id if last_log else None,
        )
    )
    _add_schemas(rows, view.schemas)
    if view.mv_definition is not None:
        d = view.mv_definition
        rows["mv_definitions"].append(
            (
                location,
                d.format,
                d.storage_table_location,
                d.allow_stale_data,
                d.refresh_strategy,
                d.refresh_hash,
                d.document,
            )
        )
    if view.mv_refresh is not None:
        _add_refresh(rows, view.mv_refresh)
    for ordinal, version in enumerate(view.versions):
        rows["file_versions"].append((location, ordinal, version.version_id, version.version_hash))
        if isinstance(version, KnownVersion):  # its rows were written with an earlier file
            continue
        rows["versions"].append(
            (
                version.version_hash,
                view.view_id,
                version.version_id,
                version.timestamp_ms,
                version.schema_id,
                version.schema_hash,
                version.default_catalog,
                list(version.default_namespace),
                list(version.summary.items()),
                version.engine_name,
                version.engine_version,
            )
        )
        for rep in version.representations:
            rows["representations"].append(
                (
                    version.version_hash,
                    rep.ordinal,
                    rep.type,
                    rep.dialect_raw,
                    rep.dialect,
                    rep.sql,
                    rep.document,
                    item.lineage_keys.get((version.version_hash, rep.ordinal)),
                )
            )
        if version.storage_table is not None:
            st = version.storage_table
            rows["version_storage_tables"].append(
                (version.version_hash, st.catalog, list(st.namespace), st.name)
            )
    for ordinal, entry in enumerate(view.log):
        rows["version_log"].append((location, ordinal, view.view_id, entry.version_id, entry.timestamp_ms))
        rows["activations"].append((view.view_id, entry.version_id, entry.timestamp_ms))
    if view.implied_activation is not None:
        activation = view.implied_activation
        rows["activations"].append((view.view_id, activation.version_id, activation.timestamp_ms))


def _add_schemas(rows: dict[str, list[tuple[object, ...]]], schemas: Iterable[ParsedSchema]) -> None:
    for schema in schemas:
        rows["schemas"].append((schema.schema_hash, schema.schema_id, list(schema.fields)))
        for f in schema.nested:
            rows["schema_fields"].append(
                (schema.schema_hash, f.field_id, f.parent_id, list(f.path), f.type, f.required, f.doc)
            )


def _add_table(
    rows: dict[str, list[tuple[object, ...]]],
    location: str,
    read: FileRead,
    sequence_number: int | None,
    table: ParsedTable,
) -> None:
    commit_ms, commit_source = commit_time(
        read.modified_ms, read.modified_source, table.last_updated_ms, "last-updated-ms"
    )
    catalog, name = (table.name.catalog, list(table.name.parts)) if table.name else (None, None)
    rows["table_names"].append((table.table_id, catalog, name))
    rows["table_files"].append(
        (
            location,
            table.table_id,
            table.table_uuid,
            catalog,
            name,
            table.table_location,
            table.format_version,
            table.last_sequence_number,
            table.last_updated_ms,
            table.last_column_id,
            table.current_schema_id,
            table.current_schema_hash,
            table.current_snapshot_id,
            list(table.properties.items()),
            sequence_number,
            commit_ms,
            commit_source,
            table.current_refresh_hash,
        )
    )
    _add_schemas(rows, table.schemas)
    for schema_id, schema_hash in table.schema_hashes.items():
        rows["table_schemas"].append((table.table_id, schema_id, schema_hash))
    for snapshot in table.snapshots:
        if isinstance(snapshot, KnownSnapshot):  # its row was written with an earlier file
            continue
        rows["snapshots"].append(
            (
                snapshot.snapshot_hash,
                table.table_id,
                snapshot.snapshot_id,
                snapshot.parent_snapshot_id,
                snapshot.sequence_number,
                snapshot.timestamp_ms,
                snapshot.operation,
                list(snapshot.summary.items()),
                snapshot.schema_id,
                snapshot.manifest_list,
                snapshot.first_row_id,
                snapshot.added_rows,
            )
        )
    for entry in table.snapshot_log:
        rows["snapshot_log"].append((table.table_id, entry.snapshot_id, entry.timestamp_ms))
    for replaced in table.metadata_log:
        rows["metadata_log"].append((table.table_id, replaced.metadata_file, replaced.timestamp_ms))
    for ref in table.refs:
        rows["table_refs"].append(
            (
                location,
                ref.name,
                ref.type,
                ref.snapshot_id,
                ref.min_snapshots_to_keep,
                ref.max_snapshot_age_ms,
                ref.max_ref_age_ms,
            )
        )
    for refresh in table.refreshes:
        _add_refresh(rows, refresh)


def _add_refresh(rows: dict[str, list[tuple[object, ...]]], refresh: RecordedRefresh) -> None:
    rows["mv_refreshes"].append(
        (
            refresh.refresh_hash,
            refresh.format,
            refresh.owner_id,
            refresh.refresh_id,
            refresh.snapshot_id,
            refresh.view_version_id,
            refresh.sequence_number,
            refresh.refreshed_ms,
            refresh.unknown_reason,
            refresh.document,
        )
    )
    for ordinal, source in enumerate(refresh.sources):
        rows["mv_refresh_sources"].append(
            (
                refresh.refresh_hash,
                ordinal,
                source.kind,
                source.identifier,
                source.catalog,
                list(source.namespace),
                source.name,
                source.uuid,
                source.location,
                source.snapshot_id,
                source.ref,
                source.view_version_id,
                source.delta_version,
                list(source.properties.items()),
            )
        )


def _read_order(
    read: tuple[str | None, tuple[str, ...], str, str | None, str | None, bool],
) -> tuple[object, ...]:
    """The order migration 0011 stores reads in: by every field, NULLs first."""
    catalog, namespace, name, suffix, pin, unknown = read
    return (catalog is not None, catalog or "", namespace, name, suffix is not None, suffix or "",
            pin is not None, pin or "", unknown)  # fmt: skip


def _add_lineage(
    rows: dict[str, list[tuple[object, ...]]], key: str, lineage: Lineage, now: datetime
) -> None:
    distinct = {
        (ref.catalog, ref.namespace, ref.name, ref.suffix, ref.pin, ref.catalog_source == "unknown")
        for ref in lineage.references
    }
    reads = [
        {"catalog": c, "namespace": list(ns), "name": n, "suffix": s, "pin": p, "catalog_unknown": u}
        for c, ns, n, s, p, u in sorted(distinct, key=_read_order)
    ]
    rows["lineage"].append((key, LINEAGE_RULES_VERSION, lineage.dialect, now, reads))
    for ordinal, ref in enumerate(lineage.references):
        rows["table_references"].append(
            (
                key,
                ordinal,
                ref.catalog,
                list(ref.namespace),
                ref.name,
                ref.suffix,
                ref.pin,
                ref.catalog_source,
                ref.raw,
            )
        )
    for ordinal, f in enumerate(lineage.findings):
        rows["lineage_findings"].append((key, ordinal, f.code, str(f.severity), f.message, f.path))
