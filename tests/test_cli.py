"""The command line as users of duckdb and dbt expect it: options where they put them, one clear
line for a mistake, and a summary that says what happened and what the store holds."""

from __future__ import annotations

import csv
import io
import json
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.rows import QuarantinedFile
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries import api, output
from viewlineage.queries.cli import cli
from viewlineage.queries.output import table

from .conftest import settings_for
from .metadata_files import View


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
    assert (
        empty.stdout.splitlines()[-1]
        == "the store holds 0 files: 0 view files of 0 views, 0 table files of 0 tables"
    )
    first = CliRunner().invoke(cli, ["index", str(sample_warehouse), "--db", str(db), "--format", "json"])
    again = CliRunner().invoke(cli, ["index", str(sample_warehouse), "--db", str(db), "--format", "json"])
    counts = [json.loads(run.stdout) for run in (first, again)]
    assert [(c["indexed"], c["views"]) for c in counts][1] == (0, 0)  # nothing new the second time
    held = {"files": 32, "view_files": 24, "views": 7, "table_files": 8, "tables": 3}
    for count in counts:  # the whole store's, every run: the table files were counted as views'
        assert {
            key.removeprefix("store_"): value for key, value in count.items() if key.startswith("store_")
        } == held
    text = CliRunner().invoke(cli, ["index", str(sample_warehouse), "--db", str(db)])
    assert (
        text.stdout.splitlines()[-1]
        == "the store holds 32 files: 24 view files of 7 views, 8 table files of 3 tables"
    )


def test_sql_text_keeps_null_columns_and_cells_are_whole_when_piped(sample_store: Path) -> None:
    """`sql "SELECT NULL AS a, 1 AS b"` printed only b, and cells were cut at 80 characters with no
    mark, also when the output was a file: a cut is marked `…` and happens on a terminal only."""
    nulls = CliRunner().invoke(cli, ["sql", "SELECT NULL AS a, 1 AS b", "--db", str(sample_store)])
    assert nulls.stdout.splitlines()[0].split() == ["a", "b"]
    long = CliRunner().invoke(cli, ["sql", "SELECT repeat('x', 200) AS s", "--db", str(sample_store)])
    assert long.stdout.splitlines()[2] == "x" * 200  # CliRunner's output is no terminal
    assert table([{"s": "x" * 200}], max_width=80).splitlines()[2] == "x" * 79 + "…"


SLOW_SQL = "SELECT sum(range % 7) FROM range(1000000000000)"


def test_a_query_past_its_memory_limit_is_one_line(sample_store: Path) -> None:
    """Found by the fourth adversarial trial: a traceback on the CLI, a 500 over HTTP."""
    big = "SELECT length(string_agg(repeat('x', 1000), '')) FROM range(200000)"
    result = CliRunner().invoke(cli, ["sql", big, "--query-memory", "16MiB", "--db", str(sample_store)])
    assert (result.exit_code, result.stderr) == (
        1,
        "error: the query needed more than its memory limit of 16.0 MiB and was stopped "
        "(setting query-memory)\n",
    )


def test_a_list_built_past_the_memory_limit_is_stopped_too(sample_store: Path) -> None:
    """Found by the sixteenth adversarial trial: DuckDB builds a list (`range(n)`) or a string
    outside its memory limit, so `len(range(150000000))` under 256MiB held 13.9 GB for 51 s. The
    process's data is bounded while `sql` runs, and restored after it."""
    limit = resource.getrlimit(resource.RLIMIT_DATA)
    listed = "SELECT len(range(5000000)) AS n"
    result = CliRunner().invoke(cli, ["sql", listed, "--query-memory", "16MiB", "--db", str(sample_store)])
    assert (result.exit_code, result.stderr) == (
        1,
        "error: the query needed more than its memory limit of 16.0 MiB and was stopped "
        "(setting query-memory)\n",
    )
    assert resource.getrlimit(resource.RLIMIT_DATA) == limit
    small = CliRunner().invoke(cli, ["sql", "SELECT len(range(1000)) AS n", "--query-memory", "16MiB",
                                     "--format", "csv", "--db", str(sample_store)])  # fmt: skip
    assert (small.exit_code, small.stdout) == (0, "n\n1000\n")


def test_sql_stops_at_the_query_timeout(sample_store: Path) -> None:
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["sql", SLOW_SQL, "--query-timeout", "1", "--db", str(sample_store)])
    assert (result.exit_code, result.stderr) == (
        1,
        "error: the query ran longer than 1 s and was stopped (setting query-timeout)\n",
    )
    assert time.monotonic() - started < 10


def test_sql_keeps_to_its_memory_limit_and_writes_nowhere(sample_store: Path, tmp_path: Path) -> None:
    sorting = "SELECT count(*) FROM (SELECT range FROM range(100000000) ORDER BY random())"
    limited = CliRunner().invoke(cli, ["sql", sorting, "--query-memory", "64MiB", "--db", str(sample_store)])
    assert (limited.exit_code, limited.stderr) == (
        1,
        "error: the query needed more than its memory limit of 64.0 MiB and was stopped "
        "(setting query-memory)\n",
    )
    temporary = Path(f"{sample_store}.tmp")  # DuckDB's default temporary directory, where it may write
    temporary.mkdir(exist_ok=True)
    try:
        for target in (temporary / "x.csv", tmp_path / "y.csv"):
            copy = CliRunner().invoke(
                cli, ["sql", f"COPY (SELECT 1) TO '{target}'", "--db", str(sample_store)]
            )
            assert (copy.exit_code, "file system operations are disabled" in copy.stderr) == (2, True)
            assert not target.exists()
    finally:
        temporary.rmdir()


def test_ctrl_c_stops_a_running_query_without_a_traceback(sample_store: Path) -> None:
    command = [sys.executable, "-m", "viewlineage.queries.cli", "sql", SLOW_SQL, "--db", str(sample_store)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Into the query: the store is open, DuckDB's threads started (a fixed sleep sent it during
    # the imports on a loaded machine, and Python printed its own traceback).
    deadline = time.monotonic() + 60
    while _threads(process.pid) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=20)
    assert (process.returncode, stderr.strip()) == (1, "Aborted!")


def test_output_closed_by_its_reader_ends_the_command_as_sigpipe_would(sample_store: Path) -> None:
    """Found by the nineteenth adversarial trial: piped into `head -c 10`, a long answer ended with
    status 1 ("the store or a source failed") and nothing said."""
    command = [sys.executable, "-m", "viewlineage.queries.cli", "uses", "prod.db.events", "--transitive"]
    process = subprocess.Popen(
        [*command, "--db", str(sample_store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # gone before the answer is written
    stderr = process.stderr.read()
    assert (process.wait(timeout=60), stderr) == (141, b"")


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))


def _invoke(store: Path, *arguments: str) -> str:
    result = CliRunner().invoke(cli, [*arguments, "--db", str(store)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_csv_and_markdown_print_each_command_s_main_table(sample_store: Path) -> None:
    answer = json.loads(_invoke(sample_store, "uses", "prod.db.events", "--transitive", "--format", "json"))
    rows = list(
        csv.DictReader(
            io.StringIO(_invoke(sample_store, "uses", "prod.db.events", "--transitive", "--format", "csv"))
        )
    )
    assert [(r["view"], r["depth"], r["path"], r["match"]) for r in rows] == [
        (v["view"], str(v["depth"]), " > ".join(v["path"]), v["match"]) for v in answer["views"]
    ]
    assert len(rows) == len(answer["views"]) > 2
    markdown = _invoke(
        sample_store, "uses", "prod.db.events", "--transitive", "--format", "markdown"
    ).splitlines()
    assert markdown[0] == "| view | view_id | depth | path | catalog_unknown | match |"
    assert markdown[1] == "|---|---|---|---|---|---|"
    first = answer["views"][0]
    assert markdown[2] == f"| {first['view']} | {first['view_id']} | 1 | {first['view']} | false | exact |"
    shown = list(
        csv.reader(io.StringIO(_invoke(sample_store, "show", "prod.db.big_days", "--format", "csv")))
    )
    assert shown[:3] == [
        ["field", "value"],
        ["view", "prod.db.big_days"],
        ["view_id", "621f9620-d632-4552-aa8d-b485775cc8b8"],
    ]
    assert ["default_namespace", "db"] in shown
    sql = _invoke(sample_store, "sql", "SELECT 'a|b' AS x, NULL AS y, [1, 2] AS z", "--format", "markdown")
    assert sql.splitlines() == ["| x | y | z |", "|---|---|---|", "| a\\|b |  | 1, 2 |"]
    # Found by the nineteenth adversarial trial: a column name's `|` was left to end a header cell.
    piped = _invoke(sample_store, "sql", 'SELECT 1 AS "x|y"', "--format", "markdown")
    assert piped.splitlines() == ["| x\\|y |", "|---|", "| 1 |"]
    # Found by the eighth adversarial trial: a name holding HTML went into Markdown as HTML.
    html = _invoke(
        sample_store, "sql", "SELECT '<img src=x onerror=alert(1)> & co' AS name", "--format", "markdown"
    )
    assert html.splitlines()[2] == "| &lt;img src=x onerror=alert(1)> &amp; co |"  # `>` kept (tenth trial)


def test_text_output_holds_no_python_reprs(sample_store: Path, mv_store: Path, impact_store: Path) -> None:
    texts = [
        _invoke(sample_store, "show", "prod.db.big_days"),
        _invoke(sample_store, "history", "prod.db.event_agg"),
        _invoke(sample_store, "deps", "revenue_by_region", "--transitive"),
        _invoke(sample_store, "uses", "prod.db.events", "--transitive"),
        _invoke(sample_store, "findings"),
        _invoke(sample_store, "table", "prod.sales.orders"),
        _invoke(mv_store, "mv-status"),
        _invoke(impact_store, "impact", "db.orders", "--drop-column", "amount"),
        _invoke(sample_store, "sql", "SELECT {'k': 'v'} AS m, NULL AS n, true AS b, ['a', 'b'] AS l"),
    ]
    for text in texts:
        assert not re.search(r"\bNone\b|\bTrue\b|\bFalse\b|\{'|\['", text), text
    assert texts[-1].splitlines()[-1] == "k=v     true  a, b"
    broken = _invoke(
        sample_store, "sql", "SELECT 'a' || chr(10) || 'b' AS x, map {'k': 'v' || chr(10) || 'w'} AS m"
    )
    assert broken.splitlines()[-1] == "a↵b  k=v↵w"
    # a value holding the separator is quoted: `k=a, b=c` read as two entries
    separated = _invoke(
        sample_store, "sql", "SELECT map {'k': 'a, b=c', 'x=y': 'v'} AS m, ['a, b', 'c', '\"q'] AS l"
    )
    assert separated.splitlines()[-1] == 'k="a, b=c", "x=y"=v  "a, b", c, "\\"q"'


def test_exit_codes_as_documented(
    sample_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "w" / "db" / "v" / "metadata"
    bad.mkdir(parents=True)
    (bad / "00001-x.metadata.json").write_text("{")
    db = str(tmp_path / "q.duckdb")
    strict = CliRunner().invoke(cli, ["index", str(tmp_path / "w"), "--fail-on-quarantine", "--db", db])
    assert (strict.exit_code, strict.stderr.splitlines()[-1]) == (
        3,
        "error: 1 file(s) quarantined (`viewlineage quarantine` says why)",
    )
    plain = CliRunner().invoke(cli, ["index", str(tmp_path / "w"), "--db", str(tmp_path / "other.duckdb")])
    assert plain.exit_code == 0
    again = CliRunner().invoke(cli, ["index", str(tmp_path / "w"), "--fail-on-quarantine", "--db", db])
    assert again.exit_code == 3  # a quarantined file is read again by every run, and still fails
    rebuilt = CliRunner().invoke(cli, ["reindex", "--fail-on-quarantine", "--db", db])
    assert (rebuilt.exit_code, rebuilt.stderr.splitlines()[-1]) == (
        3,
        "error: 1 file(s) quarantined (`viewlineage quarantine` says why)",
    )
    assert CliRunner().invoke(cli, ["show", "nosuch.view", "--db", str(sample_store)]).exit_code == 2
    assert CliRunner().invoke(cli, ["show", "v", "--db", str(tmp_path / "none.duckdb")]).exit_code == 1
    assert CliRunner().invoke(cli, ["mv-status", "--db", str(sample_store)]).stdout == "(no rows)\n"
    monkeypatch.setitem(sys.modules, "pyspark", None)  # as without the `spark` extra
    spark = CliRunner().invoke(cli, ["backfill", str(tmp_path / "w"), "--engine", "spark", "--db", db])
    assert (spark.exit_code, spark.stderr) == (
        2,
        "error: backfill --engine spark needs PySpark (import of pyspark halted; None in sys.modules): "
        "pip install 'viewlineage[spark]'\n",
    )


def test_found_by_the_adversary(sample_store: Path, tmp_path: Path) -> None:
    """sql prints a bounded result; times at the edges of year 1 and 9999 are exact or refused;
    a file that is no store says so; (the API's bare flag is in test_service)."""
    capped = CliRunner().invoke(
        cli, ["sql", "SELECT range FROM range(10)", "--sql-max-rows", "3", "--db", str(sample_store)]
    )
    assert (capped.stdout.split(), capped.stderr) == (
        ["range", "-----", "0", "1", "2"],
        "warning: more than 3 rows; the first 3 are shown (setting sql-max-rows)\n",
    )
    assert api.parse_time("9999-12-31T23:59:59.999999Z") == 253402300799999
    for text in ("9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"):
        with pytest.raises(UsageError, match=r"^time out of range \(years 1 to 9999 UTC\)"):
            api.parse_time(text)
    with pytest.raises(
        UsageError, match="not an ISO-8601 time or an epoch number"
    ):  # sixth adversarial trial
        api.parse_time("١٧٩٥٦٠٧٠٠٨s")  # digits of another script
    folder = CliRunner().invoke(cli, ["show", "v", "--db", str(tmp_path)])
    assert (folder.exit_code, folder.stderr) == (
        1,
        f"error: {tmp_path} is a directory: --db names the store's file "
        f"(`{tmp_path / 'viewlineage.duckdb'}`)\n",
    )
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_text("garbage\n")
    shown = CliRunner().invoke(cli, ["show", "v", "--db", str(garbage)])
    assert (shown.exit_code, shown.stderr) == (
        1,
        f"error: {garbage} is not a viewlineage store (not a DuckDB database file)\n",
    )


def test_csv_and_markdown_never_leave_unknown_lineage_unsaid(tmp_path: Path) -> None:
    """`deps broken --format csv` printed nothing and exit 0, and `impact --format markdown` left
    out a view whose SQL does not parse: csv, one table on stdout, says so on stderr; markdown
    prints the views after the main table."""
    from viewlineage.indexer.pipeline.runs import index_locations

    from .conftest import settings_for
    from .metadata_files import View, schema_of

    root = tmp_path / "warehouse"
    x = schema_of(("x", "int"))
    View(root, "db", "broken", "e2000000-0000-4000-8000-000000000001", schema=x).commit(
        1000, "SELECT x FROM db.t WHERE (x = 1 AND"
    )
    View(root, "db", "fine", "e2000000-0000-4000-8000-000000000002", schema=x).commit(
        1000, "SELECT x FROM db.t"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    warning = (
        "warning: lineage unknown, so they could read or use anything: db.broken (not in this table; "
        "--format text, json or markdown lists them)\n"
    )
    deps = CliRunner().invoke(cli, ["deps", "db.broken", "--format", "csv", "--db", str(db)])
    assert (deps.exit_code, deps.stdout, deps.stderr) == (0, "", warning)
    used = CliRunner().invoke(cli, ["uses", "db.t", "--format", "csv", "--db", str(db)])
    assert used.stdout.splitlines()[1:] == [
        "db.fine,e2000000-0000-4000-8000-000000000002,1,db.fine,true,namespace-and-name"
    ]
    assert used.stderr == warning
    marked = CliRunner().invoke(cli, ["uses", "db.t", "--format", "markdown", "--db", str(db)])
    assert marked.stdout.splitlines()[3:] == [
        "",
        "lineage unknown, so they could read or use anything:",
        "",
        "| view | view_id | reason |",
        "|---|---|---|",
        "| db.broken | e2000000-0000-4000-8000-000000000001 | sql-parse-error at 1:35: Required keyword: "
        "'expression' missing for And |",
    ]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("", "error: no SQL statement given\n"),
        ("/* only a comment */", "error: no SQL statement given\n"),
        ("SELECT 1; SELECT 2", "error: one SQL statement at a time: this gives 2\n"),
    ],
)
def test_sql_takes_one_statement(sample_store: Path, sql: str, message: str) -> None:
    """An empty or comment-only query was a traceback (`'NoneType' object has no attribute
    'description'`), and of two statements only the last one's result printed."""
    result = CliRunner().invoke(cli, ["sql", sql, "--db", str(sample_store)])
    assert (result.exit_code, result.stderr) == (2, message)


def test_sql_reads_standard_input_and_names_the_store_not_its_file(sample_store: Path) -> None:
    """Found by the ninth new-user trial: `sql -` parsed `-` as SQL (the duckdb CLI reads standard
    input), and a refused write named the replica's internal database ("01795814052331661793")."""
    piped = CliRunner().invoke(cli, ["sql", "-", "--db", str(sample_store)], input="SELECT 42 AS answer\n")
    assert (piped.exit_code, piped.stdout) == (0, "answer\n------\n42\n")
    refused = CliRunner().invoke(cli, ["sql", "CREATE TABLE x AS SELECT 1", "--db", str(sample_store)])
    assert (refused.exit_code, refused.stderr) == (
        2,
        'error: SQL failed: Invalid Input Error: Cannot execute statement of type "CREATE" on the store '
        "which is attached in read-only mode!\n",
    )


def test_short_names_suggestions_and_one_change_at_a_time(sample_store: Path) -> None:
    """Found by a new user: `impact event_agg` (a view's short name) said "name the table with its
    namespace"; `show evnt_agg` suggested nothing (only whole names were compared); a repeated
    `--drop-column` kept the last silently; `--drop-column amount.` dropped the dot; and a safe
    `--change-type` headline left out how many views use the column."""
    view = _invoke(sample_store, "impact", "event_agg", "--drop-column", "event_date")
    assert view.splitlines()[0] == "drop-column prod.db.event_agg.event_date (date): 1 view(s) affected"
    for command, name, said in [
        ("show", "evnt_agg", "error: no view 'evnt_agg' in the store; did you mean prod.db.event_agg, "
         "prod.db.event_tags?"),
        ("table", "event_agg", "error: no table 'event_agg' in the store; prod.db.event_agg is a view "
         "(`viewlineage show prod.db.event_agg`)"),
        ("uses", "evnts", "error: no table or view 'evnts' in the store (one it has not indexed is named "
         "with its namespace); did you mean prod.db.events?"),
    ]:  # fmt: skip
        result = CliRunner().invoke(cli, [command, name, "--db", str(sample_store)])
        assert (result.exit_code, result.stderr.splitlines()[0]) == (2, said)
    for arguments, said in [
        (["--drop-column", "amount", "--drop-column", "qty"], "error: --drop-column given more than once: "
         "impact answers for one change"),
        (["--drop-column", "amount."], "error: 'amount.' is not a column: name it as `c`, or `c.field` for "
         "a nested field"),
    ]:  # fmt: skip
        result = CliRunner().invoke(
            cli, ["impact", "prod.sales.orders", *arguments, "--db", str(sample_store)]
        )
        assert (result.exit_code, result.stderr) == (2, said + "\n")
    safe = _invoke(sample_store, "impact", "prod.sales.orders", "--change-type", "amount=decimal(12,2)")
    assert safe.splitlines()[0] == (
        "change-type prod.sales.orders.amount (decimal(10, 2) -> decimal(12, 2)): Iceberg promotes it "
        "without rewriting data; 3 view(s) use it, 3 of them in an output column whose stored type goes "
        "stale (engines refuse such a view until it is re-created)"
    )  # the second new-user trial: "safe" read as "nothing breaks", and Spark refused those views
    assert json.loads(
        _invoke(
            sample_store,
            "impact",
            "prod.sales.orders",
            "--change-type",
            "amount=decimal(12,2)",
            "--format",
            "json",
        )
    )["stale_schemas"] == [
        "prod.acme.finance.revenue_by_region",
        "prod.sales.customer_revenue",
        "prod.sales.order_rank",
    ]


def test_a_misspelt_finding_code_or_an_empty_name_is_an_error(
    sample_store: Path, sample_warehouse: Path
) -> None:
    """Found by the new-user trial: `findings --code sql-parse-errors` said "(no rows)", `--view ""`
    listed every view's, `files ""` asked about the working directory, and `indexed_at` read
    `+00:00` with microseconds where every other time reads `...Z` in ms."""
    for arguments, said in [
        (["findings", "--code", "sql-parse-errors"], "error: no finding has code 'sql-parse-errors'; did you "
         "mean sql-parse-error, sql-analysis-error? (the README lists them under Findings)"),
        (["findings", "--view", ""], "error: --view is empty: name a view, or leave the option out for "
         "every view"),
        # The twenty-first adversarial trial: `changes --view ""` listed every view's changes.
        (["changes", "--view", " "], "error: --view is empty: name a view, or leave the option out for "
         "every view"),
        (["files", ""], "error: an empty location names no file"),
    ]:  # fmt: skip
        result = CliRunner().invoke(cli, [*arguments, "--db", str(sample_store)])
        assert (result.exit_code, result.stderr) == (2, said + "\n")
    assert _invoke(sample_store, "findings", "--code", "sql-parse-error") == "(no rows)\n"  # known, none
    location = next(sample_warehouse.rglob("*.metadata.json"))
    found = json.loads(_invoke(sample_store, "files", str(location), "--format", "json"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", found[0]["indexed_at"])


def test_a_relative_path_is_a_location(
    sample_store: Path, sample_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the second adversarial trial: `show wh/db/v` (a relative directory) read as a name."""
    monkeypatch.chdir(sample_warehouse.parent)
    relative = f"{sample_warehouse.name}/db/big_days"
    shown = json.loads(_invoke(sample_store, "show", relative, "--format", "json"))
    assert shown["view"] == "prod.db.big_days"
    table = json.loads(
        _invoke(sample_store, "table", f"{sample_warehouse.name}/sales/orders", "--format", "json")
    )
    assert table["table"] == "prod.sales.orders"


def test_history_exports_and_sql_errors_say_everything_on_one_line(sample_store: Path) -> None:
    """Found by the third new-user trial: `history --format csv` printed the activations alone and
    never said that property-only commits and re-creations were left out; `sql` errors spread DuckDB's
    message over several lines."""
    exported = CliRunner().invoke(
        cli, ["history", "prod.db.big_days", "--format", "csv", "--db", str(sample_store)]
    )
    assert exported.stderr.splitlines() == [
        # each commit that changed properties (the fourth new-user trial: "property-only" counted them all)
        "warning: commits that changed properties: 1 (not in this table; --format text, json or markdown "
        "lists them)",
        "warning: earlier or later views or tables at the same path: prod.db.big_days (not in this table; "
        "--format text, json or markdown lists them)",
    ]
    failed = CliRunner().invoke(cli, ["sql", "SELECT count(*) FROM views", "--db", str(sample_store)])
    assert (failed.exit_code, failed.stderr) == (
        2,
        "error: SQL failed: Catalog Error: Table with name views does not exist! Did you mean "
        '"information_schema.views"? LINE 1: SELECT count(*) FROM views\n',
    )


def test_invalid_settings_say_which_and_why_in_one_line(tmp_path: Path) -> None:
    """Found by the fourth new-user trial: pydantic's report, with a link to its docs."""
    config = tmp_path / "settings.toml"
    config.write_text('format = "json"\nquery_timeout = "x"\n')
    result = CliRunner().invoke(cli, ["--config", str(config), "show", "v"])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: invalid settings (config file {config}, environment, flags): query-timeout: Input should "
        "be a valid number, unable to parse string as a number (got 'x'); unknown setting 'format' (did "
        "you mean 'log-format'?)\n",
    )


def test_an_empty_main_table_says_so_in_text(sample_store: Path) -> None:
    """Found by the fourth new-user trial: `uses` of a view no view reads printed no `views` at all,
    where `mv-status` and `findings` say `(no rows)`."""
    result = CliRunner().invoke(cli, ["uses", "prod.db.big_days", "--db", str(sample_store)])
    assert result.stdout.splitlines() == [
        "table: prod.db.big_days",
        "transitive: false",
        "views: (no rows)",
        "uncertain: 0",
    ]


def test_a_table_is_fitted_to_the_terminal_by_cutting_its_widest_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the fourth new-user trial: each cell was cut to half the terminal, so a table of
    several wide columns ran 155 characters on a terminal of 100; by the fifth: at 100 columns every
    view's name was cut, and cut at its end, which is what tells views apart."""
    rows = [
        {
            "view": "prod.sales.v_star_2part",
            "view_id": "e093255b-91a3-49bb-85c3-3be6aaaaaaaa",
            "path": ["prod.analytics.v_star_2part", "prod.sales.v_star", "prod.sales.orders"],
            "match": "exact",
        }
    ]
    monkeypatch.setattr(output, "_terminal_width", lambda indent: 80 - indent)
    assert output.table(rows).splitlines() == [  # 80 wide: the widest cut, the view's name last
        "view                     view_id       path                                match",
        "-----------------------  ------------  ----------------------------------  -----",
        "prod.sales.v_star_2part  e093255b-91…  prod.analytics.v_star_2part > pro…  exact",
    ]
    monkeypatch.setattr(output, "_terminal_width", lambda indent: 20 - indent)  # names would be cut:
    assert output.table(rows).splitlines() == [  # records (found by the sixth new-user trial)
        "-[ RECORD 1 ]-",
        "view    | prod.sales.v_star_2part",
        "view_id | e093255b-91a3-49bb-85c3-3be6aaaaaaaa",
        "path    | prod.analytics.v_star_2part > prod.sales.v_star > prod.sales.orders",
        "match   | exact",
    ]


def test_what_files_say_reaches_no_terminal_and_no_spreadsheet_as_a_command() -> None:
    """Found by the fifth adversarial trial: a property's escape sequences set the terminal's title
    and colours, and an engine name `=cmd|...` was a formula in the CSV downloads."""
    assert output.cell("\x1b]0;PWNED\x07\x1b[31mRED") == "\\x1b]0;PWNED\\x07\\x1b[31mRED"
    # Found by the seventh adversarial trial: a right-to-left override reordered what followed it.
    assert output.cell("spark\u202egnp.exe\u2066") == "spark\\u202egnp.exe\\u2066"
    assert output.csv_text(
        [{"engine": "=cmd|' /C calc'!A0", "version": "@SUM(1)", "n": -5, "s": "plain"}]
    ) == ("engine,version,n,s\n'=cmd|' /C calc'!A0,'@SUM(1),-5,plain\n")
    # Found by the eleventh adversarial trial: a list of texts (changed property keys, a path of
    # names) was joined into a cell unguarded; numbers in a list stay JSON
    assert output.csv_text([{"keys": ['=HYPERLINK("x")', "b"], "path": ["=2+5.v"], "ids": [-1, 2]}]) == (
        'keys,path,ids\n"\'=HYPERLINK(""x""), b",\'=2+5.v,"[-1, 2]"\n'
    )


def test_a_quarantine_message_is_bounded() -> None:
    """Found by the fifth adversarial trial: one Kafka event of 100,000 invalid records was
    quarantined with a message of 16 MB."""
    quarantined = QuarantinedFile("kafka://t/0/1", "bad-event", "x" * 100_000, None, None)
    assert quarantined.message == "x" * 2_000 + "… (98,000 more characters)"


def test_keys_sql_lines_and_diffs_reach_no_terminal_as_escape_sequences(tmp_path: Path) -> None:
    """Found by the sixth adversarial trial: a property's key, multi-line SQL and the lines of a
    `diff` printed a file's escape sequences raw (the title-setting one, C1 controls)."""
    hostile = "\x1b]0;PWNED\x07\x1b[31mRED\x9b0m"
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "cb000000-0000-4000-8000-000000000001")
    view.properties[f"k{hostile}"] = "v"
    view.commit(1000, "SELECT 1 AS x")
    view.commit(2000, f"SELECT 2 AS x\n/*{hostile}*/")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    for arguments in (["show", "db.v"], ["diff", "db.v"], ["history", "db.v"]):
        printed = CliRunner().invoke(cli, [*arguments, "--db", str(db)]).output
        assert not any(0x80 <= ord(c) < 0xA0 or (ord(c) < 0x20 and c not in "\n\t") for c in printed), (
            arguments
        )
        assert "\\x1b]0;PWNED\\x07\\x1b[31mRED\\x9b0m" in printed, arguments


@pytest.mark.parametrize("command", ["show", "uses", "deps", "table", "history"])
def test_a_name_that_is_not_utf8_is_a_usage_error(sample_store: Path, command: str) -> None:
    """Found by a rewrite of the hostile-parameter test: bytes of another encoding in an argument
    reach Python as lone surrogates, and DuckDB refused them with a traceback."""
    name = b"db.\xff".decode(errors="surrogateescape")
    ran = subprocess.run(
        [sys.executable, "-m", "viewlineage.queries.cli", command, name, "--db", str(sample_store)],
        capture_output=True, text=True, errors="surrogateescape", timeout=60,
    )  # fmt: skip
    assert (ran.returncode, ran.stdout, ran.stderr) == (
        2,
        "",
        "error: '\\udcff' is not valid UTF-8 text (a location whose name is not UTF-8 is given with those "
        "bytes as %XX)\n",
    )


def test_reindex_shows_its_progress_as_index_does(tmp_path: Path, sample_warehouse: Path) -> None:
    """Found by the ninth adversarial trial: `reindex` had no `--progress/--no-progress` and showed
    no progress at all, though a rebuild of a large store takes minutes."""
    db = str(tmp_path / "store.duckdb")
    mapped = ["--catalog-map", f"{sample_warehouse}=prod", "--db", db]
    indexed = CliRunner().invoke(cli, ["index", str(sample_warehouse), "--no-progress", *mapped])
    assert (indexed.exit_code, indexed.stderr) == (0, "")
    shown = CliRunner().invoke(cli, ["reindex", "--progress", "--db", db])
    hidden = CliRunner().invoke(cli, ["reindex", "--no-progress", "--db", db])
    # click draws the bar on a terminal; elsewhere it writes its label once
    assert (shown.exit_code, shown.stderr) == (0, "reindexing\n")
    assert (hidden.exit_code, hidden.stderr) == (0, "")


def test_a_path_the_system_refuses_is_one_line(sample_store: Path, tmp_path: Path) -> None:
    """Found by the eleventh adversarial trial: `publish /proc/x` and `backfill --out FILE` printed
    a Python traceback."""
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    published = CliRunner().invoke(cli, ["publish", str(a_file / "out"), "--db", str(sample_store)])
    assert (published.exit_code, published.stderr) == (1, f"error: {a_file / 'out'}: Not a directory\n")


def test_backfill_writes_no_dataset_over_other_files(sample_warehouse: Path, tmp_path: Path) -> None:
    """Found by the eleventh adversarial trial: `backfill --out DIR` replaced DIR's subdirectories
    named like store tables, a user's `files/mine.txt` with them."""
    out = tmp_path / "out"
    (out / "files").mkdir(parents=True)
    (out / "files" / "mine.txt").write_text("keep")
    refused = CliRunner().invoke(cli, ["backfill", str(sample_warehouse), "--out", str(out)])
    assert (refused.exit_code, refused.stderr.splitlines()[-1]) == (
        2,
        f"error: {out} holds what is not a dataset (files), which writing one there would replace: name an "
        "empty directory or an earlier dataset",
    )
    assert (out / "files" / "mine.txt").read_text() == "keep"
    first = CliRunner().invoke(cli, ["backfill", str(sample_warehouse), "--out", str(tmp_path / "dataset")])
    again = CliRunner().invoke(cli, ["backfill", str(sample_warehouse), "--out", str(tmp_path / "dataset")])
    assert (first.exit_code, again.exit_code) == (0, 0)  # an earlier dataset is replaced
