"""`viewlineage`: the command line. Commands call the pipeline or the query API and print through
an `Output`; a `ViewLineageError` becomes a one-line message and a non-zero exit (`--debug` shows
the traceback)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.abc
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args, get_origin

import click
import duckdb

from viewlineage.indexer.config import Settings, load_settings
from viewlineage.indexer.errors import UsageError, ViewLineageError
from viewlineage.queries import api, changes, diff, mviews, search, table_history
from viewlineage.queries import graph as graphs
from viewlineage.queries.output import FORMATS, cell, output_for, side_by_side_text
from viewlineage.sinks.readers import Readers, answered_within, open_reader, process_memory_bounded

if TYPE_CHECKING:
    from viewlineage.indexer.pipeline.health import Health
    from viewlineage.indexer.pipeline.indexer import IndexStats

# The indexing commands import the pipeline (pyarrow, sqlglot, the workers) when they run: a query
# command is a short-lived process, and those imports cost it more than its query.

F = TypeVar("F", bound=Callable[..., Any])

# Which settings each command takes as flags (every setting can also come from the TOML file or
# the environment).
_INDEXING = (
    "catalog_map",
    "catalog_alias",
    "max_file_bytes",
    "max_decompressed_bytes",
    "max_sql_length",
    "max_json_values",
    "read_workers",
    "workers",
    "batch_files",
    "batch_bytes",
    "store_memory",
    "replica_interval",
    "s3_endpoint",
)
_QUERYING = ("query_memory", "query_timeout")
_WATCHING = (*(name for name in _INDEXING if name != "s3_endpoint"), "settle_seconds", "poll_seconds")
_FOLLOWING = (
    "reconcile_every",
    "log_format",
    "metrics_port",
    "metrics_host",
    "auth_token_file",
    "publish_dir",
    "publish_every",
    *_QUERYING,
)
_CONSUMING = (
    "bootstrap_servers",
    "topics",
    "group",
    "kafka_config",
    "allow_prefix",
    "allow_any_prefix",
    "dead_letter_topic",
    "spool_wait_limit",
)


def _setting_option(name: str, **extra: Any) -> Callable[[F], F]:
    """The option of one setting, from the `Settings` table (name, type, help); `extra`: more of
    click's option arguments."""
    info = Settings.model_fields[name]
    flag = "--" + (info.alias or name).replace("_", "-")
    annotation = info.annotation
    if annotation is bool:
        return click.option(flag, name, is_flag=True, default=None, help=info.description, **extra)
    if annotation == tuple[str, ...]:
        return click.option(flag, name, multiple=True, default=None, help=info.description, **extra)
    kind: Any = str  # strings, and durations that `Settings` parses
    if annotation in (int, int | None):
        kind = int
    elif annotation is float:
        kind = float
    elif get_origin(annotation) is Literal:
        kind = click.Choice(get_args(annotation))
    return click.option(flag, name, type=kind, default=None, help=info.description, **extra)


def setting_options(*names: str) -> Callable[[F], F]:
    """One option per named setting, from the `Settings` table (name, type, help)."""

    def decorate(function: F) -> F:
        for name in reversed(names):
            function = _setting_option(name)(function)
        return function

    return decorate


OFFSET = click.IntRange(0, 10**15 - 1)
"""Rows skipped: below 10^15, as the API takes it (past a BIGINT, DuckDB failed with a traceback)."""
EXIT_OUTPUT_CLOSED = 141
"""The status of a command whose output's reader went before it was written (128 + SIGPIPE, as a
shell reports any command that signal ends)."""


def page_options(what: str) -> Callable[[F], F]:
    """`--limit` and `--offset` of a list that may be long (default: all of it)."""

    def decorate(function: F) -> F:
        function = click.option(
            "--offset", type=OFFSET, default=0, help=f"{what} skipped, in the list's order."
        )(function)
        return click.option(
            "--limit",
            type=click.IntRange(1, api.MAX_PAGE),
            default=None,
            help=f"{what} listed (default: all).",
        )(function)

    return decorate


def query_options(function: F) -> F:
    """The settings of a command that answers from the store (`--query-memory`, `--query-timeout`),
    kept in the context for `_query_settings` rather than passed to the command."""

    def keep(context: click.Context, parameter: click.Parameter, value: Any) -> None:
        if value is not None and parameter.name:
            context.meta.setdefault(_QUERY_FLAGS, {})[parameter.name] = value

    for name in reversed(_QUERYING):
        function = _setting_option(name, expose_value=False, callback=keep)(function)
    return function


_QUERY_FLAGS = "viewlineage.query_flags"


def _query_settings(context: click.Context, **flags: Any) -> Settings:
    """The settings of a command that answers from the store, its `query_options` included."""
    return settings_from(context, **context.meta.get(_QUERY_FLAGS, {}), **flags)


def handle_errors(function: F) -> F:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        context = click.get_current_context()
        try:
            return function(*args, **kwargs)
        except duckdb.OutOfMemoryException as exc:  # opening the store, before a question's own limit
            click.echo(
                f"error: the store could not be read within the memory limit (setting query-memory): {exc}",
                err=True,
            )
            context.exit(1)
        except ViewLineageError as exc:
            if context.obj and context.obj.get("debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            context.exit(2 if isinstance(exc, UsageError) else 1)
        except BrokenPipeError:  # the reader of the output went (`| head`): as a command SIGPIPE ends
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
            context.exit(EXIT_OUTPUT_CLOSED)
        except OSError as exc:  # a path to write or read that the system refuses (`/proc/x`, a file)
            if context.obj and context.obj.get("debug"):
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"error: {where}{exc.strerror or exc}", err=True)
            context.exit(1)

    return wrapper  # type: ignore[return-value]


def settings_from(context: click.Context, **flags: Any) -> Settings:
    obj = context.obj
    flags = {k: (tuple(v) if isinstance(v, tuple | list) else v) for k, v in flags.items()}
    if obj.get("db"):
        flags["db"] = obj["db"]
    return load_settings(obj.get("config"), flags=flags)


format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Readable tables, JSON with stable fields, or the main table as CSV or Markdown.",
)
EXIT_QUARANTINED = 3
"""The exit status of `index --fail-on-quarantine` when the run quarantined files, and of `reindex
--fail-on-quarantine` when the store holds quarantined files."""
progress_option = click.option(
    "--progress/--no-progress", default=None, help="Progress bar [default: on a terminal]."
)
fail_on_quarantine_option = click.option(
    "--fail-on-quarantine",
    is_flag=True,
    help=f"Exit with status {EXIT_QUARANTINED} when the run quarantined a file (for CI).",
)
summary_format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="A readable summary, or JSON with stable fields.",
)
as_of_option = click.option(
    "--as-of",
    "as_of",
    default=None,
    help="ISO-8601 time (UTC when no zone is given), or epoch time with its unit (1795607008s, "
    "1795607008000ms, ...; a bare number from 10^11 is ms); default: the latest state the store holds.",
)


@click.group()
@click.version_option(package_name="viewlineage", prog_name="viewlineage")
@click.option("--config", type=click.Path(dir_okay=False), default=None, help="TOML settings file.")
@click.option("--db", default=None, help="DuckDB store file [default: ./viewlineage.duckdb].")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def cli(context: click.Context, config: str | None, db: str | None, debug: bool) -> None:
    """Index Apache Iceberg view metadata into a DuckDB lineage store and query it."""
    context.obj = {"config": config, "db": db, "debug": debug}


def _print_summary(stats: IndexStats, fmt: str) -> None:
    summary = stats.summary()
    if fmt == "json":
        click.echo(json.dumps(summary))
        return
    run = {key: value for key, value in summary.items() if not key.startswith("store_")}
    click.echo(", ".join(f"{value} {key.replace('_', ' ')}" for key, value in run.items()))
    if stats.store:
        held = stats.store
        click.echo(
            f"the store holds {held['files']} files: {held['view_files']} view files of {held['views']} "
            f"views, {held['table_files']} table files of {held['tables']} tables"
        )
    for code, count in sorted(stats.findings.items()):
        click.echo(f"  {count:6d} {code}")
    for unlisted in stats.unlisted:
        click.echo(f"warning: {unlisted}", err=True)
    guessed = stats.findings["catalog-unknown"] + stats.findings["catalog-ambiguous"]
    if guessed:
        click.echo(
            f"hint: {guessed} table reference(s) name no catalog this indexer knows, so queries match "
            "them uncertainly: --catalog-map PREFIX=CATALOG names the catalog of files under PREFIX, "
            "--catalog-alias DIALECT:NAME=CATALOG an engine's own name for one (README: Names and catalogs)",
            err=True,
        )


@cli.command()
@click.argument("locations", nargs=-1, required=True)
@setting_options(*_INDEXING)
@summary_format_option
@progress_option
@fail_on_quarantine_option
@click.pass_context
@handle_errors
def index(
    context: click.Context,
    /,
    locations: tuple[str, ...],
    fmt: str,
    progress: bool | None,
    fail_on_quarantine: bool,
    **flags: Any,
) -> None:
    """Index every metadata file under LOCATIONS (paths or s3:// URLs)."""
    from viewlineage.indexer.pipeline.runs import index_locations

    settings = settings_from(context, **flags)
    indexing_process(settings)
    with _ProgressBar(progress, "indexing") as bar:
        stats = index_locations(locations, settings, bar.listed, bar.advanced)
    _print_summary(stats, fmt)
    if stats.listed == 0:
        click.echo(f"warning: no metadata file (*.metadata.json) under {', '.join(locations)}", err=True)
    _exit_on_quarantine(context, stats.quarantined, fail_on_quarantine)


class _ProgressBar:
    """A progress bar on stderr once the number of files is known: shown on a terminal, or as
    `--progress/--no-progress` says."""

    def __init__(self, show: bool | None, label: str) -> None:
        self.show = sys.stderr.isatty() if show is None else show
        self.label = label
        self.bar: Any = None

    def listed(self, count: int) -> None:
        if self.show:
            self.bar = click.progressbar(length=count, label=self.label, file=sys.stderr)
            self.bar.__enter__()

    def advanced(self, files: int) -> None:
        if self.bar is not None:
            self.bar.update(files)

    def __enter__(self) -> _ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _exit_on_quarantine(context: click.Context, quarantined: int, fail_on_quarantine: bool) -> None:
    if fail_on_quarantine and quarantined:
        click.echo(f"error: {quarantined} file(s) quarantined (`viewlineage quarantine` says why)", err=True)
        context.exit(EXIT_QUARANTINED)


@cli.command()
@click.argument("root")
@setting_options(*_WATCHING, *_FOLLOWING)
@click.pass_context
@handle_errors
def watch(context: click.Context, /, root: str, **flags: Any) -> None:
    """Index ROOT, then follow it: every metadata file closed or moved into it is indexed."""
    from viewlineage.indexer.followers.watch import watch_directory

    settings = settings_from(context, **flags)
    indexing_process(settings)
    with _following("watch", settings) as (health, stop, readers):
        watch_directory(root, settings, health, stop, readers=readers)


@cli.command()
@setting_options(*_CONSUMING, *_INDEXING, *_FOLLOWING)
@click.pass_context
@handle_errors
def consume(context: click.Context, /, **flags: Any) -> None:
    """Follow object-store notifications in Kafka (S3, SNS, EventBridge, MinIO, SeaweedFS) and index
    every metadata file they announce; deletes are recorded as history. Credentials for the object
    store come from the usual AWS environment variables or profile."""
    from viewlineage.indexer.faults import Faults
    from viewlineage.indexer.followers.consume import Consumer

    settings = settings_from(context, **flags)
    indexing_process(settings)
    with _following("consume", settings) as (health, stop, readers):
        Consumer(settings, health, Faults.from_environ(), stop, readers).run()


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


@contextlib.contextmanager
def _until_signalled() -> Iterator[threading.Event]:
    """An event SIGTERM or SIGINT sets, so a long-running command finishes what it has in hand and
    exits cleanly; the previous handlers come back after."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _following(source: str, settings: Settings) -> Iterator[tuple[Health, threading.Event, Readers]]:
    """What a long-running follower needs: its health and the query API (`/api/...`, answered from
    its own store while it writes it), both served on --metrics-port when given, and a stop event
    (`_until_signalled`)."""
    from viewlineage.indexer.pipeline.health import Health
    from viewlineage.queries.warm import warm_analyses
    from viewlineage.queries.web.app import web_app
    from viewlineage.queries.web.auth import protected
    from viewlineage.queries.web.server import WebServer

    health = Health(source, settings.log_format)
    readers = Readers(settings.db, memory_limit=settings.query_memory)
    with _until_signalled() as stop, contextlib.ExitStack() as serving:
        if settings.metrics_port is not None:
            app = protected(
                web_app(readers.connect, settings.query_timeout, health.check, health.registry),
                settings.metrics_host,
                settings.auth_token_file,
            )
            server = serving.enter_context(WebServer(app, settings.metrics_host, settings.metrics_port))
            url = server.url
            health.log("serving", healthz=f"{url}/healthz", metrics=f"{url}/metrics", api=f"{url}/api/")
            _in_background(serving, stop, warm_analyses, readers.connect, stop, health.log)
        if settings.publish_dir is not None:
            from viewlineage.queries.publish import publish_every

            _in_background(
                serving,
                stop,
                publish_every,
                readers.connect,
                settings.publish_dir,
                settings.publish_every,
                stop,
                health.log,
            )
        yield health, stop, readers


@cli.command()
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="0: any free.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@setting_options("auth_token_file")
@query_options
@click.pass_context
@handle_errors
def serve(context: click.Context, port: int, host: str, auth_token_file: Path | None) -> None:
    """Answer the query API (GET /api/<command>, the query commands' JSON) and /healthz over HTTP
    until SIGTERM or Ctrl-C. Each request reads the newest replica (every writer publishes one, as it
    runs and as it finishes), so a server keeps no running writer out; the store itself while it has
    none, or while the store was written after it and no writer holds it (one killed before it
    published). A follower's --metrics-port serves the same API from the store it writes."""
    from viewlineage.queries.warm import warm_analyses
    from viewlineage.queries.web.app import store_health, web_app
    from viewlineage.queries.web.auth import protected
    from viewlineage.queries.web.server import WebServer

    settings = _query_settings(context, auth_token_file=auth_token_file)
    reader = Readers(settings.db, store_without_replica=True, memory_limit=settings.query_memory).connect
    app = protected(
        web_app(reader, settings.query_timeout, store_health(reader)), host, settings.auth_token_file
    )
    with _until_signalled() as stop, contextlib.ExitStack() as serving:
        server = serving.enter_context(WebServer(app, host, port))
        click.echo(f"serving {settings.db} at {server.url}/api/", err=True)
        _in_background(serving, stop, warm_analyses, reader, stop, _echo_event)
        while not stop.wait(1.0):
            pass


def _in_background(
    serving: contextlib.ExitStack, stop: threading.Event, target: Callable[..., None], *args: Any
) -> None:
    """`target(*args)` on a thread of its own, joined as `serving` closes, after `stop` is set."""
    thread = threading.Thread(target=target, args=args, name=target.__name__, daemon=True)
    thread.start()
    serving.callback(thread.join)
    serving.callback(stop.set)  # first (last in, first out): however the process ends


def _echo_event(event: str, **fields: Any) -> None:
    """A log line of `serve`'s (`event key=value ...`), as followers write theirs in text."""
    click.echo(" ".join([event, *(f"{key}={value}" for key, value in fields.items())]), err=True)


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--every",
    type=click.FloatRange(min=1),
    default=None,
    help="Publish again every this many seconds until SIGTERM or Ctrl-C (default: once).",
)
@query_options
@click.pass_context
@handle_errors
def publish(context: click.Context, directory: Path, every: float | None) -> None:
    """Publish a snapshot of the store for BI tools at a fixed path: DIRECTORY/<table>.parquet for
    changes, views, reads, findings and quarantine, each replaced whole (readers never see half of
    one). Reads the newest replica, as `serve` does, so it keeps no writer out."""
    from viewlineage.queries.publish import publish_every

    def log(event: str, **fields: Any) -> None:
        click.echo(" ".join([event, *(f"{key}={value}" for key, value in fields.items())]), err=True)

    settings = _query_settings(context)
    readers = Readers(settings.db, store_without_replica=True, memory_limit=settings.query_memory)
    with _until_signalled() as stop:
        publish_every(readers.connect, directory, every, stop, log)


@cli.command()
@click.argument("locations", nargs=-1, required=True)
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True)
@click.option(
    "--master",
    default="local[2]",
    show_default=True,
    help="Spark master (local[N], yarn, k8s://..., spark://...).",
)
@click.option(
    "--partitions", type=int, default=None, help="Spark partitions [default: 2 x the cluster's cores]."
)
@click.option(
    "--listing",
    type=click.Choice(["driver", "tasks", "auto"]),
    default="auto",
    show_default=True,
    help="Spark: list on the driver, or each root's namespaces in parallel tasks (large warehouses).",
)
@click.option(
    "--spark-conf",
    "spark_conf",
    multiple=True,
    help="KEY=VALUE Spark setting (spark.driver.memory=4g, ...). Repeatable.",
)
@click.option(
    "--out",
    default=None,
    help="Write the Parquet dataset here (one directory per store table): an empty or new directory, "
    "or an earlier dataset, which it replaces.",
)
@setting_options(*_INDEXING)
@summary_format_option
@click.pass_context
@handle_errors
def backfill(
    context: click.Context,
    /,
    locations: tuple[str, ...],
    engine: str,
    master: str,
    partitions: int | None,
    listing: str,
    spark_conf: tuple[str, ...],
    out: str | None,
    fmt: str,
    **flags: Any,
) -> None:
    """Index whole warehouses in parallel (local processes or Spark) into the store and/or a Parquet
    dataset. With --out and no --db, only the dataset is written."""
    from viewlineage.indexer.backfill.run import backfill as run_backfill

    _system_allocator()
    settings = settings_from(context, **flags)
    into_store = out is None or bool(context.obj.get("db"))
    stats = run_backfill(
        list(locations),
        settings,
        engine,
        out,
        into_store,
        master=master,
        partitions=partitions,
        listing=listing,
        spark_conf=dict(_key_value(item) for item in spark_conf),
        progress=lambda line: click.echo(line, err=True),
    )
    summary = stats.summary()
    click.echo(json.dumps(summary) if fmt == "json" else ", ".join(f"{k} {v}" for k, v in summary.items()))


@cli.command("reindex")
@click.option(
    "--change-catalogs",
    is_flag=True,
    help="Rebuild with the --catalog-map and --catalog-alias given (none given: none), replacing "
    "those the store was built with; every view and table may be renamed.",
)
@setting_options(*_INDEXING)
@summary_format_option
@progress_option
@fail_on_quarantine_option
@click.pass_context
@handle_errors
def reindex_command(
    context: click.Context,
    /,
    fmt: str,
    change_catalogs: bool,
    progress: bool | None,
    fail_on_quarantine: bool,
    **flags: Any,
) -> None:
    """Rebuild every derived row from the raw documents in the store, with the catalog map and
    aliases the store was built with (every writer reuses them; --change-catalogs replaces them)."""
    from viewlineage.indexer.pipeline.runs import naming_options, reindex
    from viewlineage.sinks.readers import recorded_settings

    settings = settings_from(context, **flags)
    indexing_process(settings)
    before = recorded_settings(settings.db)
    with _ProgressBar(progress, "reindexing") as bar:
        stats = reindex(settings, change_naming=change_catalogs, on_listed=bar.listed, progress=bar.advanced)
    if change_catalogs and before != settings.naming():
        was = naming_options(before) if before else "none recorded"
        click.echo(
            f"changed the store's catalogs from {was} to {naming_options(settings.naming())}", err=True
        )
    _print_summary(stats, fmt)
    if fail_on_quarantine:  # reindex reads no file again: what counts is what the store holds
        with open_reader(settings.db) as conn:
            held = int(conn.execute("SELECT count(*) FROM quarantine").fetchall()[0][0])
        _exit_on_quarantine(context, held, fail_on_quarantine)


T = TypeVar("T")


def _ask(context: click.Context, question: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
    """`question`'s answer from a read-only connection to the store, within the query settings."""
    settings = _query_settings(context)
    with open_reader(settings.db, memory_limit=settings.query_memory) as conn:
        return answered_within(conn, settings.query_timeout, question)


def _as_of(value: str | None) -> int | None:
    return api.parse_time(value) if value is not None else None


@cli.command()
@click.argument("view")
@as_of_option
@format_option
@query_options
@click.pass_context
@handle_errors
def show(context: click.Context, view: str, as_of: str | None, fmt: str) -> None:
    """VIEW's definition at a time: SQL per dialect, schema, defaults, properties, times."""
    output_for(fmt).result(_ask(context, lambda conn: api.show(conn, view, _as_of(as_of))))


@cli.command("table")
@click.argument("name")
@as_of_option
@format_option
@query_options
@click.pass_context
@handle_errors
def table_command(context: click.Context, name: str, as_of: str | None, fmt: str) -> None:
    """Table NAME at a time: schema (nested fields included), current snapshot, refs, properties."""
    output_for(fmt).result(_ask(context, lambda conn: api.table(conn, name, _as_of(as_of))))


@cli.command()
@click.argument("view")
@format_option
@query_options
@click.pass_context
@handle_errors
def history(context: click.Context, view: str, fmt: str) -> None:
    """Every version and activation of VIEW, with the SQL diff between activations."""
    result = _ask(context, lambda conn: api.history(conn, view))
    if fmt != "text":
        output_for(fmt, rows="activations").result(result)
        return
    shown = {key: result[key] for key in ("view", "view_id", "dropped_at", "dropped_source", "activations")}
    shown["property changes"] = [
        {
            "committed_at": commit["committed_at"],
            "version_id": commit["version_id"],
            "property_only": commit["property_only"],
            "key": change["key"],
            "before": change["before"],
            "after": change["after"],
        }
        for commit in result["property_changes"]
        for change in commit["changes"]
    ]
    shown["other views at its location or name"] = result["incarnations"]
    output_for(fmt).result(shown)


@cli.command()
@click.argument("view")
@as_of_option
@click.option("--transitive", is_flag=True, help="Follow the views VIEW reads.")
@format_option
@query_options
@click.pass_context
@handle_errors
def deps(context: click.Context, view: str, as_of: str | None, transitive: bool, fmt: str) -> None:
    """The tables VIEW reads."""
    answer = _ask(context, lambda conn: api.deps(conn, view, _as_of(as_of), transitive))
    output_for(fmt, rows="reads").result(answer)


@cli.command()
@click.argument("table")
@as_of_option
@click.option("--transitive", is_flag=True, help="Include views reading TABLE through other views.")
@format_option
@query_options
@click.pass_context
@handle_errors
def uses(context: click.Context, table: str, as_of: str | None, transitive: bool, fmt: str) -> None:
    """The views that read TABLE."""
    answer = _ask(context, lambda conn: api.uses(conn, table, _as_of(as_of), transitive))
    shown = answer if fmt == "json" else {k: v for k, v in answer.items() if k != "not_created_yet"}  # warned
    output_for(fmt, rows="views").result(shown)
    if answer["not_created_yet"] and fmt != "json":
        click.echo(
            f"warning: table {answer['table']} has no metadata file committed by {answer['as_of']} "
            f"(its first is of {answer['created_at']}): the views listed read a table that did not exist yet",
            err=True,
        )
    if answer["dropped_at"] and fmt != "json":
        click.echo(
            f"warning: table {answer['table']} was dropped at {answer['dropped_at']}"
            f"{api.drop_note(answer['dropped_source'])} (its newest metadata file was removed): "
            "the views listed read a table that no longer exists",
            err=True,
        )


@cli.command()
@click.argument("name")
@as_of_option
@click.option(
    "--compare",
    "compare_as_of",
    default=None,
    help="Another time (as --as-of takes it): mark what changed from it to --as-of, edges and views "
    "added and removed.",
)
@click.option("--depth", type=click.IntRange(min=1), default=None, help="Steps up and down  [default: all]")
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*FORMATS, "dot", "mermaid"]),
    default="text",
    show_default=True,
    help="The edges as a table (text, csv, markdown), the whole graph as JSON, or as a Graphviz dot "
    "or Mermaid diagram.",
)
@query_options
@click.pass_context
@handle_errors
def graph(
    context: click.Context,
    name: str,
    as_of: str | None,
    compare_as_of: str | None,
    depth: int | None,
    fmt: str,
) -> None:
    """The lineage around view or table NAME: what it reads and what reads it, through views."""

    answer = _ask(
        context, lambda conn: graphs.lineage_answer(conn, name, _as_of(as_of), depth, _as_of(compare_as_of))
    )
    if fmt == "dot":
        click.echo(graphs.to_dot(answer))
    elif fmt == "mermaid":
        click.echo(graphs.to_mermaid(answer))
    elif fmt == "json":
        output_for(fmt).result(answer)
    else:
        output_for(fmt, rows="edges").result(graphs.edge_rows(answer))


@cli.command("diff")
@click.argument("view")
@click.option(
    "--before", type=int, default=None, help="A version id  [default: the one current before --after]"
)
@click.option("--after", type=int, default=None, help="A version id  [default: the current one]")
@format_option
@query_options
@click.pass_context
@handle_errors
def diff_command(context: click.Context, view: str, before: int | None, after: int | None, fmt: str) -> None:
    """Two versions of VIEW side by side: each dialect's SQL line by line, and the columns and
    defaults that changed."""
    answer = _ask(context, lambda conn: diff.version_diff(conn, view, before, after))
    if fmt in ("csv", "markdown"):
        output_for(fmt, rows="lines").result({"lines": diff.line_rows(answer)})
        return
    if fmt == "json":
        output_for(fmt).result(answer)
        return
    click.echo(
        f"view: {answer['view']}\nversions: {cell(answer['before_version_id']) or 'none'} -> "
        f"{answer['after_version_id']}"
    )
    for dialect in answer["dialects"]:
        click.echo(f"\n-- {dialect['dialect']}{'' if dialect['changed'] else ' (unchanged)'}")
        click.echo(side_by_side_text(dialect["rows"]))
    output_for(fmt).result({"columns": answer["columns"], "defaults": answer["defaults"]})


@cli.command("changes")
@click.option("--since", default=None, help="From this time on (as --as-of takes times).")
@click.option("--until", default=None, help="Before this time.")
@click.option("--namespace", default=None, help="Only views in this namespace (dotted: `acme.finance`).")
@click.option("--engine", default=None, help="Only versions written by this engine (`spark`, `trino`).")
@click.option("--dialect", default=None, help="Only versions with SQL in this dialect.")
@click.option("--kind", type=click.Choice(changes.KINDS), default=None, help="Only changes of this kind.")
@click.option(
    "--view",
    default=None,
    help="Only this view's changes: by name or path, of every view that held it (dropped and re-created).",
)
@click.option(
    "--limit", type=click.IntRange(1, changes.MAX_PAGE), default=50, show_default=True, help="Changes listed."
)
@click.option("--offset", type=OFFSET, default=0, help="Changes skipped, newest first.")
@format_option
@query_options
@click.pass_context
@handle_errors
def changes_command(
    context: click.Context, /, since: str | None, until: str | None, fmt: str, **filters: Any
) -> None:
    """Changes to views across the warehouse, newest first: created (or first-known, when the files
    of its start were deleted), replaced, rolled back, property-only, dropped; with counts per kind,
    day, namespace, engine and dialect."""
    answer = _ask(context, lambda conn: changes.changes(conn, _as_of(since), _as_of(until), **filters))
    output_for(fmt, rows="changes").result(answer)


@cli.command("table-history")
@click.argument("name")
@click.option(
    "--limit",
    type=click.IntRange(1, table_history.MAX_PAGE),
    default=50,
    show_default=True,
    help="Snapshots listed (and changes of main's snapshot).",
)
@click.option("--offset", type=OFFSET, default=0, help="Snapshots skipped, newest first.")
@as_of_option
@format_option
@query_options
@click.pass_context
@handle_errors
def table_history_command(
    context: click.Context, name: str, limit: int, offset: int, as_of: str | None, fmt: str
) -> None:
    """Table NAME over time: its snapshots, newest first (what each commit did, records added and
    deleted), when main's current snapshot changed, and each schema with what changed from the last.
    --as-of says which table a name means (one dropped and created again is another): its whole
    history all the same."""
    answer = _ask(context, lambda conn: table_history.table_history(conn, name, limit, offset, _as_of(as_of)))
    if fmt != "text":
        output_for(fmt, rows="snapshots").result(answer)
        return
    snapshots = [
        {k: v for k, v in row.items() if k not in ("summary", "committed_ms")} for row in answer["snapshots"]
    ]
    schemas = [
        {
            "schema_id": schema["schema_id"],
            "since": schema["since"],
            "columns": schema["columns"],
            "changes": "; ".join(map(table_history.described, schema["changes"])),
        }
        for schema in answer["schemas"]
    ]
    dropped = (
        {"dropped_at": answer["dropped_at"] + api.drop_note(answer["dropped_source"])}
        if answer["dropped_at"]
        else {}
    )
    output_for(fmt, rows="snapshots").result(
        {
            **{key: answer[key] for key in ("table", "table_id")},
            **dropped,
            **{key: answer[key] for key in ("total", "limit", "offset")},
            "snapshots": snapshots,
            "schemas": schemas,
            "main_history": [
                {"made_current_at": row["made_current_at"], "snapshot_id": row["snapshot_id"]}
                for row in answer["main_history"]
            ],
            # The README's "commits per day" (the seventeenth new-user trial: only json had them).
            "by_day": answer["by_day"],
            "records_by_day": answer["records_by_day"],
            # (the nineteenth new-user trial: only json and markdown had them)
            "other tables that had its name": answer["incarnations"],
        }
    )


@cli.command("tables")
@as_of_option
@click.option("--limit", type=click.IntRange(1, api.MAX_PAGE), default=None, help="Tables listed (all).")
@click.option("--offset", type=click.IntRange(0), default=0, show_default=True, help="Tables skipped first.")
@format_option
@query_options
@click.pass_context
@handle_errors
def tables_command(
    context: click.Context, as_of: str | None, limit: int | None, offset: int, fmt: str
) -> None:
    """The tables whose metadata is indexed, as at a time (dropped ones left out), by name."""
    answer = _ask(context, lambda conn: api.tables(conn, _as_of(as_of), limit, offset))
    output_for(fmt, rows="tables").result(answer)


@cli.command("search")
@click.argument("text")
@click.option(
    "--limit", type=click.IntRange(1, search.MAX_RESULTS), default=50, show_default=True, help="Names listed."
)
@format_option
@query_options
@click.pass_context
@handle_errors
def search_command(context: click.Context, text: str, limit: int, fmt: str) -> None:
    """Views and tables one of whose names holds TEXT (any case): exact names first."""
    output_for(fmt, rows="results").result(_ask(context, lambda conn: search.search(conn, text, limit)))


@cli.command("mv-status")
@click.argument("mv", required=False)
@as_of_option
@format_option
@query_options
@click.pass_context
@handle_errors
def mv_status(context: click.Context, mv: str | None, as_of: str | None, fmt: str) -> None:
    """Whether materialized view MV (a view, or a Trino storage table, by name) was FRESH, STALE or
    UNKNOWN at a time, with the reason; every MV when MV is left out."""
    result = _ask(context, lambda conn: mviews.mv_status(conn, mv, _as_of(as_of)))
    if fmt != "text":
        output_for(fmt, rows="materialized_views").result(result)
    else:
        _print_mv_status(result)


def _print_mv_status(result: dict[str, Any]) -> None:
    output = output_for("text")
    if not result["materialized_views"]:
        click.echo("(no rows)")
    for status in result["materialized_views"]:
        click.echo(f"{status['mv']}: {status['state']}")
        refresh = status["refresh"] or {}
        output.result(
            {
                "format": status["format"],
                "storage table": status["storage_table"],
                "refreshed at": refresh.get("refreshed_at"),
                "allow stale data": status["allow_stale_data"],
                "reasons": "\n".join(status["reasons"]) or None,
                "sources": [
                    {
                        "source": source["source"],
                        "state": source["state"],
                        "recorded": source["recorded_snapshot_id"] or source["recorded_version_id"],
                        "now": source.get("snapshot_id") or source.get("version_id"),
                        "stale since": source.get("stale_since"),
                    }
                    for source in status["sources"]
                ],
            }
        )
        click.echo()


@cli.command()
@click.argument("table")
# `multiple` only to refuse a repeat, which click would silently drop for the last one.
@click.option("--drop-column", "drop", metavar="C", multiple=True, help="Column C (nested: a.b) is dropped.")
@click.option("--rename-column", "rename", metavar="A=B", multiple=True, help="Column A is renamed to B.")
@click.option(
    "--change-type", "change_type", metavar="C=TYPE", multiple=True, help="Column C's type becomes TYPE."
)
@as_of_option
@format_option
@query_options
@click.pass_context
@handle_errors
def impact(
    context: click.Context,
    table: str,
    drop: tuple[str, ...],
    rename: tuple[str, ...],
    change_type: tuple[str, ...],
    as_of: str | None,
    fmt: str,
) -> None:
    """The views current at a time that use a column of TABLE, directly or through other views, and
    how (projected, filter, join key, aggregate, ...): what a column change would break."""
    from viewlineage.queries import impact as impact_module

    given = {"drop-column": drop, "rename-column": rename, "change-type": change_type}
    repeated = [f"--{name}" for name, values in given.items() if len(values) > 1]
    if repeated:
        raise UsageError(f"{', '.join(repeated)} given more than once: impact answers for one change")
    change = impact_module.parse_change(*(values[0] if values else None for values in given.values()))
    result = _ask(context, lambda conn: impact_module.impact(conn, table, change, _as_of(as_of)))
    if fmt != "text":
        output_for(fmt, rows="uses").result(result)
        return
    verdict = f"{len(result['views'])} view(s) affected"
    if change.kind == "change-type" and result["is_view"]:
        verdict = (
            f"a view's column, retyped when the view is re-created; {len(result['views'])} view(s) use it"
        )
    elif result["safe"]:
        verdict = f"Iceberg promotes it without rewriting data; {len(result['views'])} view(s) use it"
    elif change.kind == "change-type" and result["column_type"] is not None:
        verdict = (
            "Iceberg refuses this type change (it promotes only int to long, float to double and a "
            f"decimal to a wider precision); {len(result['views'])} view(s) use it"
        )
    if result["stale_schemas"]:
        assumed = len(result["stale_schemas_assumed"])
        verdict += (
            f", {len(result['stale_schemas'])} of them in an output column whose stored type goes stale "
            "(engines refuse such a view until it is re-created"
            + (f"; {assumed} of them assumed: a type that cannot be inferred)" if assumed else ")")
        )
    if result["refused_arguments"]:
        verdict += (
            f", {len(result['refused_arguments'])} of them failing where Spark takes only an INT "
            f"({', '.join(result['refused_arguments'])})"
        )
    running = {use["view"] for use in result["uses"] if use["keeps_running"]}
    if running:
        verdict += f", {len(running)} of them keep running with other values (see `reason`)"
    if result["uncertain"]:
        verdict += f", {result['uncertain']} of them matched uncertainly (see `match`)"
    if result["unresolved"]:
        verdict += (
            f", {result['unresolved']} of them possibly: a schema on the way is not indexed or their "
            "columns could not be analysed, so whether they use the column cannot be told (kind `unknown`)"
        )
    broken = {row["view"] for row in result["already_broken"]} & set(result["views"])
    surely = {row["view"] for row in result["already_broken"] if row["match"] == "exact"} & broken
    if surely:
        verdict += f", {len(surely)} of them already broken (see below)"
    if broken - surely:  # read by a name that only may be the table's
        verdict += (
            f", {len(broken - surely)} {'more ' if surely else 'of them '}possibly already broken (see below)"
        )
    if result["lineage_unknown"]:
        verdict += f"; {len(result['lineage_unknown'])} view(s) of unknown lineage could use it too"
    if result["by_position"]:
        verdict += (
            f"; {len(result['by_position'])} Spark view(s) project it only through `*` (or the struct "
            "holding it), which Spark reads by position, and keep working: "
            + ", ".join(result["by_position"])
        )
    if result["tied"]:
        verdict += (
            f"; {len(result['tied'])} view(s) reading it have tied metadata files (competing-commit): "
            "each file was analysed, and a use found only in one not taken is matched `tied-file`: see `tied`"
        )
    if result["time_travel"]:
        verdict += (
            f"; {len(result['time_travel'])} view(s) read it by time travel or a tag, in that snapshot's "
            f"schema, and are not affected: {', '.join(result['time_travel'])}"
        )
    column_type = result["column_type"] or "type unknown: the table's metadata is not indexed"
    if result["target"] is not None:
        column_type += (
            f" -> {result['target']}" if change.kind == "change-type" else f", to {result['target']}"
        )
    click.echo(f"{change.kind} {result['table']}.{result['column']} ({column_type}): {verdict}")
    if result["stale_schemas"]:
        assumed = result["stale_schemas_assumed"]
        click.echo(
            f"stale stored schemas: {', '.join(result['stale_schemas'])}"
            + (f" (assumed: {', '.join(assumed)})" if assumed else "")
        )
    shown = ["depth", "view", "reads", "column", "kind", "output", "schemas_known", "match"]
    if any(use["reason"] for use in result["uses"]):
        shown.append("reason")
    output_for(fmt).result([{key: use[key] for key in shown} for use in result["uses"]])
    if result["lineage_unknown"]:
        click.echo("lineage unknown:")
        output_for(fmt).result(result["lineage_unknown"])
    if result["already_broken"]:
        click.echo(
            f"already broken: they read columns {result['table']} no longer has (renamed or dropped), "
            "or whose type no longer fits their stored schema (kind stored-type: retyped):"
        )
        output_for(fmt).result(result["already_broken"])
    if result["tied"]:
        click.echo("tied: their file in force ties with others (which holds each view is a guess):")
        output_for(fmt).result(result["tied"])


@cli.command()
@click.option("--code", default=None, help="Only this finding code (a prefix before ':' matches too).")
@click.option("--view", default=None, help="Only this view.")
@click.option(
    "--counts", is_flag=True, help="How many findings of each code and severity, in how many views."
)
@page_options("Findings")
@format_option
@query_options
@click.pass_context
@handle_errors
def findings(
    context: click.Context,
    code: str | None,
    view: str | None,
    counts: bool,
    limit: int | None,
    offset: int,
    fmt: str,
) -> None:
    """Every rule broken by an indexed file or SQL text."""
    if counts and (limit is not None or offset):
        raise UsageError("--counts answers every code at once: leave out --limit and --offset")
    if counts:
        output_for(fmt).result(_ask(context, lambda conn: api.finding_counts(conn, code, view)))
    else:
        output_for(fmt).result(_ask(context, lambda conn: api.findings(conn, code, view, limit, offset)))


@cli.command("files")
@click.argument("locations", nargs=-1, required=True)
@format_option
@query_options
@click.pass_context
@handle_errors
def files_command(context: click.Context, locations: tuple[str, ...], fmt: str) -> None:
    """What the store knows of each metadata file at LOCATIONS: indexed (as which view or table),
    quarantined (why), removed before it was read, or unknown."""
    output_for(fmt).result(_ask(context, lambda conn: api.files(conn, list(locations))))


@cli.command()
@page_options("Files")
@format_option
@query_options
@click.pass_context
@handle_errors
def quarantine(context: click.Context, limit: int | None, offset: int, fmt: str) -> None:
    """Files that could not be indexed, with the reason."""
    output_for(fmt).result(_ask(context, lambda conn: api.quarantine(conn, limit, offset)))


@cli.command()
@click.argument("query")
@format_option
@query_options
@setting_options("sql_max_rows")
@click.pass_context
@handle_errors
def sql(context: click.Context, query: str, fmt: str, sql_max_rows: int | None) -> None:
    """Run QUERY on a read-only, sandboxed connection (no file or network access); `-` reads it
    from standard input."""
    settings = _query_settings(context, sql_max_rows=sql_max_rows)
    most = settings.sql_max_rows
    if query == "-":
        query = sys.stdin.read()

    def run(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
        with process_memory_bounded(conn):
            return api.run_sql(conn, query, most)

    rows = _ask(context, run)
    if len(rows) > most:
        rows = rows[:most]
        click.echo(
            f"warning: more than {most} rows; the first {most} are shown (setting sql-max-rows)", err=True
        )
    output_for(fmt, keep_empty=True).result(rows)


def _system_allocator() -> None:
    """Arrow's default allocator keeps freed memory for reuse; a follower or a 10^6-file index
    would hold its peak for good. The system allocator hands large blocks back."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


class _PandasNotLoaded(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"{name} is not loaded in an indexing process", name=name)


def _without_pandas() -> None:
    """For a process that indexes (and the workers it forks): pyarrow imports pandas, when it is
    installed, on the first `pa.array` of a Python list, to check for pandas objects, which an
    indexing process never makes. That import held 44 MiB in each of an `index`'s three processes;
    refused, pyarrow goes without."""
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _PandasNotLoaded())


M_ARENA_MAX = -8  # glibc's malloc.h
MALLOC_ARENAS = 2


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas, as `MALLOC_ARENA_MAX` would; True if glibc took the setting.

    glibc gives each thread that allocates an arena of its own, up to 8 per core, and keeps what
    each one freed: with an arena per read thread, the store thread and the main thread, indexing
    10^5 files peaked ~35 MiB higher (BENCHMARKS.md, target 6). Python's objects and Arrow's
    buffers (on the system allocator) live in these arenas; DuckDB has jemalloc of its own. A
    `MALLOC_ARENA_MAX` in the environment is the operator's choice and wins; other C libraries
    have no such setting.
    """
    if "MALLOC_ARENA_MAX" in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_ARENA_MAX, arenas))


def indexing_process(settings: Settings | None = None) -> None:
    """What a process that indexes sets up first, before it starts a thread (`index`, `reindex`,
    the followers, the benchmarks that time them): two malloc arenas, the system allocator, and
    pandas refused. Forked workers inherit all three. A warning when `settings` let it hold more
    memory than the machine has."""
    limit_malloc_arenas()
    _system_allocator()
    _without_pandas()
    if settings is not None:
        from viewlineage.indexer.pipeline.memory import machine_memory, over_machine

        if warning := over_machine(settings, machine_memory()):
            click.echo(f"warning: {warning}", err=True)


def _global_option_after_the_command(context: click.Context, parameter: click.Parameter, value: Any) -> None:
    if value not in (None, False):
        context.obj[str(parameter.name)] = value


def _accept_global_options_after_commands() -> None:
    """`viewlineage show V --db x.duckdb` as well as `viewlineage --db x.duckdb show V`, as duckdb and
    dbt users type them: every command takes the group's options too (given after the command,
    they win)."""
    for command in cli.commands.values():
        for option in cli.params:
            if isinstance(option, click.Option) and option.name not in {"version"}:
                command.params.append(
                    click.Option(
                        option.opts,
                        is_flag=option.is_flag,
                        default=None if not option.is_flag else False,
                        expose_value=False,
                        callback=_global_option_after_the_command,
                        help=option.help,
                        type=None if option.is_flag else option.type,
                    )
                )


_accept_global_options_after_commands()


def main() -> None:
    warnings.formatwarning = _warning_line
    cli(prog_name="viewlineage")


def _warning_line(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """A warning as users read it: one line, no source location."""
    return f"warning: {message}\n"


if __name__ == "__main__":
    main()
