"""Materialized views in parsed metadata -> what each refresh recorded: pure functions of a view's
or table's parsed fields, run by `metadata.py`.

A refresh names the base tables (or views) it read and the snapshot (or version) of each; which
view version it materialized where the format says. Where the format keeps it with the storage
table, the refresh belongs to that table (`owner_id` is its table id); PrestoDB keeps it in the
view's properties (`owner_id` is the view id). Broken MV metadata becomes findings, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from viewlineage.indexer.spec.base import IcebergModel, long_from_text
from viewlineage.indexer.spec.elements import canonical_json, content_hash, validation_findings
from viewlineage.indexer.spec.findings import Finding, Severity
from viewlineage.indexer.spec.materialized_view import (
    DeltaFilesystemTable,
    IcebergFilesystemTable,
    MaterializedViewMetadata,
    RefreshState,
    StorageTableIdentifier,
    StorageTableMetadata,
    TableSourceState,
    ViewSourceState,
)

MV_PROPERTY = "materialized_view_metadata"
"""Format 1: the view's and the storage table's property."""
REFRESH_STATE = "refresh-state"
"""Format 2: the storage table's snapshot summary key."""
TRINO_DEPENDS_ON_TABLES = "dependsOnTables"
TRINO_TABLE_FUNCTIONS = "dependsOnTableFunctions"
TRINO_NON_DETERMINISTIC = "dependsOnNonDeterministicFunctions"
TRINO_START_TIME = "trino-query-start-time"
PRESTO_PREFIX = "presto.materialized_view."
PRESTO_BASE_TABLES = PRESTO_PREFIX + "base_tables"
PRESTO_BASE_SNAPSHOT = PRESTO_PREFIX + "base_snapshot."

FORMAT_PROPERTIES = "mv-properties"
FORMAT_REFRESH_STATE = "refresh-state"
FORMAT_TRINO = "trino"
FORMAT_PRESTO = "presto"


@dataclass(frozen=True, slots=True)
class RecordedSource:
    """A base table or view as one refresh recorded it."""

    kind: str
    """`table` (Iceberg), `view`, `delta-table`, or `unknown`."""
    identifier: str
    """As recorded: `ns.table`, `catalog.ns.table`, ..."""
    catalog: str | None
    namespace: tuple[str, ...]
    name: str
    uuid: str | None = None
    location: str | None = None
    snapshot_id: int | None = None
    ref: str | None = None
    """The branch or tag read; None means `main`."""
    view_version_id: int | None = None
    delta_version: int | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordedRefresh:
    refresh_hash: str
    """Digest of (owner, format, what was recorded): equal hashes mean the same refresh."""
    format: str
    owner_id: str
    refresh_id: str | None
    snapshot_id: int | None
    """The storage-table snapshot whose summary recorded it (formats 2 and 3)."""
    view_version_id: int | None
    sequence_number: int | None
    refreshed_ms: int | None
    """When it ran, where the record says; otherwise the commit of the file that first holds it."""
    unknown_reason: str | None
    """Why its base tables cannot be checked at all (Trino's `UNKNOWN`, table functions)."""
    sources: tuple[RecordedSource, ...]
    document: str


@dataclass(frozen=True, slots=True)
class MVDefinition:
    """A view file's declaration that the view is materialized (formats 1 and 4)."""

    format: str
    storage_table_location: str | None
    allow_stale_data: bool | None
    refresh_strategy: str | None
    refresh_hash: str | None
    """Format 4: the refresh the view's own properties record."""
    document: str


def _refresh(
    owner_id: str,
    format: str,
    record: Any,
    sources: list[RecordedSource],
    *,
    refresh_id: str | None = None,
    snapshot_id: int | None = None,
    view_version_id: int | None = None,
    sequence_number: int | None = None,
    refreshed_ms: int | None = None,
    unknown_reason: str | None = None,
) -> RecordedRefresh:
    return RecordedRefresh(
        refresh_hash=content_hash([owner_id, format, snapshot_id, record]),
        format=format,
        owner_id=owner_id,
        refresh_id=refresh_id,
        snapshot_id=snapshot_id,
        view_version_id=view_version_id,
        sequence_number=sequence_number,
        refreshed_ms=refreshed_ms,
        unknown_reason=unknown_reason,
        sources=tuple(sources),
        document=canonical_json(record),
    )


def _dotted(identifier: str) -> tuple[tuple[str, ...], str]:
    *namespace, name = identifier.split(".")
    return tuple(namespace), name


def _loaded(text: str, model: type[Any], path: str, code: str, findings: list[Finding]) -> Any:
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        findings.append(Finding(code, Severity.ERROR, f"{model.__name__} does not validate", path))
        findings.extend(validation_findings(exc, path))
        return None


def storage_table(version: IcebergModel, path: str, findings: list[Finding]) -> StorageTableIdentifier | None:
    """Format 2: a view version's `storage-table`, kept by the version model as an unknown field."""
    raw = (version.model_extra or {}).get("storage-table")
    if raw is None:
        return None
    try:
        return StorageTableIdentifier.model_validate(raw)
    except ValidationError as exc:
        findings.extend(validation_findings(exc, f"{path}.storage-table"))
        return None


def view_materialization(
    view_id: str, properties: Mapping[str, str], findings: list[Finding]
) -> tuple[MVDefinition | None, RecordedRefresh | None]:
    """Formats 1 and 4, from a view's properties: its MV definition, and for PrestoDB the refresh."""
    if MV_PROPERTY in properties:
        text = properties[MV_PROPERTY]
        path = f"$.properties.{MV_PROPERTY}"
        metadata = _loaded(text, MaterializedViewMetadata, path, "invalid-mv-metadata", findings)
        if metadata is None:
            return None, None
        definition = MVDefinition(
            FORMAT_PROPERTIES,
            metadata.storage_table_location,
            metadata.allow_stale_data,
            metadata.refresh_strategy,
            None,
            text,
        )
        return definition, None
    presto = {key: value for key, value in properties.items() if key.startswith(PRESTO_PREFIX)}
    if not presto:
        return None, None
    refresh = _presto_refresh(view_id, presto, findings)
    return MVDefinition(
        FORMAT_PRESTO, None, None, None, refresh.refresh_hash, canonical_json(presto)
    ), refresh


def _presto_refresh(view_id: str, properties: Mapping[str, str], findings: list[Finding]) -> RecordedRefresh:
    snapshots = {
        key.removeprefix(PRESTO_BASE_SNAPSHOT): value
        for key, value in properties.items()
        if key.startswith(PRESTO_BASE_SNAPSHOT)
    }
    listed = properties.get(PRESTO_BASE_TABLES)
    names = [part.strip() for part in listed.split(",") if part.strip()] if listed else sorted(snapshots)
    sources = []
    for identifier in names:
        namespace, name = _dotted(identifier)
        snapshot = snapshots.get(identifier)
        base_snapshot = long_from_text(snapshot) if snapshot is not None else None
        if snapshot is not None and base_snapshot is None:
            findings.append(
                Finding(
                    "invalid-mv-snapshot",
                    Severity.ERROR,
                    f"base snapshot of {identifier!r} is not a snapshot id: {snapshot!r}",
                    f"$.properties.{PRESTO_BASE_SNAPSHOT}{identifier}",
                )
            )
        sources.append(RecordedSource("table", identifier, None, namespace, name, snapshot_id=base_snapshot))
    record = {key: properties[key] for key in sorted(properties)}
    return _refresh(
        view_id, FORMAT_PRESTO, record, sources, unknown_reason=None if sources else "no base tables recorded"
    )


def table_refreshes(
    table_id: str,
    properties: Mapping[str, str],
    snapshots: Iterable[tuple[int, int, Mapping[str, str], str]],
    findings: list[Finding],
) -> tuple[list[RecordedRefresh], str | None]:
    """Refreshes a storage table records: format 1 in its properties (with the hash of the current
    refresh), formats 2 and 3 in the summaries of `snapshots` (id, timestamp-ms, summary, path)."""
    refreshes: list[RecordedRefresh] = []
    current = None
    if MV_PROPERTY in properties:
        path = f"$.properties.{MV_PROPERTY}"
        metadata = _loaded(
            properties[MV_PROPERTY], StorageTableMetadata, path, "invalid-mv-metadata", findings
        )
        if metadata is not None:
            for refresh in metadata.refreshes:
                recorded = _property_refresh(table_id, refresh)
                refreshes.append(recorded)
                if refresh.refresh_id == metadata.current_refresh_id:
                    current = recorded.refresh_hash
            if metadata.current_refresh_id is not None and current is None:
                findings.append(
                    Finding(
                        "mv-current-refresh-not-found",
                        Severity.ERROR,
                        f"current-refresh-id {metadata.current_refresh_id!r} is not among the refreshes",
                        path,
                    )
                )
    for snapshot_id, timestamp_ms, summary, path in snapshots:
        if REFRESH_STATE in summary:
            state = _loaded(
                summary[REFRESH_STATE],
                RefreshState,
                f"{path}.summary.{REFRESH_STATE}",
                "invalid-refresh-state",
                findings,
            )
            if state is not None:
                refreshes.append(_refresh_state(table_id, snapshot_id, state))
        elif TRINO_DEPENDS_ON_TABLES in summary:
            refreshes.append(_trino_refresh(table_id, snapshot_id, timestamp_ms, summary, path, findings))
    return refreshes, current


def _property_refresh(table_id: str, refresh: Any) -> RecordedRefresh:
    sources = []
    for base in refresh.base_tables:
        namespace, name = _dotted(base.identifier)
        if isinstance(base, DeltaFilesystemTable):
            source = RecordedSource(
                "delta-table", base.identifier, None, namespace, name, location=base.location,
                delta_version=base.snapshot_reference,
            )  # fmt: skip
        else:
            source = RecordedSource(
                "table", base.identifier, None, namespace, name, snapshot_id=base.snapshot_reference,
                location=base.location if isinstance(base, IcebergFilesystemTable) else None,
                properties=dict(base.properties),
            )  # fmt: skip
        sources.append(source)
    return _refresh(
        table_id,
        FORMAT_PROPERTIES,
        refresh.model_dump(by_alias=True, exclude_none=True),
        sources,
        refresh_id=refresh.refresh_id,
        view_version_id=refresh.version_id,
        sequence_number=refresh.sequence_number,
    )


def _refresh_state(table_id: str, snapshot_id: int, state: RefreshState) -> RecordedRefresh:
    sources = []
    for source in state.source_states:
        table = isinstance(source, TableSourceState)
        sources.append(
            RecordedSource(
                "table" if table else "view",
                ".".join([*([source.catalog] if source.catalog else []), *source.namespace, source.name]),
                source.catalog,
                tuple(source.namespace),
                source.name,
                uuid=source.uuid.lower(),
                snapshot_id=source.snapshot_id if isinstance(source, TableSourceState) else None,
                ref=source.ref if isinstance(source, TableSourceState) else None,
                view_version_id=source.version_id if isinstance(source, ViewSourceState) else None,
            )
        )
    return _refresh(
        table_id,
        FORMAT_REFRESH_STATE,
        state.model_dump(by_alias=True, exclude_none=True),
        sources,
        snapshot_id=snapshot_id,
        view_version_id=state.view_version_id,
        refreshed_ms=state.refresh_start_timestamp_ms,
    )


def _trino_refresh(
    table_id: str,
    snapshot_id: int,
    timestamp_ms: int,
    summary: Mapping[str, str],
    path: str,
    findings: list[Finding],
) -> RecordedRefresh:
    """`dependsOnTables` is `schema.table=snapshotId,...` (tables in the MV's catalog) or `UNKNOWN`."""
    depends = summary[TRINO_DEPENDS_ON_TABLES]
    sources = []
    reasons = []
    if depends.strip().upper() == "UNKNOWN":
        reasons.append("Trino recorded its base tables as UNKNOWN")
    else:
        for entry in filter(None, (part.strip() for part in depends.split(","))):
            identifier, _, snapshot = entry.rpartition("=")
            base_snapshot = long_from_text(snapshot)
            if not identifier or base_snapshot is None:
                findings.append(
                    Finding(
                        "invalid-trino-dependency",
                        Severity.ERROR,
                        f"{TRINO_DEPENDS_ON_TABLES} entry {entry!r} is not schema.table=snapshotId",
                        f"{path}.summary.{TRINO_DEPENDS_ON_TABLES}",
                    )
                )
                reasons.append(f"unreadable {TRINO_DEPENDS_ON_TABLES} entry {entry!r}")
                continue
            namespace, name = _dotted(identifier)
            sources.append(
                RecordedSource("table", identifier, None, namespace, name, snapshot_id=base_snapshot)
            )
    if summary.get(TRINO_TABLE_FUNCTIONS, "").lower() == "true":
        reasons.append("it reads table functions")
    if summary.get(TRINO_NON_DETERMINISTIC, "").lower() == "true":
        reasons.append("it calls non-deterministic functions")
    started = summary.get(TRINO_START_TIME)
    refreshed_ms = timestamp_ms
    if started:
        try:
            refreshed_ms = int(datetime.fromisoformat(started).timestamp() * 1000)
        except ValueError:
            findings.append(
                Finding(
                    "invalid-trino-start-time",
                    Severity.WARNING,
                    f"{TRINO_START_TIME} {started!r} is not an ISO-8601 time; the snapshot's time is used",
                    f"{path}.summary.{TRINO_START_TIME}",
                )
            )
    record = {
        key: summary[key]
        for key in (TRINO_DEPENDS_ON_TABLES, TRINO_TABLE_FUNCTIONS, TRINO_NON_DETERMINISTIC, TRINO_START_TIME)
        if key in summary
    }
    return _refresh(
        table_id,
        FORMAT_TRINO,
        record,
        sources,
        snapshot_id=snapshot_id,
        refreshed_ms=refreshed_ms,
        unknown_reason="; ".join(reasons) or None,
    )
