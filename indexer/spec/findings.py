"""Findings: the rules a metadata file or a SQL text breaks, recorded instead of raised.

A finding is structured like sqlglot's `ParseError.errors`: a stable `code`, a severity, a readable
message naming the field and value, and the JSON path (or SQL line/column) where it applies.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken rule. `code` is stable and documented; `path` is a JSON path such as
    `$.versions[1].schema-id`, or for SQL findings `line:col`."""

    code: str
    severity: Severity
    message: str
    path: str = "$"


CODES = frozenset(
    {
        "activation-tie",
        "bad-format-version",
        "bad-table-uuid",
        "bad-view-uuid",
        "catalog-ambiguous",
        "catalog-unknown",
        "column-analysis-error",
        "commit-order-mismatch",
        "competing-commit",
        "current-schema-not-found",
        "current-not-logged-last",
        "current-snapshot-not-found",
        "current-version-not-found",
        "dialect-drift",
        "duplicate-dialect",
        "duplicate-key",
        "duplicate-version-id",
        "dynamic-identifier",
        "empty-version-log",
        "future-activation",
        "gzip-trailing-bytes",
        "invalid-field:<>",
        "invalid-mv-metadata",
        "invalid-mv-snapshot",
        "invalid-nested-type",
        "invalid-refresh-state",
        "invalid-trino-dependency",
        "invalid-trino-start-time",
        "legacy-key:<>",
        "location-mismatch",
        "location-moved",
        "log-not-monotonic",
        "log-rewritten",
        "log-version-expired",
        "missing-field:<>",
        "missing-table-uuid",
        "missing-view-uuid",
        "mv-current-refresh-not-found",
        "no-representations",
        "no-versions",
        "normalization-twin",
        "path-read",
        "ref-snapshot-not-found",
        "reads-itself",
        "removal-before-commit",
        "rest-envelope",
        "schema-not-found",
        "sql-analysis-error",
        "sql-parse-error",
        "sql-too-long",
        "table-function",
        "table-name-shared",
        "timestamp-out-of-range",
        "unknown-dialect",
        "unknown-representation-type",
        "version-conflict",
        "version-gap",
    }
)
"""Every code a finding can have (`<>`: the field it names, as in `invalid-field:refs`), so that a
misspelt one asked for is an error rather than no findings. A test reads the code for every
`Finding(...)` and checks this list against it, and the README's."""


def known_code(code: str) -> bool:
    """Whether findings can have `code` (`invalid-field:refs`, or its pattern `invalid-field`)."""
    head, colon, _ = code.partition(":")
    return code in CODES or (f"{head}:<>" in CODES and (bool(colon) or head == code))
