"""SQL of one representation + the schemas of the tables it reads -> which columns it uses, how,
and which output column each one flows into: a pure function, like table lineage (`tables.py`).

Tables are resolved as table lineage resolves them, then renamed to placeholders so that sqlglot's
`qualify` can expand `*` and qualify every column against a one-level schema, whatever the depth of
the real namespaces. Each column is then followed through sqlglot's scopes: a CTE's or derived
table's column is traced to the base columns of its projection, so a filter on a CTE column is a
filter on the base column behind it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import TypeAnnotator
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope, walk_in_scope
from sqlglot.schema import MappingSchema

from viewlineage.indexer.lineage.config import LineageConfig
from viewlineage.indexer.lineage.dialects import LATERAL_ALIAS_DIALECTS, SPARK_FAMILY, sqlglot_spelling
from viewlineage.indexer.lineage.tables import (
    LineageRequest,
    TableReference,
    _Resolver,
    fold_cte_names,
    unscoped_queries,
)
from viewlineage.indexer.spec.findings import Finding, Severity

TableKey = tuple[str | None, tuple[str, ...], str]
"""(catalog, namespace, name) as table lineage resolves a reference."""

MAX_SQL_CHARS = 32_768
"""Longer SQL is not analysed for columns: qualifying it grows with the square of its length (a
5,000-term OR took 13 s), and impact asks it of every view reading the table. Its uses are unknown."""
PROJECTED, AGGREGATE, WINDOW = "projected", "aggregate", "window"
FILTER, JOIN_KEY, GROUP_BY, ORDER_BY, OTHER = "filter", "join-key", "group-by", "order-by", "other"
_Resolved = tuple[TableKey, tuple[str, ...], str, bool, bool]
"""A base column behind a reference: (table, path, what it is of the reference's value (`VALUE`,
`ELEMENTS`, `READ`, `FIELD`, `MADE`, `OPAQUE`, `WRITTEN`), under an aggregate, named by a projection on
the way rather than a `*`)."""
Outputs = Callable[[exp.Expr, str, exp.Expr], tuple[str, tuple[str | None, ...]]]
"""(projection, kind, column in it) -> (kind, the output columns it flows into) for the projections
of one scope: one, except in a generator's `AS (k, v)`."""
_SELECT_ARGS = {"where": FILTER, "having": FILTER, "qualify": FILTER, "group": GROUP_BY, "order": ORDER_BY}


@dataclass(frozen=True, slots=True)
class ColumnUse:
    table: TableKey
    path: tuple[str, ...]
    """The column, then the struct fields read below it (`address.city`)."""
    kind: str
    """`projected`, `aggregate`, `window`, `filter`, `join-key`, `group-by`, `order-by` or `other`."""
    output: str | None
    """The output column it flows into (projected, aggregated, windowed), else None."""
    starred: bool = False
    """Whether the output column is one a `*` gives (or a field of one a `struct(*)` gives), through
    `*`s only from the table: no name in the SQL names it, so the view's column keeps its place (and
    its stored name) if it is renamed."""
    opaque: bool = False
    """Whether fields of a value made of the path are read by name, which the analysis cannot map
    onto the path's fields (`map_values(m).price`, `nick` of `SELECT owner.* ...`): a rename or
    drop of any field below the path may break the query."""
    names_written: bool = False
    """Whether the value goes whole into one that spells its fields' names (`to_json(s)`): a
    rename or drop of a field below the path changes the query's values, and it keeps running."""
    rebinds: bool = False
    """Whether the column is read by a name that an output before it in the same SELECT list also
    has (`qty + 1 AS price, price * 2 AS p2`): dropped or renamed, in Spark the name then reads that
    output (a lateral column alias), so the query keeps running with other values."""
    counted: bool = False
    """Whether only how many elements or entries the value has, or whether it is null, is read
    (`size(items)`, `s IS NULL`): no change to a field below the path reaches the query."""
    int_argument: bool = False
    """Whether the value (or arithmetic on it) is an argument Spark takes only as an INT, SMALLINT or
    TINYINT (`date_add(d, n)`): retyped to BIGINT, the query fails."""


@dataclass(frozen=True, slots=True)
class ColumnLineage:
    uses: tuple[ColumnUse, ...]
    outputs: tuple[str, ...]
    unknown_schemas: tuple[TableKey, ...]
    """Tables read whose schema was not given: their `*` stays unexpanded, their columns unseen."""
    findings: tuple[Finding, ...]
    star_tables: tuple[TableKey, ...] = ()
    """Tables a `*` (or `t.*`) of the query, or of a CTE or subquery in it, expands: a view over
    one gets the table's columns as they are when it is queried, not as they were at its creation."""
    pinned_tables: tuple[TableKey, ...] = ()
    """Tables read by time travel or at a tag (`VERSION AS OF 42`): in the schema of that snapshot,
    so no change to the table's columns reaches these reads (their uses are keyed apart)."""
    output_types: tuple[str | None, ...] = ()
    """With `typed`: each output's type as sqlglot infers it from the schemas, in Spark's spelling
    (`BIGINT`, `DECIMAL(38, 2)`); None where it cannot tell. Inferred, so only as exact as sqlglot's
    rules for each function (a decimal's `sum` widens less than Spark's)."""
    direct_outputs: tuple[bool, ...] = ()
    """With `typed`: whether each output is a table's column as it is (`t.c`, `c AS x`, a `*`'s),
    whose type is the column's own rather than inferred."""
    branch_types: tuple[tuple[str, ...], ...] = ()
    """With `typed`, of a set operation (`UNION ALL`): per output, the types of the branches whose
    projection there is a table's column as it is. The output's type is at least as wide as each."""


def iceberg_type_sql(kind: Any) -> str:
    """An Iceberg type (a name, or a struct, list or map object) as a Spark type string, for sqlglot
    to resolve struct fields."""
    if isinstance(kind, str):
        simple = {"long": "bigint", "integer": "int", "timestamptz": "timestamp", "timestamp_ns": "timestamp"}
        if kind.startswith(("decimal", "int", "string", "boolean", "float", "double", "date", "binary")):
            return kind
        return simple.get(kind, "string")
    nested = kind.get("type") if isinstance(kind, dict) else None
    if nested == "struct":
        members = [f"`{f['name']}`: {iceberg_type_sql(f['type'])}" for f in kind.get("fields", [])]
        return f"struct<{', '.join(members)}>"
    if nested == "list":
        return f"array<{iceberg_type_sql(kind['element'])}>"
    if nested == "map":
        return f"map<{iceberg_type_sql(kind['key'])}, {iceberg_type_sql(kind['value'])}>"
    return "string"


def schema_columns(columns: Sequence[Mapping[str, object]]) -> list[tuple[str, str]]:
    """(name, Spark type) of stored top-level columns (`schemas.columns`: nested types as JSON)."""
    typed = []
    for column in columns:
        kind = str(column["type"])
        parsed = orjson.loads(kind) if kind.startswith("{") else kind
        typed.append((str(column["name"]), iceberg_type_sql(parsed)))
    return typed


def column_lineage(
    request: LineageRequest,
    config: LineageConfig,
    schemas: Mapping[TableKey, Sequence[tuple[str, str]]],
    resolved: Mapping[str, TableKey] | None = None,
    typed: bool = False,
) -> ColumnLineage:
    """The columns `request.sql` uses. `schemas` gives (name, type) of each table or view read, keyed
    as table lineage resolves the reference; `resolved` maps references as written (`raw`) to the
    keys table lineage gave them when the view was indexed (under that run's catalog settings);
    `typed`: also infer the outputs' types (`output_types`). Never raises: what breaks the analysis
    is a finding."""
    if len(request.sql) > MAX_SQL_CHARS:
        message = (
            f"SQL of {len(request.sql):,} characters: the column analysis takes at most {MAX_SQL_CHARS:,}"
        )
        return ColumnLineage((), (), (), (Finding("column-analysis-error", Severity.ERROR, message),))
    try:
        lineage = _analyse(request, config, schemas, resolved or {}, typed)
    except RecursionError:  # sqlglot walks a chain of set operations (`UNION ALL`) as nested calls
        message = (
            "the SQL nests too deeply for the column analysis (a long chain of UNIONs or nested expressions)"
        )
        return ColumnLineage((), (), (), (Finding("column-analysis-error", Severity.ERROR, message),))
    except Exception as exc:  # by design, as in `extract_lineage`
        finding = Finding("column-analysis-error", Severity.ERROR, f"{type(exc).__name__}: {str(exc)[:200]}")
        return ColumnLineage((), (), (), (finding,))
    return lineage


def _analyse(
    request: LineageRequest,
    config: LineageConfig,
    schemas: Mapping[TableKey, Sequence[tuple[str, str]]],
    resolved: Mapping[str, TableKey],
    typed: bool,
) -> ColumnLineage:
    try:
        statement = sqlglot.parse_one(sqlglot_spelling(request.sql, request.dialect), read=request.dialect)
    except SqlglotError as exc:
        return ColumnLineage((), (), (), (Finding("sql-parse-error", Severity.ERROR, str(exc)[:200]),))
    fold_cte_names(statement, request.dialect)
    _name_generated_columns(statement, request.dialect)
    _mark_lateral_names(statement, request.dialect)
    _mark_using_keys(statement, request.dialect)
    _mark_int_arguments(statement, request.dialect)
    scopes = traverse_scope(statement)
    if unscoped_queries(statement, scopes):
        message = "a query passed to a generator (`explode((SELECT ...))`): its columns are not traced"
        return ColumnLineage((), (), (), (Finding("column-analysis-error", Severity.ERROR, message),))
    resolver = _Resolver(request, config)
    placeholders: dict[str, TableKey] = {}
    renames: dict[str, dict[str, str]] = {}
    mapping: dict[str, object] = {}
    unknown: list[TableKey] = []
    pinned: dict[TableKey, None] = {}
    tables = {id(source): source for scope in scopes for source in scope.sources.values()
              if isinstance(source, exp.Table)}  # fmt: skip
    for table in tables.values():  # as table lineage finds them: CTE names and functions are not tables
        before = len(resolver.references)
        resolver.add(table)
        if len(resolver.references) == before:
            continue
        if not isinstance(table.this, exp.Identifier | exp.Dot) and not _names_one_table(table.this):
            message = (
                f"{table.sql(request.dialect)[:200]} passes a table to a table function, whose columns "
                "are not traced"
            )
            return ColumnLineage((), (), (), (Finding("column-analysis-error", Severity.ERROR, message),))
        ref: TableReference = resolver.references[-1]
        key: TableKey = resolved.get(ref.raw, (ref.catalog, ref.namespace, ref.name))
        if ref.suffix is not None:  # a metadata table (`db.t.snapshots`): none of the table's columns
            key = (key[0], (*key[1], key[2]), ref.suffix)
        schema = schemas.get(key)
        if ref.suffix is None and ref.pin is not None and not ref.pin.startswith("branch_"):
            # Time travel and tags read a snapshot in its own schema, not the table's current one (a
            # branch reads the current one): no use of the table's columns as they are, but the
            # current ones are the best guess at what `*` and unqualified columns resolve to.
            pinned[key] = None
            key = (key[0], key[1], f"{key[2]} {ref.pin}")
        placeholder = f"_vl_t{len(placeholders)}"
        placeholders[placeholder] = key
        if schema is not None:
            mapping[placeholder] = {name: _in_dialect(kind, request.dialect) for name, kind in schema}
        elif key not in unknown:
            unknown.append(key)
        alias = table.alias or table.name
        named_columns = [
            column.name for column in (table.args["alias"].columns if table.args.get("alias") else [])
        ]
        if named_columns and key in schemas:  # `t AS x (a, b)`: x.a is t's first column
            renames[placeholder] = dict(
                zip((c.lower() for c in named_columns), (n for n, _ in schemas[key]), strict=False)
            )
        table.replace(
            exp.Table(
                this=exp.to_identifier(placeholder),
                alias=exp.TableAlias(
                    this=exp.to_identifier(alias), columns=[exp.to_identifier(c) for c in named_columns]
                ),
                pivots=table.args.get("pivots"),
            )
        )
    star_tables: dict[TableKey, None] = {}
    for scope in traverse_scope(statement):  # before qualify replaces each `*` by columns
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        stars = [p for p in select.expressions if p.is_star]
        if stars:
            select.meta[_NAMED] = {p.alias_or_name for p in select.expressions if not p.is_star}
        for star in stars + _argument_stars(select):
            alias = star.table if isinstance(star, exp.Column) else ""  # `t.*`, or `*`
            starred = [scope.sources.get(alias)] if alias else scope.sources.values()
            star_tables.update(
                (placeholders[source.name], None)
                for source in starred
                if isinstance(source, exp.Table) and source.name in placeholders
            )
    mapped = MappingSchema(mapping, dialect=request.dialect)
    qualified = qualify(
        statement,
        schema=mapped,
        dialect=request.dialect,
        validate_qualify_columns=False,
        allow_partial_qualification=True,  # a column a known schema lacks is kept, not an error
        quote_identifiers=False,
        identify=False,
    )
    for scope in traverse_scope(qualified):
        _using_keys_as_spark_gives(scope)
        _expand_argument_stars(scope, mapping)
        _name_map_explodes(scope, mapping)
        _fields_of_derived_columns(scope, mapping)
    walker = _Walker(placeholders, renames, schemas_known=not unknown, columns=mapping)
    scopes = traverse_scope(qualified)
    root = scopes[-1]
    for scope in scopes:
        walker.scope_uses(scope, root)
    outputs = tuple(_output_names(root))
    uses = tuple(dict.fromkeys([*walker.uses, *walker.unread_uses()]))  # ordered, without repeats
    return ColumnLineage(
        uses,
        outputs,
        tuple(unknown),
        tuple(resolver.findings),
        tuple(star_tables),
        tuple(pinned),
        *(_output_types(root, mapped) if typed else ((), (), ())),
    )


def _name_generated_columns(statement: exp.Expr, dialect: str) -> None:
    """`SELECT explode(items)` as Spark names its column: `col` (sqlglot gives it none); a map's
    two, `key` and `value`, once its type is known (`_name_map_explodes`)."""
    if dialect not in SPARK_FAMILY:
        return
    for select in statement.find_all(exp.Select):
        for projection in list(select.expressions):
            if isinstance(projection, exp.Explode) and not isinstance(projection, exp.Posexplode):
                named = exp.alias_(projection.copy(), "col")
                named.meta[_GENERATED] = True
                projection.replace(named)


def _mark_using_keys(statement: exp.Expr, dialect: str) -> None:
    """Before `qualify`, which makes a `USING` key a coalesce of every side's column: in Spark it
    is the left side's (the right side's in a RIGHT join), a coalesce only in a FULL one, so its
    type is that side's. Each select records its joins' keys, and each coalesce the SQL writes is
    marked, for `_using_keys_as_spark_gives`."""
    if dialect not in SPARK_FAMILY:
        return
    using = False
    for select in statement.find_all(exp.Select):
        sides: dict[str, list[str]] = {}
        for join in select.args.get("joins") or []:
            for key in join.args.get("using") or []:
                sides.setdefault(key.name.lower(), []).append(join.side.upper())
        if sides:
            select.meta[_USING_SIDES] = sides
            using = True
    for written in statement.find_all(exp.Coalesce) if using else ():  # most SQL joins with ON
        written.meta[_WRITTEN_COALESCE] = True


def _using_keys_as_spark_gives(scope: Scope) -> None:
    """Each coalesce `qualify` made of a `USING` key's columns, as Spark gives the key (see
    `_mark_using_keys`)."""
    select = scope.expression
    sides = select.meta.get(_USING_SIDES) if isinstance(select, exp.Select) else None
    if not sides:
        return
    for made in [node for node in walk_in_scope(select) if isinstance(node, exp.Coalesce)]:
        columns = [made.this, *made.expressions]
        if made.meta.get(_WRITTEN_COALESCE) or not all(isinstance(c, exp.Column) for c in columns):
            continue
        joins = sides.get(columns[0].name.lower(), [])
        if not joins or "FULL" in joins or len({c.name.lower() for c in columns}) > 1:
            continue
        if "RIGHT" not in joins:
            made.replace(columns[0].copy())
        elif len(joins) == 1:
            made.replace(columns[-1].copy())


_WRITTEN_COALESCE, _USING_SIDES = "viewlineage_written_coalesce", "viewlineage_using_sides"
"""Meta keys of `_mark_using_keys`: on a coalesce the SQL writes; on a select, its `USING` keys'
join sides."""


def _name_map_explodes(scope: Scope, mapping: Mapping[str, object]) -> None:
    """An unaliased `explode(m)` of a map column gives Spark's `key` and `value`, not `col`."""
    select = scope.expression
    if not isinstance(select, exp.Select):
        return
    for projection in list(select.expressions):
        argument = projection.this.this if projection.meta.get(_GENERATED) else None
        source = scope.sources.get(argument.table) if isinstance(argument, exp.Column) else None
        columns = mapping.get(source.name) if isinstance(source, exp.Table) else None
        kind = columns.get(argument.name) if isinstance(columns, dict) and argument is not None else None
        if isinstance(kind, str) and kind.lower().startswith("map<"):
            names = [exp.to_identifier("key"), exp.to_identifier("value")]
            projection.replace(exp.Aliases(this=projection.this.copy(), expressions=names))


_GENERATED = "viewlineage_generated_name"
"""Meta key on the `col` alias `_name_generated_columns` gives an unaliased `explode(...)`."""
_GIVEN_NAME = re.compile(r"_col_\d+")
"""The name `qualify` gives a projection its SQL does not name (`inline(items)`)."""
_INT_ONLY = "viewlineage_int_only"
"""Meta key on a function call naming its argument that Spark takes only as INT, SMALLINT or TINYINT."""


def _mark_int_arguments(statement: exp.Expr, dialect: str) -> None:
    """Marks Spark's `date_add(d, n)` and `date_sub(d, n)` (sqlglot's `TsOrDsAdd`): their `n` must be
    an INT, SMALLINT or TINYINT, so a column retyped to BIGINT there fails the query."""
    if dialect not in SPARK_FAMILY:
        return
    for call in statement.find_all(exp.TsOrDsAdd):
        call.meta[_INT_ONLY] = "expression"


def _int_argument(node: exp.Expr) -> bool:
    """Whether `node`'s value, through arithmetic only (`date_sub(d, n)` is `n * -1` to sqlglot),
    is an argument `_mark_int_arguments` marked."""
    while isinstance(node.parent, exp.Paren | exp.Neg | exp.Add | exp.Sub | exp.Mul):
        node = node.parent
    return node.parent is not None and node.parent.meta.get(_INT_ONLY) == node.arg_key


_LATERAL = "viewlineage_lateral_name"
"""Meta key on an unqualified column of a projection whose name an earlier output has too."""


def _mark_lateral_names(statement: exp.Expr, dialect: str) -> None:
    """Marks the columns `ColumnUse.rebinds` is about, while they are unqualified as written (after
    `qualify` every column names its table)."""
    if dialect not in LATERAL_ALIAS_DIALECTS:
        return
    for select in statement.find_all(exp.Select):
        earlier: set[str] = set()
        for projection in select.expressions:
            for column in projection.find_all(exp.Column):
                own = column.find_ancestor(exp.Select) is select
                if own and not column.table and column.name.lower() in earlier:
                    column.meta[_LATERAL] = True
            if isinstance(projection, exp.Alias):
                earlier.add(projection.alias.lower())


def _fields_of_derived_columns(scope: Scope, mapping: Mapping[str, object]) -> None:
    """`a.b` as Spark resolves it where `qualify` takes it for a table's column: a field of the
    column `a` when no source is named `a` (of the query's only source: `SELECT explode(m) FROM t`'s
    `value.price`), or when the table aliased `a` has no column `b` but has one named `a`
    (`SELECT ship.zip FROM orders ship`)."""
    select = scope.expression
    if not isinstance(select, exp.Select):
        return
    generators = [name for name, source in scope.sources.items() if _generates(source)]
    sources = generators or list(scope.selected_sources)
    for column in list(select.find_all(exp.Column)):
        table = column.table
        if not table or column.args.get("db") or column.find_ancestor(exp.Select) is not select:
            continue
        if isinstance(column.this, exp.Star):
            continue
        source = scope.sources.get(table)
        known = mapping.get(source.name) if isinstance(source, exp.Table) else None
        if isinstance(known, dict):
            names = {name.lower() for name in known}
            if column.name.lower() not in names and table.lower() in names:
                column.replace(exp.Dot(this=exp.column(table, table=table), expression=column.this.copy()))
            continue
        outer: Scope | None = scope
        while outer is not None and table not in outer.sources:
            outer = outer.parent
        if outer is None and len(sources) == 1 and not select.find(exp.Pivot):
            holder = exp.column(table, table=sources[0])
            column.replace(exp.Dot(this=holder, expression=column.this.copy()))


def _argument_stars(select: exp.Select) -> list[exp.Expr]:
    """The `*` and `t.*` a select passes to functions (`struct(*)`, `hash(t.*)`): Spark gives each
    column of the sources as an argument. `count(*)` counts rows and reads no column."""
    stars: list[exp.Expr] = []
    for star in select.find_all(exp.Star):
        argument = star.parent if isinstance(star.parent, exp.Column) else star
        function = argument.parent
        inside = star.find_ancestor(exp.Select) is select
        if inside and isinstance(function, exp.Func) and not isinstance(function, exp.Count):
            stars.append(argument)
    return stars


def _expand_argument_stars(scope: Scope, mapping: Mapping[str, object]) -> None:
    """Spells out each `*` a function is passed as the columns it stands for, so that they are
    traced as any column is; a source of unknown schema gives none (its columns are unseen)."""
    select = scope.expression
    if not isinstance(select, exp.Select):
        return
    for star in _argument_stars(select):
        alias = star.table if isinstance(star, exp.Column) else ""
        columns: list[exp.Expr] = []
        for name, source in scope.sources.items():
            if alias and name != alias:
                continue
            if isinstance(source, Scope):
                names = _output_names(source)
            else:
                known = mapping.get(source.name) if isinstance(source, exp.Table) else None
                names = list(known) if isinstance(known, dict) else []
            columns += [exp.column(column, table=name) for column in names]
        for column in columns:  # no name in the SQL names them: a renamed one keeps its place
            column.meta[_STAR_ARGUMENT] = True
        function, key = star.parent, star.arg_key
        if function is None or key is None or not columns:
            continue
        arguments = function.args.get(key)
        if isinstance(arguments, list):
            at = next(i for i, argument in enumerate(arguments) if argument is star)
            function.set(key, [*arguments[:at], *columns, *arguments[at + 1 :]])
        else:  # a function of one argument: still each column is read
            star.replace(columns[0] if len(columns) == 1 else exp.Tuple(expressions=columns))


def _names_one_table(function: exp.Expr) -> bool:
    """Whether a table-valued function is `IDENTIFIER('db.t')`, which is that table."""
    return isinstance(function, exp.Anonymous) and function.name.upper() == "IDENTIFIER"


def _output_types(
    root: Scope, schema: MappingSchema
) -> tuple[tuple[str | None, ...], tuple[bool, ...], tuple[tuple[str, ...], ...]]:
    """The types of the root's outputs (its first branch's projections), as sqlglot infers them,
    whether each is a table's column as it is (`ColumnLineage.direct_outputs`), and of a set
    operation, the types of the branches' that are (`ColumnLineage.branch_types`)."""
    branches = _branches(root)
    if not branches:
        return (), (), ()
    rules = _type_rules(schema.dialect or Dialect())
    TypeAnnotator(schema=schema, expression_metadata=rules, binary_coercions=_COERCIONS).annotate(
        root.expression
    )
    types: list[str | None] = []
    direct: list[bool] = []
    for projection in _select(branches[0]).expressions:
        if isinstance(projection, exp.Aliases):  # a generator's `AS (k, v)`: types not inferred
            types += [None] * len(projection.expressions)
            direct += [False] * len(projection.expressions)
            continue
        types.append(None if _unpivoted_value(branches[0], projection) else _spelled(projection.type))
        direct.append(len(branches) == 1 and _direct(branches[0], projection))
    if len(branches) == 1:
        return tuple(types), tuple(direct), ()
    for position in range(len(types)):  # a set operation's column: the widest of its branches'
        for branch in branches[1:]:
            projections = _select(branch).expressions
            other = _spelled(projections[position].type) if position < len(projections) else None
            types[position] = _wider(types[position], other)
    branch_types = tuple(
        tuple(
            spelled
            for branch in branches
            if position < len(_select(branch).expressions)
            and _direct(branch, projection := _select(branch).expressions[position])
            and (spelled := _spelled(projection.type)) is not None
        )
        for position in range(len(types))
    )
    return tuple(types), tuple(direct), branch_types


_INTEGRAL = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_INTEGRAL_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 20}
SPARK_DECIMAL = re.compile(r"^DECIMAL\((\d+), (\d+)\)$")
"""A decimal type in Spark's spelling, as `spark_type` writes it: its precision and scale."""


def _wider(one: str | None, other: str | None) -> str | None:
    """The type a set operation gives a column of these two branch types, as Spark widens them
    (numbers to the later in its precedence, decimals to hold both's digits, a decimal and a
    floating point number to DOUBLE); None when unknown."""
    if one is None or other is None:
        return None
    if one == other:
        return one
    numeric = (*_INTEGRAL, "FLOAT", "DOUBLE")  # Spark's numeric precedence
    if one in numeric and other in numeric:
        return max(one, other, key=numeric.index)
    first, second = _decimal_digits(one), _decimal_digits(other)
    if first is not None and second is not None:
        scale = max(first[1], second[1])
        whole = max(first[0] - first[1], second[0] - second[1])
        return f"DECIMAL({min(38, whole + scale)}, {scale})"
    if {one, other} & {"FLOAT", "DOUBLE"} and (first or second):
        return "DOUBLE"
    return None


def _decimal_digits(kind: str) -> tuple[int, int] | None:
    """(precision, scale) of a decimal, or of the decimal an integer type widens to."""
    if kind in _INTEGRAL_DIGITS:
        return _INTEGRAL_DIGITS[kind], 0
    match = SPARK_DECIMAL.match(kind)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _spelled(kind: exp.DataType | None) -> str | None:
    """An inferred type in Spark's spelling, struct fields quoted only where they must be (as
    `spark_type` spells stored types); None if not inferred."""
    if kind is None or kind.is_type(exp.DataType.Type.UNKNOWN):
        return None
    return spark_type(kind)


@functools.lru_cache(maxsize=4096)
def _in_dialect(kind: str, dialect: str) -> str:
    """A Spark type string (`iceberg_type_sql`) as `dialect` spells it, for sqlglot's schema to
    parse in the query's dialect: Trino has no `struct<...>` (it reads as an unknown type)."""
    if dialect == "spark":
        return kind
    try:
        return exp.DataType.build(kind, dialect="spark").sql(dialect, identify=True)
    except SqlglotError:
        return kind


def spark_type(kind: exp.DataType) -> str:
    """A type in Spark's spelling, its struct fields' names quoted only where they must be."""
    spelled = kind.copy()
    for field in spelled.find_all(exp.Identifier):
        field.set("quoted", not exp.SAFE_IDENTIFIER_RE.match(field.name))
    return spelled.sql("spark")


def _to_double(_left: exp.Expr, _right: exp.Expr) -> exp.DType:
    return exp.DType.DOUBLE


_COERCIONS = {
    **TypeAnnotator.BINARY_COERCIONS,
    **{
        pair: _to_double
        for real in (exp.DType.DOUBLE, exp.DType.FLOAT)
        for pair in ((real, exp.DType.DECIMAL), (exp.DType.DECIMAL, real))
    },
}
"""sqlglot's coercions of binary operations, but arithmetic of a decimal and a floating point
number gives a DOUBLE, as in Spark and Trino (sqlglot keeps the decimal's type)."""


Digits = Callable[[int, int], tuple[int, int]]
"""(precision, scale) of a decimal argument -> of the aggregate's result."""


def _decimal_aggregate(
    original: Mapping[str, Any], digits: Digits
) -> Callable[[TypeAnnotator, exp.Expr], None]:
    """An annotator of `sum` or `avg` that types it as sqlglot does (`original`), but a decimal's
    as the engine does, at most 38 digits."""

    def annotate(annotator: TypeAnnotator, aggregate: exp.Expr) -> None:
        if "annotator" in original:
            original["annotator"](annotator, aggregate)
        else:
            annotator._set_type(aggregate, original.get("returns", exp.DType.UNKNOWN))
        argument = aggregate.this.type if aggregate.this is not None else None
        if argument is not None and argument.is_type(exp.DType.DECIMAL) and len(argument.expressions) == 2:
            precision, scale = digits(*(int(part.name) for part in argument.expressions))
            annotator._set_type(
                aggregate, exp.DataType.build(f"DECIMAL({min(precision, 38)}, {min(scale, 38)})")
            )

    return annotate


_SPARK_DIGITS: dict[type[exp.Expr], Digits] = {
    exp.Sum: lambda p, s: (p + 10, s),
    exp.Avg: lambda p, s: (p + 4, s + 4),
}
_DECIMAL_DIGITS: dict[str, dict[type[exp.Expr], Digits]] = {
    "spark": _SPARK_DIGITS,
    "spark2": _SPARK_DIGITS,
    "databricks": _SPARK_DIGITS,
    "hive": _SPARK_DIGITS,
    "trino": {exp.Sum: lambda p, s: (38, s), exp.Avg: lambda p, s: (p, s)},
}
"""By dialect: how `sum` and `avg` type a decimal (sqlglot keeps the argument's type; Spark's
`sum` widens it by 10 digits, Trino's to 38), so that a view's stored types are compared with
the engine's."""


def _branches_widened(original: Mapping[str, Any]) -> Callable[[TypeAnnotator, exp.Expr], None]:
    """An annotator of `CASE`, `IF` or `coalesce` that types it as sqlglot does (`original`), but
    one whose branches hold a decimal as Spark and Trino do: wide enough for every branch's digits
    (`CASE ... THEN decimal(10, 2) ELSE 0 END` is decimal(12, 2); sqlglot keeps decimal(10, 2))."""

    def annotate(annotator: TypeAnnotator, chosen: exp.Expr) -> None:
        original["annotator"](annotator, chosen)
        if isinstance(chosen, exp.Case):
            branches = [branch.args.get("true") for branch in chosen.args.get("ifs") or []]
            branches.append(chosen.args.get("default"))
        elif isinstance(chosen, exp.If):
            branches = [chosen.args.get("true"), chosen.args.get("false")]
        else:
            branches = [chosen.this, *chosen.expressions]
        kinds = [_spelled(branch.type) for branch in branches if branch is not None and not _is_null(branch)]
        if not any(kind is not None and SPARK_DECIMAL.match(kind) for kind in kinds):
            return
        widest: str | None = kinds[0]
        for kind in kinds[1:]:
            widest = _wider(widest, kind)
        if widest is not None:
            annotator._set_type(chosen, exp.DataType.build(widest, dialect="spark"))

    return annotate


def _is_null(branch: exp.Expr) -> bool:
    """`NULL`, which takes the other branches' type, even cast (as sqlglot casts `CASE`'s)."""
    return isinstance(branch.this if isinstance(branch, exp.Cast) else branch, exp.Null)


def _type_rules(dialect: Dialect) -> dict[type[exp.Expr], Any]:
    """sqlglot's typing rules of the dialect, with its engine's for decimal aggregates and for
    the decimal a choice of branches (`CASE`, `IF`, `coalesce`) gives."""
    rules = dict(dialect.EXPRESSION_METADATA)
    for kind, digits in _DECIMAL_DIGITS.get(type(dialect).__name__.lower(), {}).items():
        rules[kind] = {"annotator": _decimal_aggregate(rules.get(kind, {}), digits)}
    for choice in (exp.Case, exp.If, exp.Coalesce):
        if "annotator" in rules.get(choice, {}):
            rules[choice] = {"annotator": _branches_widened(rules[choice])}
    return rules


def _direct(scope: Scope, projection: exp.Expr) -> bool:
    """Whether a projection is a table's column (or a struct field of one) as it is, or of its type:
    a column of the table, or of a derived table, CTE or PIVOT's grouping columns that is one in
    turn; or its `max`/`min`."""
    column = projection.this if isinstance(projection, exp.Alias) else projection
    if isinstance(column, exp.Max | exp.Min) and not column.expressions:  # one argument: its type
        column = column.this
    while isinstance(column, exp.Dot):  # a struct's field (`c.s.a`): the field's own type
        column = column.this
    if not isinstance(column, exp.Column):
        return False
    alias, pivot = column.table, _pivot(scope, column.table)
    if pivot is not None:
        cells = {cell.name.lower() for cell in pivot.args.get("columns") or []}
        if pivot.args.get("unpivot") or column.name.lower() in cells or pivot.parent is None:
            return False
        alias = pivot.parent.alias_or_name
    source = scope.sources.get(alias)
    if isinstance(source, Scope):
        branches, names = _branches(source), _output_names(source)
        if len(branches) != 1 or column.name not in names:
            return False
        return _direct(branches[0], _projection_at(_select(branches[0]), names.index(column.name)))
    return isinstance(source, exp.Table)


_STAR_ARGUMENT = "viewlineage_star_argument"
"""Meta key on a column spelled out from a `*` passed to a function (`struct(*)`)."""
_NAMED = "viewlineage_named_outputs"
"""Meta key on a SELECT with a `*`: the outputs its SQL names itself, as opposed to the `*`'s."""


def _named_output(select: exp.Select, projection: exp.Expr) -> bool:
    """Whether the SQL names this output of `select` itself, rather than a `*` giving it."""
    named = select.meta.get(_NAMED)
    return named is None or projection.alias_or_name in named


def _branches(scope: Scope) -> list[Scope]:
    """The SELECT scopes a scope's rows come from: itself, or every branch of a set operation."""
    if scope.set_operation_scopes:
        return [leaf for branch in scope.set_operation_scopes for leaf in _branches(branch)]
    if isinstance(scope.expression, exp.Lateral):  # `LATERAL (SELECT ...) x`: its subquery's rows
        return [
            leaf for inner in scope.sources.values() if isinstance(inner, Scope) for leaf in _branches(inner)
        ]
    return [scope] if isinstance(scope.expression, exp.Select) else []


def _generates(source: object) -> bool:
    """Whether a source is a `LATERAL VIEW` generator's rows (not a `LATERAL` subquery's)."""
    return (
        isinstance(source, Scope)
        and isinstance(source.expression, exp.Lateral)
        and not isinstance(source.expression.this, exp.Subquery)
    )


def _select(scope: Scope) -> exp.Select:
    select = scope.expression
    assert isinstance(select, exp.Select), "only SELECT scopes are branches"
    return select


def _pivot(scope: Scope, alias: str) -> exp.Pivot | None:
    """The PIVOT or UNPIVOT in the scope's FROM whose rows `alias` names (qualify names them)."""
    select = scope.expression
    if not alias or not isinstance(select, exp.Select):
        return None
    for pivot in select.find_all(exp.Pivot):
        if pivot.alias == alias and pivot.find_ancestor(exp.Select) is select:
            return pivot
    return None


def _unpivoted_value(scope: Scope, projection: exp.Expr) -> bool:
    """Whether a projection is an UNPIVOT's value column, whose type the engines widen from every
    IN column's (sqlglot takes the first's: the seventeenth new-user trial's `IN (qty, id)` was
    typed INT, though Spark gives BIGINT): not inferred, then."""
    column = projection.unalias()
    pivot = _pivot(scope, column.table) if isinstance(column, exp.Column) else None
    if pivot is None or not pivot.args.get("unpivot"):
        return False
    return column.name.lower() in {value.name.lower() for value in pivot.expressions}


def _projection_names(projection: exp.Expr) -> list[str]:
    """The output names one projection gives: several for a generator's `AS (k, v)`."""
    if isinstance(projection, exp.Aliases):
        return [alias.name for alias in projection.expressions]
    return [projection.alias_or_name]


def _projection_at(select: exp.Select, position: int) -> exp.Expr:
    """The projection giving the output at `position` of the select's outputs (`named_selects`)."""
    return _projection_and_slot(select, position)[0]


def _projection_and_slot(select: exp.Select, position: int) -> tuple[exp.Expr, int]:
    """The projection giving the output at `position` of the select's outputs, and which of its
    outputs that is (a generator's `AS (k, v)` gives several)."""
    projections: list[exp.Expr] = select.expressions
    for projection in projections:
        width = len(_projection_names(projection))
        if position < width:
            return projection, position
        position -= width
    raise IndexError("no projection gives that output")


def _generator_part(generator: exp.Expr, width: int, at: int) -> tuple[str, ...] | None:
    """What output `at` of a generator with `width` outputs gives of its array or map argument:
    (`element`,), (`key`,) or (`value`,); None for `posexplode`'s position."""
    slots = width - isinstance(generator, exp.Posexplode)  # after posexplode's position
    if at < width - slots:
        return None
    at -= width - slots
    return ("element",) if slots == 1 else ("key", "value")[at : at + 1]


def _projected_part(projection: exp.Expr, slot: int) -> tuple[exp.Expr, tuple[str, ...] | None] | None:
    """For a projection that is a generator with several outputs (`explode(m) AS (k, v)`,
    `posexplode(items) AS (p, item)`): its argument, and what output `slot` gives of it; None for
    another projection (an array's `explode(items) AS item` is `_explodes`')."""
    generator = projection.this if isinstance(projection, exp.Aliases) else None
    width = len(_projection_names(projection))
    if not isinstance(generator, exp.Posexplode) and not (isinstance(generator, exp.Explode) and width > 1):
        return None
    return generator.this, _generator_part(generator, width, slot)


def _generated_into(projection: exp.Expr, column: exp.Expr) -> range | tuple[int, ...]:
    """Which of a projection's outputs (by position among them) `column`, inside it, flows into:
    one, unless it is a generator's `AS (k, v)`."""
    if not isinstance(projection, exp.Aliases):
        return (0,)
    return _generator_outputs(projection.this, len(projection.expressions), column)


def _generator_outputs(generator: exp.Expr, width: int, column: exp.Expr) -> range | tuple[int, ...]:
    """Which of a generator's `width` outputs `column`, inside it, flows into: `stack(n, a1, b1, a2,
    b2) AS (x, y)` lays its values out row by row (a1 and a2 into x); `posexplode` puts none into its
    position; another generator's (`explode(m) AS (k, v)`, `inline`) may go into each."""
    if isinstance(generator, exp.Stack):
        for i, value in enumerate(generator.expressions):
            if value is column or any(inner is column for inner in value.find_all(exp.Column)):
                return (i % width,)
    if isinstance(generator, exp.Posexplode) and width > 1:
        return range(1, width)
    return range(width)


def _output_names(scope: Scope) -> list[str]:
    """A scope's column names: its first branch's (set operations name columns by the first)."""
    branches = _branches(scope)
    return list(_select(branches[0]).named_selects) if branches else []


def _paths(column: exp.Column, kind: object = None) -> list[tuple[tuple[str, ...], str]]:
    """The column and the fields below it a reference reads: `s.a.b`; a subscript steps into an
    array's `element` (`items[0].price`), a map's `value` (`m['k']`) or a struct's field
    (`s['a']`) when the column's type (`kind`, as its schema spells it) says which, else the path
    stops there (the whole is read). A field of an array of structs is that field of each element
    (Spark's `items.price`). Through an expression that returns the value it is given
    (`coalesce(s, t).a`, `max_by(s, ts).a`, `CASE ... THEN s END`, `filter(items, ...)[0].price`)
    the path goes on. Passed to a higher-order function, it reads what the lambda reads of its
    element, key or value (`exists(items, e -> e.sku = 'x')` reads `items.element.sku`). One path
    per read, each with what it is of the value of the expression around the column (`VALUE`,
    `ELEMENTS`, `READ`): what a query reading that value through a CTE or subquery reads of it
    follows (`_composed`)."""
    return [((column.name, *below), role) for below, role in _below(column, _datatype(kind))]


VALUE, ELEMENTS, READ, FIELD = "value", "elements", "read", "field:"
"""What a path read is of the value an expression gives: that value (`s.a` in `coalesce(s.a, 0)`);
each of its elements (`e.price` in `transform(items, e -> e.price)`); or only read on the way
(`e.qty` in `filter(items, e -> e.qty > 0)`); or a field of it, `field:` and its name (`s.b` in
`struct(s.b AS b)`)."""
MADE, OPAQUE, WRITTEN, COUNTED, INT_ARGUMENT = "made", "opaque", "written", "counted", "int-argument"
"""Also: what the value is made of by a function the analysis does not see through (`s` in
`to_json(s)`, `arrays_zip(a, b)`); and such a value, or a column the analysis cannot trace to a
projection (`nick` of `SELECT owner.* ...`), whose fields are then read by name (`map_values(m).price`):
which of the path's fields are read, by name, cannot be told (`ColumnUse.opaque`); a value
whose fields' names a function writes out (`to_json(s)`, `ColumnUse.names_written`); one of
which only how many elements it has, or whether it is null, is read (`ColumnUse.counted`); and one
passed to an argument Spark takes only as an INT (`ColumnUse.int_argument`)."""


def _below(node: exp.Expr, datatype: exp.DataType | None) -> list[tuple[tuple[str, ...], str]]:
    """The fields below `node` (a column, or a lambda's parameter) the expression around it reads,
    with what each is of that expression's value."""
    steps: list[str] = []
    passed: list[tuple[tuple[str, ...], str]] = []
    member: str | None = None  # the field the value around is made of it as (`struct(x AS f)`)
    while node.parent is not None:
        parent = node.parent
        if isinstance(parent, exp.Dot) and node.arg_key == "this" and member is not None:
            if parent.name.lower() != member.lower():  # another field of the struct it makes
                return [(tuple(steps), READ), *passed]
            member = None
        elif isinstance(parent, exp.Struct) and member is None and (named := _member(node)) is not None:
            member = named
        elif isinstance(parent, exp.PropertyEQ) and node.arg_key == "expression" and member is None:
            pass  # `named_struct('f', x)`, `struct(x AS f)`: named by the struct (`_member`)
        elif isinstance(parent, exp.Dot) and node.arg_key == "this":
            if datatype is not None and datatype.is_type(exp.DataType.Type.ARRAY):
                steps.append("element")  # `items.price`: each element's `price`
                datatype = _part(datatype, "element")
            steps.append(parent.name)
            datatype = _field(datatype, parent.name)
        elif isinstance(parent, exp.Bracket) and node.arg_key == "this":
            step = _subscript(datatype, parent)
            if step is None:
                return [(tuple(steps), OPAQUE if _field_read_above(parent) else MADE), *passed]
            steps.append(step)
            datatype = _part(datatype, step) if step in _PARTS else _field(datatype, step)
        elif _returns_it(parent, node):
            pass
        elif _explodes(parent, node, datatype) or (
            isinstance(parent, exp.ArrayMax | exp.ArrayMin) and node.arg_key == "this"
        ):  # each element, or one of them
            steps.append("element")
            datatype = _part(datatype, "element")
        elif (called := _lambda_references(node)) is not None:
            references, higher_order = called
            for step, parameter in references:
                for below, role in _below(parameter, _part(datatype, step)):
                    passed.append(((*steps, step, *below), _through_lambda(role, higher_order.makes)))
            passed += [((*steps, part), MADE) for part in higher_order.keeps]
            if not higher_order.returns_arguments:  # the elements, if returned, go on
                return passed or [(tuple(steps), READ)]  # a lambda reading none of it: read whole
        elif isinstance(parent, exp.Explode | exp.Inline):  # a generator's parts: `_projected_part`
            break
        elif isinstance(parent, exp.JSONFormat) and member is None:  # `to_json(s)`: s's names too
            return [(tuple(steps), WRITTEN), *passed]
        elif _counts(parent, node):
            return [(tuple(steps), COUNTED), *passed]
        elif _int_argument(node):
            return [(tuple(steps), INT_ARGUMENT), *passed]
        elif (part := _map_part(parent, node)) is not None:  # `map_keys(m)`: the keys, not the values
            return [((*steps, part), OPAQUE if _field_read_above(parent) else MADE), *passed]
        elif isinstance(parent, exp.Func | exp.Binary | exp.Unary):  # a value made of it
            return [(tuple(steps), OPAQUE if _field_read_above(parent) else MADE), *passed]
        else:  # where the expression ends (`AS x`, the query)
            break
        node = parent
    return [(tuple(steps), VALUE if member is None else f"{FIELD}{member}"), *passed]


def _through_lambda(role: str, makes: str) -> str:
    """What a read of a lambda's parameter is of its function's value, being `role` of the
    lambda's and the lambda's result `makes` of the function's. Whether fields are read by name
    (`array(e.s)[0].x`), their names written or only counted holds whatever the function does."""
    if role == VALUE:
        return makes
    if role in (OPAQUE, WRITTEN, COUNTED, INT_ARGUMENT):
        return role
    return READ if READ in (role, makes) else MADE  # a value made of it goes into the function's


def _counts(parent: exp.Expr, node: exp.Expr) -> bool:
    """Whether `parent` reads only how many elements or entries `node` has, or whether it is null
    (`size(items)`, `cardinality(m)`, `count(s)`, `s IS NULL`): what its elements hold is not read."""
    if isinstance(parent, exp.ArraySize | exp.Count):
        return node.arg_key == "this"
    return isinstance(parent, exp.Is) and node.arg_key == "this" and isinstance(parent.expression, exp.Null)


def _map_part(parent: exp.Expr, node: exp.Expr) -> str | None:
    """The part of the map `node` that `parent` returns a list of (`map_keys(m)`: `key`), if any."""
    if isinstance(parent, exp.MapKeys) and node.arg_key == "this":
        return "key"
    if (
        isinstance(parent, exp.Anonymous)
        and parent.name.lower() == "map_values"
        and node.arg_key == "expressions"
    ):
        return "value"
    return None


def _field_read_above(node: exp.Expr) -> bool:
    """Whether the expression around `node` (up to its query) reads a field of a value made of it."""
    while node.parent is not None and not isinstance(node, exp.Query):
        if isinstance(node.parent, exp.Dot | exp.Bracket) and node.arg_key == "this":
            return True
        node = node.parent
    return False


def _member(node: exp.Expr) -> str | None:
    """The field name a struct's argument gets: `f` of `x AS f` or `named_struct('f', x)`, a
    column's or field's own name; None for one it cannot tell (`s.*`, an expression)."""
    if isinstance(node, exp.PropertyEQ | exp.Alias):
        return node.name if isinstance(node, exp.PropertyEQ) else node.alias
    if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
        return node.name
    return node.name if isinstance(node, exp.Dot) else None


def _composed(
    inner: tuple[str, ...], role: str, fields: tuple[str, ...], outer: str
) -> tuple[tuple[str, ...], str]:
    """What a query reads of a table, and what that is of its value (`outer`), where it reads
    `fields` below a CTE's or subquery's column whose projection reads `inner` (`role`: what that
    is of the column's value): `inner` as it is, only read, when the fields are not of it; opaque
    when fields are read by name of a value only made of it."""
    if role == COUNTED:  # a count, whatever is made of it
        return inner, COUNTED
    if role in (OPAQUE, WRITTEN) or (outer == OPAQUE and role != READ and role != VALUE):
        return inner, OPAQUE if OPAQUE in (role, outer) else WRITTEN
    if role == MADE:
        return inner, OPAQUE if fields else outer if outer in (MADE, READ) else MADE
    if role == VALUE or not fields:
        return (*inner, *fields), outer if role == VALUE else role if outer == VALUE else READ
    if role.startswith(FIELD) and fields[:1] and fields[0].lower() == role[len(FIELD) :].lower():
        return (*inner, *fields[1:]), outer
    if role == ELEMENTS:
        return ((*inner, *fields[1:]), outer) if fields[:1] == ("element",) else (inner, OPAQUE)
    return inner, READ


def _subscript(datatype: exp.DataType | None, bracket: exp.Bracket) -> str | None:
    """What `x[...]` reads of `x`: an array's `element`, a map's `value`, a struct's field named by
    a string; None when the type does not say."""
    if datatype is None:
        return None
    if datatype.this in _SUBSCRIPTED:
        return _SUBSCRIPTED[datatype.this]
    key = bracket.expressions[0] if len(bracket.expressions) == 1 else None
    if datatype.is_type(exp.DataType.Type.STRUCT) and isinstance(key, exp.Literal) and key.is_string:
        return str(key.this)
    return None


_VALUE_ARGUMENTS: dict[type[exp.Expr], frozenset[str]] = {
    exp.Paren: frozenset({"this"}),
    exp.Coalesce: frozenset({"this", "expressions"}),
    exp.If: frozenset({"true", "false"}),
    exp.Case: frozenset({"ifs", "default"}),
    exp.Nullif: frozenset({"this"}),
    **dict.fromkeys(
        (exp.First, exp.Last, exp.AnyValue, exp.ArgMax, exp.ArgMin, exp.Max, exp.Min), frozenset({"this"})
    ),
    **dict.fromkeys((exp.FirstValue, exp.LastValue, exp.NthValue, exp.Window), frozenset({"this"})),
    **dict.fromkeys((exp.ArraySlice, exp.Reverse, exp.ArrayDistinct), frozenset({"this"})),
}
"""Expressions whose value is (one of) the values of these arguments, as it is: a field read of it
is a field read of them (an array's functions here return some of its elements)."""


def _returns_it(parent: exp.Expr, node: exp.Expr) -> bool:
    """Whether `parent`'s value is `node`'s, as it is (`_VALUE_ARGUMENTS`); an array function's
    only when it has no lambda (`array_sort(items)`; one with a comparator is `_lambda_references`')."""
    if isinstance(parent, exp.ArraySort):
        return node.arg_key == "this" and parent.args.get("expression") is None
    return node.arg_key in _VALUE_ARGUMENTS.get(type(parent), ())


def _explodes(parent: exp.Expr, node: exp.Expr, datatype: exp.DataType | None) -> bool:
    """Whether `parent` explodes the array `node` into its elements in a query's projection
    (`SELECT explode(items) AS item`); a `LATERAL VIEW`'s generator is `_Walker._generated`'s."""
    return (
        isinstance(parent, exp.Explode)
        and not isinstance(parent, exp.Posexplode)
        and node.arg_key == "this"
        and not isinstance(parent.parent, exp.Lateral)
        and datatype is not None
        and datatype.is_type(exp.DataType.Type.ARRAY)
    )


_SUBSCRIPTED = {exp.DataType.Type.ARRAY: "element", exp.DataType.Type.MAP: "value"}
"""What a subscript of each type reads."""
_PARTS = {"element": 0, "key": 0, "value": 1}
"""Where each part is among an array's or a map's type parameters."""

_Binding = tuple[tuple[int, str], ...]
"""What one lambda parameter is bound to: (the function's argument, its part) pairs; () for none
(an accumulator, an index)."""


@dataclass(frozen=True, slots=True)
class _HigherOrder:
    lambdas: tuple[tuple[_Binding, ...], ...]
    """Per lambda, in order, what each of its parameters is bound to."""
    returns_arguments: bool = False
    """Whether it returns its arguments' elements or entries (`filter`), not only what lambdas make."""
    makes: str = READ
    """What a lambda's result is of the function's value: its elements (`transform`), the value
    itself (`aggregate`), or nothing (`exists`, `filter`'s predicate: `READ`)."""
    keeps: tuple[str, ...] = ()
    """The parts of its first argument it returns as they are (`transform_values` keeps the keys)."""


_ELEMENT_THEN_INDEX = _HigherOrder(((((0, "element"),), ()),))
_ENTRIES = _HigherOrder(((((0, "key"),), ((0, "value"),)),), returns_arguments=True)
_HIGHER_ORDER: dict[str, _HigherOrder] = {
    "transform": _HigherOrder(_ELEMENT_THEN_INDEX.lambdas, makes=ELEMENTS),
    **dict.fromkeys(("exists", "forall", "any_match", "all_match", "none_match"), _ELEMENT_THEN_INDEX),
    **dict.fromkeys(
        ("arrayfilter", "filter"), _HigherOrder(_ELEMENT_THEN_INDEX.lambdas, returns_arguments=True)
    ),
    "reduce": _HigherOrder((((), ((0, "element"),)), ((),)), makes=VALUE),  # (accumulator, element), a finish
    "arraysort": _HigherOrder(((((0, "element"),), ((0, "element"),)),), returns_arguments=True),
    "zip_with": _HigherOrder(((((0, "element"),), ((1, "element"),)),), makes=ELEMENTS),
    "map_filter": _ENTRIES,
    "transform_keys": _HigherOrder(_ENTRIES.lambdas, makes=MADE, keeps=("value",)),
    "transform_values": _HigherOrder(_ENTRIES.lambdas, makes=MADE, keeps=("key",)),
    "map_zip_with": _HigherOrder(
        ((((0, "key"), (1, "key")), ((0, "value"),), ((1, "value"),)),), returns_arguments=True
    ),
}
"""Spark's and Trino's higher-order functions, as sqlglot names them."""


def _lambda_references(node: exp.Expr) -> tuple[list[tuple[str, exp.Identifier]], _HigherOrder] | None:
    """When `node` is an argument of a higher-order function (`transform(items, e -> e.sku)`):
    (part, reference) for each reference, in a lambda's body, to a parameter bound to a part of it;
    and the function's rules. None when it is no such argument."""
    function = node.parent
    if function is None or isinstance(function, exp.Lambda):
        return None
    arguments = list(function.iter_expressions())
    lambdas = [argument for argument in arguments if isinstance(argument, exp.Lambda)]
    higher_order = _HIGHER_ORDER.get(
        function.name.lower() if isinstance(function, exp.Anonymous) else function.key
    )
    if not lambdas or higher_order is None or not any(node is argument for argument in arguments):
        return None
    position = next(i for i, argument in enumerate(arguments) if argument is node)
    references = [
        (step, reference)
        for function_lambda, bindings in zip(lambdas, higher_order.lambdas, strict=False)
        for parameter, binding in zip(function_lambda.expressions, bindings, strict=False)
        for step in (part for at, part in binding if at == position)
        for reference in _references(function_lambda.this, parameter)
    ]
    return references, higher_order


def _references(body: exp.Expr, parameter: exp.Expr) -> Iterator[exp.Identifier]:
    """The identifiers in a lambda's body that name its parameter: not a column's or a field's
    name (`t.e`, `x.e`), nor a nested lambda's parameter."""
    for reference in body.find_all(exp.Identifier):
        parent, key = reference.parent, reference.arg_key
        if reference.name != parameter.name or isinstance(parent, exp.Column):
            continue
        if not (isinstance(parent, exp.Dot | exp.Lambda) and key != "this"):
            yield reference


def _part(datatype: exp.DataType | None, step: str) -> exp.DataType | None:
    """An array's element type, a map's key or value type; None when unknown."""
    if datatype is None or not datatype.is_type(exp.DataType.Type.ARRAY, exp.DataType.Type.MAP):
        return None
    at = _PARTS[step]
    return datatype.expressions[at] if len(datatype.expressions) > at else None


def _datatype(kind: object) -> exp.DataType | None:
    if not isinstance(kind, str):
        return None
    try:
        return exp.DataType.build(kind, dialect="spark")
    except SqlglotError:
        return None


def _field(datatype: exp.DataType | None, name: str) -> exp.DataType | None:
    """A struct type's field's type; None when unknown."""
    if datatype is None or not datatype.is_type(exp.DataType.Type.STRUCT):
        return None
    for definition in datatype.expressions:
        if isinstance(definition, exp.ColumnDef) and definition.name.lower() == name.lower():
            kind = definition.args.get("kind")
            return kind if isinstance(kind, exp.DataType) else None
    return None


def _context(node: exp.Expr, select: exp.Expr) -> tuple[str, bool, exp.Expr | None]:
    """(kind of use, whether under an aggregate, the projection it sits in) of `node` in `select`."""
    aggregated = windowed = False
    while node.parent is not None and node is not select:
        parent = node.parent
        if isinstance(parent, exp.AggFunc):
            aggregated = True
        if isinstance(parent, exp.Window) and node.arg_key in ("partition_by", "order"):
            windowed = True
        if isinstance(parent, exp.Join) and node.arg_key in ("on", "using"):
            return JOIN_KEY, aggregated, None
        if parent is select:
            if node.arg_key == "expressions":
                kind = WINDOW if windowed else AGGREGATE if aggregated else PROJECTED
                return kind, aggregated, node
            return _SELECT_ARGS.get(node.arg_key or "", OTHER), aggregated, None
        node = parent
    return OTHER, aggregated, None


def _use(
    table: TableKey,
    path: tuple[str, ...],
    role: str,
    kind: str,
    output: str | None,
    starred: bool,
    column: exp.Column,
) -> ColumnUse:
    """The use of `path` that `column` makes, what it is of the value around it being `role`."""
    rebinds = column.meta.get(_LATERAL, False)
    return ColumnUse(
        table, path, kind, output, starred, role == OPAQUE, role == WRITTEN, rebinds, role == COUNTED,
        role == INT_ARGUMENT,
    )  # fmt: skip


def _aggregated(kind: str, aggregated: bool) -> str:
    """A projected use's kind, `aggregate` if an aggregate reads it where it is resolved."""
    return AGGREGATE if aggregated and kind == PROJECTED else kind


class _Walker:
    def __init__(
        self,
        placeholders: Mapping[str, TableKey],
        renames: Mapping[str, Mapping[str, str]],
        schemas_known: bool,
        columns: Mapping[str, object],
    ) -> None:
        self.placeholders = placeholders
        self.columns = columns
        """Per placeholder with a known schema, its columns (name -> type)."""
        self.renames = renames
        """Per placeholder, the columns an alias's column list names, as the table's columns."""
        self.schemas_known = schemas_known
        """Whether the schema of every table read is known: a column none of them has is then in none."""
        self.uses: list[ColumnUse] = []
        self.unread: dict[int, list[ColumnUse]] = {}
        """Uses in CTE or derived-table projections, by projection, until a query reads its column."""
        self.read: set[int] = set()
        """Projections of CTEs and derived tables a query read a column of."""
        self.projected: dict[tuple[int, str], list[_Resolved]] = {}
        """`_projected`'s answers, by (source, column)."""

    def unread_uses(self) -> list[ColumnUse]:
        """Uses in projections no query reads (`WITH x AS (SELECT a, b FROM t) SELECT a FROM x`):
        engines still resolve them, so dropping `b` breaks the view; they flow into no output."""
        return [use for key, uses in self.unread.items() if key not in self.read for use in uses]

    def scope_uses(self, scope: Scope, root: Scope) -> None:
        """Every use a scope makes. Projections count where their rows go: the root's are the
        view's outputs, a subquery's take its place in the enclosing query; a CTE's or derived
        table's are counted when a query reads that column."""
        select = scope.expression
        if not isinstance(select, exp.Select):
            return
        outputs = self._outputs(scope, root)
        for column in select.find_all(exp.Column):  # scope.columns leaves out ORDER BY aliases
            if column.find_ancestor(exp.Select) is not select:
                continue
            kind, _, projection = _context(column, select)
            if projection is not None:
                if outputs is None:  # a CTE's or derived table's projection: counted through its readers
                    named = select.meta.get(_NAMED)
                    if named is not None and projection.alias_or_name not in named:
                        continue  # a `*`'s column: unread, nothing names it (dropping it breaks no query)
                    self.unread.setdefault(id(projection), []).extend(
                        _use(table, path, role, _aggregated(kind, aggregated), None, False, column)
                        for table, path, role, aggregated, _ in self._resolve(scope, column, set())
                    )
                    continue
                inner = kind
                kind, flows = outputs(projection, kind, column)
                kind = inner if kind == PROJECTED else kind  # aggregated or windowed where it is read
                by_place = not _named_output(select, projection) or column.meta.get(_STAR_ARGUMENT, False)
                starred = by_place and scope in _branches(root)
            else:  # a `*` a function is passed, in a filter or GROUP BY, reads by position as well
                flows, starred = (None,), column.meta.get(_STAR_ARGUMENT, False) and scope in _branches(root)
            for table, path, role, aggregated, named in self._resolve(scope, column, set()):
                final = _aggregated(kind, aggregated)
                self.uses.extend(
                    _use(table, path, role, final, output, starred and not named, column) for output in flows
                )

    def _pivoted(
        self, scope: Scope, column: exp.Column, pivot: exp.Pivot, seen: set[tuple[int, str]]
    ) -> Iterator[_Resolved]:
        """The base columns behind a column of a PIVOT's or UNPIVOT's rows. A pivoted cell
        aggregates the columns its aggregations read; an unpivoted value is each IN column, its
        name column none; any other column is the pivoted source's own (PIVOT groups by it)."""
        name, fields = column.name.lower(), pivot.args.get("fields") or []
        if pivot.args.get("unpivot"):
            if name in {field.this.name.lower() for field in fields}:
                return  # the names of the IN columns: literals
            inputs = [value for field in fields for value in field.expressions]
            pivoted = name in {value.name.lower() for value in pivot.expressions}
        else:  # a cell of several aggregations is named `<value>_<alias>`: only that one's, if told
            aggregations = list(pivot.expressions)
            inputs = [
                a for a in aggregations if isinstance(a, exp.Alias) and name.endswith(f"_{a.alias.lower()}")
            ]
            inputs = inputs if len(aggregations) > 1 and inputs else aggregations
            pivoted = name in {cell.name.lower() for cell in pivot.args.get("columns") or []}
        if pivoted:
            for value in inputs:
                for inner in value.find_all(exp.Column):
                    for table, path, _, _, named in self._resolve(scope, inner, seen, pivoted=True):
                        yield table, path, READ, not pivot.args.get("unpivot"), named
            return
        source = pivot.parent
        own = exp.Column(
            this=column.this.copy(), table=exp.to_identifier(source.alias_or_name if source else "")
        )
        for table, path, role, aggregated, named in self._resolve(scope, own, seen, pivoted=True):
            for fields, around in _paths(column):
                yield table, *_composed(path, role, fields[1:], around), aggregated, named

    def _holds(self, source: object, name: str) -> bool:
        """Whether a table or query read has a column of this name."""
        if isinstance(source, Scope):
            return name.lower() in (output.lower() for output in _output_names(source))
        columns = self.columns.get(source.name) if isinstance(source, exp.Table) else None
        return isinstance(columns, dict) and name.lower() in (column.lower() for column in columns)

    def _generated(
        self, scope: Scope, lateral: exp.Expr, column: exp.Column, seen: set[tuple[int, str]]
    ) -> Iterator[_Resolved]:
        """The base columns behind an output of a `LATERAL VIEW` generator (`explode(items) t AS
        item`): the columns of the generator's arguments that flow into it, seen from the query whose
        FROM the generator follows. An explode of a column gives its elements (`item.q` reads
        `items.element.q`), or a map's keys and values; other arguments flow in as a whole."""
        names = [alias.name for alias in lateral.args["alias"].columns] if lateral.args.get("alias") else []
        if column.name not in names or isinstance(lateral.this, exp.Inline):
            # Columns the SQL does not name (`explode(items)`'s `col`), or an inline's, which are
            # the fields of its elements in order: what the generator reads, opaque.
            for inner in lateral.this.find_all(exp.Column):
                for table, path, _, aggregated, named in self._resolve(scope, inner, seen):
                    yield table, path, OPAQUE, aggregated, named
            return
        position, generator = names.index(column.name), lateral.this
        for inner in generator.find_all(exp.Column):
            if position not in _generator_outputs(generator, len(names), inner):
                continue
            below: list[tuple[tuple[str, ...], str]] = [((), READ)]
            element = _generator_part(generator, len(names), position)
            if isinstance(generator, exp.Explode | exp.Posexplode) and generator.this is inner and element:
                below = [((*element, *path[1:]), role) for path, role in _paths(column)]
            for table, path, _, aggregated, named in self._resolve(scope, inner, seen):
                for fields, role in below:
                    yield table, path + fields, role, aggregated, named

    def _outputs(self, scope: Scope, root: Scope) -> Outputs | None:
        if scope in _branches(root):
            names = _output_names(root)
            projections = _select(scope).expressions

            def named(
                projection: exp.Expr, kind: str, column: exp.Expr
            ) -> tuple[str, tuple[str | None, ...]]:
                first = 0  # the position of its first output: a generator's `AS (k, v)` gives several
                for other in projections:
                    if other is projection:
                        return kind, tuple(
                            names[first + i] if first + i < len(names) else None
                            for i in _generated_into(projection, column)
                        )
                    first += len(_projection_names(other))
                return kind, (None,)

            return named
        if scope.is_subquery:
            subquery = scope.expression.parent
            parent = scope.parent
            if subquery is None or parent is None or not isinstance(parent.expression, exp.Select):
                return None
            kind, _, projection = _context(subquery, parent.expression)
            outer = self._outputs(parent, root) if projection is not None else None
            if outer is not None and projection is not None:
                _, flows = outer(projection, kind, subquery)
                return lambda _projection, _kind, _column: (kind, flows)
            return lambda _projection, _kind, _column: (kind, (None,))
        return None

    def _resolve(
        self, scope: Scope, column: exp.Column, seen: set[tuple[int, str]], pivoted: bool = False
    ) -> Iterator[_Resolved]:
        """The base columns behind `column` as `scope` sees it (`_Resolved`: table, path, what that
        is of the column's value, under an aggregate, named by a CTE's or derived table's projection
        on the way rather than given by its `*`).
        `pivoted`: `column` names a column of the source a PIVOT reads, not of its rows."""
        pivot = None if pivoted else _pivot(scope, column.table)
        if pivot is not None:
            yield from self._pivoted(scope, column, pivot, seen)
            return
        alias = column.table
        if not alias and isinstance(scope.expression, exp.Select):  # ORDER BY an output alias
            aliased = [  # not the projection the column sits in (`region AS region`, as qualify spells it)
                p
                for p in scope.expression.expressions
                if isinstance(p, exp.Alias)
                and p.alias == column.name
                and not any(inner is column for inner in p.find_all(exp.Column))
            ]
            for inner in aliased[0].find_all(exp.Column) if aliased else ():
                if inner is not column and inner.table:
                    yield from self._resolve(scope, inner, seen)
            # A CTE sees the CTEs before it as sources, and a LATERAL VIEW's alias is not where a
            # column is looked for: what counts is what the query's FROM and JOINs name.
            selected = [name for name, (_, found) in scope.selected_sources.items() if not _generates(found)]
            if aliased or not selected or (scope.is_subquery and not self.schemas_known):
                return
            if len(selected) > 1:
                # Several sources have it (qualify places a column only one has): ambiguous, which
                # engines refuse, and a use of each; with a schema unknown, it may be that one's.
                if self.schemas_known:
                    for name in selected:
                        if self._holds(scope.sources[name], column.name):
                            placed = exp.Column(this=column.this.copy(), table=exp.to_identifier(name))
                            yield from self._resolve(scope, placed, seen)
                return
            # A column no known schema placed, in a query of one source: the engine looks for it
            # there first, so that is what the view uses (and fails on, if the source's schema lacks
            # it). A subquery's may be an outer query's (correlated), unless no schema is unknown.
            alias = selected[0]
        source, outer = scope.sources.get(alias), scope
        while source is None and alias and outer.parent is not None:  # a correlated subquery's
            outer = outer.parent  # reference to an enclosing query's table
            source = outer.sources.get(alias)
        if isinstance(source, exp.Table):
            key = self.placeholders.get(source.name)
            if key is not None:
                columns = self.columns.get(source.name)
                kinds = (
                    {name.lower(): kind for name, kind in columns.items()}
                    if isinstance(columns, dict)
                    else {}
                )
                renamed = self.renames.get(source.name, {})
                for path, role in _paths(column, kinds.get(column.name.lower())):
                    yield key, (renamed.get(path[0].lower(), path[0]), *path[1:]), role, False, False
            return
        if not isinstance(source, Scope) or (id(source), column.name) in seen:
            return
        seen = seen | {(id(source), column.name)}
        if _generates(source):
            yield from self._generated(outer, source.expression, column, seen)
            return
        for table, path, role, aggregated, named in self._projected(source, column.name, seen):
            for fields, around in _paths(column):
                yield table, *_composed(path, role, fields[1:], around), aggregated, named

    def _projected(self, source: Scope, name: str, seen: set[tuple[int, str]]) -> list[_Resolved]:
        """The base columns behind a CTE's or derived table's column `name`, each with what it is of
        the column's value; once per column (a chain of CTEs each reading the one before twice
        was walked 2^n times: 18 s at 14 levels)."""
        key = (id(source), name)
        if key not in self.projected:
            names = _output_names(source)
            found: list[_Resolved] = [] if name in names else self._untraced(source, seen)
            for branch in _branches(source) if name in names else []:
                select = _select(branch)
                projection, slot = _projection_and_slot(select, names.index(name))
                generated = _projected_part(projection, slot)
                self.read.add(id(projection))
                for inner in projection.find_all(exp.Column):
                    if inner.find_ancestor(exp.Select) is not select:
                        continue
                    _, aggregated, _ = _context(inner, select)
                    named = _named_output(select, projection)
                    for table, path, role, below, named_below in self._resolve(branch, inner, seen):
                        if generated is not None and inner is generated[0]:  # its elements, keys or values
                            part = generated[1]
                            path, role = (*path, *part) if part else path, role if part else READ
                        found.append((table, path, role, aggregated or below, named or named_below))
            self.projected[key] = list(dict.fromkeys(found))
        return self.projected[key]

    def _untraced(self, source: Scope, seen: set[tuple[int, str]]) -> list[_Resolved]:
        """A column a CTE or derived table names nowhere, which a projection of it the analysis
        cannot name gives (`owner.*`, `inline(items)`, `explode(m)`): what those read, opaque."""
        found: list[_Resolved] = []
        for branch in _branches(source):
            select = _select(branch)
            for projection in select.expressions:
                name = projection.alias_or_name
                generated = isinstance(projection.unalias(), exp.Explode | exp.Inline)
                unnamed = name in ("", "*") or _GIVEN_NAME.fullmatch(name) is not None
                if isinstance(projection, exp.Aliases) or not (unnamed or generated):
                    continue
                self.read.add(id(projection))
                for inner in projection.find_all(exp.Column):
                    if inner.find_ancestor(exp.Select) is select:
                        found.extend(
                            (table, path, OPAQUE, aggregated, True)
                            for table, path, _, aggregated, _ in self._resolve(branch, inner, seen)
                        )
        return found
