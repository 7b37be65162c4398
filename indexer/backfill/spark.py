"""`backfill --engine spark`: the bulk stages as Spark tasks (needs `viewlineage[spark]`).

Stage 1 runs `stages.index_files` per partition of listed files through `mapInArrow`; each task
emits envelopes (store table name, Arrow IPC bytes of at most ~8 MiB of its rows), written once to
`<dataset>/_envelopes/files/table=<name>/`. Each store table is then read from its own directory,
decoded, deduplicated by its key and written as Parquet: no pass reads another table's rows, and
no executor holds more than a cell of them (an envelope persisted in memory ran a 3 GiB executor
out of heap at 10^5 files). Lineage requests are deduplicated by key across the job,
repartitioned, and stage 2 runs `stages.analyse_lineage` per partition the same way. Accumulators
count the tasks that parsed files and the tasks that listed prefixes.

Listing: on the driver (`--listing driver`), or, for large warehouses (`tasks`), the driver lists
the roots' immediate sub-directories (namespaces) and each is listed by a task: object-store
listing is the slow part at 10^7 files. `auto` lists in tasks when a root has 16 or more.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.ipc as ipc

from viewlineage.indexer.backfill.stages import LINEAGE_REQUESTS
from viewlineage.indexer.config import Settings
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.sources.read import LISTED, ListedFile, listed_table, reader_for
from viewlineage.sinks.tables import PRIMARY_KEYS, SCHEMAS

if TYPE_CHECKING:
    from viewlineage.indexer.backfill.stages import BackfillStats, StageTimer

ENVELOPE = pa.schema([("table", pa.string()), ("rows", pa.binary())])
TASK_LISTING_THRESHOLD = 16
FILES_PER_TASK = 2_000
LINEAGE_TABLES = ("lineage", "table_references", "lineage_findings")
ENVELOPE_CELL_BYTES = 8 * 2**20
"""A JVM copies an envelope cell whole into one row buffer: cells stay small beside any heap."""


def _pack(tables: dict[str, pa.Table], cell_bytes: int = ENVELOPE_CELL_BYTES) -> pa.RecordBatch:
    """One envelope row per slice of a table of about `cell_bytes` of Arrow data (one row at least)."""
    names, payloads = [], []
    for name, table in tables.items():
        if not table.num_rows:
            continue
        rows_per_cell = max(1, table.num_rows * cell_bytes // max(table.nbytes, 1))
        for cell in table.to_batches(max_chunksize=rows_per_cell):
            sink = io.BytesIO()
            with ipc.new_stream(sink, table.schema) as writer:
                writer.write_batch(cell)
            names.append(name)
            payloads.append(sink.getvalue())
    return pa.record_batch([pa.array(names, pa.string()), pa.array(payloads, pa.binary())], schema=ENVELOPE)


def _unpack(schema: pa.Schema) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Envelope cells (a `rows` column) back into rows of `schema`."""

    def unpack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column("rows").to_pylist():
                yield from ipc.open_stream(payload).read_all().cast(schema).to_batches()

    return unpack


def _stage(envelopes: Any, directory: str) -> None:
    """Write envelopes to disk, one sub-directory per store table (Spark's `table=<name>`)."""
    envelopes.write.mode("overwrite").partitionBy("table").parquet(directory)


def _staged(spark: Any, directory: str, name: str, schema: pa.Schema) -> Any:
    """One store table's rows from a staged directory; only its own sub-directory is read."""
    from pyspark.sql.functions import col
    from pyspark.sql.pandas.types import from_arrow_schema

    cells = spark.read.schema(from_arrow_schema(ENVELOPE)).parquet(directory).where(col("table") == name)
    return cells.select("rows").mapInArrow(_unpack(schema), from_arrow_schema(schema))


def _spark_session(master: str, partitions: int, conf: dict[str, str]) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName("viewlineage-backfill")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    if master.startswith("local"):
        builder = (
            builder.config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
        )
    return builder.getOrCreate()


def _split_listing(roots: list[str], settings: Settings, listing: str) -> tuple[list[str], pa.Table]:
    """(prefixes for listing tasks, files the driver lists): with `tasks`, each root's immediate
    sub-directories go to tasks and only the files directly in it are listed here."""
    from viewlineage.indexer.backfill.stages import list_on_driver

    if listing == "driver":
        return [], list_on_driver(roots, settings)
    prefixes: list[str] = []
    rows: list[ListedFile] = []
    driver_roots: list[str] = []
    for root in roots:
        directories, files = reader_for(root, settings.s3_endpoint).children(root)
        if listing == "tasks" or len(directories) >= TASK_LISTING_THRESHOLD:
            prefixes.extend(directories)
            rows.extend(files)
        else:
            driver_roots.append(root)
    return prefixes, pa.concat_tables([list_on_driver(driver_roots, settings), listed_table(rows)])


def run_spark(
    roots: list[str],
    settings: Settings,
    config: ParseConfig,
    dataset: str,
    master: str,
    partitions: int | None,
    listing: str,
    spark_conf: dict[str, str],
    stats: BackfillStats,
    timed: StageTimer,
    progress: Callable[[str], None],
) -> None:
    from pyspark import StorageLevel
    from pyspark.sql.pandas.types import from_arrow_schema

    from viewlineage.indexer.backfill.stages import timed_analyse_lineage, timed_index_files

    staging = f"{dataset}/_envelopes"
    file_cells, lineage_cells = f"{staging}/files", f"{staging}/lineage"
    spark = _spark_session(master, partitions or 4, spark_conf)
    context = spark.sparkContext
    parsing_tasks = context.accumulator(0)
    listing_tasks = context.accumulator(0)
    lineage_requests = context.accumulator(0)
    read_seconds, parse_seconds, lineage_seconds = (context.accumulator(0.0) for _ in range(3))
    try:
        with timed("listing"):
            in_tasks, listed = _split_listing(roots, settings, listing)
            # Rows, not pandas: pandas turns missing sizes into NaN, which LongType refuses.
            frames = [spark.createDataFrame(listed.to_pylist(), schema=from_arrow_schema(LISTED))]
            if in_tasks:

                def list_prefix(prefix: str) -> Iterator[tuple[str, int | None, int | None]]:
                    listing_tasks.add(1)
                    for item in reader_for(prefix, settings.s3_endpoint).list(prefix):
                        yield (item.location, item.size, item.modified_ms)

                rdd = context.parallelize(in_tasks, len(in_tasks)).flatMap(list_prefix)
                frames.append(spark.createDataFrame(rdd, schema=from_arrow_schema(LISTED)))
            files = frames[0]
            for frame in frames[1:]:
                files = files.unionByName(frame)
            files = files.persist(StorageLevel.MEMORY_AND_DISK)
            stats.listed = files.count()
            # Small tasks: a lost one retries little, and no envelope grows past what a JVM holds.
            partitions = partitions or max(context.defaultParallelism * 2, -(-stats.listed // FILES_PER_TASK))
            files = files.repartition(partitions, "location")
        progress(f"listed {stats.listed} files")

        def parse_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            listed_rows = pa.Table.from_batches(list(batches), schema=LISTED)
            if listed_rows.num_rows:
                parsing_tasks.add(1)
            tables, reading, parsing = timed_index_files(listed_rows, settings, config)
            read_seconds.add(reading)
            parse_seconds.add(parsing)
            lineage_requests.add(tables["lineage_requests"].num_rows)
            yield _pack(tables)

        with timed("read+parse"):
            _stage(files.mapInArrow(parse_partition, from_arrow_schema(ENVELOPE)), file_cells)
        with timed("write"):
            for name in SCHEMAS:
                if name not in LINEAGE_TABLES:
                    _write(_staged(spark, file_cells, name, SCHEMAS[name]), name, dataset, partitions)
        with timed("lineage"):
            requests = (
                _staged(spark, file_cells, "lineage_requests", LINEAGE_REQUESTS)
                .dropDuplicates(["lineage_key"])
                .repartition(partitions, "lineage_key")
                .persist(StorageLevel.MEMORY_AND_DISK)
            )
            stats.lineage_computed = requests.count()

            def lineage_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
                requests_rows = pa.Table.from_batches(list(batches), schema=LINEAGE_REQUESTS)
                tables, seconds = timed_analyse_lineage(requests_rows, config)
                lineage_seconds.add(seconds)
                yield _pack(tables)

            _stage(requests.mapInArrow(lineage_partition, from_arrow_schema(ENVELOPE)), lineage_cells)
            for name in LINEAGE_TABLES:
                _write(_staged(spark, lineage_cells, name, SCHEMAS[name]), name, dataset, partitions)
        counts = (
            spark.read.parquet(f"{dataset}/files").count(),
            spark.read.parquet(f"{dataset}/quarantine").count(),
        )
        stats.indexed, stats.quarantined = counts
        stats.parsing_tasks = parsing_tasks.value
        stats.listing_tasks = listing_tasks.value
        stats.lineage_requests = lineage_requests.value
        stats.task_seconds = {
            "read": read_seconds.value,
            "parse": parse_seconds.value,
            "lineage": lineage_seconds.value,
        }
    finally:
        spark.stop()
        shutil.rmtree(staging, ignore_errors=True)


def _write(rows: Any, name: str, dataset: str, partitions: int) -> None:
    rows = rows.dropDuplicates(list(PRIMARY_KEYS[name]))
    rows.coalesce(max(1, partitions // 4)).write.mode("overwrite").parquet(f"{dataset}/{name}")
