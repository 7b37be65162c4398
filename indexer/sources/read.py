"""Locations -> bytes: the one seam through which metadata files are listed and read.

`reader_for(url)` picks `LocalReader` for paths and `file:` URLs and `FsspecReader` (s3fs and any
other fsspec filesystem) by scheme. Both enforce the stored-size limit before reading, and
`mapped_errors` turns filesystem, botocore and network errors into our `ReadError` types.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import stat
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from viewlineage.indexer.errors import (
    NotRegularFile,
    ObjectMissing,
    ObjectTooLarge,
    ReadError,
    TransientReadError,
)
from viewlineage.indexer.parse.locations import escape_undecodable, is_metadata_file_name, normalize_location

if TYPE_CHECKING:
    from obstore.store import S3Credential, S3Store


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
DECLINE_AFTER = 3
OBSTORE_RETRIES = {"max_retries": 2, "retry_timeout": timedelta(seconds=10)}
CREDENTIALS_TTL = timedelta(minutes=5)
"""How long obstore keeps credentials before it asks botocore's chain (which refreshes them) again."""


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
    unlisted: list[ReadError]
    """Directories a listing could not read (permissions, I/O errors), in the order met: the
    listing goes on past them, and whoever listed reports them and clears this."""

    def list(self, location: str) -> Iterator[ListedFile]:
        """Metadata files under a directory (by name), or the file itself if `location` names one."""
        ...

    def read(self, location: str, max_bytes: int, listed: ListedFile | None = None) -> FileRead:
        """The stored bytes; raises `ObjectMissing`, `ObjectTooLarge` or `TransientReadError`."""
        ...

    def children(self, location: str) -> Children:
        """One level of a directory: its sub-directories, and the metadata files directly in it."""
        ...

    def answers(self, location: str) -> bool:
        """Whether the store holding `location` answers at all (its bucket, or its directory):
        when no read succeeds, it tells an outage from objects that fail on their own."""
        ...

    def written_ms(self, location: str) -> int | None:
        """When the object or file there now was written (LastModified, mtime; 0 when the store
        does not say); None when none is there. Raises `TransientReadError` when the store cannot
        say."""
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


def local_path(location: str) -> str:
    """The path of a local location: as written, or, where only that exists, with the `%XX` that
    stand for bytes that are not UTF-8 (`escape_undecodable`) made those bytes again. (A name
    that spells such an escape literally, beside the byte name it spells, shadows that one.)"""
    if "%" not in location or os.path.lexists(location):
        return location
    return _ESCAPED_BYTE.sub(lambda match: chr(0xDC00 + int(match.group(1), 16)), location)


_ESCAPED_BYTE = re.compile("%([89A-Fa-f][0-9A-Fa-f])")


class LocalReader:
    """Local files. Hidden directories (`.git`, `.cache`) are not descended into, nor are links to
    directories. Only regular files are read; anything else named like a metadata file is refused
    (`NotRegularFile`), a symbolic link included: it may lead anywhere on the machine (`/etc/...`),
    whose contents would then be stored for every reader of the store."""

    def __init__(self) -> None:
        self.unlisted: list[ReadError] = []

    def _not_listed(self, error: OSError) -> None:
        where = escape_undecodable(os.fsdecode(error.filename)) if error.filename else "?"
        self.unlisted.append(TransientReadError(where, f"not listed: {error.strerror or error}"))

    def list(self, location: str) -> Iterator[ListedFile]:
        path = local_path(location)
        with mapped_errors(location):
            info = os.stat(path)
        if not stat.S_ISDIR(info.st_mode):
            yield ListedFile(location, info.st_size, info.st_mtime_ns // 1_000_000)
            return
        for root, directories, names in os.walk(path, onerror=self._not_listed):
            directories[:] = sorted(d for d in directories if not d.startswith("."))
            for name in sorted(names):
                if is_metadata_file_name(name):
                    yield ListedFile(escape_undecodable(os.path.join(root, name)))

    def children(self, location: str) -> Children:
        with mapped_errors(location):
            entries = sorted(os.scandir(local_path(location)), key=lambda entry: entry.name)
        directories = [
            escape_undecodable(e.path) for e in entries if e.is_dir() and not e.name.startswith(".")
        ]
        files = [
            ListedFile(escape_undecodable(e.path))
            for e in entries
            if not e.is_dir() and is_metadata_file_name(e.name)
        ]
        return directories, files

    def answers(self, location: str) -> bool:
        return os.path.isdir(os.path.dirname(local_path(location)))

    def written_ms(self, location: str) -> int | None:
        try:
            return os.lstat(local_path(location)).st_mtime_ns // 1_000_000
        except FileNotFoundError:
            return None

    def read(self, location: str, max_bytes: int, listed: ListedFile | None = None) -> FileRead:
        with mapped_errors(location):
            path = local_path(location)
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise NotRegularFile(
                    location, f"a symbolic link (to {os.readlink(path)!r}), not a regular file"
                )
            if not stat.S_ISREG(mode := os.stat(path).st_mode):  # a socket cannot even be opened
                raise NotRegularFile(location, f"not a regular file (mode {stat.filemode(mode)})")
            # Non-blocking: a FIFO put in its place since would otherwise wait for a writer, forever;
            # no following: a link put in its place since is refused too (ELOOP).
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            with os.fdopen(descriptor, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise NotRegularFile(location, f"not a regular file (mode {stat.filemode(info.st_mode)})")
                if info.st_size > max_bytes:
                    raise ObjectTooLarge(location, f"{info.st_size} bytes is over the {max_bytes}-byte limit")
                data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ObjectTooLarge(location, f"grew past the {max_bytes}-byte limit while read")
        return FileRead(location, data, info.st_mtime_ns // 1_000_000, "mtime")


class FsspecReader:
    """Object stores through fsspec: s3fs lists `s3://`, obstore reads its objects (see
    `ObjectGets`). Listing returns sizes and LastModified, so reading needs no extra request per
    object."""

    def __init__(self, protocol: str, storage_options: Mapping[str, Any] | None = None) -> None:
        import fsspec

        self.protocol = protocol
        self.unlisted: list[ReadError] = []
        """Stays empty: an object store's listing fails whole (`mapped_errors`), it skips no prefix."""
        options = dict(storage_options or {})
        self.fs = fsspec.filesystem(protocol, **options)
        self.gets: ObjectGets | None = None
        if protocol == "s3":  # the clients now, not in the first read: ~0.2 s of botocore set-up
            self.fs.connect()
            self.gets = ObjectGets(options.get("client_kwargs", {}).get("endpoint_url"))

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

    def answers(self, location: str) -> bool:
        bucket = location.split("://", 1)[-1].split("/", 1)[0]
        try:
            self.fs.invalidate_cache()
            self.fs.info(bucket)
        except Exception:  # unreachable, throttled, or refused: any error says the store is not answering
            return False
        return True

    def written_ms(self, location: str) -> int | None:
        with mapped_errors(location):
            self.fs.invalidate_cache(location)
            try:
                info = self.fs.info(location)
            except FileNotFoundError:
                return None
            return _modified_ms(info) or 0

    def read(self, location: str, max_bytes: int, listed: ListedFile | None = None) -> FileRead:
        if self.protocol == "s3":
            return self._read_s3(location, max_bytes, listed.size if listed else None)
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

    def _read_s3(self, location: str, max_bytes: int, announced_size: int | None) -> FileRead:
        """One GET gives the bytes, the size and LastModified (an object known from an event has
        no listing's: HEAD then GET would double the requests, and requests are what cap
        `consume`), through obstore (see `ObjectGets`) unless it kept failing on this bucket
        where s3fs did not. Fewer bytes than an event or listing announced is a transient error:
        SeaweedFS notifies, and serves the object, while the upload is still in flight."""
        bucket, key, version = self.fs.split_path(location)
        if self.gets is not None and bucket not in self.gets.declined:
            try:
                return _whole(self.gets.get(location, bucket, key, version, max_bytes), announced_size)
            except GetFailed as failed:
                read = _whole(self._read_s3_object(location, max_bytes, bucket, key, version), announced_size)
                self.gets.failed(bucket, failed)  # s3fs read, whole, what obstore could not
                return read
        return _whole(self._read_s3_object(location, max_bytes, bucket, key, version), announced_size)

    def _read_s3_object(
        self, location: str, max_bytes: int, bucket: str, key: str, version: str | None
    ) -> FileRead:
        """One GET through s3fs's `_call_s3`, the call its own `cat_file` makes."""
        from fsspec.asyn import sync

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
        return FileRead(location, data, _modified_ms({"LastModified": modified}), "last-modified")


class GetFailed(Exception):
    """obstore failed on an object for another reason than its absence or size."""


class ObjectGets:
    """GETs of S3 objects through obstore (Rust's object_store). Measured against SeaweedFS on
    127.0.0.1: ~0.4 ms of CPU a GET, against ~2.8 ms through s3fs (aiobotocore builds, signs and
    parses each request in Python), which was `consume`'s largest cost after lineage. It signs
    with what botocore's chain finds, the chain s3fs uses, and reads from the same endpoint; s3fs
    stays the authority: a bucket obstore keeps failing on where s3fs reads (another region than
    the configured one, say: botocore follows S3's redirect) is read through s3fs from then on.
    obstore retries little: `read_with_retries` retries what both fail on."""

    def __init__(self, endpoint: str | None) -> None:
        import botocore.session  # with s3fs; obstore is imported on the first GET (~20 ms)

        session = botocore.session.get_session()
        self.endpoint = endpoint
        self.region = session.get_config_variable("region") or "us-east-1"
        self.credentials = session.get_credentials()
        self.stores: dict[str, S3Store] = {}
        self.failures: dict[str, int] = {}
        """Per bucket, GETs in a row that obstore failed and s3fs then served."""
        self.declined: set[str] = set()

    def _store(self, bucket: str) -> S3Store:
        from obstore.store import S3Store

        if bucket not in self.stores:  # a race builds two equal stores: harmless
            options: dict[str, Any] = {"region": self.region, "retry_config": OBSTORE_RETRIES}
            if self.endpoint:
                options |= {"endpoint": self.endpoint, "client_options": {"allow_http": True}}
            else:
                options["virtual_hosted_style_request"] = True  # as botocore addresses AWS
            if self.credentials is None:
                options["skip_signature"] = True
            else:
                options["credential_provider"] = self._credential
            self.stores[bucket] = S3Store(bucket, **options)
        return self.stores[bucket]

    def _credential(self) -> S3Credential:
        # botocore refreshes expiring credentials (instance roles, SSO) when they are frozen.
        frozen = self.credentials.get_frozen_credentials()
        return {
            "access_key_id": frozen.access_key,
            "secret_access_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": datetime.now(UTC) + CREDENTIALS_TTL,
        }

    def get(self, location: str, bucket: str, key: str, version: str | None, max_bytes: int) -> FileRead:
        """Raises `ObjectMissing`, `ObjectTooLarge`, or `GetFailed` (see `failed`)."""
        import obstore

        try:
            result = obstore.get(self._store(bucket), key, options={"version": version} if version else None)
        except FileNotFoundError as exc:
            raise ObjectMissing(location, "no such object") from exc
        except (obstore.exceptions.BaseError, ValueError) as exc:  # ValueError: a key it cannot parse
            raise GetFailed(str(exc).splitlines()[0]) from exc
        except BaseException as exc:
            # A panic in Rust (a key too long for a URI) is pyo3's PanicException, a BaseException
            # no module exports: the object is left to s3fs like any other obstore failure.
            if type(exc).__name__ != "PanicException":
                raise
            raise GetFailed(f"obstore panicked: {str(exc).splitlines()[0]}") from exc
        meta = result.meta
        if meta["size"] > max_bytes:
            raise ObjectTooLarge(location, f"{meta['size']} bytes is over the {max_bytes}-byte limit")
        try:
            data = bytes(result.bytes())
        except obstore.exceptions.BaseError as exc:
            raise GetFailed(str(exc).splitlines()[0]) from exc
        if len(data) > max_bytes:
            raise ObjectTooLarge(location, f"grew past the {max_bytes}-byte limit while read")
        self.failures.pop(bucket, None)
        return FileRead(location, data, int(meta["last_modified"].timestamp() * 1000), "last-modified")

    def failed(self, bucket: str, error: GetFailed) -> None:
        """obstore failed on an object of `bucket` that s3fs then read: once too often in a row
        (a passing network error fails both), and the bucket is left to s3fs."""
        self.failures[bucket] = self.failures.get(bucket, 0) + 1
        if self.failures[bucket] == DECLINE_AFTER:
            self.declined.add(bucket)
            warnings.warn(
                f"s3://{bucket}: obstore failed on {DECLINE_AFTER} objects in a row that s3fs read "
                f"({error}); reading this bucket through s3fs from now on",
                RuntimeWarning,
                stacklevel=2,
            )


def _whole(read: FileRead, announced_size: int | None) -> FileRead:
    if announced_size is not None and len(read.data) < announced_size:
        raise TransientReadError(
            read.location, f"{len(read.data)} of the {announced_size} bytes announced: still uploading"
        )
    return read


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
