"""How query results are printed: readable text (`TextOutput`), JSON with stable fields
(`JsonOutput`), and a command's main table as CSV (`CsvOutput`) or Markdown (`MarkdownOutput`)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import click

Result = dict[str, Any] | Sequence[dict[str, Any]]

FORMATS = ("text", "json", "csv", "markdown")


class Output:
    def result(self, value: Result) -> None:
        raise NotImplementedError


def output_for(fmt: str, keep_empty: bool = False, rows: str | None = None) -> Output:
    """The printer for `--format fmt`. `rows`: the field of a command's answer that holds its main
    table (`uses`: `views`), which csv and markdown print; without it, a record's fields print as
    `field`/`value` rows. `keep_empty`: show columns that are empty in every row (`sql`)."""
    if fmt == "json":
        return JsonOutput()
    if fmt == "csv":
        return CsvOutput(rows)
    if fmt == "markdown":
        return MarkdownOutput(rows)
    return TextOutput(keep_empty, rows)


class JsonOutput(Output):
    def result(self, value: Result) -> None:
        click.echo(json.dumps(value, indent=2, default=str, ensure_ascii=False))


class TextOutput(Output):
    def __init__(self, keep_empty: bool = False, rows: str | None = None) -> None:
        self.keep_empty = keep_empty
        self.rows = rows
        """The main table's field: said to be empty (`views: (no rows)`), where other empty fields
        are left out."""

    def result(self, value: Result) -> None:
        if isinstance(value, dict):
            self._record(value, 0)
        else:
            click.echo(table(list(value), keep_empty=self.keep_empty))

    def _record(self, record: dict[str, Any], indent: int) -> None:
        pad = " " * indent
        for key, item in ((_plain(name), value) for name, value in record.items()):
            if item == [] and indent == 0 and key == self.rows:
                click.echo(f"{key}: (no rows)")
                continue
            if item is None or item == [] or item == {}:
                continue
            if isinstance(item, list) and all(isinstance(row, dict) for row in item):
                click.echo(f"{pad}{key}:")
                if any(isinstance(v, str) and "\n" in v for row in item for v in row.values()):
                    for row in item:
                        self._record(row, indent + 2)
                        click.echo()
                else:
                    fitted = table(item, indent=indent + 2)
                    click.echo("\n".join(pad + "  " + line for line in fitted.splitlines()))
            elif isinstance(item, dict):
                click.echo(f"{pad}{key}:")
                for sub_key, sub_item in item.items():
                    click.echo(f"{pad}  {_plain(sub_key)} = {cell(sub_item, sub_key)}")
            elif isinstance(item, str) and "\n" in item:
                click.echo(f"{pad}{key}:")
                click.echo("\n".join(f"{pad}  | {_plain(line)}" for line in item.splitlines()))
            else:
                click.echo(f"{pad}{key}: {cell(item, key)}")


class _MainTableOutput(Output):
    """Prints a command's main table (`main_rows`) in one format."""

    def __init__(self, rows: str | None) -> None:
        self.rows = rows

    def result(self, value: Result) -> None:
        rows = main_rows(value, self.rows)
        if rows:  # no rows, no columns to name: csv prints nothing, markdown says so
            self.write(_columns(rows, keep_empty=True), rows)
        else:
            self.empty()
        if isinstance(value, dict) and self.rows is not None:
            for field, title in SIDE_TABLES.items():
                if value.get(field):
                    self.side_table(title, value[field])

    def empty(self) -> None:
        pass

    def write(self, columns: list[str], rows: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def side_table(self, title: str, rows: list[dict[str, Any]]) -> None:
        """What a reader of the main table alone would miss: on stderr, so that the csv on stdout
        stays one table."""
        named_rows = [row for row in rows if isinstance(row, dict)]
        views = {
            str(row["view"] if "view" in row else row["table"])
            for row in named_rows
            if {"view", "table"} & set(row)
        }
        views |= {str(row) for row in rows if isinstance(row, str)}  # a list of view names
        named = ", ".join(sorted(views)) or f"{len(rows)}"
        click.echo(
            f"warning: {title}: {named} (not in this table; --format text, json or markdown lists them)",
            err=True,
        )


SIDE_TABLES = {
    "lineage_unknown": "lineage unknown, so they could read or use anything",
    "already_broken": "already broken: they read columns the table no longer has (renamed or dropped), or "
    "whose type no longer fits their stored schema (kind stored-type: retyped)",
    "stale_schemas": "views whose stored schema goes stale: engines refuse them until they are re-created",
    "stale_schemas_assumed": "of those, assumed stale: an output type that cannot be inferred",
    "by_position": "Spark views reading it only by position (through `*`, or the struct or array holding "
    "it): they keep working",
    "time_travel": "views reading it by time travel or a tag, in that snapshot's schema: not affected",
    "tied": "views whose file in force ties with another, analysed from a guessed one",
    "property_changes": "commits that changed properties",
    "incarnations": "earlier or later views or tables at the same path",
    "cycles": "views that read themselves through views: no engine can run them",
}
"""Fields of an answer that csv and markdown, which print its main table, must not leave unsaid:
without them, a view whose SQL does not parse reads as one that reads nothing, and a history as
one without property changes or re-creations."""


class CsvOutput(_MainTableOutput):
    """The main table as CSV (RFC 4180, a header row); lists of names as in text cells, other lists
    and maps as JSON, so that a cell splits back unambiguously."""

    def write(self, columns: list[str], rows: list[dict[str, Any]]) -> None:
        click.echo(csv_text(rows, columns), nl=False)


def csv_text(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Rows as CSV with a header row (every column, empty or not); no rows, no text."""
    if not rows:
        return ""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = columns or _columns(rows, keep_empty=True)
    writer.writerow(columns)
    writer.writerows([_csv_cell(row.get(c), c) for c in columns] for row in rows)
    return buffer.getvalue()


class MarkdownOutput(_MainTableOutput):
    """The main table as a GitHub-flavoured Markdown table."""

    def empty(self) -> None:
        click.echo("(no rows)")

    def side_table(self, title: str, rows: list[dict[str, Any]]) -> None:
        click.echo(f"\n{title}:\n")
        rows = [row if isinstance(row, dict) else {"view": row} for row in rows]  # a list of view names
        self.write(_columns(rows, keep_empty=True), rows)

    def write(self, columns: list[str], rows: list[dict[str, Any]]) -> None:
        header = "| " + " | ".join(_markdown_cell(column) for column in columns) + " |"
        lines = [header, "|" + "|".join("---" for _ in columns) + "|"]
        for row in rows:
            cells = (_markdown_cell(cell(row.get(c), c, multiline=True)) for c in columns)
            lines.append("| " + " | ".join(cells) + " |")
        click.echo("\n".join(lines))


def main_rows(value: Result, rows: str | None) -> list[dict[str, Any]]:
    """The rows csv and markdown print: a list answer itself, the `rows` field of a record, or the
    record's own fields as `field`/`value` rows."""
    if not isinstance(value, dict):
        return list(value)
    if rows is not None:
        return list(value[rows])
    return [{"field": key, "value": item} for key, item in value.items()]


CHAIN_KEYS = frozenset({"via", "path"})
"""Fields whose lists are chains of views (`a > b`); other lists of names join with `.` when they
are the parts of one identifier, else with `, `."""
IDENTIFIER_KEYS = frozenset({"default_namespace", "namespace", "name", "name_path"})
SENTENCE_KEYS = frozenset({"reasons"})
"""Fields whose lists are sentences, which hold commas: joined with `; `."""


_CONTROLS = {
    **{
        code: f"\\x{code:02x}"
        for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
        if code not in (0x09, 0x0A)
    },
    **{
        code: f"\\u{code:04x}"
        for code in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
    },
}
"""Control characters as their escapes: a value from a file (an engine name, a property) sends no
escape sequence to the terminal (a title, colours, a cursor move); nor do bidirectional controls
(U+202E) reorder what follows, which could make a printed name or SQL read as another."""


def cell(value: Any, key: str | None = None, multiline: bool = False) -> str:
    """A value as a table cell reads, never as a Python repr: null is empty, booleans are
    true/false, lists and maps are joined; on one line a newline shows as `↵`, so that no value
    breaks a table's rows or reads as another; a control character shows as its escape (`\\x1b`)."""
    text = _plain(_joined(value, key))
    return text if multiline else text.replace("\n", "↵")


def _plain(text: Any) -> str:
    """`text` with its control characters shown as escapes (`\\x1b`): a file's names, keys and
    SQL reach no terminal as commands."""
    return str(text).translate(_CONTROLS)


def _joined(value: Any, key: str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            separator = (
                " > "
                if key in CHAIN_KEYS
                else "."
                if key in IDENTIFIER_KEYS
                else "; "
                if key in SENTENCE_KEYS
                else ", "
            )
            return separator.join(_item(v, separator) for v in value)
        if all(not isinstance(v, dict | list) for v in value):
            return ", ".join(_item(_joined(v, None), ", ") for v in value)
        return json.dumps(value, default=str, ensure_ascii=False)
    if isinstance(value, dict):
        return ", ".join(f"{_item(str(k), ', ', '=')}={_item(_joined(v, k), ', ')}" for k, v in value.items())
    return str(value)


def _item(text: str, *separators: str) -> str:
    """One item of a joined list or map, JSON-quoted when it holds what separates the items (or
    starts with a quote), so that `a, b` as one value never reads as two."""
    if text.startswith('"') or any(separator in text for separator in separators):
        return json.dumps(text, ensure_ascii=False)
    return text


def _csv_cell(value: Any, key: str) -> str:
    if isinstance(value, dict) or (isinstance(value, list) and not all(isinstance(v, str) for v in value)):
        return json.dumps(value, default=str, ensure_ascii=False)
    text = cell(value, key, multiline=True)
    # A text a spreadsheet would take for a formula (`=cmd|...`, `@SUM(1)`) starts with `'`, as
    # OWASP advises for CSV, a joined list of texts too; numbers keep their sign.
    if isinstance(value, str | list) and text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + text
    return text


def _markdown_cell(text: str) -> str:
    """A cell's text as Markdown that renders it as it is: renderers pass HTML through (a name
    holding `<img onerror=...>`), so `&` and `<` (which opens every tag) are entities, and `>` stays
    readable (`a > b`); `|` ends a cell; a newline a row."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;")
    return escaped.replace("|", "\\|").replace("\n", "<br>")


def _terminal_width(indent: int) -> int | None:
    """How wide a table may be on this terminal after `indent` (None: not a terminal, never cut)."""
    if not sys.stdout.isatty():
        return None
    return max(40, shutil.get_terminal_size().columns - indent)


def _cell_width(indent: int) -> int | None:
    """How wide one of two side-by-side cells may be on this terminal (None: never cut)."""
    width = _terminal_width(indent)
    return None if width is None else width // 2


MIN_COLUMN = 12
"""The narrowest a column is cut to fit the terminal (a longer header keeps its width)."""


NAME_COLUMNS = frozenset(
    {"view", "table", "reads", "name", "mv", "source", "target", "storage_table", "location", "root"}
)
"""Columns that say which view, table or file a row is about: cut last, and in the middle, so that
both the catalog and the view's own name (or a file's name) stay."""


def _fitted(natural: list[int], headers: list[str], total: int) -> list[int]:
    """Column widths that fit `total` characters with two spaces between columns: the widest are cut
    first, names (`NAME_COLUMNS`) only once no other column can be, each to no less than its header
    or `MIN_COLUMN`; a table that cannot fit is as narrow as that allows."""
    widths = list(natural)
    budget = total - 2 * (len(widths) - 1)
    floors = [min(n, max(len(h), MIN_COLUMN)) for n, h in zip(natural, headers, strict=True)]
    while sum(widths) > budget:
        cuttable = [i for i, w in enumerate(widths) if w > floors[i]]
        others = [i for i in cuttable if headers[i] not in NAME_COLUMNS]
        cuttable = others or cuttable
        if not cuttable:
            break
        widest = max(cuttable, key=lambda i: widths[i])
        others = sorted({widths[i] for i in cuttable if widths[i] < widths[widest]}, reverse=True)
        target = max(floors[widest], others[0] if others else 0, widths[widest] - (sum(widths) - budget))
        widths[widest] = target if target < widths[widest] else widths[widest] - 1
    return widths


def _cut(text: str, width: int | None, name: bool = False) -> str:
    """`text` in at most `width` characters, marked `…` where cut: at the end, or for a name in the
    middle, keeping more of its end."""
    if width is None or len(text) <= width:
        return text
    if not name or width < 5:
        return text[: width - 1] + "…"
    tail = (width - 1) * 2 // 3
    return text[: width - 1 - tail] + "…" + text[len(text) - tail :]


def _columns(rows: list[dict[str, Any]], keep_empty: bool) -> list[str]:
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return [c for c in columns if keep_empty or any(row.get(c) not in (None, "", [], {}) for row in rows)]


def table(
    rows: list[dict[str, Any]], max_width: int | None = None, keep_empty: bool = False, indent: int = 0
) -> str:
    """Rows as an aligned text table; empty columns are left out unless `keep_empty`. On a terminal
    the table is fitted to its width (after `indent`) by cutting its widest columns (a cell at most
    `max_width` when given), and a cut cell ends with `…`; when even the names would be cut, each row
    is printed as a record of `field | value` lines instead (as psql's expanded display), nothing
    cut. When the output goes elsewhere nothing is cut."""
    if not rows:
        return "(no rows)"
    keys = _columns(rows, keep_empty)
    cells = [[_cut(cell(row.get(c), c), max_width) for c in keys] for row in rows]
    columns = [_plain(c) for c in keys]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    total = _terminal_width(indent)
    if total is not None and sum(widths) + 2 * (len(widths) - 1) > total:
        natural, widths = widths, _fitted(widths, columns, total)
        if any(c in NAME_COLUMNS and w < n for c, w, n in zip(columns, widths, natural, strict=True)):
            return _expanded(columns, cells)
        named = [c in NAME_COLUMNS for c in columns]
        cells = [[_cut(v, w, n) for v, w, n in zip(r, widths, named, strict=True)] for r in cells]
        columns = [_cut(c, width) for c, width in zip(columns, widths, strict=True)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells)
    return "\n".join(lines)


def _expanded(columns: list[str], cells: list[list[str]]) -> str:
    """Rows as records, one `field | value` line per column (empty values left out)."""
    width = max(map(len, columns))
    lines = []
    for number, row in enumerate(cells, start=1):
        lines.append(f"-[ RECORD {number} ]-")
        lines.extend(f"{c.ljust(width)} | {value}" for c, value in zip(columns, row, strict=True) if value)
    return "\n".join(lines)


_DIFF_MARKS = {"equal": " ", "replace": "~", "delete": "-", "insert": "+"}


def side_by_side_text(rows: list[dict[str, Any]]) -> str:
    """A side-by-side diff's rows (`queries.diff.side_by_side`) as two columns of numbered lines,
    each row marked `~` (changed), `-` (only before), `+` (only after); on a terminal each side is
    cut to half its width, marked `…`."""
    width = _cell_width(0)
    numbers = max([len(str(row[key] or "")) for row in rows for key in ("before_line", "after_line")] or [1])
    left = [
        f"{row['before_line'] or '':>{numbers}} {_cut(_plain(row['before'] or ''), width)}" for row in rows
    ]
    left_width = max(map(len, left), default=0)
    return "\n".join(
        f"{_DIFF_MARKS[row['kind']]} {text.ljust(left_width)} | "
        f"{row['after_line'] or '':>{numbers}} {_cut(_plain(row['after'] or ''), width)}".rstrip()
        for row, text in zip(rows, left, strict=True)
    )
