"""Settings: one table of (name, default, help) read from a TOML file, then `VIEWLINEAGE_*`
environment variables, then command-line flags, later sources overriding earlier ones.

`Settings` is the boundary model; the pure stages take small frozen value objects derived from it
once: `ParseConfig` (`indexer/parse/config.py`) and `LineageConfig` (`indexer/lineage/config.py`).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.lineage.config import LineageConfig
from viewlineage.indexer.lineage.dialects import canonical_dialect
from viewlineage.indexer.parse.config import CatalogMapEntry, MiB, ParseConfig
from viewlineage.indexer.parse.locations import normalize_location

ENV_PREFIX = "VIEWLINEAGE_"


class Settings(BaseModel):
    """Every setting, with its default and help. The README's settings table is generated from it."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    db: str = Field("viewlineage.duckdb", description="DuckDB store file.")
    catalog_map: tuple[str, ...] = Field(
        (),
        alias="catalog-map",
        description="PREFIX=CATALOG: files under PREFIX belong to CATALOG; view names are paths relative "
        "to PREFIX. Repeatable; the longest matching prefix wins.",
    )
    catalog_alias: tuple[str, ...] = Field(
        (),
        alias="catalog-alias",
        description="DIALECT:NAME=CATALOG: an engine's own name for a catalog (Trino's `iceberg` for "
        "Spark's `prod`). Repeatable.",
    )
    max_file_bytes: int = Field(
        64 * MiB, alias="max-file-bytes", gt=0, description="Largest stored file read."
    )
    max_decompressed_bytes: int = Field(
        256 * MiB, alias="max-decompressed-bytes", gt=0, description="Largest decompressed document parsed."
    )
    max_sql_length: int = Field(
        MiB,
        alias="max-sql-length",
        gt=0,
        description="Longest SQL text analysed for lineage, in characters; longer SQL is stored, "
        "not analysed (finding `sql-too-long`, its lineage unknown).",
    )
    max_json_values: int = Field(
        4 * 1024 * 1024,
        alias="max-json-values",
        gt=0,
        description="Most JSON values one document may hold (counted from its commas and brackets, "
        "strings' included); more is quarantined `too-many-values`. Parsed, each costs ~64 bytes.",
    )
    read_workers: int = Field(8, alias="read-workers", gt=0, description="Parallel file reads.")
    workers: int = Field(
        0,
        ge=0,
        description="Processes analysing SQL (`index`, `reindex`, `backfill --engine local`: parsing "
        "files too); 0: one per core, 1: all in the main process.",
    )
    batch_files: int = Field(500, alias="batch-files", gt=0, description="Files per store transaction.")
    batch_bytes: int = Field(
        64 * MiB,
        alias="batch-bytes",
        gt=0,
        description="Decompressed bytes per store transaction (bulk indexing): a batch closes once "
        "its documents reach it, and a larger document is a transaction of its own. Reads run "
        "ahead by as many listed bytes.",
    )
    store_memory: str | None = Field(
        None,
        alias="store-memory",
        description="DuckDB memory limit of the process writing the store, e.g. `256MB` (default: "
        "DuckDB's, 80% of RAM). DuckDB evicts its cache under it, not the key indexes batches "
        "loaded: a limit they outgrow is raised by a tenth, with a warning.",
    )
    query_memory: str = Field(
        "2GiB",
        alias="query-memory",
        pattern=r"^\s*\d+(\.\d+)?\s*([KMGT]i?B)\s*$",
        description="DuckDB memory limit of a process that answers queries (the query commands, "
        "`sql`, `serve`, a follower's API), e.g. `512MiB`. Queries do not spill to disk: one that "
        "needs more is stopped with an error (exit 1; HTTP 503, the requests a server answers at once "
        "sharing one limit). DuckDB builds lists and strings "
        "(`range(n)`, `repeat`) outside the limit: while `sql` runs, its process's data is bounded "
        "to three times the limit over what it held, so that such a query fails with the same error.",
    )
    sql_max_rows: int = Field(
        100_000,
        alias="sql-max-rows",
        gt=0,
        description="`sql`: print at most this many rows (with a warning when there were more): a "
        "result is held in memory before it is printed.",
    )
    query_timeout: float = Field(
        300.0,
        alias="query-timeout",
        gt=0,
        description="Seconds a query (a command's, `sql`'s, an HTTP request's) may run before it is "
        "stopped with an error (exit 1; HTTP 503). Ctrl-C stops a running query too.",
    )
    replica_interval: float = Field(
        2.0,
        alias="replica-interval",
        ge=0,
        description="Seconds between read-replica refreshes while a writer runs, and at least nine "
        "times as long as the last refresh took (0: after every batch, whatever it costs).",
    )
    settle_seconds: float = Field(
        10.0, alias="settle-seconds", gt=0, description="`watch`: how long a changing file is retried."
    )
    poll_seconds: float | None = Field(
        None,
        alias="poll-seconds",
        gt=0,
        description="`watch`: list the tree for changes this often instead of following inotify "
        "events (for NFS, FUSE and other mounts that send none, or trees past the inotify watch limit).",
    )
    s3_endpoint: str | None = Field(None, alias="s3-endpoint", description="S3-compatible endpoint URL.")
    bootstrap_servers: str = Field(
        "127.0.0.1:9092", alias="bootstrap-servers", description="`consume`: Kafka brokers, host:port,..."
    )
    topics: tuple[str, ...] = Field(
        (), alias="topic", description="`consume`: topic with object-store notifications. Repeatable."
    )
    group: str = Field("viewlineage", description="`consume`: Kafka consumer group.")
    kafka_config: str | None = Field(
        None,
        alias="kafka-config",
        description="`consume`: TOML file of kafka-python client settings (TLS, SASL, ...); `${VAR}` in a "
        "value is read from the environment.",
    )
    allow_prefix: tuple[str, ...] = Field(
        (),
        alias="allow-prefix",
        description="`consume`: only objects under this URL prefix are read (s3://bucket/prefix). "
        "Repeatable; required unless --allow-any-prefix.",
    )
    allow_any_prefix: bool = Field(
        False, alias="allow-any-prefix", description="`consume`: read objects under any prefix."
    )
    dead_letter_topic: str | None = Field(
        None,
        alias="dead-letter-topic",
        description="`consume`: also send messages that cannot be decoded to this topic.",
    )
    spool_wait_limit: float = Field(
        60.0,
        alias="spool-wait-limit",
        gt=0,
        description=(
            "`consume`: seconds spooled batches may wait for the store's writer before /healthz reports "
            "a problem (another process holds the store and does not merge them)."
        ),
    )
    reconcile_every: float | None = Field(
        None,
        alias="reconcile-every",
        gt=0,
        description="`consume`, `watch`: re-list and fill gaps this often (30s, 5m, 1h; unset: never).",
    )
    log_format: Literal["text", "json"] = Field(
        "text", alias="log-format", description="`consume`, `watch`: log lines as text or JSON objects."
    )
    metrics_port: int | None = Field(
        None,
        alias="metrics-port",
        ge=0,
        le=65535,
        description=(
            "`consume`, `watch`: serve /healthz, Prometheus /metrics and the query API (/api/...) on "
            "this port (0: any free)."
        ),
    )
    metrics_host: str = Field(
        "127.0.0.1", alias="metrics-host", description="`consume`, `watch`: address for --metrics-port."
    )
    publish_dir: Path | None = Field(
        None,
        alias="publish-dir",
        description=(
            "`consume`, `watch`: publish a Parquet snapshot of the store for BI tools into this "
            "directory every publish-every seconds (as `viewlineage publish`), from the store it writes."
        ),
    )
    publish_every: float = Field(
        60.0, alias="publish-every", gt=0, description="`consume`, `watch`: seconds between snapshots."
    )
    auth_token_file: Path | None = Field(
        None,
        alias="auth-token-file",
        description=(
            "`serve`, `consume`, `watch`: a file whose first line is the token the API and pages ask "
            "for (a bearer header, or the login form's cookie; /healthz and /metrics stay open). "
            "Required to listen on an address other than loopback."
        ),
    )

    @field_validator("catalog_map", "catalog_alias", "topics", "allow_prefix", mode="before")
    @classmethod
    def _split_lists(cls, value: Any) -> Any:
        # Environment variables carry lists comma-separated.
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("reconcile_every", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value

    @property
    def worker_count(self) -> int:
        return self.workers or os.cpu_count() or 1

    def naming(self) -> dict[str, tuple[str, ...]]:
        """The catalog map and aliases in canonical form (sorted, normalised): what a store records
        of the settings its names derive from (`sinks/migrations/0016_recorded_settings.sql`)."""
        aliases = parse_catalog_aliases(self.catalog_alias)
        return {
            "catalog-map": tuple(
                sorted({f"{e.prefix}={e.catalog}" for e in parse_catalog_map(self.catalog_map)})
            ),
            "catalog-alias": tuple(sorted(f"{d}:{n}={c}" for (d, n), c in aliases.items())),
        }

    def with_naming(self, naming: Mapping[str, tuple[str, ...]]) -> Settings:
        """These settings with a recorded catalog map and aliases (`naming`) in place of their own."""
        return self.model_copy(
            update={
                "catalog_map": naming.get("catalog-map", ()),
                "catalog_alias": naming.get("catalog-alias", ()),
            }
        )

    def parse_config(self) -> ParseConfig:
        return ParseConfig(
            max_decompressed_bytes=self.max_decompressed_bytes,
            max_sql_length=self.max_sql_length,
            max_json_values=self.max_json_values,
            catalog_map=parse_catalog_map(self.catalog_map),
            lineage=LineageConfig(aliases=parse_catalog_aliases(self.catalog_alias)),
        )


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Layer the TOML file, the environment and the flags (None values are "not given")."""
    values: dict[str, Any] = {}
    if config_file is not None:
        try:
            with Path(config_file).open("rb") as handle:
                document = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"cannot read config file {config_file}: {exc}") from exc
        values.update({key.replace("-", "_"): value for key, value in document.items()})
    environ = os.environ if environ is None else environ
    for name in Settings.model_fields:
        env_value = environ.get(ENV_PREFIX + name.upper())
        if env_value is not None:
            values[name] = env_value
    values.update({key: value for key, value in (flags or {}).items() if value not in (None, ())})
    try:
        return Settings.model_validate({k: v for k, v in values.items()}, by_name=True)
    except ValidationError as exc:
        where = f" (config file {config_file}, environment, flags)" if config_file is not None else ""
        raise UsageError(f"invalid settings{where}: {'; '.join(map(_setting_error, exc.errors()))}") from exc


def _setting_error(error: Mapping[str, Any]) -> str:
    """One pydantic error as a user reads it: the setting as spelled in files and flags, and why."""
    name = str(error["loc"][0]).replace("_", "-") if error["loc"] else "settings"
    if error["type"] == "extra_forbidden":
        known = difflib.get_close_matches(name, [n.replace("_", "-") for n in Settings.model_fields], n=1)
        return f"unknown setting {name!r}" + (f" (did you mean {known[0]!r}?)" if known else "")
    return f"{name}: {error['msg']} (got {error.get('input')!r})"


def parse_catalog_map(entries: tuple[str, ...]) -> tuple[CatalogMapEntry, ...]:
    parsed = []
    for entry in entries:
        prefix, sep, catalog = entry.rpartition("=")
        if not sep or not prefix or not catalog:
            raise UsageError(f"--catalog-map expects PREFIX=CATALOG, got {entry!r}")
        parsed.append(CatalogMapEntry(normalize_location(prefix).rstrip("/"), _catalog_name(catalog, entry)))
    return tuple(parsed)


def _catalog_name(text: str, entry: str) -> str:
    """A catalog name as a mapping gives it: one identifier, case-folded as engines fold it."""
    name = text.strip().lower()
    if "." in name or not name:
        raise UsageError(
            f"the catalog {text.strip()!r} in {entry!r} is not one name: a catalog is one identifier "
            "(`lake`), and names below it are paths under PREFIX (map the directory that holds its "
            "namespaces: PREFIX=lake)"
        )
    return name


def parse_catalog_aliases(entries: tuple[str, ...]) -> dict[tuple[str, str], str]:
    aliases: dict[tuple[str, str], str] = {}
    for entry in entries:
        left, sep, catalog = entry.partition("=")
        dialect, colon, name = left.partition(":")
        canonical = canonical_dialect(dialect)
        if not (sep and colon and name and catalog) or canonical is None:
            raise UsageError(
                f"--catalog-alias expects DIALECT:NAME=CATALOG with a known dialect, got {entry!r}"
            )
        aliases[(canonical, name.strip().lower())] = _catalog_name(catalog, entry)
    return aliases


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """`90`, `90s`, `5m`, `1.5h`, `1d`, `250ms` -> seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (examples: 30s, 5m, 1h)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]


_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def load_kafka_config(path: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """kafka-python client settings from a TOML file. Secrets stay out of the file: `${NAME}` in a
    string value is replaced by the environment variable NAME, which must be set."""
    environ = os.environ if environ is None else environ
    try:
        with Path(path).open("rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read Kafka config {path}: {exc}") from exc

    def expand(value: Any, key: str) -> Any:
        if not isinstance(value, str):
            return value

        def variable(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in environ:
                raise UsageError(f"Kafka config {path}: {key} refers to ${{{name}}}, which is not set")
            return environ[name]

        return _ENV_REFERENCE.sub(variable, value)

    return {key.replace("-", "_").replace(".", "_"): expand(value, key) for key, value in document.items()}
