"""The command line as users of duckdb and dbt expect it: options where they put them, one clear
line for a mistake, and a summary that says what happened and what the store holds."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from viewlineage.queries.cli import cli
from viewlineage.queries.output import table


def test_global_options_also_follow_the_command(sample_store: Path) -> None:
    before = CliRunner().invoke(
        cli, ["--db", str(sample_store), "show", "prod.db.big_days", "--format", "json"]
    )
    after = CliRunner().invoke(
        cli, ["show", "prod.db.big_days", "--format", "json", "--db", str(sample_store)]
    )
    assert before.exit_code == after.exit_code == 0, after.output
    assert json.loads(after.stdout) == json.loads(before.stdout)
    elsewhere = CliRunner().invoke(
        cli, ["--db", "/nonexistent/x.duckdb", "show", "v", "--db", str(sample_store)]
    )
    assert elsewhere.exit_code == 2  # the later --db wins: the view is unknown in the sample store
    assert elsewhere.stderr.startswith("error: no view 'v' in the store")


def test_indexing_a_missing_folder_is_one_line_and_makes_no_store(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    result = CliRunner().invoke(cli, ["index", str(tmp_path / "nowhere"), "--db", str(db)])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {tmp_path / 'nowhere'}: no such file or directory\n",
    )
    assert not db.exists()
    watched = CliRunner().invoke(cli, ["watch", str(tmp_path / "nowhere"), "--db", str(db)])
    assert (watched.exit_code, watched.stderr) == (
        2,
        f"error: {tmp_path / 'nowhere'}: no such directory to watch\n",
    )


def test_indexing_an_empty_folder_says_so_and_what_the_store_holds(
    tmp_path: Path, sample_warehouse: Path
) -> None:
    db = tmp_path / "store.duckdb"
    (tmp_path / "empty").mkdir()
    empty = CliRunner().invoke(cli, ["index", str(tmp_path / "empty"), "--db", str(db)])
    assert empty.exit_code == 0
    assert empty.stderr == f"warning: no metadata file (*.metadata.json) under {tmp_path / 'empty'}\n"
    assert empty.stdout.splitlines()[-1] == "the store holds 0 files of 0 views"
    first = CliRunner().invoke(cli, ["index", str(sample_warehouse), "--db", str(db), "--format", "json"])
    again = CliRunner().invoke(cli, ["index", str(sample_warehouse), "--db", str(db), "--format", "json"])
    counts = [json.loads(run.stdout) for run in (first, again)]
    assert [(c["indexed"], c["views"]) for c in counts][1] == (0, 0)  # nothing new the second time
    assert counts[0]["store_files"] == counts[1]["store_files"] == counts[0]["indexed"]
    assert counts[1]["store_views"] == counts[0]["store_views"] > 0


def test_sql_text_keeps_null_columns_and_cells_are_whole_when_piped(sample_store: Path) -> None:
    """`sql "SELECT NULL AS a, 1 AS b"` printed only b, and cells were cut at 80 characters with no
    mark, also when the output was a file: a cut is marked `…` and happens on a terminal only."""
    nulls = CliRunner().invoke(cli, ["sql", "SELECT NULL AS a, 1 AS b", "--db", str(sample_store)])
    assert nulls.stdout.splitlines()[0].split() == ["a", "b"]
    long = CliRunner().invoke(cli, ["sql", "SELECT repeat('x', 200) AS s", "--db", str(sample_store)])
    assert long.stdout.splitlines()[2] == "x" * 200  # CliRunner's output is no terminal
    assert table([{"s": "x" * 200}], max_width=80).splitlines()[2] == "x" * 79 + "…"
