"""The base of every spec model: the policy for spec names, values and unknown fields, set once."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class IcebergModel(BaseModel):
    """Spec names contain dashes, so every field has its spec name as alias; populate by either.
    Frozen, because parsed metadata is a value. Unknown fields are kept: writers add fields the
    spec does not (yet) name, such as the materialized-view `storage-table`."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="allow")
