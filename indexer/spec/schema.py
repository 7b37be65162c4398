"""Schemas as the view and table specs both define them
(https://iceberg.apache.org/spec/#schemas-and-data-types): a struct of nested fields."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from viewlineage.indexer.spec.base import IcebergModel, Int


class NestedField(IcebergModel):
    id: Int
    """Unique field ID within the schema"""
    name: str
    """Field name"""
    type: str | dict[str, Any]
    """Primitive type name, or a nested struct/list/map type object"""
    required: bool
    """Whether the field is required"""
    doc: str | None = None
    """Optional field documentation"""


class Schema(IcebergModel):
    type: str = "struct"
    """Always `struct`"""
    schema_id: Int = Field(alias="schema-id")
    """ID of the schema, referenced by view versions"""
    identifier_field_ids: list[Int] | None = Field(default=None, alias="identifier-field-ids")
    """Optional identifier fields"""
    fields: list[NestedField]
    """The schema's columns"""
