"""Locations -> bytes: the one seam through which metadata files are listed and read.

`reader_for(url)` picks `LocalReader` for paths and `file:` URLs and `FsspecReader` (s3fs and any
other fsspec filesystem) by scheme. Both enforce the stored-size limit before reading, and
`mapped_errors` turns filesystem, botocore and network errors into our `ReadError` types.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from .errors import ObjectMissing, ObjectTooLarge, ReadError, TransientReadError
from .locations import is_metadata_file_name, normalize_location


@dataclass(frozen=True, slots=True)
class FileRead:
    """The bytes of one file as stored, with the facts the store keeps about the object."""

    location: str
    data: bytes
    modified_ms: int | None
    modified_source: str | None
    """`mtime` for local files, `last-modified` for object stores."""


@dataclass(frozen=True, slots=True)
class ListedFile:
    location: str
    size: int | None = None
    modified_ms: int | None = None


LISTED = pa.schema([("location", pa.string()), ("size", pa.int64()), ("modified_ms", pa.int64())])
"""A listing as a table: a million listed files cost ~100 MB here, several times that as objects."""
LISTED_CHUNK = 100_000


def listed_table(items: Iterable[ListedFile]) -> pa.Table:
    parts = []
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, LISTED_CHUNK)):
        columns = {
            "location": [item.location for item in chunk],
            "size": [item.size for item in chunk],
            "modified_ms": [item.modified_ms for item in chunk],
        }
        parts.append(pa.table(columns, schema=LISTED))
    return pa.concat_tables(parts) if parts else LISTED.empty_table()


def listed_files(table: pa.Table) -> Iterator[ListedFile]:
    for batch in table.to_batches(max_chunksize=LISTED_CHUNK // 10):
        for row in batch.to_pylist():
            yield ListedFile(row["location"], row["size"], row["modified_ms"])


Children = tuple[list[str], list[ListedFile]]
"""One level of a directory: sub-directory locations, and the metadata files directly in it."""


class Reader(Protocol):
    def list(self, location: str) -> Iterator[ListedFile]:
        """Metadata files under a directory (by name), or the file itself if `location` names one."""
        ...

    def read(self, location: str, max_bytes: int, listed: ListedFile | None = None) -> FileRead:
        """The stored bytes; raises `ObjectMissing`, `ObjectTooLarge` or `TransientReadError`."""
        ...

    def children(self, location: str) -> Children:
        """One level of a directory: its sub-directories, and the metadata files directly in it."""
        ...


@contextlib.contextmanager
def mapped_errors(location: str) -> Iterator[None]:
    """Translate third-party read errors into `ReadError` subclasses, keeping the cause."""
    try:
        yield
    except ReadError:
        raise
    except FileNotFoundError as exc:
        raise ObjectMissing(location, "no such file or object") from exc
    except (IsADirectoryError, NotADirectoryError) as exc:
        raise ObjectMissing(location, f"not a file: {exc}") from exc
    except PermissionError as exc:
        raise TransientReadError(location, f"permission denied: {exc}") from exc
    except (OSError, TimeoutError, ConnectionError) as exc:
        raise TransientReadError(location, f"{type(exc).__name__}: {exc}") from exc
    except Exception as exc:
        # botocore/aiohttp errors do not share a base class we can import without s3fs installed.
        module = type(exc).__module__.split(".")[0]
        if module in {"botocore", "aiobotocore", "aiohttp", "s3fs", "fsspec"}:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
            if code in {"NoSuchKey", "404", "NotFound"}:
                raise ObjectMissing(location, "no such object") from exc
            raise TransientReadError(location, f"{type(exc).__name__}: {exc}") from exc
        raise


class LocalReader:
    """Local files. Hidden directories (`.git`, `.cache`) are not descended into."""

    def list(self, location: str) -> Iterator[ListedFile]:
        with mapped_errors(location):
            info = os.stat(location)
        if not stat.S_ISDIR(info.st_mode):
            yield ListedFile(location, info.st_size, info.st_mtime_ns // 1_000_000)
            return
        for root, directories, names in os.walk(location):
            directories[:] = sorted(d for d in directories if not d.startswith("."))
            for name in sorted(names):
                if is_metadata_file_name(name):
                    yield ListedFile(os.path.join(root, name))

    def children(self, location: str) -> Children:
        with mapped_errors(location):
            entries = sorted(os.scandir(location), key=lambda entry: entry.name)
        directories = [e.path for e in entries if e.is_dir() and not e.name.startswith(".")]
        files = [ListedFile(e.path) for e in entries if e.is_file() and is_metadata_file_name(e.name)]
        return directories, files

    def read(self, location: str, max_bytes: int, listed: ListedFile | None = None) -> FileRead:
        with mapped_errors(location), open(location, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_size > max_bytes:
                raise ObjectTooLarge(location, f"{info.st_size} bytes is over the {max_bytes}-byte limit")
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ObjectTooLarge(location, f"grew past the {max_bytes}-byte limit while read")
        return FileRead(location, data, info.st_mtime_ns // 1_000_000, "mtime")


class FsspecReader:
    """Object stores through fsspec (s3fs for `s3://`). Listing returns sizes and LastModified, so
    reading needs no extra request per object."""

    def __init__(self, protocol: str, storage_options: Mapping[str, Any] | None = None) -> None:
        import fsspec

        self.protocol = protocol
        self.fs = fsspec.filesystem(protocol, **dict(storage_options or {}))
        if protocol == "s3":  # the client now, not in the first read: ~0.2 s of botocore set-up
            self.fs.connect()

    def _url(self, path: str) -> str:
        return normalize_location(f"{self.protocol}://{path.split('://', 1)[-1]}")

    def list(self, location: str) -> Iterator[ListedFile]:
        with mapped_errors(location):
            self.fs.invalidate_cache()  # s3fs caches listings; a re-list must see the store as it is now
            if self.fs.isfile(location):
                info = self.fs.info(location)
                yield ListedFile(location, info.get("size"), _modified_ms(info))
                return
            found = self.fs.find(location, detail=True)
        for path, info in sorted(found.items()):
            if is_metadata_file_name(path.rsplit("/", 1)[-1]):
                yield ListedFile(self._url(path), info.get("size"), _modified_ms(info))

    def children(self, location: str) -> Children:
        with mapped_errors(location):
            self.fs.invalidate_cache()
            entries = sorted(self.fs.ls(location, detail=True), key=lambda info: str(info["name"]))
        directories = [self._url(info["name"]) for info in entries if info.get("type") == "directory"]
        files = [
            ListedFile(self._url(info["name"]), info.get("size"), _modified_ms(info))
            for info in entries
            if info.get("type") != "directory" and is_metadata_file_name(str(info["name"]).rsplit("/", 1)[-1])
        ]
        return directories, files

    def read(self, location: str, max_bytes: int, listed: ListedFile | None = None) -> FileRead:
        if (listed is None or listed.modified_ms is None) and self.protocol == "s3":
            return self._read_s3_object(location, max_bytes, listed.size if listed else None)
        with mapped_errors(location):
            if listed is None or listed.size is None:
                info = self.fs.info(location)
                listed = ListedFile(location, info.get("size"), _modified_ms(info))
            if listed.size is not None and listed.size > max_bytes:
                raise ObjectTooLarge(location, f"{listed.size} bytes is over the {max_bytes}-byte limit")
            data = self.fs.cat_file(location, start=0, end=max_bytes + 1)
        if len(data) > max_bytes:
            raise ObjectTooLarge(location, f"grew past the {max_bytes}-byte limit while read")
        return FileRead(location, data, listed.modified_ms, "last-modified")

    def _read_s3_object(self, location: str, max_bytes: int, announced_size: int | None) -> FileRead:
        """An object known from an event, not a listing: one GET gives the bytes, the size and
        LastModified (HEAD then GET would double the requests, and requests are what cap `consume`).
        Uses s3fs's `_call_s3`, the call its own `cat_file` makes. Fewer bytes than the event
        announced is a transient error: SeaweedFS notifies, and serves the object, while the
        upload is still in flight."""
        from fsspec.asyn import sync

        bucket, key, version = self.fs.split_path(location)
        extra = {"VersionId": version} if version else {}

        async def get() -> tuple[bytes, Any]:
            response = await self.fs._call_s3("get_object", Bucket=bucket, Key=key, **extra)
            body = response["Body"]
            try:
                size = response.get("ContentLength")
                if size is not None and size > max_bytes:
                    raise ObjectTooLarge(location, f"{size} bytes is over the {max_bytes}-byte limit")
                data = await body.read(max_bytes + 1)
            finally:
                body.close()
            return data, response.get("LastModified")

        with mapped_errors(location):
            data, modified = sync(self.fs.loop, get)
        if len(data) > max_bytes:
            raise ObjectTooLarge(location, f"grew past the {max_bytes}-byte limit while read")
        if announced_size is not None and len(data) < announced_size:
            raise TransientReadError(
                location, f"{len(data)} of the {announced_size} bytes announced: still uploading"
            )
        return FileRead(location, data, _modified_ms({"LastModified": modified}), "last-modified")


def _modified_ms(info: Mapping[str, Any]) -> int | None:
    modified = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
    if modified is None:
        return None
    if hasattr(modified, "timestamp"):
        return int(modified.timestamp() * 1000)
    return int(float(modified) * 1000)


def reader_for(location: str, s3_endpoint: str | None = None) -> Reader:
    """The reader for a normalised location, chosen by scheme."""
    if "://" not in location:
        return LocalReader()
    protocol = location.split("://", 1)[0]
    options: dict[str, Any] = {}
    if protocol == "s3" and s3_endpoint:
        options["client_kwargs"] = {"endpoint_url": s3_endpoint}
    try:
        return FsspecReader(protocol, options)
    except (ImportError, ValueError) as exc:
        raise ReadError(location, f"no filesystem for {protocol}:// ({exc}); install s3fs or gcsfs") from exc
