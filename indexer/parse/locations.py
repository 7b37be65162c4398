"""Locations and file names: normalising URLs, recognising metadata files, deriving view names.

Pure string functions; nothing here touches a filesystem. `check_location` is the one rule about
where a file sits, so it lives beside them rather than with the document rules (`spec/rules.py`).
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass

from viewlineage.indexer.spec.base import LONG_RANGE
from viewlineage.indexer.spec.findings import Finding, Severity

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_METADATA_SUFFIXES = (".metadata.json", ".metadata.json.gz")
_TEMPORARY = re.compile(rf"^{_UUID}\.metadata\.json$|\.(tmp|temp|inprogress|partial)$|~$", re.IGNORECASE)
_SEQUENCE = re.compile(r"^(?:(\d+)-|v(\d+)\.)")
_S3_SCHEMES = ("s3://", "s3a://", "s3n://")
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def escape_undecodable(path: str) -> str:
    """A path whose bytes are not all UTF-8, which Python decodes to lone surrogates (PEP 383),
    with those bytes as `%XX`: a location the store can hold, and that reading maps back
    (`viewlineage.indexer.sources.read.local_path`).

    >>> escape_undecodable("/w/v/metadata/00000-\udcff.metadata.json")
    '/w/v/metadata/00000-%FF.metadata.json'
    """
    return _UNDECODABLE.sub(lambda match: f"%{ord(match.group()) - 0xDC00:02X}", path)


def normalize_location(location: str) -> str:
    """One spelling per object: `s3a://` and `s3n://` become `s3://`; `file:`, `file://` and
    `file:///` URLs and bare paths become absolute POSIX paths without a scheme. An object store's
    key is kept as it is (but a trailing `/`): `a/../b`, `a/./b` and `a//b` are other objects than
    `b` and `a/b` there, so a delete of one must never remove another.

    >>> normalize_location("s3a://bucket/wh/db/v/metadata/")
    's3://bucket/wh/db/v/metadata'
    >>> normalize_location("s3://bucket/wh/db/zz/../metadata/x.json")
    's3://bucket/wh/db/zz/../metadata/x.json'
    >>> normalize_location("file:/tmp/wh/./v")
    '/tmp/wh/v'
    """
    location = escape_undecodable(location.strip())
    for scheme in _S3_SCHEMES:
        if location.startswith(scheme):
            return "s3://" + _key(location[len(scheme) :])
    if "://" in location and not location.startswith("file://"):
        scheme, _, rest = location.partition("://")
        return f"{scheme.lower()}://{_key(rest)}"
    if location.startswith("file:"):
        location = location[len("file:") :]
        if location.startswith("//") and not location.startswith("///"):
            # file://host/path: only the empty host and localhost are local.
            host, _, rest = location[2:].partition("/")
            if host not in ("", "localhost"):
                raise ValueError(f"remote file URL not supported: file://{location[2:]}")
            location = "/" + rest
    return _clean_path(location if location.startswith("/") else posixpath.join(os.getcwd(), location))


def _key(bucket_and_key: str) -> str:
    """An object store's bucket and key as they are, without a trailing `/` (a prefix's)."""
    return bucket_and_key.rstrip("/") if bucket_and_key.strip("/") else bucket_and_key


def _clean_path(path: str) -> str:
    cleaned = posixpath.normpath(path) if path else path
    # normpath keeps a leading "//"; one slash is the same directory on POSIX.
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def is_metadata_file_name(name: str) -> bool:
    """Whether a listed file name is a metadata file we index (hidden, `.crc` and temporary files
    are not).

    >>> [is_metadata_file_name(n) for n in ("00001-a.gz.metadata.json", "v3.metadata.json",
    ...  ".00001-a.gz.metadata.json.crc", "x.metadata.json.gz", "part-0.parquet")]
    [True, True, False, True, False]
    """
    if name.startswith(".") or name.endswith(".crc") or _TEMPORARY.search(name):
        return False
    return name.endswith(_METADATA_SUFFIXES)


def sequence_number(location: str) -> int | None:
    """The commit sequence number from the file name: leading digits (`00042-<uuid>...`) or `vN.`.

    >>> sequence_number("s3://b/v/metadata/00042-ab.gz.metadata.json"), sequence_number("/w/v7.metadata.json")
    (42, 7)
    """
    match = _SEQUENCE.match(posixpath.basename(location))
    if match is None:
        return None
    number = int(match.group(1) or match.group(2))
    return number if number <= LONG_RANGE[1] else None  # a name of 20 digits or more numbers nothing


@dataclass(frozen=True, slots=True)
class CatalogName:
    """Where a view or table lives: its catalog (None if no catalog-map entry says) and its name
    parts (namespace levels, then the view or table), all lower-case."""

    catalog: str | None
    parts: tuple[str, ...]

    def __str__(self) -> str:
        return ".".join(([self.catalog] if self.catalog else []) + list(self.parts))


def catalog_name(location: str, prefix: str, catalog: str | None) -> CatalogName | None:
    """A view's or table's name from the path of its metadata directory relative to `prefix`:
    `<ns...>/<name>/metadata/<file>` and Hive-style `<ns>.db/<name>/metadata/<file>`.

    >>> str(catalog_name("s3://b/wh/sales.db/rev/metadata/00001-x.gz.metadata.json", "s3://b/wh", "prod"))
    'prod.sales.rev'
    """
    directory = posixpath.dirname(location)
    if posixpath.basename(directory) == "metadata":
        directory = posixpath.dirname(directory)
    if not (directory == prefix or directory.startswith(prefix.rstrip("/") + "/")):
        return None
    relative = directory[len(prefix) :].strip("/")
    if not relative:
        return None
    parts = [part[:-3] if part.endswith(".db") and len(part) > 3 else part for part in relative.split("/")]
    return CatalogName(catalog, tuple(part.lower() for part in parts))


def check_location(metadata_location: str | None, file_location: str) -> list[Finding]:
    """A file in a `metadata/` directory should sit under its document's `location`."""
    directory = file_location.rsplit("/", 1)[0]
    if metadata_location is None or not directory.endswith("/metadata"):
        return []
    try:
        expected = normalize_location(metadata_location).rstrip("/") + "/metadata"
    except ValueError:
        expected = metadata_location
    if expected == directory:
        return []
    if expected.split("/")[-3:] == directory.split("/")[-3:]:
        # The same namespace and name under another root: the tree was moved or copied whole (a
        # backup restored elsewhere, the bundled sample), so the file is where its view's are.
        return [
            Finding(
                "location-moved",
                Severity.INFO,
                f"location {metadata_location!r} names another root than the file's directory "
                f"{directory!r}, with the same namespace and name: the tree was moved or copied whole",
                "$.location",
            )
        ]
    return [
        Finding(
            "location-mismatch",
            Severity.WARNING,
            f"location {metadata_location!r} does not contain the file's directory {directory!r}",
            "$.location",
        )
    ]
