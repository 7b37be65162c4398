"""One function per rule a view or table metadata document can break; each returns findings and
never raises.

The function's subject names the rule; the finding code is the stable name users filter on.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from viewlineage.indexer.spec.findings import Finding, Severity
from viewlineage.indexer.spec.view import ViewHistoryEntry

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
LEGACY_SUMMARY_KEYS = ("operation", "engineVersion")


def identity(uuid: str | None, location: str | None) -> str:
    """The id a view or table is stored under: its uuid (lower-case); `bad-uuid:<as written>` for
    one that is no UUID (so that it can never pass for another's id, `loc:...` included); or
    `loc:<location>` when it has none."""
    uuid = uuid.strip() if uuid else None
    if not uuid:
        return f"loc:{location}"
    return uuid.lower() if _UUID.match(uuid) else f"bad-uuid:{uuid}"


def check_view_uuid(view_uuid: str | None) -> list[Finding]:
    if view_uuid is None:
        return [
            Finding("missing-view-uuid", Severity.ERROR, "view-uuid is missing; indexed by location", "$")
        ]
    if not _UUID.match(view_uuid):
        return [
            Finding("bad-view-uuid", Severity.ERROR, f"view-uuid {view_uuid!r} is not a UUID", "$.view-uuid")
        ]
    return []


def check_format_version(format_version: Any) -> list[Finding]:
    if format_version is None or format_version == 1:
        return []
    return [
        Finding(
            "bad-format-version",
            Severity.ERROR,
            f"format-version {format_version!r} is not 1",
            "$.format-version",
        )
    ]


def check_current_version_exists(current_version_id: int | None, version_ids: list[int]) -> list[Finding]:
    if current_version_id is None or current_version_id in version_ids:
        return []
    return [
        Finding(
            "current-version-not-found",
            Severity.ERROR,
            f"current-version-id {current_version_id} is not among versions {sorted(version_ids)}",
            "$.current-version-id",
        )
    ]


def check_version_ids_unique(versions: list[tuple[int, str]]) -> list[Finding]:
    """`duplicate-version-id` for each version id listed more than once ((id, content hash) pairs in
    the file's order). Java's Iceberg refuses such a file; the copy listed last is indexed."""
    counts = Counter(version_id for version_id, _ in versions)
    findings = []
    for version_id, count in counts.items():
        if count < 2:
            continue
        contents = {digest for listed, digest in versions if listed == version_id}
        same = (
            "the same content"
            if len(contents) == 1
            else f"{len(contents)} different contents: the one listed last is used"
        )
        findings.append(
            Finding(
                "duplicate-version-id",
                Severity.WARNING,
                f"version-id {version_id} is listed {count} times, with {same}",
                "$.versions",
            )
        )
    return findings


def check_versions_present(version_count: int) -> list[Finding]:
    if version_count:
        return []
    return [Finding("no-versions", Severity.ERROR, "the document holds no valid version", "$.versions")]


def check_schema_exists(schema_id: int, schema_ids: set[int], path: str) -> list[Finding]:
    if schema_id in schema_ids:
        return []
    return [
        Finding(
            "schema-not-found",
            Severity.ERROR,
            f"schema-id {schema_id} is not among schemas {sorted(schema_ids)}",
            path,
        )
    ]


def check_representations(dialects: list[str | None], types: list[str], path: str) -> list[Finding]:
    """`no-representations`, `unknown-representation-type` and `duplicate-dialect` for one version.
    `dialects` holds each SQL representation's canonical dialect (None when unknown)."""
    findings = []
    if not types:
        findings.append(
            Finding("no-representations", Severity.INFO, "the version has no representation", path)
        )
    for ordinal, kind in enumerate(types):
        if kind != "sql":
            findings.append(
                Finding(
                    "unknown-representation-type",
                    Severity.WARNING,
                    f"representation type {kind!r} is not 'sql'; kept, no lineage",
                    f"{path}[{ordinal}].type",
                )
            )
    for dialect, count in Counter(d for d in dialects if d is not None).items():
        if count > 1:
            findings.append(
                Finding(
                    "duplicate-dialect",
                    Severity.WARNING,
                    f"{count} representations for dialect {dialect!r}; lineage is their union",
                    path,
                )
            )
    return findings


def check_legacy_summary_keys(summary: dict[str, str], path: str) -> list[Finding]:
    return [
        Finding(f"legacy-key:{key}", Severity.INFO, f"summary uses the pre-spec key {key!r}", f"{path}.{key}")
        for key in LEGACY_SUMMARY_KEYS
        if key in summary
    ]


def check_log_monotonic(log: list[ViewHistoryEntry]) -> list[Finding]:
    for ordinal in range(1, len(log)):
        if log[ordinal].timestamp_ms < log[ordinal - 1].timestamp_ms:
            return [
                Finding(
                    "log-not-monotonic",
                    Severity.WARNING,
                    f"version-log timestamp {log[ordinal].timestamp_ms} is earlier than the entry "
                    f"before it ({log[ordinal - 1].timestamp_ms})",
                    f"$.version-log[{ordinal}].timestamp-ms",
                )
            ]
    return []


def check_log_current(
    log: list[ViewHistoryEntry], current_version_id: int | None, version_ids: set[int]
) -> list[Finding]:
    """Where the version-log leaves open which version is current: an empty log, and a
    current-version-id that is not the version the log made current last (answers follow the log,
    which dates each); of versions logged at its last instant, it says which is current. Two
    versions made current at one instant that no file settles so are the store's finding
    `activation-tie`. A current version the file does not hold is another finding
    (`current-version-not-found`)."""
    if current_version_id not in version_ids:
        return []
    if not log:
        return [
            Finding(
                "empty-version-log",
                Severity.WARNING,
                f"the version-log is empty: version {current_version_id} (current-version-id) is taken "
                "as current from its timestamp-ms, the only time the file gives",
                "$.version-log",
            )
        ]
    last = max(log, key=lambda entry: (entry.timestamp_ms, entry.version_id))
    if any(e.version_id == current_version_id and e.timestamp_ms == last.timestamp_ms for e in log):
        return []  # of versions logged at one instant, the file names which is current
    return [
        Finding(
            "current-not-logged-last",
            Severity.WARNING,
            f"current-version-id {current_version_id} is not the version the log made current last "
            f"({last.version_id}, at {last.timestamp_ms}); answers follow the log, which dates each",
            "$.current-version-id",
        )
    ]


def check_log_versions_present(log: list[ViewHistoryEntry], version_ids: set[int]) -> list[Finding]:
    return [
        Finding(
            "log-version-expired",
            Severity.INFO,
            f"version-log names version {entry.version_id}, which this file no longer holds",
            f"$.version-log[{ordinal}].version-id",
        )
        for ordinal, entry in enumerate(log)
        if entry.version_id not in version_ids
    ]


# Table metadata (table spec v1-v3).

TABLE_FORMAT_VERSIONS = (1, 2, 3)
_TABLE_REQUIRED = {
    1: ("format-version", "location", "last-updated-ms", "last-column-id"),
    2: (
        "format-version",
        "table-uuid",
        "location",
        "last-sequence-number",
        "last-updated-ms",
        "last-column-id",
        "schemas",
        "current-schema-id",
    ),
}


def check_table_format_version(format_version: Any) -> list[Finding]:
    if format_version in TABLE_FORMAT_VERSIONS:
        return []
    return [
        Finding(
            "bad-format-version",
            Severity.ERROR,
            f"table format-version {format_version!r} is not one of {list(TABLE_FORMAT_VERSIONS)}",
            "$.format-version",
        )
    ]


def check_table_required(document: dict[str, Any], format_version: Any) -> list[Finding]:
    """The top-level fields the table spec requires at this format version (v3 adds none)."""
    required = _TABLE_REQUIRED[1 if format_version == 1 else 2]
    return [
        Finding(f"missing-field:{key}", Severity.ERROR, f"required field {key!r} is missing", "$")
        for key in required
        if document.get(key) is None
    ]


def check_table_uuid(table_uuid: str | None, format_version: Any) -> list[Finding]:
    if table_uuid is None:
        # Optional in v1 (the missing-field finding covers v2+): the table is indexed by location.
        return (
            [Finding("missing-table-uuid", Severity.INFO, "table-uuid is absent; indexed by location", "$")]
            if format_version == 1
            else []
        )
    if not _UUID.match(table_uuid):
        return [
            Finding(
                "bad-table-uuid", Severity.ERROR, f"table-uuid {table_uuid!r} is not a UUID", "$.table-uuid"
            )
        ]
    return []


def check_current_schema_exists(schema_id: int | None, schema_ids: set[int]) -> list[Finding]:
    if schema_id is None or schema_id in schema_ids:
        return []
    return [
        Finding(
            "current-schema-not-found",
            Severity.ERROR,
            f"current-schema-id {schema_id} is not among schemas {sorted(schema_ids)}",
            "$.current-schema-id",
        )
    ]


def check_current_snapshot_exists(snapshot_id: int | None, snapshot_ids: set[int]) -> list[Finding]:
    if snapshot_id is None or snapshot_id in snapshot_ids:
        return []
    return [
        Finding(
            "current-snapshot-not-found",
            Severity.ERROR,
            f"current-snapshot-id {snapshot_id} is not among the file's snapshots",
            "$.current-snapshot-id",
        )
    ]


def check_refs_resolve(refs: list[tuple[str, int]], snapshot_ids: set[int]) -> list[Finding]:
    return [
        Finding(
            "ref-snapshot-not-found",
            Severity.ERROR,
            f"ref {name!r} points at snapshot {snapshot_id}, which is not among the file's snapshots",
            f"$.refs.{name}",
        )
        for name, snapshot_id in refs
        if snapshot_id not in snapshot_ids
    ]
