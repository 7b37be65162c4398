"""Table metadata (Iceberg table spec v1-v3) -> `ParsedTable`: a pure function of the loaded
document, its location and the configuration, like view metadata in `metadata.py`.

Snapshots are what a table's files repeat (every file lists the snapshots not yet expired), so a
snapshot whose hash the caller already knows is identified, not validated again.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.parse.locations import CatalogName, catalog_name
from viewlineage.indexer.parse.materialized_view import RecordedRefresh, table_refreshes
from viewlineage.indexer.spec import rules
from viewlineage.indexer.spec.elements import (
    ParsedSchema,
    content_hash,
    elements,
    parse_schemas,
    validated,
    validated_header,
)
from viewlineage.indexer.spec.findings import Finding, Severity
from viewlineage.indexer.spec.table import (
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotReference,
    TableMetadataHeader,
)

MAIN_BRANCH = "main"


@dataclass(frozen=True, slots=True)
class ParsedSnapshot:
    snapshot_id: int
    snapshot_hash: str
    """Digest of (table id, snapshot object): equal hashes mean equal content."""
    parent_snapshot_id: int | None
    sequence_number: int | None
    timestamp_ms: int
    summary: dict[str, str]
    schema_id: int | None
    manifest_list: str | None
    first_row_id: int | None
    added_rows: int | None

    @property
    def operation(self) -> str | None:
        return self.summary.get("operation")


@dataclass(frozen=True, slots=True)
class KnownSnapshot:
    """A snapshot whose content (by hash) the caller already parsed: its identity only."""

    snapshot_id: int
    snapshot_hash: str


@dataclass(frozen=True, slots=True)
class ParsedRef:
    name: str
    type: str
    snapshot_id: int
    min_snapshots_to_keep: int | None
    max_snapshot_age_ms: int | None
    max_ref_age_ms: int | None


@dataclass(frozen=True, slots=True)
class ParsedTable:
    table_id: str
    """The table-uuid (lower-case), `bad-uuid:<as written>` for one that is no UUID, or
    `loc:<location>` when the document has none (`rules.identity`)."""
    table_uuid: str | None
    table_location: str | None
    format_version: int | None
    last_sequence_number: int | None
    last_updated_ms: int | None
    last_column_id: int | None
    current_schema_id: int | None
    current_schema_hash: str | None
    current_snapshot_id: int | None
    """None when the table has no current snapshot (absent, null or -1)."""
    properties: dict[str, str]
    schema_hashes: dict[int, str]
    """schema-id -> hash of every valid schema the file lists."""
    schemas: tuple[ParsedSchema, ...]
    """The schemas parsed here (known ones are left out: their rows exist)."""
    snapshots: tuple[ParsedSnapshot | KnownSnapshot, ...]
    refs: tuple[ParsedRef, ...]
    """Named refs; a `main` branch at the current snapshot when the file names none (v1)."""
    snapshot_log: tuple[SnapshotLogEntry, ...]
    metadata_log: tuple[MetadataLogEntry, ...]
    refreshes: tuple[RecordedRefresh, ...]
    """Materialized-view refreshes it records as a storage table: format 1 in its properties,
    formats 2 and 3 in the summaries of the snapshots parsed here."""
    current_refresh_hash: str | None
    """Format 1: the refresh its properties name current."""
    name: CatalogName | None


def parse_table(
    document: dict[str, Any], location: str, config: ParseConfig, known: Container[str]
) -> tuple[ParsedTable, list[Finding]]:
    findings: list[Finding] = []
    header = validated_header(TableMetadataHeader, document, findings)
    version = header.format_version
    findings.extend(rules.check_table_format_version(version))
    findings.extend(rules.check_table_required(document, version))
    findings.extend(rules.check_table_uuid(header.table_uuid, version))
    table_uuid = header.table_uuid.strip().lower() if header.table_uuid else None
    table_id = rules.identity(header.table_uuid, header.location)

    raw_schemas = elements(document, "schemas", findings)
    path = "$.schemas"
    if not raw_schemas and isinstance(document.get("schema"), dict):  # v1: one schema
        raw_schemas, path = [{"schema-id": 0, **document["schema"]}], "$.schema"
    schema_hashes, schemas = parse_schemas(raw_schemas, path, known, findings)
    current_schema_id = header.current_schema_id
    if current_schema_id is None and len(schema_hashes) == 1:
        current_schema_id = next(iter(schema_hashes))
    findings.extend(rules.check_current_schema_exists(current_schema_id, set(schema_hashes)))

    snapshots, summaries = _snapshots(elements(document, "snapshots", findings), table_id, known, findings)
    snapshot_ids = {snapshot.snapshot_id for snapshot in snapshots}
    current = header.current_snapshot_id if header.current_snapshot_id not in (None, -1) else None
    findings.extend(rules.check_current_snapshot_exists(current, snapshot_ids))
    refs = _refs(document.get("refs"), current, findings)
    findings.extend(rules.check_refs_resolve([(ref.name, ref.snapshot_id) for ref in refs], snapshot_ids))
    snapshot_log = [
        logged
        for ordinal, element in enumerate(elements(document, "snapshot-log", findings))
        if (logged := validated(SnapshotLogEntry, element, f"$.snapshot-log[{ordinal}]", findings))
    ]
    metadata_log = [
        replaced
        for ordinal, element in enumerate(elements(document, "metadata-log", findings))
        if (replaced := validated(MetadataLogEntry, element, f"$.metadata-log[{ordinal}]", findings))
    ]
    refreshes, current_refresh = table_refreshes(table_id, header.properties, summaries, findings)
    catalog = config.catalog_for(location)
    table = ParsedTable(
        table_id=table_id,
        table_uuid=table_uuid,
        table_location=header.location,
        format_version=version,
        last_sequence_number=header.last_sequence_number,
        last_updated_ms=header.last_updated_ms,
        last_column_id=header.last_column_id,
        current_schema_id=current_schema_id,
        current_schema_hash=schema_hashes.get(current_schema_id) if current_schema_id is not None else None,
        current_snapshot_id=current,
        properties=dict(header.properties),
        schema_hashes=schema_hashes,
        schemas=tuple(schemas),
        snapshots=tuple(snapshots),
        refs=tuple(refs),
        snapshot_log=tuple(snapshot_log),
        metadata_log=tuple(metadata_log),
        refreshes=tuple(refreshes),
        current_refresh_hash=current_refresh,
        name=catalog_name(location, catalog.prefix, catalog.catalog) if catalog else None,
    )
    return table, findings


def _snapshots(
    raw: list[Any], table_id: str, known: Container[str], findings: list[Finding]
) -> tuple[list[ParsedSnapshot | KnownSnapshot], list[tuple[int, int, dict[str, str], str]]]:
    """The snapshots, and (id, timestamp-ms, summary, JSON path) of those parsed here."""
    snapshots: list[ParsedSnapshot | KnownSnapshot] = []
    summaries: list[tuple[int, int, dict[str, str], str]] = []
    for ordinal, element in enumerate(raw):
        snapshot_hash = content_hash([table_id, element])
        if snapshot_hash in known:  # parsed before: a valid long snapshot-id
            snapshots.append(KnownSnapshot(element["snapshot-id"], snapshot_hash))
            continue
        path = f"$.snapshots[{ordinal}]"
        snapshot = validated(Snapshot, element, path, findings)
        if snapshot is None:
            continue
        summaries.append((snapshot.snapshot_id, snapshot.timestamp_ms, snapshot.summary, path))
        snapshots.append(
            ParsedSnapshot(
                snapshot_id=snapshot.snapshot_id,
                snapshot_hash=snapshot_hash,
                parent_snapshot_id=snapshot.parent_snapshot_id,
                sequence_number=snapshot.sequence_number,
                timestamp_ms=snapshot.timestamp_ms,
                summary=dict(snapshot.summary),
                schema_id=snapshot.schema_id,
                manifest_list=snapshot.manifest_list,
                first_row_id=snapshot.first_row_id,
                added_rows=snapshot.added_rows,
            )
        )
    return snapshots, summaries


def _refs(raw: Any, current: int | None, findings: list[Finding]) -> list[ParsedRef]:
    if raw is not None and not isinstance(raw, dict):
        findings.append(Finding("invalid-field:refs", Severity.ERROR, "'refs' is not an object", "$.refs"))
        raw = None
    refs = []
    for name, element in sorted((raw or {}).items()):
        ref = validated(SnapshotReference, element, f"$.refs.{name}", findings)
        if ref is not None:
            refs.append(
                ParsedRef(
                    name,
                    ref.type,
                    ref.snapshot_id,
                    ref.min_snapshots_to_keep,
                    ref.max_snapshot_age_ms,
                    ref.max_ref_age_ms,
                )
            )
    if current is not None and not any(ref.name == MAIN_BRANCH for ref in refs):
        # The spec's rule for readers: with no `main` ref, the current snapshot is main's head.
        refs.append(ParsedRef(MAIN_BRANCH, "branch", current, None, None, None))
    return sorted(refs, key=lambda ref: ref.name)
