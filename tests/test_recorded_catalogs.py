"""A store records the catalog map and aliases its names were derived with, as it records its roots:
every writer reuses them, a writer given others refuses, and only `reindex --change-catalogs`
replaces them (issue: `reindex` without repeating `--catalog-map` renamed every view)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import StoreWarning
from viewlineage.queries.cli import cli
from viewlineage.sinks.readers import open_reader, recorded_settings


def run(db: Path, *arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [*arguments, "--db", str(db)])
    return result.exit_code, result.stdout, result.stderr


def view_names(db: Path) -> list[str]:
    with open_reader(db) as conn:
        return sorted(
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT concat_ws('.', catalog, name.list_aggr('string_agg', '.')) FROM view_names"
            ).fetchall()
        )


@pytest.fixture
def mapped_store(sample_warehouse: Path, tmp_path: Path) -> Path:
    db = tmp_path / "mapped.duckdb"
    code, _, stderr = run(db, "index", str(sample_warehouse), "--catalog-map", f"{sample_warehouse}=prod")
    assert code == 0, stderr
    return db


def test_every_writer_reuses_the_recorded_catalog_map(mapped_store: Path, sample_warehouse: Path) -> None:
    assert recorded_settings(mapped_store) == {
        "catalog-map": (f"{sample_warehouse}=prod",),
        "catalog-alias": (),
    }
    names = view_names(mapped_store)
    assert "prod.db.big_days" in names
    assert run(mapped_store, "reindex")[0] == 0  # no --catalog-map: the store's
    assert view_names(mapped_store) == names
    assert run(mapped_store, "show", "prod.db.big_days", "--format", "json")[0] == 0
    assert run(mapped_store, "index", str(sample_warehouse))[0] == 0
    assert view_names(mapped_store) == names


def test_a_writer_given_another_map_refuses_and_changes_nothing(
    mapped_store: Path, sample_warehouse: Path
) -> None:
    names = view_names(mapped_store)
    code, _, stderr = run(
        mapped_store, "index", str(sample_warehouse), "--catalog-map", f"{sample_warehouse}=dev"
    )
    assert code == 2
    assert stderr == (
        f"error: store {mapped_store} names views and tables with --catalog-map {sample_warehouse}=prod; "
        f"this run gives --catalog-map {sample_warehouse}=dev. Leave them out to use the store's, or "
        "rename everything with `viewlineage reindex --change-catalogs` and the new options\n"
    )
    assert run(mapped_store, "reindex", "--catalog-alias", "trino:iceberg=prod")[0] == 2
    assert view_names(mapped_store) == names
    assert recorded_settings(mapped_store)["catalog-map"] == (f"{sample_warehouse}=prod",)


def test_reindex_change_catalogs_renames_and_says_so(mapped_store: Path, sample_warehouse: Path) -> None:
    code, stdout, stderr = run(
        mapped_store,
        "reindex",
        "--change-catalogs",
        "--catalog-map",
        f"{sample_warehouse}=dev",
        "--format",
        "json",
    )
    assert code == 0, stderr
    assert stderr.splitlines()[-1] == (
        f"changed the store's catalogs from --catalog-map {sample_warehouse}=prod "
        f"to --catalog-map {sample_warehouse}=dev"
    )
    assert json.loads(stdout)["store_views"] > 0
    assert "dev.db.big_days" in view_names(mapped_store)
    assert not [name for name in view_names(mapped_store) if name.startswith("prod.")]
    assert run(mapped_store, "reindex")[0] == 0  # and the new map is the store's from now on
    assert "dev.db.big_days" in view_names(mapped_store)


def test_a_killed_catalog_change_is_completed_with_the_new_map(
    mapped_store: Path, sample_warehouse: Path
) -> None:
    """SIGKILL right after `reindex --change-catalogs` cleared the derived rows: the next writer,
    given no map, completed the rebuild with the old one, and nothing said the change was lost.
    The new map is recorded in the transaction that clears the rows."""
    killed = subprocess.run(
        [
            sys.executable, "-m", "viewlineage.queries.cli", "--db", str(mapped_store),
            "reindex", "--change-catalogs", "--catalog-map", f"{sample_warehouse}=dev",
        ],
        env={**os.environ, "VIEWLINEAGE_FAULTS": "reindex-cleared:1"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with pytest.warns(StoreWarning, match="Completing the rebuild now"):
        assert run(mapped_store, "index", str(sample_warehouse))[0] == 0
    assert recorded_settings(mapped_store)["catalog-map"] == (f"{sample_warehouse}=dev",)
    assert "dev.db.big_days" in view_names(mapped_store)
    assert not [name for name in view_names(mapped_store) if name.startswith("prod.")]


def test_a_follower_with_another_map_refuses_to_start(mapped_store: Path, sample_warehouse: Path) -> None:
    watch = subprocess.run(
        [
            sys.executable, "-m", "viewlineage.queries.cli", "--db", str(mapped_store),
            "watch", str(sample_warehouse), "--catalog-map", f"{sample_warehouse}=dev",
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert watch.returncode == 2
    assert watch.stderr.startswith(f"error: store {mapped_store} names views and tables with --catalog-map")


def test_a_store_from_before_records_the_first_writers(mapped_store: Path, sample_warehouse: Path) -> None:
    """A store migrated from before schema 16 has no recorded map: the first writer's is recorded."""
    import duckdb

    conn = duckdb.connect(str(mapped_store))
    conn.execute("DELETE FROM recorded_settings")
    conn.close()
    assert recorded_settings(mapped_store) == {}
    copy = mapped_store.with_name("copy.duckdb")
    shutil.copyfile(mapped_store, copy)
    assert run(copy, "reindex", "--catalog-map", f"{sample_warehouse}=prod")[0] == 0
    assert recorded_settings(copy)["catalog-map"] == (f"{sample_warehouse}=prod",)


def test_a_repeated_entry_or_the_store_s_own_alias_alone_is_no_change(
    mapped_store: Path, sample_warehouse: Path
) -> None:
    entry = f"{sample_warehouse}=prod"
    assert (
        run(mapped_store, "index", str(sample_warehouse), "--catalog-map", entry, "--catalog-map", entry)[0]
        == 0
    )
    code, _, stderr = run(mapped_store, "reindex", "--catalog-alias", "trino:iceberg=prod")
    assert code == 2
    assert "; this run gives --catalog-alias trino:iceberg=prod. Leave them out" in stderr
