"""How query results are printed: `TextOutput` (readable tables) or `JsonOutput` (stable fields)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click


class Output:
    def result(self, value: dict[str, Any] | Sequence[dict[str, Any]]) -> None:
        raise NotImplementedError


class JsonOutput(Output):
    def result(self, value: dict[str, Any] | Sequence[dict[str, Any]]) -> None:
        click.echo(json.dumps(value, indent=2, default=str, ensure_ascii=False))


class TextOutput(Output):
    """`keep_empty`: show columns that are empty in every row (`sql`: a NULL column is an answer)."""

    def __init__(self, keep_empty: bool = False) -> None:
        self.keep_empty = keep_empty

    def result(self, value: dict[str, Any] | Sequence[dict[str, Any]]) -> None:
        if isinstance(value, dict):
            self._record(value, 0)
        else:
            click.echo(table(list(value), keep_empty=self.keep_empty))

    def _record(self, record: dict[str, Any], indent: int) -> None:
        pad = " " * indent
        for key, item in record.items():
            if item is None or item == [] or item == {}:
                continue
            if isinstance(item, list) and all(isinstance(row, dict) for row in item):
                click.echo(f"{pad}{key}:")
                if any(isinstance(v, str) and "\n" in v for row in item for v in row.values()):
                    for row in item:
                        self._record(row, indent + 2)
                        click.echo()
                else:
                    click.echo("\n".join(pad + "  " + line for line in table(item).splitlines()))
            elif isinstance(item, dict):
                click.echo(f"{pad}{key}:")
                for sub_key, sub_item in item.items():
                    click.echo(f"{pad}  {sub_key} = {sub_item}")
            elif isinstance(item, str) and "\n" in item:
                click.echo(f"{pad}{key}:")
                click.echo("\n".join(f"{pad}  | {line}" for line in item.splitlines()))
            else:
                click.echo(f"{pad}{key}: {_cell(item)}")


CELL_WIDTH = 80


def _cut(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " > ".join(str(v) for v in value) if all(isinstance(v, str) for v in value) else str(value)
    return str(value).replace("\n", " ")


def table(rows: list[dict[str, Any]], max_width: int | None = None, keep_empty: bool = False) -> str:
    """Rows as an aligned text table; empty columns are left out unless `keep_empty`. A cell is cut
    at `max_width` characters (default: 80 on a terminal, none when the output goes elsewhere), and
    a cut cell ends with `…`."""
    if not rows:
        return "(no rows)"
    if max_width is None:
        max_width = CELL_WIDTH if sys.stdout.isatty() else None
    columns = [c for c in rows[0] if keep_empty or any(row.get(c) not in (None, "", [], {}) for row in rows)]
    cells = [[_cut(_cell(row.get(c)), max_width) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells)
    return "\n".join(lines)
