"""The code layout's rules (README, "Code layout"): rooms with docstrings, imports that run one way
(the import contracts in pyproject.toml, checked by import-linter), and a wheel that holds every
room and runs from a fresh environment, Spark executors included."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT
from .stores import snapshot

ROOMS = ("indexer", "sinks", "queries")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)} if pythonpath else None
    return subprocess.run(
        [str(LINT_IMPORTS), str(cwd / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_import_contracts_hold() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Contracts: 4 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        (
            "indexer/parse/metadata.py",
            "import duckdb",
            "The pure rooms do no I/O and know nothing of the rooms that do",
        ),
        (
            "indexer/lineage/tables.py",
            "from viewlineage.indexer.pipeline.rows import Batch",
            "The pure rooms do no I/O and know nothing of the rooms that do",
        ),
        (
            "indexer/spec/base.py",
            "from concurrent.futures import ThreadPoolExecutor",
            "The pure rooms do no I/O and know nothing of the rooms that do",
        ),
        (
            "sinks/store.py",
            "from viewlineage.indexer.sources.read import FileRead",
            "The sinks take Arrow tables and know nothing of who builds them",
        ),
        (
            "sinks/tables.py",
            "from viewlineage.indexer.parse.config import ParseConfig",
            "The sinks take Arrow tables and know nothing of who builds them",
        ),
        (
            "indexer/sources/read.py",
            "from viewlineage.indexer.pipeline.reads import ReadFailure",
            "Imports run one way: from the queries down through the processes and the sinks to the pure core",
        ),
        (
            # The cycle the store and its readers had: an import for type checking is an import.
            "sinks/readers.py",
            "if TYPE_CHECKING:\n    from viewlineage.sinks.store import Store",
            "No import cycle between the modules or packages of any package",
        ),
    ],
)
def test_import_contracts_catch_a_planted_import(
    tmp_path: Path, module: str, planted: str, broken: str
) -> None:
    """Each contract fails on the kind of import it forbids, planted in a copy of the code."""
    package = tmp_path / "viewlineage"
    for room in ROOMS:
        shutil.copytree(ROOT / room, package / room, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    target = package / module
    source = target.read_text()
    anchor = "from __future__ import annotations\n"
    target.write_text(source.replace(anchor, f"{anchor}from typing import TYPE_CHECKING\n{planted}\n", 1))
    result = _lint_imports(tmp_path, pythonpath=tmp_path)
    assert result.returncode == 1, result.stdout[-4000:] + result.stderr[-2000:]
    assert f"{broken} BROKEN" in " ".join(result.stdout.split())


def _packages() -> list[Path]:
    return sorted({path.parent for room in ROOMS for path in (ROOT / room).rglob("*.py")})


def test_every_module_has_a_room_with_a_docstring_that_says_what_it_may_import() -> None:
    indexer_modules = sorted(path.name for path in (ROOT / "indexer").glob("*.py"))
    assert indexer_modules == ["__init__.py", "config.py", "errors.py", "faults.py"]
    for package in _packages():
        init = package / "__init__.py"
        assert init.exists(), f"{package.relative_to(ROOT)} is no package"
        docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "import" in docstring, f"{init.relative_to(ROOT)} does not say what the room may import"


def test_package_inits_hold_only_their_docstrings() -> None:
    """An `__init__` runs whenever any module below it is imported: code there would reach every
    room past the contracts (which see only modules)."""
    for package in _packages():
        body = ast.parse((package / "__init__.py").read_text()).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr), f"{package.relative_to(ROOT)}/__init__.py"


CYCLES = """
import json, sys
import grimp
graph = grimp.build_graph(*sys.argv[1:])  # imports for type checking included: they are imports
print(json.dumps(sorted(
    f"{module} -> {imported}"
    for module in graph.modules
    for imported in graph.find_modules_directly_imported_by(module)
    if graph.chain_exists(importer=imported, imported=module)
)))
"""


def _import_cycles(pythonpath: Path | None = None) -> list[str]:
    """Every import that some chain of imports leads back from, across the three packages."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)} if pythonpath else None
    found = subprocess.run(
        [sys.executable, "-c", CYCLES, "viewlineage.indexer", "viewlineage.sinks", "viewlineage.queries"],
        capture_output=True, text=True, env=env, check=True, timeout=120,
    )  # fmt: skip
    cycles: list[str] = json.loads(found.stdout)
    return cycles


def test_no_module_imports_itself_through_any_chain(tmp_path: Path) -> None:
    assert _import_cycles() == []
    package = tmp_path / "viewlineage"  # the store and the errors it raises, in a circle
    for room in ROOMS:
        shutil.copytree(ROOT / room, package / room, ignore=shutil.ignore_patterns("__pycache__"))
    errors = package / "indexer" / "errors.py"
    errors.write_text(errors.read_text() + "\nfrom viewlineage.sinks import spool  # noqa\n")
    assert "viewlineage.indexer.errors -> viewlineage.sinks.spool" in _import_cycles(tmp_path)


def test_the_pure_rooms_open_no_files() -> None:
    """What the import contracts cannot see: the builtin `open` and the `os` functions."""
    for room in ("spec", "parse", "lineage"):
        for path in (ROOT / "indexer" / room).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
                assert not (isinstance(node, ast.Name) and node.id == "open"), where
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "os"
                ):
                    assert node.attr == "getcwd", where


DOTTED = re.compile(r"\bviewlineage\.(?:indexer|sinks|queries)(?:\.[A-Za-z_]\w*)*")


def _resolves(dotted: str) -> bool:
    """Whether `dotted` names a module, or an attribute of one (a class, a function, a constant)."""
    parts = dotted.split(".")
    for split in range(len(parts), 1, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def test_every_dotted_path_in_code_and_docs_resolves() -> None:
    """A moved module leaves no old path behind: in docstrings, comments, SQL, docs or deploy files."""
    assert _resolves("viewlineage.sinks.tables.PRIMARY_KEYS")
    assert not _resolves("viewlineage.indexer.batches.PRIMARY_KEYS")  # where it was
    texts = [path for room in ROOMS for path in (ROOT / room).rglob("*") if path.suffix in (".py", ".sql")]
    texts += [ROOT / "README.md", ROOT / "BENCHMARKS.md", ROOT / "pyproject.toml", ROOT / "Makefile"]
    texts += [path for path in (ROOT / "deploy").rglob("*") if path.is_file()]
    unresolved = {
        f"{path.relative_to(ROOT)}: {dotted}"
        for path in texts
        for dotted in DOTTED.findall(path.read_text())
        if not _resolves(dotted.rstrip("."))
    }
    assert sorted(unresolved) == []


def test_every_package_is_listed_for_packaging() -> None:
    """Code packages and the data-only ones (the SQL folders, the web UI's templates and static
    files), so setuptools warns of none."""
    import tomllib

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    folders = {
        path.parent
        for room in ROOMS
        for suffix in ("py", "sql", "html", "css", "js")
        for path in (ROOT / room).rglob(f"*.{suffix}")
    }
    assert sorted(listed) == sorted("viewlineage." + ".".join(f.relative_to(ROOT).parts) for f in folders)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a clean clone holds of the package: builds and editable installs never touch the checkout."""
    copy = tmp_path_factory.mktemp("source")
    for room in ROOMS:
        shutil.copytree(ROOT / room, copy / room, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, copy)
    return copy


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-qw", str(dist)],
        cwd=source,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = dist.glob("viewlineage-*.whl")
    return built


def _fresh_environment(venv: Path, *install: str) -> Path:
    """A venv holding only viewlineage, installed by `pip install --no-deps INSTALL...`; its
    dependencies (and the build backend) come from the test environment's site-packages, listed as
    plain paths, so the .pth files there (the checkout's own editable install) are not processed.
    Returns its site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (purelib / "test-environment.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q"]
    installed = subprocess.run(
        [*pip, "--no-deps", "--no-build-isolation", *install], capture_output=True, text=True, timeout=300
    )
    assert installed.returncode == 0, installed.stderr[-4000:]
    assert "is absent from the `packages` configuration" not in installed.stderr
    return purelib


def test_the_wheel_holds_every_module_and_data_file(wheel: Path) -> None:
    expected = {
        f"viewlineage/{path.relative_to(ROOT).as_posix()}"
        for room in ROOMS
        for path in (ROOT / room).rglob("*")
        if path.suffix in (".py", ".sql", ".typed", ".html", ".css", ".js", ".LICENSE")
        or path.name == "vendored.json"
    }
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name for name in archive.namelist() if name.startswith("viewlineage/")}
    assert packaged == expected


@pytest.mark.integration
@pytest.mark.spark
def test_the_installed_wheel_indexes_and_backfills_on_spark(
    wheel: Path, sample_warehouse: Path, sample_store: Path, tmp_path: Path
) -> None:
    """A fresh environment with the wheel and nothing of the checkout: `index` and `backfill
    --engine spark` (whose executors run that environment's Python) build the store the
    checkout's code builds."""
    venv = tmp_path / "venv"
    purelib = _fresh_environment(venv, str(wheel))
    python = venv / "bin" / "python"
    work = tmp_path / "elsewhere"  # not the checkout: nothing of it is importable from here
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYSPARK_PYTHON")}

    where = subprocess.run(
        [str(python), "-c", "import viewlineage.indexer.backfill.spark as m; print(m.__file__)"],
        cwd=work, env=env, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(purelib)

    cli = [str(venv / "bin" / "viewlineage")]
    catalog_map = ["--catalog-map", f"{sample_warehouse}=prod"]
    indexed_db, backfilled_db = tmp_path / "index.duckdb", tmp_path / "spark.duckdb"
    index = subprocess.run(
        [*cli, "--db", str(indexed_db), "index", str(sample_warehouse), *catalog_map, "--no-progress"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert index.returncode == 0, index.stderr[-4000:]
    backfill = subprocess.run(
        [
            *cli, "--db", str(backfilled_db), "backfill", str(sample_warehouse), *catalog_map,
            "--engine", "spark", "--master", "local[2]", "--partitions", "2", "--format", "json",
        ],
        cwd=work, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert backfill.returncode == 0, backfill.stderr[-4000:]
    summary = json.loads(backfill.stdout.strip().splitlines()[-1])
    expected = snapshot(sample_store)
    assert (summary["files"], summary["parsing_tasks"]) == (len(expected["files"]), 2)
    assert snapshot(indexed_db) == expected
    assert snapshot(backfilled_db) == expected


@pytest.mark.parametrize("install", ["wheel", "editable", "strict editable"])
def test_every_kind_of_install_runs_the_cli(
    install: str, source: Path, wheel: Path, sample_warehouse: Path, sample_store: Path, tmp_path: Path
) -> None:
    """`pip install`, `pip install -e` and the Makefile's strict editable install each give a CLI
    that loads the store's migrations and queries (package data) and indexes as the checkout does."""
    arguments = {
        "wheel": [str(wheel)],
        "editable": ["-e", str(source)],
        "strict editable": ["-e", str(source), "--config-settings", "editable_mode=strict"],
    }[install]
    venv = tmp_path / "venv"
    _fresh_environment(venv, *arguments)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    db = tmp_path / "store.duckdb"
    version = subprocess.run(
        [str(venv / "bin" / "viewlineage"), "--version"], cwd=work, env=env, capture_output=True, text=True
    )
    assert version.stdout == "viewlineage, version 0.1.0\n", version.stderr
    cli = [str(venv / "bin" / "viewlineage"), "--db", str(db)]
    index = subprocess.run(
        [*cli, "index", str(sample_warehouse), "--catalog-map", f"{sample_warehouse}=prod", "--no-progress"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert index.returncode == 0, index.stderr[-4000:]
    assert snapshot(db) == snapshot(sample_store)
    shown = subprocess.run(
        [*cli, "show", "prod.db.big_days", "--format", "json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr[-4000:]
    assert json.loads(shown.stdout)["view"] == "prod.db.big_days"
