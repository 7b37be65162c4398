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
