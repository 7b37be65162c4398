"""Loader for `fixtures/lineage/cases.sql` (format described at the top of that file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from viewlineage.indexer.lineage.config import LineageConfig
from viewlineage.indexer.lineage.tables import LineageRequest, TableReference

CASES = Path(__file__).parent / "fixtures" / "lineage" / "cases.sql"


@dataclass
class LineageCase:
    title: str
    headers: dict[str, str] = field(default_factory=dict)
    sql_lines: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    def request(self) -> LineageRequest:
        namespace = self.headers.get("default-namespace", "db")
        return LineageRequest(
            sql="\n".join(self.sql_lines).rstrip().rstrip(";"),
            dialect=self.headers.get("dialect", "spark"),
            default_catalog=self.headers.get("default-catalog") or None,
            default_namespace=tuple(namespace.split(".")) if namespace else (),
            view_catalog=self.headers.get("view-catalog", "prod") or None,
        )

    def config(self) -> LineageConfig:
        aliases = {}
        if "alias" in self.headers:
            left, _, catalog = self.headers["alias"].partition("=")
            dialect, _, name = left.partition(":")
            aliases[(dialect, name)] = catalog
        catalogs = {c.strip() for c in self.headers.get("catalogs", "prod").split(",") if c.strip()}
        return LineageConfig(aliases=aliases, catalogs=frozenset(catalogs))


def render(reference: TableReference) -> str:
    text = ".".join([reference.catalog or "?", *reference.namespace, reference.name])
    if reference.suffix:
        text += f" suffix={reference.suffix}"
    if reference.pin:
        text += f" pin={reference.pin}"
    return text


def load_cases() -> list[LineageCase]:
    cases: list[LineageCase] = []
    for line in CASES.read_text().splitlines():
        if line.startswith("# title:"):
            cases.append(LineageCase(line.split(":", 1)[1].strip()))
        elif not cases:
            continue
        elif line.startswith("# expect:"):
            cases[-1].expected.append(line.split(":", 1)[1].strip())
        elif line.startswith("# finding:"):
            cases[-1].findings.append(line.split(":", 1)[1].strip())
        elif line.startswith("# none"):
            continue
        elif line.startswith("# ") and ":" in line:
            key, _, value = line[2:].partition(":")
            cases[-1].headers[key.strip()] = value.strip()
        elif line.strip():
            cases[-1].sql_lines.append(line)
    return cases
