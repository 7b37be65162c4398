"""A seeded generator of view warehouses shaped like Java writers' output, for tests.

Each view gets `commits` metadata files; each file holds the last 10 versions (older ones expire,
as `version.history.num-entries` does), the full version log, and properties. Commits are SQL
replacements, property-only changes or rollbacks. Half the files are gzip. A few extra files are
malformed, and one view has a version conflict (one version id, two contents in two files).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

HISTORY = 10
BASE_MS = 1_700_000_000_000


@dataclass(frozen=True)
class Generated:
    files: list[Path]
    malformed: dict[Path, str]
    """Malformed file -> expected quarantine reason."""


def _sql(rng: random.Random, view: int, version: int, tables: list[str]) -> str:
    a, b = rng.sample(tables, 2)
    shape = rng.randrange(4)
    if shape == 0:
        return f"SELECT * FROM {a} WHERE id > {version}"
    if shape == 1:
        cte = a.split(".")[-1]  # a CTE named like the table it reads
        return f"WITH {cte} AS (SELECT * FROM {a}) SELECT x.id FROM {cte} x JOIN {b} USING (id)"
    if shape == 2:
        return f"SELECT id FROM {a} UNION ALL SELECT id FROM {b} WHERE v = {view}"
    return f"SELECT id, count(*) OVER (PARTITION BY k) FROM {a} WHERE id IN (SELECT id FROM {b})"


def generate(
    root: Path,
    views: int = 25,
    commits: int = 20,
    seed: int = 7,
    namespaces: int = 1,
    realistic: bool = False,
) -> Generated:
    """`namespaces` > 1 spreads the views over `ns0/`, `ns1/`, ... (one `db/` otherwise);
    `realistic` makes about 1 commit in 10 change the SQL (the others: properties, rollbacks)."""
    rng = random.Random(seed)
    weights = [1, 8, 1] if realistic else [6, 3, 1]
    tables = [f"db.t{i}" for i in range(8)] + ["sales.orders", "sales.customers"]
    files: list[Path] = []
    clock = BASE_MS
    for view in range(views):
        view_uuid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        namespace = "db" if namespaces == 1 else f"ns{view % namespaces}"
        directory = root / namespace / f"view_{view:03d}" / "metadata"
        directory.mkdir(parents=True, exist_ok=True)
        versions: list[dict[str, object]] = []
        log: list[dict[str, int]] = []
        properties = {"comment": f"view {view}"}
        current = 0
        for commit in range(commits):
            clock += rng.randrange(1_000, 60_000)
            kind = "create" if commit == 0 else rng.choices(["replace", "properties", "rollback"], weights)[0]
            if kind == "rollback" and len(versions) < 2:
                kind = "properties"
            if kind in ("create", "replace"):
                current = len(versions) + 1
                dialects = ["spark"] if view % 3 else ["spark", "trino"]
                sql = _sql(rng, view, current, tables)
                versions.append(
                    {
                        "version-id": current,
                        "timestamp-ms": clock,
                        "schema-id": 0,
                        "summary": {"engine-name": "spark", "engine-version": "3.5.9"},
                        "default-namespace": ["db"],
                        "representations": [{"type": "sql", "sql": sql, "dialect": d} for d in dialects],
                    }
                )
                log.append({"timestamp-ms": clock, "version-id": current})
            elif kind == "rollback":
                current = rng.choice(
                    [v["version-id"] for v in versions[-HISTORY:] if v["version-id"] != current]
                )
                log.append({"timestamp-ms": clock, "version-id": current})
            else:
                properties = {**properties, "touched": str(commit)}
            document = {
                "view-uuid": view_uuid,
                "format-version": 1,
                "location": str(directory.parent),
                "current-version-id": current,
                "schemas": [
                    {
                        "type": "struct",
                        "schema-id": 0,
                        "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
                    }
                ],
                "versions": versions[-HISTORY:],
                "version-log": log,
                "properties": dict(properties),
            }
            files.append(_write(directory, commit, document, rng, clock))
    # A version conflict: the same view-uuid and version id with another SQL, in a competing file.
    conflict_source = json.loads(_read(files[0]))
    conflict_source["versions"][0]["representations"][0]["sql"] = "SELECT 'conflict' AS c FROM db.t0"
    files.append(_write(files[0].parent, 0, conflict_source, rng, BASE_MS + 1))
    malformed = _malformed(root / "db" / "broken" / "metadata")
    return Generated(files + list(malformed), malformed)


def _write(
    directory: Path, sequence: int, document: dict[str, object], rng: random.Random, mtime_ms: int
) -> Path:
    data = json.dumps(document).encode()
    name = f"{sequence:05d}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
    if rng.random() < 0.5:
        path = directory / f"{name}.gz.metadata.json"
        path.write_bytes(gzip.compress(data, mtime=0))
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
