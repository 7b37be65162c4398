"""Validating a metadata document piece by piece: fields and list elements one at a time, so one
broken element becomes a finding and the rest is indexed; content hashes; schemas (shared by the
view and table specs) with every nested field flattened.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import re
from collections.abc import Container
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from viewlineage.indexer.errors import QuarantineError
from viewlineage.indexer.spec.base import INT_RANGE
from viewlineage.indexer.spec.findings import Finding, Severity
from viewlineage.indexer.spec.schema import NestedField, Schema

ModelT = TypeVar("ModelT", bound=BaseModel)


def digest(data: bytes | bytearray) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def canonical_bytes(value: Any) -> bytes:
    """A JSON value with sorted keys, UTF-8: the one spelling that hashes and stored documents use.
    orjson writes nothing nested deeper than 255 levels, though it reads up to 1,024: deeper values
    go through the standard library, and one deeper than that can write raises `QuarantineError`
    (`too-deep`)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        except RecursionError:
            raise QuarantineError("nested deeper than a document can be written", reason="too-deep") from None


def canonical_json(value: Any) -> str:
    return canonical_bytes(value).decode()


def content_hash(value: Any) -> str:
    """Digest of a JSON value, independent of key order."""
    return digest(canonical_bytes(value))


def validation_findings(exc: ValidationError, prefix: str) -> list[Finding]:
    findings = []
    for error in exc.errors(include_url=False):
        path = prefix + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
        names = [part for part in error["loc"] if isinstance(part, str)]
        name = names[-1] if names else prefix.rsplit(".", 1)[-1]
        if error["type"] == "missing":
            findings.append(
                Finding(f"missing-field:{name}", Severity.ERROR, f"required field {name!r} is missing", path)
            )
        else:
            findings.append(
                Finding(
                    f"invalid-field:{name}",
                    Severity.ERROR,
                    f"{name!r}: {error['msg']} (got {error.get('input')!r:.80})",
                    path,
                )
            )
    return findings


@functools.cache
def _aliases(model: type[BaseModel]) -> tuple[str, ...]:
    """A model's field names as documents spell them (computed once per model: parsing is hot)."""
    return tuple(info.alias or name for name, info in model.model_fields.items())


def validated_header(model: type[ModelT], document: dict[str, Any], findings: list[Finding]) -> ModelT:
    """The top-level scalar fields of `document` as `model`; broken fields become findings and are
    left out (the model gives every field a default)."""
    fields = {key: document[key] for key in _aliases(model) if key in document}
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        findings.extend(validation_findings(exc, "$"))
        broken = {error["loc"][0] for error in exc.errors()}
        return model.model_validate({key: value for key, value in fields.items() if key not in broken})


def elements(document: dict[str, Any], key: str, findings: list[Finding]) -> list[Any]:
    value = document.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        findings.append(Finding(f"invalid-field:{key}", Severity.ERROR, f"{key!r} is not a list", f"$.{key}"))
        return []
    return value


PRUNING_ROUNDS = 3
"""Validations of an element after its broken parts were left out: a part's removal can leave its
container broken (a field without its id), which the next round leaves out in turn."""


def validated(model: type[ModelT], element: Any, path: str, findings: list[Finding]) -> ModelT | None:
    """`element` as `model`. A value past its type is left out with its finding, and so is the
    smallest list item it leaves incomplete (a schema field without a valid id), so the element
    keeps everything else: a summary entry, a field's doc, one field. None, with findings, when
    the element itself lacks what identifies it (the caller skips it)."""
    try:
        return model.model_validate(element)
    except ValidationError as exc:
        findings.extend(validation_findings(exc, path))
        errors = exc.errors()
    pruned = copy.deepcopy(element)
    for _ in range(PRUNING_ROUNDS):
        if not _prune(pruned, errors):
            return None
        try:
            return model.model_validate(pruned)
        except ValidationError as exc:
            errors = exc.errors()
    return None


def _prune(element: Any, errors: list[Any]) -> bool:
    """Leave out of `element` what each error names: the value (or map entry), or for a missing one
    the innermost list item holding it; later list items first, so indexes hold. False when that
    would be the element itself."""
    targets = set()
    for error in errors:
        parts = tuple(part for part in error["loc"] if part != "[key]")
        if error["type"] == "missing":
            items = [i for i, part in enumerate(parts[:-1]) if isinstance(part, int)]
            if not items:
                return False
            parts = parts[: items[-1] + 1]
        if not parts:
            return False
        targets.add(parts)
    for parts in sorted(targets, key=lambda path: [(isinstance(p, str), p) for p in path], reverse=True):
        container = element
        with contextlib.suppress(KeyError, IndexError, TypeError):  # gone with an earlier target
            for part in parts[:-1]:
                container = container[part]
            del container[parts[-1]]
    return True


@dataclass(frozen=True, slots=True)
class SchemaField:
    """One field at any depth: struct fields, list elements, map keys and values."""

    field_id: int
    parent_id: int | None
    path: tuple[str, ...]
    """Names from the top-level column down; list elements are `element`, maps `key` and `value`."""
    type: str
    """A primitive type name, or `struct`, `list`, `map`."""
    required: bool
    doc: str | None


@dataclass(frozen=True, slots=True)
class ParsedSchema:
    schema_id: int
    schema_hash: str
    fields: tuple[dict[str, Any], ...]
    """Top-level columns: id, name, type (nested types as JSON text), required, doc."""
    nested: tuple[SchemaField, ...]
    """Every field at every depth, parents before children."""


def flatten(fields: list[NestedField]) -> list[SchemaField]:
    flat: list[SchemaField] = []
    for column in fields:
        _flatten_field(flat, column.id, None, (column.name,), column.type, column.required, column.doc)
    return flat


def _flatten_field(
    flat: list[SchemaField],
    field_id: int,
    parent: int | None,
    path: tuple[str, ...],
    kind: Any,
    required: bool,
    doc: str | None,
) -> None:
    """Append a field and its descendants. A module function, not a closure: a recursive closure
    is a reference cycle, left for the cyclic collector with everything it holds."""
    _check_nested(field_id, path[-1], required, doc)
    if not isinstance(kind, dict):
        _check_primitive(kind)
        flat.append(SchemaField(field_id, parent, path, str(kind), required, doc))
        return
    name = str(kind.get("type"))
    flat.append(SchemaField(field_id, parent, path, name, required, doc))
    if name == "struct":
        for child in kind.get("fields", []):
            _flatten_field(
                flat, child["id"], field_id, (*path, child["name"]), child["type"], child["required"],
                child.get("doc"),
            )  # fmt: skip
    elif name == "list":
        _flatten_field(
            flat, kind["element-id"], field_id, (*path, "element"), kind["element"],
            kind["element-required"], None,
        )  # fmt: skip
    elif name == "map":
        _flatten_field(flat, kind["key-id"], field_id, (*path, "key"), kind["key"], True, None)
        _flatten_field(
            flat, kind["value-id"], field_id, (*path, "value"), kind["value"], kind["value-required"], None
        )


def _check_nested(field_id: Any, name: Any, required: Any, doc: Any) -> None:
    """A nested field's values as the spec types them (top-level columns are validated by `Schema`):
    raises `TypeError` naming the first that is not."""
    if type(field_id) is not int or not INT_RANGE[0] <= field_id <= INT_RANGE[1]:
        raise TypeError(f"field id {field_id!r:.40} is not an int")
    if not isinstance(name, str):
        raise TypeError(f"field name {name!r:.40} is not a string")
    if type(required) is not bool:
        raise TypeError(f"'required' {required!r:.40} is not a boolean")
    if doc is not None and not isinstance(doc, str):
        raise TypeError(f"'doc' {doc!r:.40} is not a string")


_PRIMITIVE = re.compile(
    r"boolean|int|long|float|double|date|time|timestamp(tz)?(_ns)?|string|uuid|binary|variant|unknown"
    r"|decimal\(\s*(?P<precision>\d{1,9})\s*,\s*(?P<scale>\d{1,9})\s*\)|fixed\[\s*(?P<length>\d{1,9})\s*\]"
    r"|geometry(\(.+\))?|geography(\(.+\))?"
)
"""Iceberg's primitive types (format versions 1 to 3), as its JSON spells them."""


def _check_primitive(kind: Any) -> None:
    """Raises `TypeError` unless `kind` is an Iceberg primitive type (found by the twelfth
    adversarial trial: `foo`, `decimal(99999999999999999999,2)` and `fixed[-5]` were indexed, and
    `impact` reasoned from them)."""
    # As Java's `Types.fromPrimitiveString` reads it: case-folded, spaces around (`DECIMAL(10, 2)`).
    matched = _PRIMITIVE.fullmatch(kind.strip().lower()) if isinstance(kind, str) else None
    if (
        matched is None
        or (matched["precision"] is not None and not 1 <= int(matched["precision"]) <= 38)
        or (matched["length"] is not None and int(matched["length"]) < 1)
    ):
        raise TypeError(f"type {kind!r:.60} is not an Iceberg type")


def parse_schemas(
    raw: list[Any], path: str, known: Container[str], findings: list[Finding]
) -> tuple[dict[int, str], list[ParsedSchema]]:
    """(schema-id -> hash of every valid schema, the schemas not in `known`, parsed)."""
    hashes: dict[int, str] = {}
    parsed: list[ParsedSchema] = []
    for ordinal, element in enumerate(raw):
        schema_hash = content_hash(element)
        if schema_hash in known:  # parsed without findings before: its schema-id is an int
            hashes[element["schema-id"]] = schema_hash
            continue
        where = f"{path}[{ordinal}]"
        schema = validated(Schema, element, where, findings)
        if schema is None:
            continue
        flat: list[SchemaField] = []
        for position, column in enumerate(schema.fields):
            try:
                flat += flatten([column])
            except (KeyError, TypeError) as exc:  # a type missing or mistyping a field: that column's
                problem = f"without {exc}" if isinstance(exc, KeyError) else f"with {exc}"  # fields unknown
                findings.append(
                    Finding(
                        "invalid-nested-type",
                        Severity.ERROR,
                        f"nested type {problem}",
                        f"{where}.fields[{position}]",
                    )
                )
        nested = tuple(flat)
        columns = tuple(
            {
                "id": column.id,
                "name": column.name,
                "type": column.type if isinstance(column.type, str) else canonical_json(column.type),
                "required": column.required,
                "doc": column.doc,
            }
            for column in schema.fields
        )
        hashes[schema.schema_id] = schema_hash
        parsed.append(ParsedSchema(schema.schema_id, schema_hash, columns, nested))
    return hashes, parsed
