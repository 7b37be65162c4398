"""Bytes of one metadata file -> `ParsedFile`: a pure function of (bytes, location, configuration).

Gzip is detected by content and decompressed under a size limit; the JSON is classified (view
metadata, REST envelope, table metadata, fragment) and view metadata is validated field by field,
so everything identifiable is indexed and each broken rule becomes a finding. Only what cannot be
indexed at all raises `QuarantineError` with a stable reason.
"""

from __future__ import annotations

import json
import re
import zlib
from collections import Counter
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson
from pydantic import TypeAdapter, ValidationError

from viewlineage.indexer.errors import DecompressionBomb, QuarantineError, TruncatedGzip
from viewlineage.indexer.lineage.dialects import canonical_dialect, unknown_dialect_hint
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.parse.locations import CatalogName, catalog_name, check_location, sequence_number
from viewlineage.indexer.parse.materialized_view import (
    MVDefinition,
    RecordedRefresh,
    storage_table,
    view_materialization,
)
from viewlineage.indexer.parse.table import ParsedTable, parse_table
from viewlineage.indexer.spec import rules
from viewlineage.indexer.spec.elements import (
    ParsedSchema,
    canonical_json,
    content_hash,
    digest,
    elements,
    parse_schemas,
    validated,
    validated_header,
    validation_findings,
)
from viewlineage.indexer.spec.findings import Finding, Severity
from viewlineage.indexer.spec.materialized_view import StorageTableIdentifier
from viewlineage.indexer.spec.view import (
    REQUIRED_TOP_LEVEL,
    SQLViewRepresentation,
    ViewHistoryEntry,
    ViewMetadataHeader,
    ViewVersion,
)

GZIP_MAGIC = b"\x1f\x8b"
INFLATE_PIECE = 1 << 20
GZIP_MEMBERS_LIMIT = 1_000
"""Concatenated gzip members one file may hold: writers write one; 200,000 empty ones took 10 s."""
_VIEW_KEYS = frozenset({"view-uuid", "versions", "version-log", "current-version-id"})
_LOG = TypeAdapter(list[ViewHistoryEntry])


@dataclass(frozen=True, slots=True)
class ParsedRepresentation:
    ordinal: int
    type: str
    dialect_raw: str | None
    dialect: str | None
    """Canonical sqlglot dialect, None when unknown or not a SQL representation."""
    sql: str | None
    document: str
    """The representation as JSON, for types this indexer does not know; without its SQL text when
    `sql` holds it, so that a large text is kept once."""
    analysable: bool = True
    """False when the SQL is longer than `max_sql_length`: stored, its lineage not analysed."""


@dataclass(frozen=True, slots=True)
class KnownVersion:
    """A version whose content (by hash) the caller already parsed clean: its identity only."""

    version_id: int
    version_hash: str


@dataclass(frozen=True, slots=True)
class ParsedVersion:
    version_id: int
    version_hash: str
    """Digest of the version object and its schema: equal hashes mean equal content."""
    clean: bool
    """No finding concerns it, so its content (its hash) parses the same in any file."""
    timestamp_ms: int
    schema_id: int
    schema_hash: str | None
    default_catalog: str | None
    default_namespace: tuple[str, ...]
    summary: dict[str, str]
    representations: tuple[ParsedRepresentation, ...]
    storage_table: StorageTableIdentifier | None
    """Materialized-view format 2: the table holding the version's data."""

    @property
    def engine_name(self) -> str | None:
        return self.summary.get("engine-name")

    @property
    def engine_version(self) -> str | None:
        return self.summary.get("engine-version", self.summary.get("engineVersion"))


@dataclass(frozen=True, slots=True)
class ParsedView:
    view_id: str
    """The view-uuid (lower-case), `bad-uuid:<as written>` for one that is no UUID, or
    `loc:<location>` when the document has none (`rules.identity`)."""
    view_uuid: str | None
    format_version: int | None
    metadata_location: str | None
    current_version_id: int | None
    properties: dict[str, str]
    schemas: tuple[ParsedSchema, ...]
    """The schemas parsed here (known ones are left out: their rows exist)."""
    versions: tuple[ParsedVersion | KnownVersion, ...]
    log: tuple[ViewHistoryEntry, ...]
    name: CatalogName | None
    mv_definition: MVDefinition | None
    """Materialized-view formats 1 and 4, from the properties."""
    mv_refresh: RecordedRefresh | None
    """Format 4 (PrestoDB): the refresh the properties record."""
    implied_activation: ViewHistoryEntry | None = None
    """An empty version-log's stand-in: the current version, made current at its timestamp-ms."""


@dataclass(frozen=True, slots=True)
class ParsedFile:
    location: str
    content_hash: str
    """Digest of the decompressed document: equal hashes mean equal files."""
    document_bytes: int
    """Size of the decompressed JSON. The document itself is not kept: the store keeps the file's
    bytes as read (gzip-compressed), and one more copy of a large document is what bounds memory."""
    gzip: bool
    sequence_number: int | None
    view: ParsedView | None = None
    table: ParsedTable | None = None
    findings: tuple[Finding, ...] = field(default=())

    @property
    def kind(self) -> str:
        return "view" if self.view is not None else "table"


class Decompressed(NamedTuple):
    document: bytes | bytearray
    gzip: bool
    ignored_bytes: int
    """Bytes after the last gzip member that are neither another member nor zero padding."""


def decompress(raw: bytes, max_bytes: int) -> Decompressed:
    """Gunzip `raw` if it starts with the gzip magic, never producing more than `max_bytes`.

    The output grows in place, a piece at a time: zlib's own output buffer joins its blocks at
    the end, which holds a large document twice."""
    if not raw.startswith(GZIP_MAGIC):
        if len(raw) > max_bytes:
            raise DecompressionBomb(f"document of {len(raw)} bytes is over the {max_bytes}-byte limit")
        return Decompressed(raw, False, 0)
    document = bytearray()
    members = 0
    data = raw
    while data:
        if members == GZIP_MEMBERS_LIMIT:
            raise QuarantineError(
                f"more than {GZIP_MEMBERS_LIMIT} concatenated gzip members", reason="too-many-gzip-members"
            )
        members += 1
        inflater = zlib.decompressobj(wbits=31)
        while not inflater.eof:
            try:
                piece = inflater.decompress(data, min(INFLATE_PIECE, max_bytes - len(document) + 1))
            except zlib.error as exc:
                raise TruncatedGzip(f"corrupt gzip stream: {exc}") from exc
            document += piece
            if len(document) > max_bytes:
                raise DecompressionBomb(f"gzip stream inflates past the {max_bytes}-byte limit")
            data = inflater.unconsumed_tail
            if not piece and not data:  # input used up, and no more output pending
                break
        if not inflater.eof:
            raise TruncatedGzip(f"gzip stream ends early after {len(document)} decompressed bytes")
        # Concatenated gzip members are one stream (RFC 1952 2.2); trailing zeros are padding, and
        # anything else after a member is ignored, as Java's GZIPInputStream ignores it.
        data = inflater.unused_data
        if not data.startswith(GZIP_MAGIC):
            return Decompressed(document, True, len(data.rstrip(b"\0")) and len(data))
    return Decompressed(document, True, 0)


def parse_metadata(
    raw: bytes, location: str, config: ParseConfig, known: Container[str] = frozenset()
) -> ParsedFile:
    """Parse one metadata file found at `location` (already normalised).

    `known` holds hashes of schemas and clean versions the caller has parsed before: those are
    identified by hash and not validated again (`KnownVersion`; their schemas are left out), which
    is most of the work in a file that repeats the last versions of its view.

    Raises `QuarantineError` (reasons: `truncated-gzip`, `over-decompressed-limit`,
    `too-many-values`, `not-json`, `not-object`, `not-metadata`, `no-identity`) for what cannot be
    indexed.
    """
    document, was_gzip, ignored_bytes = decompress(raw, config.max_decompressed_bytes)
    # A UTF-8 byte-order mark: JSON parsers may ignore one (RFC 8259, 8.1), and Java's readers do.
    document = document.removeprefix(b"\xef\xbb\xbf")
    values = document.count(b",") + document.count(b"[") + document.count(b"{") + 1
    if values > config.max_json_values:
        raise QuarantineError(
            f"up to {values} JSON values, over the max-json-values of {config.max_json_values}",
            reason="too-many-values",
        )
    try:
        loaded = orjson.loads(document)
    except orjson.JSONDecodeError as exc:
        loaded = _with_wide_integers(document, exc)
    document_hash, document_bytes = digest(document), len(document)
    if not isinstance(loaded, dict):
        raise QuarantineError(f"JSON {type(loaded).__name__} is not an object", reason="not-object")
    findings = _repeated_keys(document, loaded)
    del document  # before its values are hashed and copied: one large document is not held twice
    if ignored_bytes:
        findings.append(
            Finding(
                "gzip-trailing-bytes",
                Severity.WARNING,
                f"{ignored_bytes} bytes after the gzip stream are not gzip; "
                "ignored, as Java's readers ignore them",
                "$",
            )
        )
    if isinstance(loaded.get("metadata"), dict) and "metadata-location" in loaded:
        findings.append(
            Finding(
                "rest-envelope",
                Severity.INFO,
                "REST LoadViewResponse unwrapped to its metadata",
                "$.metadata",
            )
        )
        loaded = loaded["metadata"]
    base = ParsedFile(
        location=location,
        content_hash=document_hash,
        document_bytes=document_bytes,
        gzip=was_gzip,
        sequence_number=sequence_number(location),
    )
    if "table-uuid" in loaded or ("format-version" in loaded and "last-column-id" in loaded):
        if "table-uuid" not in loaded and "location" not in loaded:
            raise QuarantineError("table metadata with neither table-uuid nor location", reason="no-identity")
        table, table_findings = parse_table(loaded, location, config, known)
        return ParsedFile(**{**_fields(base), "table": table, "findings": tuple(findings + table_findings)})
    if not _VIEW_KEYS & loaded.keys():
        raise QuarantineError(
            f"not whole view or table metadata (keys: {', '.join(sorted(loaded)[:8])})", reason="not-metadata"
        )
    if "view-uuid" not in loaded and "location" not in loaded:
        raise QuarantineError("view metadata with neither view-uuid nor location", reason="no-identity")
    view, view_findings = _parse_view(loaded, location, config, known)
    return ParsedFile(**{**_fields(base), "view": view, "findings": tuple(findings + view_findings)})


def _with_wide_integers(document: bytes | bytearray, error: orjson.JSONDecodeError) -> Any:
    """A document orjson refused for a number no double holds, read by the standard library, which
    keeps integers whole: the field holding one becomes a finding, not the file a quarantine. An
    integer of more digits than any field takes is cut to 40 (still out of every range, so still a
    finding): Python converts at most 4,300, and in time that grows with the square of the length."""
    if "number is infinity" not in str(error):
        raise QuarantineError(f"not JSON: {_not_json(document, error)}", reason="not-json") from error
    try:
        return json.loads(document, parse_int=_bounded_int)
    except (ValueError, RecursionError) as exc:
        raise QuarantineError(f"not JSON: {exc}", reason="not-json") from exc


def _repeated_keys(document: bytes | bytearray, loaded: dict[str, Any]) -> list[Finding]:
    """A key written twice in one object: JSON leaves its meaning open (RFC 8259, 4); orjson, like
    Java's Jackson, keeps the last value, and the finding says that another was written. Keys are
    counted first (`_may_repeat_keys`); only a file where they may repeat is parsed again to find
    where."""
    if not _may_repeat_keys(document, loaded):
        return []
    try:
        pairs_kept = json.loads(document, object_pairs_hook=_ObjectWithRepeats.of, parse_int=_bounded_int)
    except (ValueError, RecursionError):
        return [Finding("duplicate-key", Severity.WARNING, _REPEATED + " (where: too deep to say)", "$")]
    findings: list[Finding] = []
    stack: list[tuple[Any, str]] = [(pairs_kept, "$")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            findings.extend(
                Finding(
                    "duplicate-key",
                    Severity.WARNING,
                    f"key {key!r} is written {times} times; {_REPEATED}",
                    path,
                )
                for key, times in getattr(value, "repeats", {}).items()
            )
            stack.extend((item, f"{path}.{key}") for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))
    return sorted(findings, key=lambda finding: finding.path)


def _may_repeat_keys(document: bytes | bytearray, loaded: dict[str, Any]) -> bool:
    """False only when no key repeats. Colons outside strings separate keys, and colons inside
    strings survive writing the parsed document again, unless the text escaped them (`\\u003a`):
    with those counted, equal counts mean as many keys in the text as members parsed. That costs
    ~9 us for a 1 KB file, against ~30 us to count keys in the text and members in the objects,
    which a document over `_REWRITTEN_MAX` costs instead, rather than a copy of itself."""
    if len(document) <= _REWRITTEN_MAX:
        try:
            rewritten = orjson.dumps(loaded)
        except orjson.JSONEncodeError:  # an integer past 64 bits, which the fallback parser kept whole
            pass
        else:
            escaped = document.count(b"\\u003a") + document.count(b"\\u003A")
            return document.count(b":") + escaped != rewritten.count(b":")
    return _STRING_OR_KEY.findall(document).count(b":") != _members(loaded)


_REWRITTEN_MAX = 1 << 20
_STRING_OR_KEY = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"\s*(:?)')
"""A JSON string, and the colon that makes it a key: strings hold every quote of a valid document."""
_REPEATED = "the last value is read, as Java's readers (Jackson) read it"


class _ObjectWithRepeats(dict[str, Any]):
    repeats: dict[str, int]

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> _ObjectWithRepeats:
        made = cls(pairs)
        if len(made) != len(pairs):
            made.repeats = {
                key: times for key, times in Counter(key for key, _ in pairs).items() if times > 1
            }
        return made


def _members(value: Any) -> int:
    """Members of every object in a parsed document."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def _not_json(document: bytes | bytearray, error: orjson.JSONDecodeError) -> str:
    """Why a document is no JSON, in words: orjson says "surrogates not allowed" of any byte that is
    no UTF-8, where the byte and its offset say more (a UTF-16 file begins with its byte-order mark)."""
    if "not valid UTF-8" not in str(error):
        return str(error)
    if document.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text (it starts with UTF-16's byte-order mark); metadata JSON is UTF-8"
    try:
        bytes(document).decode()
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text: byte 0x{document[exc.start]:02x} at offset {exc.start} ({exc.reason})"
    return str(error)


def _bounded_int(text: str) -> int:
    return int(text[:40])


def _fields(parsed: ParsedFile) -> dict[str, Any]:
    return {name: getattr(parsed, name) for name in ParsedFile.__dataclass_fields__}


def _parse_view(
    document: dict[str, Any], location: str, config: ParseConfig, known: Container[str]
) -> tuple[ParsedView, list[Finding]]:
    findings: list[Finding] = []
    missing = [key for key in REQUIRED_TOP_LEVEL if document.get(key) is None and key != "view-uuid"]
    findings.extend(
        Finding(f"missing-field:{key}", Severity.ERROR, f"required field {key!r} is missing", "$")
        for key in missing
    )
    header = validated_header(ViewMetadataHeader, document, findings)
    findings.extend(rules.check_view_uuid(header.view_uuid))
    findings.extend(rules.check_format_version(header.format_version))
    if "current-schema-id" in document:
        findings.append(
            Finding(
                "legacy-key:current-schema-id",
                Severity.INFO,
                "top-level 'current-schema-id' is not part of the view spec; ignored",
                "$.current-schema-id",
            )
        )
    findings.extend(check_location(header.location, location))

    schema_hashes, schemas = parse_schemas(
        elements(document, "schemas", findings), "$.schemas", known, findings
    )
    view_uuid = header.view_uuid.strip().lower() if header.view_uuid else None
    view_id = rules.identity(header.view_uuid, header.location)
    versions = _versions(document, view_id, schema_hashes, known, config.max_sql_length, findings)
    log = _log(elements(document, "version-log", findings), findings)
    version_ids = [version.version_id for version in versions]
    findings.extend(rules.check_versions_present(len(versions)))
    findings.extend(rules.check_version_ids_unique([(v.version_id, v.version_hash) for v in versions]))
    findings.extend(rules.check_current_version_exists(header.current_version_id, version_ids))
    findings.extend(rules.check_log_monotonic(log))
    findings.extend(rules.check_log_current(log, header.current_version_id, set(version_ids)))
    findings.extend(rules.check_log_versions_present(log, set(version_ids)))

    entry = config.catalog_for(location)
    name = catalog_name(location, entry.prefix, entry.catalog) if entry else None
    mv_definition, mv_refresh = view_materialization(view_id, header.properties, findings)
    view = ParsedView(
        view_id=view_id,
        view_uuid=view_uuid,
        format_version=header.format_version,
        metadata_location=header.location,
        current_version_id=header.current_version_id,
        properties=dict(header.properties),
        schemas=tuple(schemas),
        versions=tuple(versions),
        log=tuple(log),
        name=name,
        mv_definition=mv_definition,
        mv_refresh=mv_refresh,
        implied_activation=None if log else _implied_activation(document, header.current_version_id),
    )
    return view, findings


def _implied_activation(document: dict[str, Any], current_version_id: int | None) -> ViewHistoryEntry | None:
    """For a file whose version-log is empty: its current version made current at its timestamp-ms
    (finding `empty-version-log`), or else the view would be current at no time."""
    for raw in elements(document, "versions", []):
        if isinstance(raw, dict) and raw.get("version-id") == current_version_id:
            try:
                return ViewHistoryEntry.model_validate(
                    {"timestamp-ms": raw.get("timestamp-ms"), "version-id": current_version_id}
                )
            except ValidationError:
                return None
    return None


def _log(elements: list[Any], findings: list[Finding]) -> list[ViewHistoryEntry]:
    try:  # one call for the whole log; element by element only to report the broken entries
        return _LOG.validate_python(elements)
    except ValidationError:
        logged = (
            validated(ViewHistoryEntry, element, f"$.version-log[{ordinal}]", findings)
            for ordinal, element in enumerate(elements)
        )
        return [entry for entry in logged if entry is not None]


def _versions(
    document: dict[str, Any],
    view_id: str,
    schema_hashes: dict[int, str],
    known: Container[str],
    max_sql_length: int,
    findings: list[Finding],
) -> list[ParsedVersion | KnownVersion]:
    versions: list[ParsedVersion | KnownVersion] = []
    for ordinal, raw in enumerate(elements(document, "versions", findings)):
        schema_id = raw.get("schema-id") if isinstance(raw, dict) else None
        schema_hash = schema_hashes.get(schema_id) if isinstance(schema_id, int) else None
        version_hash = content_hash([view_id, raw, schema_hash])
        if version_hash in known:  # parsed clean before: a valid int version-id, nothing to report
            versions.append(KnownVersion(raw["version-id"], version_hash))
            continue
        version = validated(ViewVersion, raw, f"$.versions[{ordinal}]", findings)
        if version is not None:
            versions.append(
                _parsed_version(ordinal, version, version_hash, schema_hashes, max_sql_length, findings)
            )
    return versions


def _parsed_version(
    ordinal: int,
    version: ViewVersion,
    version_hash: str,
    schema_hashes: dict[int, str],
    max_sql_length: int,
    findings: list[Finding],
) -> ParsedVersion:
    path = f"$.versions[{ordinal}]"
    before = len(findings)
    schema_hash = schema_hashes.get(version.schema_id)
    findings.extend(rules.check_schema_exists(version.schema_id, set(schema_hashes), f"{path}.schema-id"))
    findings.extend(rules.check_legacy_summary_keys(version.summary, f"{path}.summary"))
    representations = tuple(
        _parsed_representation(index, element, f"{path}.representations[{index}]", max_sql_length, findings)
        for index, element in enumerate(version.representations)
    )
    findings.extend(
        rules.check_representations(
            [r.dialect for r in representations if r.type == "sql"],
            [r.type for r in representations],
            f"{path}.representations",
        )
    )
    storage = storage_table(version, path, findings)
    return ParsedVersion(
        version_id=version.version_id,
        version_hash=version_hash,
        clean=len(findings) == before,
        timestamp_ms=version.timestamp_ms,
        schema_id=version.schema_id,
        schema_hash=schema_hash,
        default_catalog=version.default_catalog,
        default_namespace=tuple(version.default_namespace),
        summary=dict(version.summary),
        representations=representations,
        storage_table=storage,
    )


def _parsed_representation(
    ordinal: int, element: dict[str, Any], path: str, max_sql_length: int, findings: list[Finding]
) -> ParsedRepresentation:
    kind = element.get("type")
    if kind != "sql":
        return ParsedRepresentation(ordinal, str(kind), None, None, None, canonical_json(element))
    text = element.get("sql")
    document = canonical_json({k: v for k, v in element.items() if k != "sql" or not isinstance(text, str)})
    try:
        representation = SQLViewRepresentation.model_validate(element)
    except ValidationError as exc:
        findings.extend(validation_findings(exc, path))
        dialect_raw = element.get("dialect")
        return ParsedRepresentation(
            ordinal,
            "sql",
            dialect_raw if isinstance(dialect_raw, str) else None,
            None,
            text if isinstance(text, str) else None,
            document,
        )
    dialect = canonical_dialect(representation.dialect)
    if dialect is None:
        findings.append(
            Finding(
                "unknown-dialect",
                Severity.WARNING,
                f"{unknown_dialect_hint(representation.dialect)}; no lineage",
                f"{path}.dialect",
            )
        )
    analysable = len(representation.sql) <= max_sql_length
    if not analysable:
        findings.append(
            Finding(
                "sql-too-long",
                Severity.WARNING,
                f"{len(representation.sql)} characters of SQL, over the max-sql-length of {max_sql_length}: "
                "stored, its lineage not analysed (unknown)",
                f"{path}.sql",
            )
        )
    return ParsedRepresentation(
        ordinal, "sql", representation.dialect, dialect, representation.sql, document, analysable
    )
