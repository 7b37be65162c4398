"""`backfill --engine spark|local` build the same store as `index`, from local paths and s3:// URLs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import pytest

from viewlineage.indexer.pipeline.runs import index_locations

from ..conftest import ROOT, settings_for
from ..generate import Generated, generate
from ..servers import SeaweedS3, seaweed_s3
from ..stores import Snapshot, snapshot

pytestmark = [pytest.mark.integration, pytest.mark.spark]
NAMESPACES = 5
TOP_LEVEL_DIRECTORIES = 10
"""One listing task each: five view namespaces, the base tables' four and `db/` (tables, `broken/`)."""


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Generated]:
    """Realistic history: 100 views x 50 commits over 5 namespaces, both dialects, gzip and plain,
    rollbacks, property-only commits, a version conflict and malformed files."""
    root = tmp_path_factory.mktemp("generated")
    generated = generate(root, views=100, commits=50, seed=11, namespaces=NAMESPACES, realistic=True)
    assert len(generated.files) >= 5000
    return root, generated


@pytest.fixture(scope="module")
def indexed(warehouse: tuple[Path, Generated], tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    root, _ = warehouse
    db = tmp_path_factory.mktemp("index") / "index.duckdb"
    index_locations([str(root)], settings_for(db))
    return snapshot(db)


def run_backfill(db: Path | None, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    command = [sys.executable, "-m", "viewlineage.queries.cli"]
    if db is not None:
        command += ["--db", str(db)]
    result = subprocess.run(
        [*command, "backfill", *args, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary


def test_local_engine_equals_index(
    warehouse: tuple[Path, Generated], indexed: Snapshot, tmp_path: Path
) -> None:
    root, generated = warehouse
    db = tmp_path / "local.duckdb"
    summary = run_backfill(db, str(root), "--engine", "local", "--workers", "2")
    assert (summary["files"], summary["quarantined"]) == (len(generated.files), len(generated.malformed))
    assert summary["parsing_tasks"] >= 2
    assert summary["lineage_computed"] < summary["lineage_requests"]  # deduplicated across partitions
    assert snapshot(db) == indexed


def test_spark_engine_equals_index_and_spreads_the_work(
    warehouse: tuple[Path, Generated], indexed: Snapshot, tmp_path: Path
) -> None:
    root, _ = warehouse
    db = tmp_path / "spark.duckdb"
    out = tmp_path / "dataset"
    summary = run_backfill(
        db, str(root), "--engine", "spark", "--master", "local[2]", "--partitions", "4", "--listing", "tasks",
        "--out", str(out),
    )  # fmt: skip
    assert summary["parsing_tasks"] >= 2
    assert summary["listing_tasks"] == TOP_LEVEL_DIRECTORIES
    assert snapshot(db) == indexed
    # The dataset is readable as is, one directory per table, rows distinct by key.
    with duckdb.connect() as conn:
        versions = conn.execute(
            f"SELECT count(*), count(DISTINCT version_hash) FROM read_parquet('{out}/versions/*.parquet')"
        ).fetchone()
    assert versions is not None and versions[0] == versions[1] == len(indexed["versions"])


@pytest.fixture(scope="module")
def s3_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    """The same shape at a fifth of the size (each file crosses HTTP three times below; the local
    tests take the large one)."""
    root = tmp_path_factory.mktemp("s3-generated")
    generated = generate(root, views=40, commits=25, seed=11, namespaces=NAMESPACES, realistic=True)
    with seaweed_s3(tmp_path_factory.mktemp("seaweed")) as s3:
        client = s3.client()
        client.create_bucket(Bucket="lake")

        def put(path: Path) -> None:
            client.put_object(
                Bucket="lake", Key=f"wh/{path.relative_to(root).as_posix()}", Body=path.read_bytes()
            )

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(put, generated.files))
        yield s3


def test_s3_backfills_equal_index_of_the_same_url(s3_warehouse: SeaweedS3, tmp_path: Path) -> None:
    env = {**os.environ, **s3_warehouse.environment}
    url = "s3://lake/wh"
    common = ["--s3-endpoint", s3_warehouse.endpoint]
    indexed_db, local_db, spark_db = (tmp_path / f"{name}.duckdb" for name in ("index", "local", "spark"))
    cli = [sys.executable, "-m", "viewlineage.queries.cli", "--db", str(indexed_db)]
    index = subprocess.run(
        [*cli, "index", url, *common, "--no-progress"], capture_output=True, text=True, env=env, timeout=600
    )
    assert index.returncode == 0, index.stderr
    run_backfill(local_db, url, "--engine", "local", *common, env=env)
    summary = run_backfill(
        spark_db, url, "--engine", "spark", "--listing", "tasks", "--partitions", "4", *common, env=env
    )
    assert summary["parsing_tasks"] >= 2 and summary["listing_tasks"] == TOP_LEVEL_DIRECTORIES
    expected = snapshot(indexed_db)
    assert len(expected["files"]) >= 1000
    assert snapshot(local_db) == expected
    assert snapshot(spark_db) == expected


@pytest.fixture(scope="session")
def pyspark4_python() -> str:
    """A separate virtual environment with pyspark 4.x and this checkout (reinstalled each run)."""
    venv = ROOT / ".cache" / "pyspark4-venv"
    python = venv / "bin" / "python"
    if not (venv / ".pyspark-installed").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "pyspark>=4,<5", "pandas<3"], check=True, timeout=1800
        )
        (venv / ".pyspark-installed").touch()
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", str(ROOT)],
        check=True,
        timeout=600,
    )
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(ROOT)], check=True, timeout=600)
    return str(python)


def test_spark_4_gives_the_same_store(pyspark4_python: str, tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    generate(root, views=30, commits=20, seed=4, namespaces=3, realistic=True)
    expected = tmp_path / "index.duckdb"
    index_locations([str(root)], settings_for(expected))
    db = tmp_path / "spark4.duckdb"
    version = subprocess.run(
        [pyspark4_python, "-c", "import pyspark; print(pyspark.__version__)"], capture_output=True, text=True
    )
    assert version.stdout.startswith("4."), version
    result = subprocess.run(
        [
            pyspark4_python, "-m", "viewlineage.queries.cli", "--db", str(db), "backfill", str(root),
            "--engine", "spark", "--partitions", "4", "--listing", "driver", "--format", "json",
        ],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["parsing_tasks"] >= 2, summary["listing_tasks"]) == (True, 0)  # listed on the driver
    assert snapshot(db) == snapshot(expected)
