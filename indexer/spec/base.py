"""The base of every spec model (the policy for spec names, values and unknown fields, set once)
and the spec's integer types."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)

Int = Annotated[int, Strict(), Field(ge=INT_RANGE[0], le=INT_RANGE[1])]
"""The spec's `int`, 32-bit signed: ids of versions, schemas and fields; format versions. A value
out of range, or a JSON string, fraction or boolean where the number goes (`"2"`, `2.0`, `true`),
is a broken field (a finding): never a value the store cannot hold, nor one the writer did not
write (Iceberg's own parser refuses them too)."""
Long = Annotated[int, Strict(), Field(ge=LONG_RANGE[0], le=LONG_RANGE[1])]
"""The spec's `long`, 64-bit signed: timestamps, snapshot ids, sequence numbers."""


class IcebergModel(BaseModel):
    """Spec names contain dashes, so every field has its spec name as alias; populate by either.
    Frozen, because parsed metadata is a value. Unknown fields are kept: writers add fields the
    spec does not (yet) name, such as the materialized-view `storage-table`."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="allow")


_DECIMAL = re.compile(r"-?[0-9]+")


def long_from_text(text: str) -> int | None:
    """A long written as text (Trino's and PrestoDB's snapshot ids live in string maps), or None
    when it is not ASCII digits with an optional minus, or out of range.

    >>> long_from_text("-42"), long_from_text("9223372036854775808"), long_from_text("\u00b2")
    (-42, None, None)
    >>> long_from_text("9" * 5_000) is None
    True
    """
    if _DECIMAL.fullmatch(text) is None or len(text.lstrip("-")) > 19:  # int() refuses 4,300 digits
        return None
    value = int(text)
    return value if LONG_RANGE[0] <= value <= LONG_RANGE[1] else None
