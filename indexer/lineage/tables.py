"""SQL text of one representation -> the base tables it reads: a pure function of the SQL, its
dialect, the version's defaults, the view's catalog and `LineageConfig`.

Tables are found through sqlglot's scopes, so CTE names (even one named like the table it reads),
derived tables, lateral views and UNNEST are never mistaken for tables, and every subquery, join,
set operation and correlated subquery is followed. Table-valued functions are not tables, but
the tables passed to them are, and one whose reads cannot be told is a finding;
`IDENTIFIER('db.t')` is a table. Iceberg metadata tables and branch, tag and time-travel forms read their
base table, with the suffix or pin recorded.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.optimizer.scope import Scope, traverse_scope

from viewlineage.indexer.lineage.config import LineageConfig
from viewlineage.indexer.lineage.dialects import CASE_INSENSITIVE, sqlglot_spelling
from viewlineage.indexer.spec.findings import Finding, Severity

LINEAGE_RULES_VERSION = 9
"""Bump when extraction or resolution changes: it is part of the memo key, so stored results of
older rules are recomputed rather than reused."""
FILE_FORMATS = frozenset({"parquet", "orc", "json", "csv", "text", "avro", "binaryfile", "delta", "hudi"})
"""Spark data sources a query reads files of by path (``parquet.`s3://bucket/path` ``)."""
FILE_READERS = frozenset({"read_files", "read_parquet", "read_csv", "read_json"})
"""Table-valued functions that read files by path."""
GENERATORS = frozenset(
    {"range", "sequence", "generateseries", "generate_series", "explode", "explode_outer", "_explodeouter",
     "posexplode", "posexplode_outer", "posexplodeouter", "inline", "inline_outer", "inlineouter", "stack",
     "json_tuple", "unnest", "values"}
)  # fmt: skip
"""Table-valued functions that make rows of their arguments and read no table (as named or as
sqlglot's expression keys)."""

METADATA_TABLES = frozenset(
    {
        "history",
        "metadata_log_entries",
        "snapshots",
        "entries",
        "files",
        "data_files",
        "delete_files",
        "manifests",
        "partitions",
        "position_deletes",
        "refs",
        "all_data_files",
        "all_delete_files",
        "all_files",
        "all_manifests",
        "all_entries",
        "properties",
    }
)
"""Iceberg metadata table names (`db.t.snapshots` in Spark, `"t$snapshots"` in Trino)."""

_PIN_PREFIXES = ("branch_", "tag_")
_TOKEN = re.compile(
    r"<Token token_type: [^,]*, text: (.*?), line: \d+, col: \d+, start: \d+, end: \d+, comments: \[.*?\]>"
)
"""sqlglot's repr of a token in its messages: users read the token's text."""
_CLASS = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")
"""sqlglot's repr of an expression class in its messages (`missing for <class '...And'>`): its name."""


@dataclass(frozen=True, slots=True)
class TableReference:
    """One table a representation reads, resolved against the version's defaults."""

    catalog: str | None
    namespace: tuple[str, ...]
    name: str
    suffix: str | None = None
    """Iceberg metadata table read (`snapshots`), if any."""
    pin: str | None = None
    """Branch, tag or time-travel clause (`branch_x`, `VERSION AS OF 42`), if any."""
    catalog_source: str = "explicit"
    """`explicit`, `default-catalog`, `catalog-map`, or `unknown` (no catalog could be inferred)."""
    raw: str = ""
    """The reference as written."""

    @property
    def qualified_name(self) -> str:
        return ".".join([*([self.catalog] if self.catalog else []), *self.namespace, self.name])


@dataclass(frozen=True, slots=True)
class LineageRequest:
    """Everything lineage depends on, so that equal requests give equal answers (the memo key)."""

    sql: str
    dialect: str
    default_catalog: str | None
    default_namespace: tuple[str, ...]
    view_catalog: str | None

    def key(self, config: LineageConfig) -> str:
        text = "\x00".join(
            [
                str(LINEAGE_RULES_VERSION),
                config.fingerprint(),
                self.dialect,
                self.default_catalog or "",
                "\x1f".join(self.default_namespace),
                self.view_catalog or "",
                self.sql,
            ]
        )
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Lineage:
    dialect: str
    references: tuple[TableReference, ...]
    findings: tuple[Finding, ...]


def extract_lineage(request: LineageRequest, config: LineageConfig) -> Lineage:
    """The tables `request.sql` reads. Never raises: SQL that breaks the analysis itself (sqlglot
    recursing too deep, an internal error) gives an `sql-analysis-error` finding and no references,
    so one pathological view cannot stop a consumer that would meet it again on every restart.

    >>> req = LineageRequest("WITH t AS (SELECT * FROM t) SELECT * FROM t JOIN db2.u USING (id)",
    ...                      "spark", "prod", ("db",), None)
    >>> [r.qualified_name for r in extract_lineage(req, LineageConfig()).references]
    ['prod.db.t', 'prod.db2.u']
    """
    try:
        return _extract(request, config)
    except Exception as exc:  # by design: see the docstring
        message = f"{type(exc).__name__}: {str(exc)[:200]}"
        return Lineage(request.dialect, (), (Finding("sql-analysis-error", Severity.ERROR, message),))


def _extract(request: LineageRequest, config: LineageConfig) -> Lineage:
    resolver = _Resolver(request, config)
    try:
        statements = sqlglot.parse(sqlglot_spelling(request.sql, request.dialect), read=request.dialect)
    except (ParseError, TokenError) as exc:
        return Lineage(request.dialect, (), (_parse_error_finding(exc),))
    queries = [statement for statement in statements if statement is not None]
    if len(queries) != 1:  # none reads nothing knowable; several are no view an engine would run, so
        # what each reads is no read of the view's (its lineage is unknown, not these tables)
        problem = "no statement" if not queries else f"{len(queries)} statements, where a view has one query"
        finding = Finding("sql-parse-error", Severity.ERROR, f"the SQL holds {problem}", "1:1")
        return Lineage(request.dialect, (), (finding,))
    for statement in queries:
        if not isinstance(statement, exp.Query):
            resolver.findings.append(
                Finding(
                    "sql-parse-error",
                    Severity.ERROR,
                    f"not a query: {statement.sql(request.dialect)[:80]!r} parses as {statement.key}",
                    "1:1",
                )
            )
            continue
        fold_cte_names(statement, request.dialect)
        try:
            scopes = traverse_scope(statement)
        except SqlglotError as exc:
            resolver.findings.append(
                Finding("sql-parse-error", Severity.ERROR, f"cannot resolve scopes: {exc}")
            )
            continue
        seen: set[int] = set()
        for scope in [*scopes, *unscoped_queries(statement, scopes)]:
            for source in scope.sources.values():
                if isinstance(source, exp.Table) and id(source) not in seen:
                    seen.add(id(source))
                    resolver.add(source)
    # One reference per resolved table: `t` and `db.t` in one query are the same read.
    unique = {(r.catalog, r.namespace, r.name, r.suffix, r.pin): r for r in reversed(resolver.references)}
    return Lineage(request.dialect, tuple(sorted(unique.values(), key=_sort_key)), tuple(resolver.findings))


def unscoped_queries(statement: exp.Expr, scopes: list[Scope]) -> list[Scope]:
    """The scopes of queries sqlglot's scopes leave out, such as a subquery passed to a generator
    (`explode((SELECT collect_list(a) FROM t))`): each read as a query of its own, the statement's
    CTE names kept out of them (a CTE they read is no table)."""
    within = {id(scope.expression) for scope in scopes}
    ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
    orphans = [
        select
        for select in statement.find_all(exp.Select)
        if id(select) not in within
        and not any(id(up) not in within for up in _enclosing_selects(select, statement))
    ]
    found: list[Scope] = []
    for orphan in orphans:
        for scope in traverse_scope(orphan.copy()):
            scope.sources = {  # the statement's CTEs, which the copy does not define
                name: source
                for name, source in scope.sources.items()
                if not (isinstance(source, exp.Table) and not source.db and source.name in ctes)
            }
            found.append(scope)
    return found


def _enclosing_selects(select: exp.Select, statement: exp.Expr) -> list[exp.Select]:
    """The SELECTs `select` sits in, below `statement`."""
    enclosing = []
    node = select.parent
    while node is not None and node is not statement.parent:
        if isinstance(node, exp.Select):
            enclosing.append(node)
        node = node.parent
    return enclosing


def fold_cte_names(statement: exp.Expr, dialect: str) -> None:
    """Spell each CTE's name, and each table name without a namespace that is one but for case, in
    lower case, where the dialect resolves names case-insensitively: `WITH EVENTS AS (...) SELECT *
    FROM events` reads the CTE, and sqlglot's scopes match names exactly."""
    if dialect not in CASE_INSENSITIVE:
        return
    names = [cte.args["alias"].this for cte in statement.find_all(exp.CTE) if cte.args.get("alias")]
    folded = {name.this.lower() for name in names}
    tables = [
        table.this
        for table in statement.find_all(exp.Table)
        if isinstance(table.this, exp.Identifier)
        and not table.args.get("db")
        and table.name.lower() in folded
    ]
    for identifier in (*names, *tables):
        identifier.set("this", identifier.this.lower())


def _sort_key(ref: TableReference) -> tuple[str, ...]:
    return (ref.catalog or "", *ref.namespace, ref.name, ref.suffix or "", ref.pin or "", ref.raw)


def _parse_error_finding(exc: ParseError | TokenError) -> Finding:
    errors = getattr(exc, "errors", None) or [{}]
    first = errors[0]
    line, col = first.get("line"), first.get("col")
    message = _TOKEN.sub(r"'\1'", first.get("description") or str(exc).splitlines()[0])
    message = _CLASS.sub(r"\1", message)
    return Finding("sql-parse-error", Severity.ERROR, message, f"{line}:{col}" if line is not None else "")


class _Resolver:
    def __init__(self, request: LineageRequest, config: LineageConfig) -> None:
        self.request = request
        self.dialect = request.dialect
        self.fold = request.dialect in CASE_INSENSITIVE
        self.aliases = {
            name: catalog for (dialect, name), catalog in config.aliases.items() if dialect == request.dialect
        }
        default_catalog = self._catalog(request.default_catalog) if request.default_catalog else None
        self.default_catalog = default_catalog
        self.known_catalogs = (
            set(config.catalogs)
            | set(self.aliases)
            | {
                c
                for c in (default_catalog, request.view_catalog, self._fold(request.default_catalog or ""))
                if c
            }
        )
        self.references: list[TableReference] = []
        self.findings: list[Finding] = []

    def _fold(self, name: str) -> str:
        return name.lower() if self.fold else name

    def _catalog(self, name: str) -> str:
        folded = self._fold(name)
        return self.aliases.get(folded.lower(), folded)

    def add(self, table: exp.Table) -> None:
        if isinstance(table.this, exp.Identifier | exp.Dot):
            self._add_named(table, [self._fold(part.name) for part in table.parts])
            return
        for parts in self._function_reads(table.this):
            self._add_named(table, parts)

    def _add_named(self, table: exp.Table, parts: list[str]) -> None:
        if self.dialect == "duckdb" and len(parts) == 1 and table.this.args.get("quoted") and "." in parts[0]:
            # DuckDB's `FROM 'data/x.parquet'` (sqlglot reads the string as a quoted name): a file
            self.findings.append(
                Finding(
                    "path-read",
                    Severity.WARNING,
                    f"{table.sql(self.dialect)} reads files at {parts[0]!r} directly, not a table: what "
                    "wrote them is not followed",
                )
            )
            return
        if len(parts) == 2 and parts[0].lower() in FILE_FORMATS and "/" in parts[1]:
            # Spark's ``parquet.`s3://b/p` ``: files read directly, no catalog's table.
            self.findings.append(
                Finding(
                    "path-read",
                    Severity.WARNING,
                    f"{table.sql(self.dialect)} reads files at {parts[1]!r} directly, not a table: what "
                    "wrote them is not followed",
                )
            )
            return
        raw = ".".join(parts)
        pin = None
        version = table.args.get("version")
        if isinstance(version, exp.Version):
            pin = version.sql(self.dialect)
        suffix = None
        if "$" in parts[-1]:
            parts[-1], _, suffix = parts[-1].partition("$")
        catalog = None
        if len(parts) >= 2 and parts[0] in self.known_catalogs:
            catalog = self._catalog(parts[0])
            parts = parts[1:]
        if len(parts) >= 2 and parts[-1].startswith(_PIN_PREFIXES):
            pin = parts.pop()
        elif suffix is None and len(parts) >= 3 and parts[-1] in METADATA_TABLES:
            suffix = parts.pop()
        if len(parts) == 1:
            namespace = tuple(self._fold(part) for part in self.request.default_namespace)
        else:
            namespace = tuple(parts[:-1])
        if catalog is None and len(parts) >= 3 and (self.default_catalog or self.request.view_catalog):
            self.findings.append(
                Finding(
                    "catalog-ambiguous",
                    Severity.WARNING,
                    f"{raw!r}: {parts[0]!r} is no known catalog, so it is read as a namespace "
                    "level; if it names a catalog, say which with --catalog-alias "
                    f"{self.dialect}:{parts[0]}=CATALOG (queries match it either way, as uncertain)",
                )
            )
        if catalog is not None:
            source = "explicit"
        elif self.default_catalog:
            catalog, source = self.default_catalog, "default-catalog"
        elif self.request.view_catalog:
            catalog, source = self.request.view_catalog, "catalog-map"
        else:
            source = "unknown"
            self.findings.append(
                Finding(
                    "catalog-unknown",
                    Severity.WARNING,
                    f"no catalog for {raw!r}: no default-catalog and no --catalog-map entry; "
                    "it matches on namespace and name only",
                )
            )
        self.references.append(TableReference(catalog, namespace, parts[-1], suffix, pin, source, raw))

    def _function_reads(self, function: exp.Expression) -> list[list[str]]:
        """The tables a table-valued function reads: `IDENTIFIER('db.t')` its table; Trino's
        `TABLE(f(input => TABLE(db.t)))` each table passed, `TABLE(system.table_changes(schema_name
        => 'db', table_name => 't'))` its table; none for a generator (`range`, `explode`). Any other
        reads what cannot be told (`system.query` runs SQL in another database): a finding that
        leaves the view's lineage unknown."""
        inner = function
        if isinstance(inner, exp.Anonymous) and inner.name.upper() == "TABLE" and inner.expressions:
            inner = inner.expressions[0]  # Trino's TABLE(f(...))
        called = inner.expression if isinstance(inner, exp.Dot) else inner
        name = (called.name if isinstance(called, exp.Anonymous) else called.key).lower()
        arguments = {
            kwarg.this.name.lower(): kwarg.expression for kwarg in called.find_all(exp.Kwarg) if kwarg.this
        }
        passed = [
            argument.expressions[0]
            for argument in called.find_all(exp.Anonymous)
            if argument is not called and argument.name.upper() == "TABLE" and argument.expressions
        ]
        if passed:  # `TABLE(db.t)`, or `TABLE(SELECT ... FROM db.t)`: the tables its query reads
            named = [
                table
                for argument in passed
                for table in (
                    [exp.to_table(argument.sql(self.dialect), dialect=self.dialect)]
                    if isinstance(argument, exp.Column | exp.Dot | exp.Identifier)
                    else argument.find_all(exp.Table)
                )
                if isinstance(table.this, exp.Identifier | exp.Dot)
            ]
            return [[self._fold(part.name) for part in table.parts] for table in named]
        changes = [arguments.get(key) for key in ("schema_name", "table_name")]
        if name == "table_changes" and all(isinstance(v, exp.Literal) and v.is_string for v in changes):
            return [[self._fold(str(value.name)) for value in changes if value is not None]]
        parts = self._function_parts(inner)
        if parts is not None:
            return [parts]
        if name not in GENERATORS | FILE_READERS | {"identifier"}:
            self.findings.append(
                Finding(
                    "table-function",
                    Severity.WARNING,
                    f"{function.sql(self.dialect)[:200]} is a table function whose reads are not known: "
                    "the view's lineage is unknown",
                )
            )
        return []

    def _function_parts(self, function: exp.Expression) -> list[str] | None:
        """A table name from `IDENTIFIER('db.t')`; None for any other table-valued function."""
        if isinstance(function, exp.Anonymous) and function.name.lower() in FILE_READERS:
            self.findings.append(
                Finding(
                    "path-read",
                    Severity.WARNING,
                    f"{function.sql(self.dialect)[:200]} reads files directly, not a table: what wrote them "
                    "is not followed",
                )
            )
            return None
        if not (isinstance(function, exp.Anonymous) and function.name.upper() == "IDENTIFIER"):
            return None
        argument = function.expressions[0] if function.expressions else None
        if isinstance(argument, exp.Literal) and argument.is_string:
            try:
                named = exp.to_table(argument.this, dialect=self.dialect)
            except SqlglotError:
                named = None
            if named is not None:
                return [self._fold(part.name) for part in named.parts]
        self.findings.append(
            Finding(
                "dynamic-identifier",
                Severity.WARNING,
                f"{function.sql(self.dialect)} names its table at run time; not resolved",
            )
        )
        return None
