"""The README documents every setting, every store column and every JSON output field."""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import quote

from click.testing import CliRunner

from viewlineage.indexer.config import Settings
from viewlineage.indexer.pipeline.reads import READ_FAILURE_REASONS
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.indexer.spec.findings import CODES
from viewlineage.queries.cli import cli
from viewlineage.sinks.tables import SCHEMAS

from .conftest import ROOT, settings_for
from .integration.consume_process import get_json
from .test_service import serving

README = (Path(__file__).parents[1] / "README.md").read_text()


def test_settings_are_documented() -> None:
    for name, info in Settings.model_fields.items():
        assert f"| `{info.alias or name}` | `VIEWLINEAGE_{name.upper()}` |" in README, name


def test_store_columns_are_documented() -> None:
    for table, schema in SCHEMAS.items():
        section = README.split(f"**`{table}`**", 1)
        assert len(section) == 2, table
        body = section[1].split("**`", 1)[0]
        for column in schema.names:
            assert f"| `{column}` |" in body, f"{table}.{column}"


def test_readme_starts_with_the_two_commands() -> None:
    block = README.split("```sh", 1)[1].split("```", 1)[0].strip().splitlines()
    assert [line.split("#")[0].strip() for line in block] == ["make demo", "make test"]


def _documented_json_fields() -> dict[str, dict[str, set[str]]]:
    """{command: {field: the backticked names in its meaning}} from the README's JSON table."""
    block = README.split("<!-- json:start -->", 1)[1].split("<!-- json:end -->", 1)[0]
    documented: dict[str, dict[str, set[str]]] = {}
    for line in block.strip().splitlines()[2:]:
        command, fields, meaning = (cell.strip() for cell in line.strip("|").split(" | "))
        for field in re.findall(r"`([^`]+)`", fields):
            documented.setdefault(command.strip("`"), {})[field] = set(re.findall(r"`([^`]+)`", meaning))
    return documented


def _json_of(store: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(store), *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_json_output_fields_are_documented(
    sample_store: Path, mv_store: Path, impact_store: Path, table_store: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "w" / "db" / "v" / "metadata"
    bad.mkdir(parents=True)
    (bad / "00001-x.metadata.json").write_text("{")
    quarantined = tmp_path / "quarantined.duckdb"
    index_locations([str(tmp_path / "w")], settings_for(quarantined))
    outputs = {
        "show": _json_of(sample_store, "show", "prod.db.big_days"),
        "history": _json_of(sample_store, "history", "prod.db.event_agg"),
        "deps": _json_of(sample_store, "deps", "revenue_by_region", "--transitive"),
        "uses": _json_of(sample_store, "uses", "prod.db.events", "--transitive"),
        "findings": _json_of(sample_store, "findings"),
        "quarantine": _json_of(quarantined, "quarantine"),
        "files": _json_of(
            quarantined, "files", str(bad / "00001-x.metadata.json"), str(bad / "none.metadata.json")
        ),
        "sql": _json_of(sample_store, "sql", "SELECT 1 AS one"),
        "mv-status": _json_of(mv_store, "mv-status", "--as-of", "1970-01-01T00:00:06.500Z"),
        "impact": _json_of(impact_store, "impact", "db.orders", "--drop-column", "amount"),
        "table": _json_of(sample_store, "table", "prod.sales.orders"),
        "changes": _json_of(sample_store, "changes", "--limit", "3"),
        "diff": _json_of(sample_store, "diff", "prod.db.event_agg"),
        "table-history": _json_of(table_store, "table-history", "sales.orders"),
        "search": _json_of(sample_store, "search", "orders"),
        "tables": _json_of(sample_store, "tables", "--limit", "2"),
        "graph": _json_of(
            sample_store,
            "graph",
            "prod.db.events",
            "--as-of",
            "2026-11-21T23:17:28Z",
            "--compare",
            "2026-11-21T23:17:25Z",
        ),
        "index": _json_of(quarantined, "index", str(tmp_path / "w")),
    }
    materialized = _json_of(mv_store, "show", "db.mv_one", "--as-of", "1970-01-01T00:00:04.500Z")
    assert materialized["materialized"]["state"] == "FRESH"
    assert set(materialized) == set(outputs["show"])
    refreshed = _json_of(mv_store, "uses", "db.events", "--as-of", "1970-01-01T00:00:03.500Z")
    assert [(r["mv"], r["state"], r["table_state"]) for r in refreshed["refreshed_into"]] == [
        ("prod.db.mv_one", "STALE", "STALE"),
        ("prod.db.mv_presto", "UNKNOWN", "FRESH"),
        ("prod.db.mv_trino", "STALE", "STALE"),
        ("prod.db.mv_two", "FRESH", "FRESH"),
    ]
    outputs["uses"]["refreshed_into"] = refreshed["refreshed_into"]
    documented = _documented_json_fields()
    assert set(documented) == set(outputs)
    for command, output in outputs.items():
        fields = documented[command]
        if isinstance(output, list):  # a list of rows: `[]` names their keys
            assert output, command
            keys = set().union(*(row.keys() for row in output))
            assert keys <= fields["[]"] or command == "sql", (command, keys - fields["[]"])
            continue
        assert set(output) == {name.removesuffix("[]") for name in fields}, command
        for name, mentioned in fields.items():
            if name.endswith("[]") and output[name[:-2]]:
                keys = set().union(*(row.keys() for row in output[name[:-2]]))
                assert keys <= mentioned, (command, name, keys - mentioned)


def _code_text(node: ast.expr) -> str | None:
    """A code as a call spells it: a literal, or an f-string with `<>` for what it fills in."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "<>" for part in node.values)
    return None


def _produced() -> tuple[set[str], set[str]]:
    """(finding codes, quarantine reasons) the indexer's and the sinks' code can produce, read from its calls:
    `Finding(code, ...)` and `_loaded(..., code, ...)`; `QuarantinedFile(location, reason, ...)`,
    `reason=` and the exception classes' `reason`; the read failures' reasons; and the codes of the
    `findings` view's SQL and of the audit rows'. A code naming one field (`invalid-field:refs`)
    counts as its pattern."""
    codes: set[str] = set()
    reasons = set(READ_FAILURE_REASONS.values())
    for path in [*(ROOT / "indexer").rglob("*.py"), *(ROOT / "sinks").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            spelled: list[ast.expr] = []
            if isinstance(node, ast.Call):
                called = getattr(node.func, "id", getattr(node.func, "attr", None))
                position = {"Finding": 0, "_loaded": 3}.get(str(called))
                if position is not None and len(node.args) > position:
                    codes |= {text} if (text := _code_text(node.args[position])) else set()
                if called == "QuarantinedFile" and len(node.args) > 1:
                    spelled.append(node.args[1])
                spelled += [keyword.value for keyword in node.keywords if keyword.arg == "reason"]
            elif isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
                "reason"
            ]:
                spelled.append(node.value)
            reasons |= {text for value in spelled if (text := _code_text(value))}
    derived = (ROOT / "queries" / "sql" / "30_findings.sql").read_text() + (
        ROOT / "sinks" / "audit.py"
    ).read_text()
    codes |= set(re.findall(r"'([a-z]+(?:-[a-z]+)+)', 'warning'", derived))
    patterns = {code.split(":")[0] for code in codes if code.endswith(":<>")}
    return {f"{code.split(':')[0]}:<>" if code.split(":")[0] in patterns else code for code in codes}, reasons


def _documented(block: str) -> set[str]:
    listed = README.split(f"<!-- {block}:start -->", 1)[1].split(f"<!-- {block}:end -->", 1)[0]
    codes = re.findall(r"`([a-z]+(?:-[a-z]+)*(?::<?[a-z-]+>?)?)`", listed)
    return {re.sub(r"<[a-z]+>", "<>", code) for code in codes}


def test_every_finding_code_and_quarantine_reason_is_documented() -> None:
    codes, reasons = _produced()
    assert {"invalid-field:<>", "sql-parse-error", "version-conflict", "invalid-mv-metadata"} <= codes
    assert {"not-json", "internal-error", "not-a-regular-file", "bad-event"} <= reasons
    assert _documented("findings") == codes == CODES
    assert _documented("reasons") == reasons


QUERY_COMMANDS = {
    "show",
    "diff",
    "changes",
    "table-history",
    "search",
    "graph",
    "history",
    "table",
    "deps",
    "uses",
    "mv-status",
    "impact",
    "findings",
    "files",
    "quarantine",
    "sql",
}


def _readme_commands() -> list[list[str]]:
    """Every `viewlineage <query command>` line of the README's code blocks, as arguments."""
    found = []
    for block in re.findall(r"```(?:sh)?\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("viewlineage "):
                arguments = shlex.split(line, comments=True)[1:]
                if arguments[0] in QUERY_COMMANDS:
                    found.append(arguments)
    return found


def test_every_query_example_of_the_readme_runs_on_the_bundled_sample(
    sample_store: Path, mv_store: Path
) -> None:
    examples = _readme_commands()
    assert {arguments[0] for arguments in examples} == QUERY_COMMANDS
    outputs = {}
    for arguments in examples:
        result = CliRunner().invoke(cli, [*arguments, "--db", str(sample_store)])
        assert result.exit_code == 0, (arguments, result.output)
        outputs[arguments[0]] = result.stdout
    assert outputs["show"].startswith("view: prod.db.event_agg\n")
    assert json.loads(outputs["uses"])["views"]
    assert outputs["mv-status"] == "(no rows)\n"
    (mv_example,) = [arguments for arguments in examples if arguments[0] == "mv-status"]
    with_mvs = CliRunner().invoke(cli, [*mv_example, "--db", str(mv_store)])
    assert with_mvs.exit_code == 0, with_mvs.output
    assert "prod.db.mv_one: " in with_mvs.stdout


def test_every_http_example_of_the_readme_answers(sample_store: Path) -> None:
    urls = re.findall(r"^curl '(http://[^']+)'$", README, re.M)
    assert len(urls) == 2
    with serving(sample_store) as server:
        for url in urls:
            # curl sends the URL's UTF-8 bytes as they are; urllib wants them escaped
            local = quote(url.replace("http://127.0.0.1:9464", server.url), safe=":/?&=")
            status, answer = get_json(local)
            assert (status, bool(answer)) == (200, True), answer
