from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from viewlineage.indexer.config import Settings, load_settings
from viewlineage.queries.analyses import ANALYSES

from .data.restore_mtimes import SAMPLE, restore_mtimes

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI=true a skipped test is a failure: a real component that did not run tested nothing."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if os.environ.get("CI") == "true" and skipped and exitstatus == pytest.ExitCode.OK:
        print(f"\nCI=true: {len(skipped)} skipped test(s) count as failures")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _isolate_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own VIEWLINEAGE_* variables must not leak into tests."""
    for name in list(os.environ):
        if name.startswith("VIEWLINEAGE_"):
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _fresh_analyses() -> None:
    """Each test works out its column analyses itself: the process keeps them (`ANALYSES`), and a
    test of how long analyses take must not find another test's."""
    ANALYSES.clear()


@pytest.fixture(scope="session")
def sample_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the committed real-writer warehouse with its recorded mtimes."""
    target = tmp_path_factory.mktemp("sample") / "warehouse"
    shutil.copytree(SAMPLE / "warehouse", target)
    restore_mtimes(SAMPLE, target)
    return target


def settings_for(db: Path, *catalog_map: str, **extra: object) -> Settings:
    return load_settings(environ={}, flags={"db": str(db), "catalog_map": catalog_map, **extra})


@pytest.fixture(scope="session")
def sample_store(sample_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from viewlineage.indexer.pipeline.runs import index_locations

    db = tmp_path_factory.mktemp("store") / "sample.duckdb"
    index_locations([str(sample_warehouse)], settings_for(db, f"{sample_warehouse}=prod"))
    yield db


def _scenario_store(factory: pytest.TempPathFactory, build: Callable[[Path], None]) -> Path:
    from viewlineage.indexer.pipeline.runs import index_locations

    root = factory.mktemp("scenario") / "warehouse"
    build(root)
    db = root.parent / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    return db


@pytest.fixture(scope="session")
def mv_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of `mv_scenario`'s warehouse: materialized views in the four formats."""
    from . import mv_scenario

    return _scenario_store(tmp_path_factory, mv_scenario.build)


@pytest.fixture(scope="session")
def table_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of `table_scenario`'s warehouse: a table whose schema evolves."""
    from . import table_scenario

    return _scenario_store(tmp_path_factory, table_scenario.build)


@pytest.fixture(scope="session")
def impact_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of `impact_scenario`'s warehouse: views using `prod.db.orders` in every way."""
    from . import impact_scenario

    return _scenario_store(tmp_path_factory, impact_scenario.build)


@pytest.fixture(scope="session")
def iceberg_jars() -> str:
    """spark.jars for Spark 3.5 + Iceberg 1.10, prepared by the shared recipe (idempotent, ~1 s when
    already prepared). It installs into the interpreter running the tests, so `python` is put first."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    cache = ROOT / ".cache" / "iceberg-spark"
    cache.parent.mkdir(parents=True, exist_ok=True)
    # Each xdist worker prepares it: one at a time (two at once raced on the recipe's temporary files).
    with (cache.parent / "iceberg-spark.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            ["bash", str(SHARED / "iceberg-spark" / "setup.sh"), str(cache)],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout.strip().splitlines()[-1]
