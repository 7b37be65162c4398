"""A seeded generator of Iceberg warehouses shaped like Java writers' output, for tests and benchmarks.

    python -m tests.generate OUT [--views N] [--commits M] [--namespaces K] [--mode worst|realistic]

Each view gets `commits` metadata files. Like Java's `ViewMetadata.Builder`, a file holds the last 10
versions (`version.history.num-entries`), the version log trimmed to the entries of retained
versions, the schemas those versions use, and properties. SQL is 200-5,000 characters of joins,
CTEs (some named like the tables they read), subqueries, unions and window functions; views are
spark-only, trino-only or both; views read other views up to depth 5. Commits change the SQL, only
properties, or roll back: in `worst` mode every commit changes the SQL, in `realistic` mode about 1
in 10 does. Half the files are gzip. Base tables get table metadata files (format v2, growing
snapshot lists). A few extra files are malformed, and one view has a version conflict (one version
id, two contents in two files). Each view's files depend only on (seed, view), so views can be
generated in parallel (`workers`) with identical bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HISTORY = 10
BASE_MS = 1_700_000_000_000
MAX_DEPTH = 5
BASE_TABLES = (
    ("sales", "orders"),
    ("sales", "customers"),
    ("sales", "line_items"),
    ("web", "events"),
    ("web", "sessions"),
    ("finance", "invoices"),
    ("finance", "payments"),
    ("ops", "shipments"),
    ("ops", "inventory"),
    ("db", "t0"),
)
COLUMNS = ("id", "customer_id", "order_id", "amount", "status", "region", "created_at", "quantity", "price")
TYPES = ("long", "string", "double", "timestamptz", "int", "date", "decimal(18,2)", "boolean")
MODES = ("worst", "realistic")


@dataclass(frozen=True)
class Generated:
    files: list[Path]
    malformed: dict[Path, str]
    """Malformed file -> expected quarantine reason."""


@dataclass(frozen=True)
class Shape:
    views: int
    commits: int
    seed: int
    namespaces: int
    mode: str

    def namespace(self, view: int) -> str:
        return "db" if self.namespaces == 1 else f"ns{view % self.namespaces}"

    def view_name(self, view: int) -> str:
        return f"{self.namespace(view)}.view_{view:05d}"


class _SQL:
    """One view's SQL: a chain of CTEs over base tables and lower views, then a final query."""

    def __init__(self, rng: random.Random, sources: list[str]) -> None:
        self.rng = rng
        self.sources = sources

    def texts(self, dialects: list[str], target: int) -> list[str]:
        """The same query in each dialect, quoted its way."""
        state = self.rng.getstate()
        texts = []
        for dialect in dialects:
            self.rng.setstate(state)
            texts.append(self._text(dialect, target))
        return texts

    def _text(self, dialect: str, target: int) -> str:
        rng = self.rng
        quote = "`" if dialect == "spark" else '"'
        ctes: list[tuple[str, str]] = []
        names: list[str] = []
        length = 0
        while length < target - 200 and length < 4_400:
            name, body = self._cte(len(ctes), names, quote)
            ctes.append((name, body))
            names.append(name)
            length += len(name) + len(body) + 8
        sources = names[-2:] or [rng.choice(self.sources)]
        final = self._select(sources[-1], rng.choice(self.sources), quote)
        if not ctes:
            return final
        return "WITH " + ",\n".join(f"{name} AS (\n  {body}\n)" for name, body in ctes) + "\n" + final

    def _column(self, quote: str) -> str:
        column = self.rng.choice(COLUMNS)
        return f"{quote}{column}{quote}" if self.rng.random() < 0.2 else column

    def _cte(self, index: int, earlier: list[str], quote: str) -> tuple[str, str]:
        rng = self.rng
        table = rng.choice(self.sources)
        reads = [table, *earlier[-1:]] if earlier and rng.random() < 0.5 else [table]
        # Some CTEs are named like the table they read: lineage must not mistake one for the other.
        name = table.split(".")[-1] if index == 0 and rng.random() < 0.3 else f"step_{index}"
        other = rng.choice([*self.sources, *earlier])
        c1, c2, c3 = (self._column(quote) for _ in range(3))
        shape = rng.randrange(5)
        if shape == 0:
            body = (
                f"SELECT {c1}, sum({c2}) AS total, count(*) AS n, max({c3}) AS latest FROM {reads[-1]} "
                f"WHERE {c3} IS NOT NULL AND status <> 'cancelled' GROUP BY {c1}"
            )
        elif shape == 1:
            body = (
                f"SELECT a.id, a.{c1}, b.{c2}, coalesce(b.amount, 0) AS amount FROM {reads[0]} a "
                f"LEFT JOIN {other} b ON a.id = b.{rng.choice(('customer_id', 'order_id', 'id'))} "
                f"WHERE a.created_at >= DATE '2024-0{rng.randrange(1, 10)}-01'"
            )
        elif shape == 2:
            body = (
                f"SELECT *, row_number() OVER (PARTITION BY {c1} ORDER BY {c2} DESC) AS rn, "
                f"sum(amount) OVER (PARTITION BY region ORDER BY created_at "
                f"ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running FROM {reads[-1]}"
            )
        elif shape == 3:
            body = (
                f"SELECT id, {c1}, {c2} FROM {reads[0]} WHERE id IN (SELECT {c3} FROM {other} "
                f"WHERE amount > {rng.randrange(1, 10_000)}) AND region IN ('eu', 'us', 'apac')"
            )
        else:
            body = (
                f"SELECT id, {c1} FROM {reads[0]} UNION ALL SELECT id, {c1} FROM {other} "
                f"WHERE quantity BETWEEN {rng.randrange(10)} AND {rng.randrange(10, 100)}"
            )
        return name, body

    def _select(self, source: str, joined: str, quote: str) -> str:
        rng = self.rng
        c1, c2 = self._column(quote), self._column(quote)
        return (
            f"SELECT x.id, x.{c1}, y.{c2}, CASE WHEN y.amount > {rng.randrange(100, 999)} THEN 'large' "
            f"ELSE 'small' END AS bucket FROM {source} x JOIN {joined} y ON x.id = y.id "
            f"WHERE y.status = 'open'"
        )


def _sources(shape: Shape, view: int, rng: random.Random) -> list[str]:
    """Base tables, plus for a view at depth d > 0 the view one level down (depth = view % 6)."""
    tables = [".".join(table) for table in rng.sample(BASE_TABLES, 4)]
    depth = view % (MAX_DEPTH + 1)
    if depth and view >= depth:
        tables.append(shape.view_name(view - 1))
    return tables


def _schema(rng: random.Random, schema_id: int) -> dict[str, Any]:
    names = rng.sample([*COLUMNS, "bucket", "total", "n", "rn", "running", "latest"], rng.randrange(3, 12))
    fields = [
        {"id": i + 1, "name": name, "required": rng.random() < 0.2, "type": rng.choice(TYPES)}
        for i, name in enumerate(names)
    ]
    return {"type": "struct", "schema-id": schema_id, "fields": fields}


def _view_files(shape: Shape, view: int, root: Path) -> list[Path]:
    rng = random.Random(f"{shape.seed}:{view}")
    view_uuid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    namespace = shape.namespace(view)
    directory = root / namespace / f"view_{view:05d}" / "metadata"
    directory.mkdir(parents=True, exist_ok=True)
    dialects = (["spark"], ["trino"], ["spark", "trino"])[view % 3]
    sql = _SQL(rng, _sources(shape, view, rng))
    weights = [1, 8, 1] if shape.mode == "realistic" else [1, 0, 0]
    versions: list[dict[str, Any]] = []
    schemas: dict[int, dict[str, Any]] = {}
    log: list[dict[str, int]] = []
    properties = {"comment": f"view {view}", "owner": f"team-{view % 7}"}
    current = 0
    clock = BASE_MS + view * 1_000
    files = []
    for commit in range(shape.commits):
        clock += rng.randrange(1_000, 600_000)
        kind = "create" if commit == 0 else rng.choices(["replace", "properties", "rollback"], weights)[0]
        if kind == "rollback" and len(versions) < 2:
            kind = "properties"
        if kind in ("create", "replace"):
            current = len(versions) + 1
            schemas[current] = _schema(rng, current)
            target = int(math.exp(rng.uniform(math.log(200), math.log(5_000))))
            versions.append(
                {
                    "version-id": current,
                    "timestamp-ms": clock,
                    "schema-id": current,
                    "summary": {"engine-name": dialects[0], "engine-version": "3.5.9"},
                    "default-namespace": [namespace],
                    "representations": [
                        {"type": "sql", "sql": text, "dialect": dialect}
                        for dialect, text in zip(dialects, sql.texts(dialects, target), strict=True)
                    ],
                }
            )
            log.append({"timestamp-ms": clock, "version-id": current})
        elif kind == "rollback":
            retained = [v["version-id"] for v in versions[-HISTORY:] if v["version-id"] != current]
            current = rng.choice(retained)
            log.append({"timestamp-ms": clock, "version-id": current})
        else:
            properties = {**properties, "touched": str(commit)}
        retained = versions[-HISTORY:]
        log = _trim_log(log, {v["version-id"] for v in retained})
        document = {
            "view-uuid": view_uuid,
            "format-version": 1,
            "location": str(directory.parent),
            "current-version-id": current,
            "schemas": [schemas[v["schema-id"]] for v in retained],
            "versions": retained,
            "version-log": log,
            "properties": dict(properties),
        }
        files.append(_write(directory, commit, document, rng, clock))
    return files


def _trim_log(log: list[dict[str, int]], retained: set[int]) -> list[dict[str, int]]:
    """Java's `updateHistory`: keep the entries after the last one naming an expired version."""
    kept: list[dict[str, int]] = []
    for entry in log:
        kept = [*kept, entry] if entry["version-id"] in retained else []
    return kept


def _table_files(shape: Shape, root: Path) -> list[Path]:
    """Metadata files of the base tables: one per snapshot, the snapshot list growing."""
    files = []
    for index, (namespace, name) in enumerate(BASE_TABLES):
        rng = random.Random(f"{shape.seed}:table:{index}")
        directory = root / namespace / name / "metadata"
        directory.mkdir(parents=True, exist_ok=True)
        table_uuid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        schema = _schema(rng, 0)
        snapshots: list[dict[str, Any]] = []
        clock = BASE_MS
        for commit in range(max(1, shape.commits // 10)):
            clock += rng.randrange(60_000, 3_600_000)
            snapshot_id = rng.getrandbits(62)
            snapshots.append(
                {
                    "snapshot-id": snapshot_id,
                    **({"parent-snapshot-id": snapshots[-1]["snapshot-id"]} if snapshots else {}),
                    "sequence-number": commit + 1,
                    "timestamp-ms": clock,
                    "manifest-list": f"{directory.parent}/metadata/snap-{snapshot_id}.avro",
                    "summary": {"operation": rng.choice(["append", "overwrite", "replace"])},
                    "schema-id": 0,
                }
            )
            document = {
                "format-version": 2,
                "table-uuid": table_uuid,
                "location": str(directory.parent),
                "last-sequence-number": commit + 1,
                "last-updated-ms": clock,
                "last-column-id": len(schema["fields"]),
                "current-schema-id": 0,
                "schemas": [schema],
                "default-spec-id": 0,
                "partition-specs": [{"spec-id": 0, "fields": []}],
                "last-partition-id": 999,
                "default-sort-order-id": 0,
                "sort-orders": [{"order-id": 0, "fields": []}],
                "properties": {},
                "current-snapshot-id": snapshot_id,
                "refs": {"main": {"snapshot-id": snapshot_id, "type": "branch"}},
                "snapshots": snapshots,
                "snapshot-log": [
                    {"timestamp-ms": s["timestamp-ms"], "snapshot-id": s["snapshot-id"]} for s in snapshots
                ],
                "metadata-log": [],
            }
            files.append(_write(directory, commit, document, rng, clock))
    return files


def _views_between(args: tuple[Shape, int, int, Path]) -> list[Path]:
    shape, start, stop, root = args
    return [path for view in range(start, stop) for path in _view_files(shape, view, root)]


def generate(
    root: Path,
    views: int = 25,
    commits: int = 20,
    seed: int = 7,
    namespaces: int = 1,
    realistic: bool = False,
    workers: int = 1,
) -> Generated:
    """`namespaces` > 1 spreads the views over `ns0/`, `ns1/`, ... (one `db/` otherwise);
    `realistic` makes about 1 commit in 10 change the SQL (worst case otherwise: all of them)."""
    shape = Shape(views, commits, seed, namespaces, "realistic" if realistic else "worst")
    step = max(1, math.ceil(views / (workers * 8)))
    chunks = [(shape, start, min(views, start + step), root) for start in range(0, views, step)]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            files = [path for chunk in pool.map(_views_between, chunks) for path in chunk]
    else:
        files = [path for chunk in map(_views_between, chunks) for path in chunk]
    files += _table_files(shape, root)
    # A version conflict: the same view-uuid and version id with another SQL, in a competing file.
    conflict_source = json.loads(_read(files[0]))
    conflict_source["versions"][0]["representations"][0]["sql"] = "SELECT 'conflict' AS c FROM db.t0"
    files.append(_write(files[0].parent, 0, conflict_source, random.Random(seed), BASE_MS + 1))
    malformed = _malformed(root / "db" / "broken" / "metadata")
    return Generated(files + list(malformed), malformed)


def _write(
    directory: Path, sequence: int, document: dict[str, object], rng: random.Random, mtime_ms: int
) -> Path:
    data = json.dumps(document).encode()
    name = f"{sequence:05d}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
    if rng.random() < 0.5:
        path = directory / f"{name}.gz.metadata.json"
        path.write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
    else:
        path = directory / f"{name}.metadata.json"
        path.write_bytes(data)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _malformed(directory: Path) -> dict[Path, str]:
    directory.mkdir(parents=True, exist_ok=True)
    cases = {
        "00001-truncated.gz.metadata.json": (gzip.compress(b'{"view-uuid": "x"' * 50)[:40], "truncated-gzip"),
        "00002-invalid.metadata.json": (b'{"view-uuid": ', "not-json"),
        "00003-array.metadata.json": (b"[1, 2]", "not-object"),
        "00004-fragment.metadata.json": (b'{"version-id": 1, "representations": []}', "not-metadata"),
    }
    written = {}
    for name, (data, reason) in cases.items():
        path = directory / name
        path.write_bytes(data)
        written[path] = reason
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path)
    parser.add_argument("--views", type=int, default=100)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--mode", choices=MODES, default="realistic")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    generated = generate(
        args.out, args.views, args.commits, args.seed, args.namespaces, args.mode == "realistic", args.workers
    )
    size = sum(path.stat().st_size for path in generated.files)
    print(f"{len(generated.files)} files, {size / 2**20:.1f} MiB in {args.out}")


if __name__ == "__main__":
    main()
