"""What breaks if a table's column changes: the views current at T that use the column, directly or
through other views, with how each uses it.

Candidate views come from table lineage (`uses_as_of`); each one's SQL is analysed column by column
(`viewlineage.indexer.lineage.columns`) against the schemas known at T: tables' current schemas from their
metadata, views' schemas from their current versions, so `SELECT *` expands. A use that flows into
a view's output column carries the question on to the views reading that column.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import duckdb
from sqlglot import exp
from sqlglot.errors import SqlglotError

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.lineage.columns import (
    OTHER,
    SPARK_DECIMAL,
    ColumnLineage,
    ColumnUse,
    TableKey,
    iceberg_type_sql,
    schema_columns,
    spark_type,
)
from viewlineage.indexer.lineage.tables import LineageRequest
from viewlineage.queries.analyses import ANALYSES
from viewlineage.queries.api import (
    MATCHES,
    check_table_not_dropped,
    is_named,
    lineage_unknown,
    show,
    table_reference,
    tied_files,
)
from viewlineage.queries.names import (
    FOREVER_MS,
    ResolvedTable,
    display_name,
    dotted,
    iso,
    name_parts,
    query_rows,
    refuse_id_of_both,
    resolve_table,
    tables_named,
    views_named,
)
from viewlineage.sinks.readers import check_stopped

DROP, RENAME, CHANGE_TYPE = "drop-column", "rename-column", "change-type"
ANALYSIS_FAILED = frozenset({"column-analysis-error", "sql-parse-error"})
"""Findings of a column analysis that found no uses because it failed, not because there are none."""
STORED_COLUMN = "stored-column"
"""The `kind` of an already-broken view's column that its `*` of the table no longer gives where
the engine looks for it (see `_Reader.missing_outputs`), though the view's stored column list has it."""
STORED_TYPE = "stored-type"
"""The `kind` of an already-broken view's column whose type the table's column no longer up-casts
to (an earlier type change: Spark refuses "Cannot up cast", Trino calls the view stale)."""
THROUGH_VIEW = "through-view"
"""The `kind` of a view that reads an already-broken view, directly or through views: engines
resolve the views a query reads, so it fails with it."""
_TIED, _SHARED = MATCHES.index("tied-file"), MATCHES.index("shared-name")
_FIXED_PARTS = frozenset({("list", "element"), ("map", "key"), ("map", "value")})
"""Parts of a list or map that Iceberg neither drops nor renames (nor retypes, for a map's key)."""
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_PROMOTIONS = {("int", "long"), ("float", "double")}


@dataclass(frozen=True, slots=True)
class Change:
    kind: str
    """`drop-column`, `rename-column` or `change-type`."""
    column: tuple[str, ...]
    """The column, then nested field names (`address.city`)."""
    target: str | None = None
    """The new name (rename) or type (change-type)."""


def parse_change(drop: str | None, rename: str | None, change_type: str | None) -> Change:
    """The one change asked for on the command line."""
    asked = ((DROP, drop), (RENAME, rename), (CHANGE_TYPE, change_type))
    empty = [kind for kind, text in asked if text is not None and not text.strip()]
    if empty:
        raise UsageError(f"--{empty[0]} is empty: name a column (over HTTP: {empty[0].replace('-', '_')})")
    given = [(kind, text) for kind, text in asked if text]
    if len(given) != 1:
        raise UsageError(
            "give exactly one of --drop-column, --rename-column, --change-type "
            "(over HTTP: drop_column, rename_column, change_type)"
        )
    kind, text = given[0]
    if kind == DROP:
        return Change(kind, _column_path(text))
    column, equals, target = text.partition("=")
    option = f"--{kind} ({kind.replace('-', '_')} over HTTP)"
    if not equals or not column.strip() or not target.strip():
        wanted = "A=B" if kind == RENAME else "COLUMN=TYPE"
        raise UsageError(f"{option} takes {wanted}, got {text!r}")
    if kind == CHANGE_TYPE:
        return Change(kind, _column_path(column), iceberg_type(target))
    path, name = _column_path(column), target.strip().lower()
    parent = ".".join(path[:-1]).lower()
    if len(path) > 1 and name.startswith(f"{parent}."):  # `a.b=a.c`: the field's whole new path
        name = name[len(parent) + 1 :]
    if len(name) > 1 and name[0] == name[-1] and name[0] in '`"':  # a quoted name holds any dot
        name = name[1:-1]
    elif "." in name:
        within = f"{parent}.<name>" if parent else "<name>"
        raise UsageError(
            f"{option} {text!r}: a rename gives {'.'.join(path)} a new name ({within}), it does not "
            "move it into another struct; quote a name that holds a dot (`a.b`)"
        )
    return Change(kind, path, name)


ICEBERG_TYPES = (
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "decimal(P,S)",
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "timestamp_ns",
    "timestamptz_ns",
    "string",
    "uuid",
    "fixed[L]",
    "binary",
)
"""Iceberg's primitive types (a column of a nested type changes through its fields)."""
ENGINE_TYPES = {
    "bigint": "long",
    "integer": "int",
    "smallint": "int",
    "tinyint": "int",
    "real": "float",
    "double precision": "double",
    "varchar": "string",
    "char": "string",
    "text": "string",
    "bool": "boolean",
    "varbinary": "binary",
    "bytes": "binary",
    "timestamp_ntz": "timestamp",
    "timestamp without time zone": "timestamp",
    "timestamp with time zone": "timestamptz",
    "timestamp_ltz": "timestamptz",
}
"""The engines' names for Iceberg types (Spark, Trino, Flink, SQL)."""
_SIZED = re.compile(r"^(decimal|numeric)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$|^fixed\s*\[\s*(\d+)\s*\]$")
_LENGTH = re.compile(r"^(varchar|char)\s*\(\s*\d+\s*\)$")


def iceberg_type(text: str) -> str:
    """The Iceberg type `text` names, in Iceberg's spelling (`bigint` is `long`); a `UsageError`
    listing the accepted names when it names none."""
    name = " ".join(text.strip().lower().split())
    if sized := _SIZED.match(name):
        if sized.group(4) is not None:
            return f"fixed[{sized.group(4)}]"
        precision, scale = int(sized.group(2)), int(sized.group(3))
        if not 1 <= precision <= 38 or scale > precision:
            raise UsageError(f"{text!r}: a decimal's precision is 1 to 38, its scale at most the precision")
        return f"decimal({precision}, {scale})"
    if _LENGTH.match(name):
        return "string"
    if name in ENGINE_TYPES:
        return ENGINE_TYPES[name]
    if name in ICEBERG_TYPES:
        return name
    engines = ", ".join(sorted({*ENGINE_TYPES, "numeric(P,S)", "varchar(N)"}))
    raise UsageError(
        f"{text!r} is not an Iceberg type. Iceberg's: {', '.join(ICEBERG_TYPES)}; the engines' names "
        f"for them: {engines}"
    )


def _column_path(text: str) -> tuple[str, ...]:
    """`c`, `c.field`, or with quoted parts: `` `a.b` `` or `"a.b"` (a column whose name holds a dot;
    unquoted, `a.b` names it too when the table has no column `a`)."""
    if '"' in text or "`" in text:
        return tuple(name_parts(text))
    parts = tuple(part.strip().lower() for part in text.split("."))
    if not all(parts):
        raise UsageError(f"{text!r} is not a column: name it as `c`, or `c.field` for a nested field")
    return parts


def promotion_is_safe(old: str, new: str) -> bool:
    """Whether Iceberg changes the type without rewriting data: int -> long, float -> double,
    decimal(P, S) -> decimal(P', S) with P' >= P."""
    old, new = old.replace(" ", "").lower(), new.replace(" ", "").lower()
    if old == new or (old, new) in _PROMOTIONS:
        return True
    was, now = _DECIMAL.match(old), _DECIMAL.match(new)
    return bool(was and now and was.group(2) == now.group(2) and int(now.group(1)) >= int(was.group(1)))


@dataclass(frozen=True, slots=True)
class _Object:
    """A table or view as SQL names it, and the column of it the question is about."""

    key: TableKey
    name: str
    column: tuple[str, ...]
    via: tuple[str, ...]
    """Columns from the changed table down to this one: `prod.db.events.amount`, ..."""
    schemas_known: bool
    certainty: int = 0
    """The least sure match on the way here (an index into `MATCHES`)."""
    whole: str | None = None
    """Set when the question is about the whole view, not a column (`column` is `*`): `fails` (it
    uses a dropped or renamed column, so no query of it runs) or `unknown` (it may use the column)."""
    new_type: str | None = None
    """For a type change, the Spark type the column takes: the change's for the table's, and for a
    view's output the type inferred for it once the view is re-created; None if not inferred."""
    shifted: bool = False
    """Set for a Spark view's stored column that the change fills with another column's values
    (`_SHIFTS`): its readers keep running, with those values."""


@dataclass(frozen=True, slots=True)
class _Reader:
    view_id: str
    name: str
    key: TableKey
    lineage: ColumnLineage
    columns: tuple[str, ...]
    """The view's column names from its schema: what readers of the view call its outputs."""
    reads: tuple[TableKey, ...]
    """The tables and views its SQL reads (table-level lineage, known whatever the schemas)."""
    spark: bool
    """Whether the SQL analysed is Spark's (its dialect): Spark reads the view's columns by position."""
    request: LineageRequest
    schemas: dict[TableKey, list[tuple[str, str]]]
    """The schemas of its reads known at T, as `column_lineage` takes them."""
    resolved: dict[str, TableKey]
    stored_types: tuple[str | None, ...]
    """The view's stored column types (Spark's spelling, by position): what engines check its
    query's output types against."""
    spelled: tuple[str, ...]
    """`columns` as the view's schema spells them (`CustID`, `Full Name`)."""
    floor: int = 0
    """The surest match any use of its reads can be (an index into `MATCHES`): `tied-file` when this
    is the version a file tied with its file in force made current."""
    onward: int = 0
    """The surest match a read of this view can be: `shared-name` when another current view holds
    its name too (directories whose names differ only in case)."""
    created_ms: int | None = None
    """When the version was created (its `timestamp-ms`): the schemas it was typed against then."""

    def match(self, reference: TableKey, wanted: TableKey, catalogs: frozenset[str]) -> int | None:
        """How surely a reference of this reader names `wanted` (`_match`), at best its `floor`."""
        certainty = _match(reference, wanted, catalogs)
        return None if certainty is None else max(certainty, self.floor)

    def missing_outputs(self) -> list[str]:
        """The columns of the view's stored column list that its query no longer gives where the
        engine looks for them, so that reading the view fails (or, in Spark, shifts its columns).
        Spark reads an Iceberg view's columns by position (Iceberg's `ResolveViews`): a `*` that
        gives fewer columns shifts them; a rename or an added column changes nothing. Other engines
        compare names and positions (Trino's "stale" view): a rename or an added column breaks it."""
        outputs = [name.lower() for name in self.lineage.outputs]
        if outputs == list(self.columns):
            return []
        gone = [name for name in self.columns if name not in outputs]
        if self.spark:
            return self._dropped(outputs) if len(outputs) < len(self.columns) else self._shifted(outputs)
        new = [name for name in outputs if name not in self.columns]
        moved = [name for name, output in zip(self.columns, outputs, strict=False) if name != output]
        return gone or new or moved[:1]

    def _dropped(self, outputs: list[str]) -> list[str]:
        """The stored columns the query's outputs lack, lined up in order: a column in a run the
        outputs replace by fewer was dropped, the others there renamed (`kind, amount` -> `event_kind`:
        `amount`), so a rename does not read as a cause."""
        matcher = difflib.SequenceMatcher(a=list(self.columns), b=outputs, autojunk=False)
        dropped: list[str] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag in ("delete", "replace") and i2 - i1 > j2 - j1:
                dropped += self.columns[i1 + (j2 - j1) : i2]
        return dropped or list(self.columns[len(outputs) :])

    def _shifted(self, outputs: list[str]) -> list[str]:
        """The stored columns that Spark, reading as many outputs by position, fills from another
        column: where the output's name differs from the stored one and one of them stands elsewhere
        (a column dropped or moved while another was added, so the count is the same: the twentieth
        new-user trial's view ran on with shifted values). A name that differs and stands nowhere
        else is taken for a rename (its values are the column's own): a column dropped and one added
        in its place cannot be told from it by name."""
        return [
            name
            for name, output in zip(self.columns, outputs, strict=False)
            if name != output and (name in outputs or output in self.columns)
        ]

    def past_stored(self, use: ColumnUse) -> bool:
        """Whether `use` flows, through a `*`, only into an output past the view's stored columns (a
        column added to the table since): Spark reads the stored columns by position and no more."""
        if not (self.spark and use.starred and use.output is not None):
            return False
        outputs = [name.lower() for name in self.lineage.outputs]
        position = outputs.index(use.output.lower()) if use.output.lower() in outputs else 0
        return position >= len(self.columns)

    def output_name(self, output: str) -> str:
        """The view's name for an output of its SQL. `CREATE VIEW v (a, b) AS SELECT count(*), ...`
        names columns in the schema, by position; but a `SELECT *` view whose source changed since
        it was created has a schema that no longer lines up, which shows as a name the SQL and the
        schema share at different positions: then the SQL's names stand."""
        outputs = [name.lower() for name in self.lineage.outputs]
        lined_up = len(outputs) == len(self.columns) and all(
            self.columns[i] == name for i, name in enumerate(outputs) if name in self.columns
        )
        if lined_up and output.lower() in outputs:
            return self.spelled[outputs.index(output.lower())]
        return output


def impact(
    conn: duckdb.DuckDBPyConnection, table: str, change: Change, as_of_ms: int | None = None
) -> dict[str, Any]:
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    is_view = False
    fields: dict[tuple[str, ...], str] | None
    spelled: dict[tuple[str, ...], tuple[str, ...]] = {}
    refuse_id_of_both(conn, table)
    if tables_named(conn, table, as_of_ms):
        resolved = resolve_table(conn, table, as_of_ms)  # the one, or why not
        table_id, name = resolved.table_id, resolved.name
        catalog, parts, fields, spelled = _schema_of(conn, resolved, at)
    elif views_named(conn, table, as_of_ms):  # a view's column: its readers, as a table's
        shown = show(conn, table, as_of_ms)
        is_view, table_id, name = True, shown["view_id"], shown["view"]
        catalog, parts = table_reference(conn, name)
        schema = query_rows(
            conn,
            "SELECT v.schema_hash FROM view_current_version(?1, ?2) c JOIN preferred_versions v "
            "ON v.view_id = c.view_id AND v.version_id = c.version_id",
            [table_id, at],
        )
        # Its columns' nested fields too (the fourteenth new-user trial: `cust.name` was "no column",
        # and a struct's type printed as Iceberg's JSON)
        fields, spelled = _fields_of(conn, schema[0]["schema_hash"] if schema else None)
    else:
        # A table views read though its own metadata was never indexed (many index only views):
        # its uses are known from the views' SQL, its schema is not.
        catalog, parts = table_reference(conn, table)
        if not is_named(conn, parts):
            resolve_table(conn, table)  # raises, with suggestions
        table_id, name, fields = None, dotted([catalog, *parts]), None
    if fields is not None and change.column not in fields and (".".join(change.column),) in fields:
        change = replace(change, column=(".".join(change.column),))  # a column named `a.b`
    column_type = None if fields is None else _checked(change, fields, name)
    schemas = _Schemas(conn)
    # Every view reading the table at T, directly or through views
    readers = _readers(
        conn, ("SELECT DISTINCT view_id FROM uses_as_of(?1, ?2, ?3)", [catalog, parts]), at, schemas
    )
    catalogs = frozenset(
        row["catalog"]
        for row in query_rows(
            conn,
            "SELECT catalog FROM view_names WHERE catalog IS NOT NULL "
            "UNION SELECT catalog FROM table_names WHERE catalog IS NOT NULL",
        )
    )
    # Which of two views, or tables, of one name a read names is a guess.
    shared = (
        query_rows(
            conn,
            """
        WITH me AS (SELECT catalog, name_path FROM view_heads_as_of(?2) WHERE view_id = ?1),
        holders AS (
            SELECT o.view_id AS holder FROM view_heads_as_of(?2) o, me
            WHERE o.name_path = me.name_path AND o.catalog IS NOT DISTINCT FROM me.catalog
            UNION ALL
            SELECT NULL FROM held_table_names(?2) t, me
            WHERE t.name_path = me.name_path AND t.catalog IS NOT DISTINCT FROM me.catalog
        )
        SELECT count(*) > 1 AS shared FROM holders""",
            [table_id, at],
        )[0]["shared"]
        if is_view
        else query_rows(conn, "SELECT table_name_shared(?, ?, ?) AS shared", [catalog, list(parts), at])[0][
            "shared"
        ]
    )
    target = _Object(
        (catalog, tuple(parts[:-1]), parts[-1]),
        name,
        change.column,
        (),
        True,
        _SHARED if shared else 0,
        new_type=iceberg_type_sql(change.target) if change.target is not None else None,
    )
    going_stale = (
        (lambda reader, source: _outputs_going_stale(reader, source, catalogs, change))
        if change.kind == CHANGE_TYPE and change.target is not None
        else None
    )
    uses, by_position, stale, assumed, refused = _walk(readers, target, catalogs, change.kind, going_stale)
    for use in uses:  # the table's columns as its schema spells them (the analysis case-folds)
        if use["reads"] == name and (path := tuple(use["column"].split("."))) in spelled:
            use["column"] = ".".join(spelled[path])
    result: dict[str, Any] = {
        "table": name,
        "table_id": table_id,
        "as_of_ms": as_of_ms,
        "as_of": iso(as_of_ms),
        "change": change.kind,
        "column": dotted(list(spelled.get(change.column, change.column))),
        "column_type": column_type,
        "target": change.target,
        "safe": (  # Iceberg promotes a table's column; a view's is retyped by re-creating the view
            promotion_is_safe(column_type, change.target or "")
            if change.kind == CHANGE_TYPE and column_type is not None and not is_view
            else False
        ),
        "table_indexed": table_id is not None,
        "is_view": is_view,
        "uses": uses,
    }
    result["views"] = sorted({use["view"] for use in uses})
    # A view's stored schema keeps each output column's type: engines refuse a view whose query
    # now gives one it cannot up-cast to (Spark: "Cannot up cast", Trino: "View is stale").
    result["stale_schemas"] = sorted(stale)
    # Of those, the views listed only because an output's type could not be inferred (or the
    # analysis failed): a guess on the safe side.
    result["stale_schemas_assumed"] = sorted(assumed)
    # Views whose SQL passes the column where Spark takes only an INT (`date_add(d, n)`): they fail.
    result["refused_arguments"] = sorted(refused)
    result["uncertain"] = len({use["view"] for use in uses if use["match"] != "exact"})
    resolved_views = {use["view"] for use in uses if use["kind"] != "unknown"}
    result["unresolved"] = len(set(result["views"]) - resolved_views)
    result["lineage_unknown"] = [
        row for row in lineage_unknown(conn, at, transitive=True) if row["view_id"] != table_id
    ]
    result["already_broken"] = (
        [] if fields is None else _already_broken(schemas, readers, target, fields, catalogs)
    )
    # A view an earlier change broke does not keep working by position: it is broken already.
    result["by_position"] = sorted(set(by_position) - {row["view"] for row in result["already_broken"]})
    # A reader whose file in force ties with another was analysed from a guessed one of them.
    result["tied"] = tied_files(conn, sorted({reader.view_id for reader in readers}), at)
    # Time travel and tags read a snapshot in its own schema: no column change reaches them.
    held = _paths_held(conn, table_id, change.column) if table_id is not None and not is_view else []
    result["time_travel"] = sorted(
        {reader.name for reader in readers if _reads_pinned(reader, target, catalogs, held)}
    )
    return result


def _paths_held(
    conn: duckdb.DuckDBPyConnection, table_id: str, column: tuple[str, ...]
) -> list[tuple[str, ...]]:
    """Every path (case-folded) that the field at `column` had in the table's schemas: a read by
    time travel names it as it was named then (`b`, renamed `bb` since)."""
    rows = query_rows(
        conn,
        """
        WITH fields AS (
            SELECT f.field_id, list_transform(f.path, lambda part: lower(part)) AS path
            FROM table_schemas s JOIN schema_fields f USING (schema_hash) WHERE s.table_id = ?1
        )
        SELECT DISTINCT path FROM fields
        WHERE field_id IN (SELECT field_id FROM fields WHERE path = ?2) ORDER BY path""",
        [table_id, list(column)],
    )
    return [tuple(row["path"]) for row in rows]


def _reads_pinned(
    reader: _Reader, target: _Object, catalogs: frozenset[str], held: list[tuple[str, ...]]
) -> bool:
    """Whether `reader` reads the column of the table by time travel or at a tag (or may: that
    snapshot's columns could not be told apart), by its name now or one it had (`held`)."""
    tables = [key for key in reader.lineage.pinned_tables if _match(key, target.key, catalogs) is not None]
    if not tables:
        return False
    if _failed(reader.lineage):
        return True

    def pinned(key: TableKey) -> bool:  # keyed `name <pin>` (see `ColumnLineage.pinned_tables`)
        return any(key[:2] == table[:2] and key[2].startswith(f"{table[2]} ") for table in tables)

    return any(pinned(key) for key in reader.lineage.unknown_schemas) or any(
        pinned(use.table) and any(_reads(use, path) for path in {target.column, *held})
        for use in reader.lineage.uses
    )


def _already_broken(
    schemas: _Schemas,
    readers: list[_Reader],
    target: _Object,
    fields: dict[tuple[str, ...], str],
    catalogs: frozenset[str],
) -> list[dict[str, Any]]:
    """Uses, by the views reading the table directly, of columns or nested fields its schema at T
    does not have: engines resolve them by name, so an earlier rename or drop already broke these
    views (and no change to the column as it is now named affects them). Only views every schema
    of whose reads is known (at T, or else when the version was created): otherwise a column may
    be another table's."""
    broken: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for reader in readers:
        uses = reader.lineage.uses
        analysed = _analysed_whole(reader)
        if _reread_as_created(schemas, reader):
            # A column gone leaves `c.f`, a field of it, naming no table (read as nothing, or
            # failing): the SQL as it resolved when the version was created (and worked) says
            # what it reads.
            as_created = _as_created(schemas, reader)
            if as_created is None and not analysed:
                continue
            # (a `*` gives the columns there are now: what it lost is `missing_outputs`')
            created = [use for use in as_created[0].uses if not use.starred] if as_created is not None else []
            uses = (*uses, *created)
        starred = [reader.match(key, target.key, catalogs) for key in reader.lineage.star_tables]
        surest = min((c for c in starred if c is not None and analysed), default=None)
        for column in reader.missing_outputs() if surest is not None else []:  # its `*` of the table
            broken.setdefault(  # no longer gives it
                (reader.name, reader.view_id, column, STORED_COLUMN),
                {
                    "view": reader.name,
                    "view_id": reader.view_id,
                    "column": column,
                    "kind": STORED_COLUMN,
                    "match": MATCHES[surest or 0],
                },
            )
        for use in uses:
            certainty = reader.match(use.table, target.key, catalogs)
            if certainty is None or use.path[0] == "*" or not _missing(fields, use.path):
                continue
            column = ".".join(use.path)
            broken.setdefault(
                (reader.name, reader.view_id, column, use.kind),
                {
                    "view": reader.name,
                    "view_id": reader.view_id,
                    "column": column,
                    "kind": use.kind,
                    "match": MATCHES[certainty],
                },
            )
        for column, certainty in (
            _outputs_gone_stale(schemas, reader, target, fields, catalogs) if analysed else []
        ):
            broken.setdefault(
                (reader.name, reader.view_id, column, STORED_TYPE),
                {
                    "view": reader.name,
                    "view_id": reader.view_id,
                    "column": column,
                    "kind": STORED_TYPE,
                    "match": MATCHES[certainty],
                },
            )
    _broken_through_views(broken, readers, catalogs)
    # A table whose name another table's directory holds too: which one a read names is a guess.
    return [
        broken[key] | {"match": MATCHES[max(MATCHES.index(broken[key]["match"]), target.certainty)]}
        for key in sorted(broken)
    ]


def _missing(fields: dict[tuple[str, ...], str], path: tuple[str, ...]) -> bool:
    """Whether the schema (`fields`, by case-folded path) lacks a column or nested field a use
    reads: the first step of its path that is not a field, below a struct, list or map that is."""
    read = tuple(part.lower() for part in path)
    read = read[:-1] if read[-1:] == ("*",) else read  # `s.*`: the struct s
    for depth in range(1, len(read) + 1):
        if read[:depth] not in fields:
            return depth == 1 or fields[read[: depth - 1]] in ("struct", "list", "map")
    return False


def _outputs_gone_stale(
    schemas: _Schemas,
    reader: _Reader,
    target: _Object,
    fields: dict[tuple[str, ...], str],
    catalogs: frozenset[str],
) -> list[tuple[str, int]]:
    """The table's columns (with how surely the read names the table) that the view projects into
    an output whose stored type their type at T (`fields`) no longer up-casts to: an earlier type
    change broke the view. Outputs that are the column itself count, whose type is the column's
    own, and computed ones whose inferred type is borne out (`_inferred_gone_stale`). A view whose
    outputs no longer line up with its stored columns is broken by that (`missing_outputs`), not by
    the types the shift compares (`_outputs_line_up`)."""
    if not _outputs_line_up(reader):
        return []
    # Typing the view's outputs costs a second analysis: only for a projected column whose type
    # does not fit the stored type of the output it flows into.
    outputs = [name.lower() for name in reader.lineage.outputs][: len(reader.stored_types)]
    if not any(
        use.kind in ("projected", "aggregate")  # `max(c)` and `min(c)` keep its type
        and use.output is not None
        and use.output.lower() in outputs
        and _match(use.table, target.key, catalogs) is not None
        and not _up_casts(
            _column_type(fields, use.path),
            reader.stored_types[outputs.index(use.output.lower())],
            reader.spark,
        )
        for use in reader.lineage.uses
    ):
        return []
    typed = ANALYSES.lineage(reader.request, reader.schemas, reader.resolved, typed=True)
    if _failed(typed):
        return []
    stored = dict(enumerate(reader.stored_types))
    branches = dict(enumerate(typed.branch_types))
    stale = {  # a set operation's output is at least as wide as each branch's column
        output
        for position, (output, kind, direct) in enumerate(
            zip(typed.outputs, typed.output_types, typed.direct_outputs, strict=True)
        )
        if stored.get(position) is not None
        and any(
            not _up_casts(each, stored[position], reader.spark)
            for each in ([kind] if direct and kind is not None else []) + list(branches.get(position, ()))
        )
    }
    uses = [use for use in typed.uses if use.output in stale] + _inferred_gone_stale(schemas, reader, typed)
    return [
        (".".join(use.path), certainty)
        for use in uses
        if use.kind in ("projected", "aggregate")
        and (certainty := reader.match(use.table, target.key, catalogs)) is not None
    ]


def _shifts(reader: _Reader, uses: list[ColumnUse]) -> int | None:
    """For a Spark view that gives a dropped column only through `*` (`uses`, its uses of it), the
    position of the first stored column the drop shifts, when the `*` still gives at least as many
    columns as the view stores (Spark then reads them by position and runs on); else None."""
    if not (reader.spark and uses and all(use.starred and use.output is not None for use in uses)):
        return None
    outputs = [name.lower() for name in reader.lineage.outputs]
    dropped = {(use.output or "").lower() for use in uses}
    if len(outputs) - len(dropped) < len(reader.columns):
        return None
    first = min(outputs.index(output) for output in dropped if output in outputs)
    return first if first < len(reader.columns) else None


def _outputs_line_up(reader: _Reader) -> bool:
    """Whether the view's query gives the outputs its stored columns are, so that their types can
    be compared: Spark reads the stored columns by position and no more, so outputs past them (a
    column a `*` gives since it was added) do not count."""
    outputs_more = len(reader.lineage.outputs) > len(reader.stored_types)
    return not reader.missing_outputs() and (
        len(reader.lineage.outputs) == len(reader.stored_types) or (reader.spark and outputs_more)
    )


def _failed(lineage: ColumnLineage) -> bool:
    return any(finding.code in ANALYSIS_FAILED for finding in lineage.findings)


def _inferred_gone_stale(schemas: _Schemas, reader: _Reader, typed: ColumnLineage) -> list[ColumnUse]:
    """The uses, as the version was created, of columns retyped or dropped since, that flow into an
    output computed from columns (`price * qty`, `struct(*)`) whose type, inferred from the schemas
    at T, no longer up-casts to the stored one, where the inference is borne out: from the schemas
    read when the version was created, it gives the very type the view stored (sqlglot's rules and
    the engine's agree on that expression)."""
    stored = dict(enumerate(reader.stored_types))
    suspects = {
        position
        for position, (kind, direct) in enumerate(zip(typed.output_types, typed.direct_outputs, strict=True))
        if not direct
        and kind is not None
        and stored.get(position) is not None
        and not _up_casts(kind, stored[position], reader.spark)
    }
    if not suspects:
        return []
    as_created = _as_created(schemas, reader, typed=True)
    if as_created is None or as_created[0].outputs != typed.outputs:
        return []
    created, known = as_created
    changed = {
        (key, name.lower())
        for key, columns in known.items()
        for name, kind in columns
        if kind != dict(reader.schemas[key]).get(name)  # retyped, or gone
    }
    borne_out = {
        typed.outputs[position]
        for position in suspects
        if position < len(created.output_types) and created.output_types[position] == stored[position]
    }
    return [
        use for use in created.uses if use.output in borne_out and (use.table, use.path[0].lower()) in changed
    ]


def _broken_through_views(
    broken: dict[tuple[str, str, str, str], dict[str, Any]], readers: list[_Reader], catalogs: frozenset[str]
) -> None:
    """Adds to `broken` the views reading a broken one, through views: an engine resolves the views
    a query reads, so they fail with it (kind `through-view`, the column naming the view read)."""
    surest: dict[str, int] = {}  # broken view id -> its surest row's match
    for row in broken.values():
        certainty = MATCHES.index(row["match"])
        surest[row["view_id"]] = min(surest.get(row["view_id"], certainty), certainty)
    by_id = {reader.view_id: reader for reader in readers}
    read_names = [{key[2] for key in reader.reads} for reader in readers]
    pending = list(surest)
    while pending:
        view = by_id.get(pending.pop())
        if view is None:
            continue
        for reader, names in zip(readers, read_names, strict=True):
            if view.key[2] not in names:
                continue  # (most readers: `_match` needs the name)
            matches = [reader.match(key, view.key, catalogs) for key in reader.reads]
            read = min((match for match in matches if match is not None), default=None)
            if read is None or reader.view_id == view.view_id:
                continue
            certainty = max(read, surest[view.view_id])
            if reader.view_id not in surest:
                surest[reader.view_id] = certainty
                pending.append(reader.view_id)
            broken.setdefault(
                (reader.name, reader.view_id, view.name, THROUGH_VIEW),
                {
                    "view": reader.name,
                    "view_id": reader.view_id,
                    "column": view.name,
                    "kind": THROUGH_VIEW,
                    "match": MATCHES[certainty],
                },
            )


def _analysed_whole(reader: _Reader) -> bool:
    """Whether the reader's analysis knew every schema it reads and did not fail."""
    return not reader.lineage.unknown_schemas and not _failed(reader.lineage)


def _reread_as_created(schemas: _Schemas, reader: _Reader) -> bool:
    """Whether `_already_broken` reads the version's SQL as it resolved when it was created too."""
    return not _analysed_whole(reader) or _columns_gone(schemas, reader)


def _columns_gone(schemas: _Schemas, reader: _Reader) -> bool:
    """Whether a read of the version had a column when it was created that it has not at T."""
    if reader.created_ms is None:
        return False
    for key, columns in reader.schemas.items():
        then = schemas.at(key, reader.created_ms)
        if then is not None and {name.lower() for name, _ in then} - {name.lower() for name, _ in columns}:
            return True
    return False


def _as_created(
    schemas: _Schemas, reader: _Reader, typed: bool = False
) -> tuple[ColumnLineage, dict[TableKey, list[tuple[str, str]]]] | None:
    """The version's lineage from the schemas of its reads when it was created (when it worked),
    with those schemas; None when one is unknown or the analysis fails even so."""
    if reader.created_ms is None:
        return None
    then = {key: schemas.at(key, reader.created_ms) for key in dict.fromkeys(reader.resolved.values())}
    known = {key: columns for key, columns in then.items() if columns is not None}
    if len(known) < len(then):
        return None
    created = ANALYSES.lineage(reader.request, known, reader.resolved, typed=typed)
    if _failed(created):
        return None
    return created, known


def _schema_of(
    conn: duckdb.DuckDBPyConnection, resolved: ResolvedTable, at: int
) -> tuple[str | None, list[str], dict[tuple[str, ...], str], dict[tuple[str, ...], tuple[str, ...]]]:
    """The indexed table's catalog, name parts, field types by path (case-folded) at `at`, and
    each path as the schema spells it."""
    state = query_rows(
        conn,
        "SELECT catalog, name, current_schema_hash FROM table_file_as_of(?1, ?2) WHERE commit_ms <= ?2",
        [resolved.table_id, at],
    )
    if not state or state[0]["name"] is None:
        raise UsageError(f"table {resolved.name} has no metadata file committed by {iso(at)}")
    check_table_not_dropped(conn, resolved, at)
    fields, spelled = _fields_of(conn, state[0]["current_schema_hash"])
    return state[0]["catalog"], list(state[0]["name"]), fields, spelled


def _fields_of(
    conn: duckdb.DuckDBPyConnection, schema_hash: str | None
) -> tuple[dict[tuple[str, ...], str], dict[tuple[str, ...], tuple[str, ...]]]:
    """A schema's field types by path (case-folded, at every depth), and each path as it spells it."""
    rows = query_rows(conn, "SELECT path, type FROM schema_fields WHERE schema_hash = ?", [schema_hash])
    # As the lineage compares column names: unquoted identifiers are case-folded.
    fields = {tuple(part.lower() for part in row["path"]): row["type"] for row in rows}
    spelled = {tuple(part.lower() for part in row["path"]): tuple(row["path"]) for row in rows}
    return fields, spelled


def _checked(change: Change, fields: dict[tuple[str, ...], str], table: str) -> str:
    """The changed column's type, after checking the change makes sense on this schema."""
    if change.column not in fields:
        # The fields of the deepest struct, list or map of the path that there is (the nineteenth
        # new-user trial: `ship.addr.nosuch` listed the table's columns).
        sought_in = next(
            (
                change.column[:depth]
                for depth in range(len(change.column) - 1, 0, -1)
                if change.column[:depth] in fields
            ),
            (),
        )
        within = [
            path
            for path in sorted(fields)
            if len(path) == len(sought_in) + 1 and path[: len(sought_in)] == sought_in
        ]
        known = ", ".join(dotted(list(path[len(sought_in) :])) for path in within)
        known = f"fields of {'.'.join(sought_in)}: {known}" if sought_in else f"columns: {known}"
        # A nested field is named by its whole path: a list's element, a map's key or value included.
        nested = [
            ".".join(path)
            for path in sorted(fields)
            if len(path) > len(change.column)
            and path[0] == change.column[0]
            and path[-1] == change.column[-1]
        ]
        hint = f"; did you mean {', '.join(nested)}?" if nested else ""
        raise UsageError(f"{table} has no column {'.'.join(change.column)!r} at that time ({known}){hint}")
    if change.kind == RENAME and (*change.column[:-1], change.target) in fields:
        noun = "field" if len(change.column) > 1 else "column"
        raise UsageError(
            f"{table} already has a {noun} {'.'.join((*change.column[:-1], change.target or ''))!r}"
        )
    holder, part = fields.get(change.column[:-1]), change.column[-1]
    if (holder, part) in _FIXED_PARTS and (change.kind != CHANGE_TYPE or part == "key"):
        # Found by the fourteenth new-user trial: Spark refuses these ("Cannot delete map keys").
        verb = {DROP: "dropped", RENAME: "renamed", CHANGE_TYPE: "retyped"}[change.kind]
        raise UsageError(
            f"{'.'.join(change.column)} is the {part} of a {holder}, which Iceberg refuses to have {verb}: "
            f"change the column holding it ({'.'.join(change.column[:-1])}), or a field inside it"
        )
    kind = fields[change.column]
    if change.kind == CHANGE_TYPE and kind in ("struct", "list", "map"):
        raise UsageError(f"{'.'.join(change.column)} is a {kind}: change the type of a field inside it")
    if change.kind == CHANGE_TYPE and kind.replace(" ", "") == (change.target or "").replace(" ", ""):
        raise UsageError(f"{table}.{'.'.join(change.column)} is already {kind}: no change")
    return kind


class AnalysisSkipped(Exception):
    """An analysis worked out ahead was left to the question that needs it (see `queries.warm`)."""


def analyse_current(conn: duckdb.DuckDBPyConnection, view_ids: list[str]) -> int:
    """Works out into `ANALYSES` what a question about a column asks now of these views (those
    current): each one's analysis against the schemas now, and against those of its version's
    creation where `_already_broken` asks that too. How many it had to work out."""
    worked_out = ANALYSES.worked_out
    schemas = _Schemas(conn)
    for reader in _readers(conn, ("SELECT unnest(?1) AS view_id", [view_ids]), FOREVER_MS, schemas):
        with contextlib.suppress(AnalysisSkipped):
            if _reread_as_created(schemas, reader):
                _as_created(schemas, reader)
            # Typed, where `_outputs_gone_stale` may ask it (whether it does depends on the table asked
            # about; this asks it of every view whose outputs can be compared: a few more than needed).
            if _analysed_whole(reader) and _outputs_line_up(reader):
                typed = ANALYSES.lineage(reader.request, reader.schemas, reader.resolved, typed=True)
                if not _failed(typed):
                    _inferred_gone_stale(schemas, reader, typed)
    return ANALYSES.worked_out - worked_out


def _readers(
    conn: duckdb.DuckDBPyConnection, views: tuple[str, list[Any]], at: int, schemas: _Schemas
) -> list[_Reader]:
    """Each view `views` selects (a query of `view_id`s and its parameters; of those, the views
    current at `at`) with its column lineage: from its version in force, from the version each file
    tied with its file in force made current (which file holds the view is a guess: `tied-file`),
    and from the versions made current at the instant of its own that no file settles (which holds
    is a guess: `tied-file`)."""
    readers, parameters = views[0], [*views[1], at]
    at_parameter = f"?{len(parameters)}"
    heads = query_rows(
        conn,
        f"""
        WITH readers AS ({readers}),
        named AS (
            SELECT v.view_id,
                   count(*) OVER (PARTITION BY v.catalog, v.name_path) > 1 OR t.name IS NOT NULL AS shared
            FROM view_heads_as_of({at_parameter}) v
            LEFT JOIN held_table_names({at_parameter}) t
              ON t.name_path = v.name_path AND t.catalog IS NOT DISTINCT FROM v.catalog
            WHERE v.name_path IS NOT NULL
        )
        SELECT h.view_id, h.catalog, h.name, h.version_id, h.activated_ms, h.version_hash,
               coalesce(n.shared, false) AS shared
        FROM view_heads_as_of({at_parameter}) h LEFT JOIN named n ON n.view_id = h.view_id
        WHERE h.view_id IN (SELECT view_id FROM readers)
        ORDER BY h.view_id""",
        parameters,
    )
    heads = [head for head in heads if head["name"]]
    tied = query_rows(
        conn,
        """
        SELECT t.view_id, arg_max(fv.version_hash, fv.ordinal) AS version_hash
        FROM (SELECT view_id, unnest(tied_files) AS location FROM tied_files_of(?1, ?2)) t
        JOIN view_files f USING (location)
        JOIN file_versions fv ON fv.location = f.location AND fv.version_id = f.current_version_id
        GROUP BY t.view_id, t.location ORDER BY t.view_id, t.location""",
        [[head["view_id"] for head in heads], at],
    )
    # Versions made current at the instant of a head's, which no file settles: which holds is a guess.
    partners = query_rows(
        conn,
        """
        SELECT h.view_id, v.version_hash
        FROM (SELECT unnest(?1) AS view_id, unnest(?2) AS version_id, unnest(?3) AS activated_ms) h,
             unsettled_partners(h.view_id, h.version_id, h.activated_ms) p
        JOIN preferred_versions v ON v.view_id = h.view_id AND v.version_id = p.version_id
        ORDER BY ALL""",
        [[head[column] for head in heads] for column in ("view_id", "version_id", "activated_ms")],
    )
    copies = [(head, head["version_hash"], 0) for head in heads]
    by_id = {head["view_id"]: head for head in heads}
    copies += [(by_id[row["view_id"]], row["version_hash"], _TIED) for row in [*tied, *partners]]
    return _analysed(conn, copies, schemas, at)


def _analysed(
    conn: duckdb.DuckDBPyConnection,
    copies: list[tuple[dict[str, Any], str, int]],
    schemas: _Schemas,
    at: int,
) -> list[_Reader]:
    """A reader per dialect of each (head, version, floor): a version of the view `head` (its id,
    name and catalog at `at`), each use it finds matched at best `floor`; `schemas` caches the
    schemas of what they read. A few queries for them all: a question reads ~150 of them."""
    hashes = sorted({version for _, version, _ in copies})
    versions = {
        row["version_hash"]: row
        for row in query_rows(
            conn,
            """
            SELECT v.version_hash, v.default_catalog, v.default_namespace,
                   coalesce(s.columns, []) AS columns, v.timestamp_ms
            FROM versions v LEFT JOIN schemas s ON s.schema_hash = v.schema_hash
            WHERE v.version_hash IN (SELECT unnest(?1))""",
            [hashes],
        )
    }
    representations: dict[str, list[dict[str, Any]]] = {}
    for row in query_rows(
        conn,
        "SELECT version_hash, sql, dialect, lineage_key FROM representations "
        "WHERE version_hash IN (SELECT unnest(?1)) AND dialect IS NOT NULL AND sql IS NOT NULL "
        "AND lineage_key IS NOT NULL ORDER BY version_hash, ordinal",
        [hashes],
    ):
        representations.setdefault(row["version_hash"], []).append(row)
    references: dict[str, dict[str, TableKey]] = {}
    for row in query_rows(
        conn,
        "SELECT lineage_key, raw, catalog, namespace, name FROM table_references "
        "WHERE lineage_key IN (SELECT unnest(?1)) ORDER BY lineage_key, raw",
        [sorted({r["lineage_key"] for rows in representations.values() for r in rows})],
    ):
        references.setdefault(row["lineage_key"], {})[row["raw"]] = (
            row["catalog"],
            tuple(row["namespace"]),
            row["name"],
        )
    schemas.prefetch({key for keys in references.values() for key in keys.values()})
    readers = []
    for head, version_hash, floor in copies:
        if version_hash not in versions:
            continue
        v, name, view_id = versions[version_hash], list(head["name"]), head["view_id"]
        for representation in representations.get(version_hash, []):
            resolved = references.get(representation["lineage_key"], {})
            read = {key: schemas.at(key, at) for key in resolved.values()}
            request = LineageRequest(
                representation["sql"],
                representation["dialect"],
                v["default_catalog"],
                tuple(v["default_namespace"]),
                head["catalog"],
            )
            known = {key: columns for key, columns in read.items() if columns is not None}
            check_stopped()  # the analyses are Python: a question past its time stops between them
            try:
                lineage = ANALYSES.lineage(request, known, resolved)
            except AnalysisSkipped:  # (ahead of a question: the question works it out)
                continue
            stored = schema_columns(v["columns"])
            readers.append(
                _Reader(
                    view_id,
                    display_name(head["catalog"], name, view_id),
                    (head["catalog"], tuple(name[:-1]), name[-1]),
                    lineage,
                    tuple(column.lower() for column, _ in stored),
                    tuple(resolved.values()),
                    representation["dialect"] == "spark",
                    request,
                    known,
                    resolved,
                    tuple(_spark_type(kind) for _, kind in stored),
                    tuple(column for column, _ in stored),
                    floor,
                    _SHARED if head["shared"] else 0,
                    v["timestamp_ms"],
                )
            )
    return readers


def _schema_unknown(reader: _Reader, source: _Object, catalogs: frozenset[str]) -> bool:
    """Whether the schema of `source` is unknown to `reader` (or was on the way to it), or the
    analysis of its columns failed: either way, whether it uses a column cannot be told."""
    return (
        not source.schemas_known
        or _failed(reader.lineage)
        or any(_match(key, source.key, catalogs) is not None for key in reader.lineage.unknown_schemas)
    )


_REBINDS = (
    "Spark then reads `{}` as the output of that name before it (a lateral column alias): the view "
    "runs on, with other values, only if that output's type still fits its stored one, else it fails"
)
"""The reason of a use that a drop or rename leaves reading a lateral alias (`ColumnUse.rebinds`):
whether the view runs on is not told (the alias's type may not fit the stored one: a trial's
`id + 1 AS qty, qty * 2 AS q2` became a BIGINT its INT column refused), so it counts as failing."""
_SHIFTS = (
    "keeps running with other values: Spark reads the view's stored columns ({}) by position, and "
    "its `*` without the column still gives as many, so each from `{}` on holds the next one's values"
)
"""The reason of a Spark view's use, through `*` only, of a dropped column whose `*` still gives as
many columns as the view stores (one was added since): found by the twentieth new-user trial."""
_SHIFTED = "keeps running with other values: {} holds another column's values once the change is made"
"""The reason of a use of a view's stored column that a drop shifts (`_SHIFTS`)."""
_WRITTEN = "keeps running with other values: `to_json` writes the names of the fields it is given"
"""The reason of a use that only writes out the field names of a struct holding the field asked."""
_OPAQUE = (
    "may use it: the view reads fields of a value made of {} by name (`map_values(m).price`, "
    "`nick` of `SELECT owner.* ...`), which the analysis cannot map onto its fields"
)
"""The reason of a use of a column or field above the one asked, read opaquely (`ColumnUse.opaque`)."""


def _row(
    reader: _Reader, source: _Object, depth: int, column: str, kind: str, output: str | None, certainty: int
) -> dict[str, Any]:
    return {
        "view": reader.name,
        "view_id": reader.view_id,
        "depth": depth,
        "reads": source.name,
        "column": column,
        "kind": kind,
        "output": output,
        "via": [*source.via, f"{source.name}.{column}"],
        # A whole use (`fails`) can be told with every schema known; `unknown` is for want of one.
        "schemas_known": kind != "unknown" and source.schemas_known and not reader.lineage.unknown_schemas,
        "match": MATCHES[certainty],
        "unknown_schemas": [dotted([k[0], *k[1], k[2]]) for k in reader.lineage.unknown_schemas],
        "keeps_running": False,
        "reason": None,
    }


def _whole_use(
    reader: _Reader, source: _Object, depth: int, catalogs: frozenset[str], kind: str
) -> dict[str, Any] | None:
    """A use of `source` as a whole by a view that reads it (table-level lineage): `fails` when
    `source` fails to run; `unknown` when no use of the column was found but the schema of `source`
    (or one on the way to it) is unknown, so that an unqualified column or a `*` cannot be told apart:
    the view may use the column rather than surely not."""
    matches = [m for key in reader.reads if (m := reader.match(key, source.key, catalogs)) is not None]
    if not matches:
        return None
    column = ".".join(source.column)
    row = _row(reader, source, depth, column, kind, None, max(min(matches), source.certainty))
    if kind == "unknown":
        row["reason"] = _unknown_reason(reader, source, catalogs)
    return row


def _unknown_reason(reader: _Reader, source: _Object, catalogs: frozenset[str]) -> str:
    """Why whether `reader` uses the column cannot be told (`_schema_unknown`), in a sentence."""
    failed = [finding.message for finding in reader.lineage.findings if finding.code in ANALYSIS_FAILED]
    if failed:
        return f"the analysis of its columns failed: {failed[0]}"
    unknown = [key for key in reader.lineage.unknown_schemas if _match(key, source.key, catalogs) is not None]
    if unknown:
        catalog, namespace, name = unknown[0]
        return f"the schema of {dotted([catalog, *namespace, name])} at that time is not indexed"
    return f"it reads {source.name}, which may use {source.via[0] if source.via else 'the column'}"


def _whole(reader: _Reader, use: dict[str, Any], kind: str) -> _Object:
    """The question about `reader` as a whole, for the views that read it: with every schema known
    on the way to a view that `fails`, none on the way to one that may use the column (`unknown`)."""
    known, certainty = kind == "fails" and use["schemas_known"], MATCHES.index(use["match"])
    return _Object(
        reader.key, reader.name, ("*",), tuple(use["via"]), known, max(certainty, reader.onward), kind
    )


class _Schemas:
    """The schemas of the views and tables readers read, at any time, for one question: each view's
    versions with their schemas in one query, each table's schema at a time once (a question asks
    of each read at T and at its version's creation: ~4,000 small queries on a table 150 views
    read, most of the answer's time)."""

    def __init__(self, conn: duckdb.DuckDBPyConnection) -> None:
        self.conn = conn
        self._ids: dict[tuple[str, str | None, tuple[str, ...]], list[str]] = {}
        self._views: dict[str, list[dict[str, Any]]] = {}
        self._tables: dict[tuple[str, int], list[tuple[str, str]] | None] = {}
        self._single: dict[str, tuple[int | None, list[tuple[str, str]]] | None] = {}
        self._ends: dict[str, int | None] = {}

    def at(self, key: TableKey, at: int) -> list[tuple[str, str]] | None:
        """(name, type) of the view or table a reference names, as its schema was at `at`; None if
        unknown. A leading part the indexer read as a namespace level may be a catalog: the second
        try leaves it out."""
        for wanted_catalog, wanted in _names_tried(key):
            columns = self._columns_at(wanted_catalog, list(wanted), at)
            if columns is not None:
                return columns
        return None

    def prefetch(self, keys: set[TableKey]) -> None:
        """Loads what `at` asks of these references in a few queries, not a few each."""
        tried = list(dict.fromkeys(tried for key in keys for tried in _names_tried(key)))
        for kind in ("view", "table"):
            self._load_ids(
                kind, [(catalog, name) for catalog, name in tried if (kind, catalog, name) not in self._ids]
            )
        self._load_views(
            sorted({view for c, n in tried for view in self._ids[("view", c, n)]} - set(self._views))
        )
        self._load_tables(
            sorted({table for c, n in tried for table in self._ids[("table", c, n)]} - set(self._single))
        )

    def _columns_at(self, catalog: str | None, wanted: list[str], at: int) -> list[tuple[str, str]] | None:
        """The schema of the view, else the table, named `wanted` at `at`: a view's version current
        then (as `view_current_version` orders them), a table's file in force then."""
        for view in self._named("view", catalog, wanted):
            if view not in self._views:
                self._load_views([view])
            if (end := self._ends[view]) is not None and end <= at:
                continue  # dropped by then, or another took its place: no schema of it is read
            current = next((row for row in self._views[view] if row["timestamp_ms"] <= at), None)
            if current is not None and current["columns"] is not None:
                return schema_columns(current["columns"])
        for table in self._named("table", catalog, wanted):
            if table not in self._single:
                self._load_tables([table])
            only = self._single[table]
            if only is not None:  # one schema all along: there once a file is committed
                first_ms, columns = only
                if first_ms is not None and first_ms <= at:
                    return columns
                continue
            if (table, at) not in self._tables:
                rows = query_rows(
                    self.conn,
                    """
                    SELECT s.columns FROM table_file_as_of(?1, ?2) f
                    JOIN schemas s ON s.schema_hash = f.current_schema_hash WHERE f.commit_ms <= ?2""",
                    [table, at],
                )
                self._tables[(table, at)] = schema_columns(rows[0]["columns"]) if rows else None
            if self._tables[(table, at)] is not None:
                return self._tables[(table, at)]
        return None

    def _named(self, kind: str, catalog: str | None, name: list[str]) -> list[str]:
        """Views or tables (`kind`) under this name; a reference without a catalog matches any."""
        key = (kind, catalog, tuple(name))
        if key not in self._ids:
            self._load_ids(kind, [(catalog, tuple(name))])
        return self._ids[key]

    def _load_ids(self, kind: str, wanted: list[tuple[str | None, tuple[str, ...]]]) -> None:
        """The ids of the views or tables (`kind`) under each (catalog, name)."""
        for catalog, name in wanted:
            self._ids[(kind, catalog, name)] = []
        if not wanted:
            return
        for row in query_rows(
            self.conn,
            f"""
            SELECT DISTINCT w.position, n.{kind}_id AS id
            FROM (SELECT unnest(?1) AS name, unnest(?2) AS catalog, unnest(range(len(?1))) AS position) w
            JOIN {kind}_names n
              ON n.name = w.name AND (w.catalog IS NULL OR n.catalog IS NULL OR n.catalog = w.catalog)
            ORDER BY ALL""",
            [[list(name) for _, name in wanted], [catalog for catalog, _ in wanted]],
        ):
            catalog, name = wanted[row["position"]]
            self._ids[(kind, catalog, name)].append(row["id"])

    def _load_views(self, view_ids: list[str]) -> None:
        """Each view's activations, latest first as `view_current_version` takes them, with its
        version's schema (None when the version is not stored); and when it ended: dropped
        (`view_drop`), or another took its place (`replaced_views`)."""
        for view_id in view_ids:
            self._views[view_id], self._ends[view_id] = [], None
        if not view_ids:
            return
        for row in query_rows(
            self.conn,
            """
            SELECT r.view_id, a.timestamp_ms, s.columns
            FROM (SELECT unnest(?1) AS view_id) r, view_activations(r.view_id) a
            LEFT JOIN preferred_versions v ON v.view_id = a.view_id AND v.version_id = a.version_id
            LEFT JOIN schemas s ON s.schema_hash = v.schema_hash
            ORDER BY r.view_id, a.latest_first""",
            [view_ids],
        ):
            self._views[row.pop("view_id")].append(row)
        for row in query_rows(
            self.conn,
            """
            SELECT r.view_id, d.dropped_ms AS ended_ms
            FROM (SELECT unnest(?1) AS view_id) r, view_drop(r.view_id) d
            UNION ALL
            SELECT view_id, replaced_ms FROM replaced_views() WHERE view_id IN (SELECT unnest(?1))""",
            [view_ids],
        ):
            known = self._ends[row["view_id"]]
            self._ends[row["view_id"]] = row["ended_ms"] if known is None else min(known, row["ended_ms"])

    def _load_tables(self, table_ids: list[str]) -> None:
        """(its first commit, its schema) of each table whose files all hold one current schema
        (most tables, most of the time); None for the others."""
        for table_id in table_ids:
            self._single[table_id] = None
        if not table_ids:
            return
        for row in query_rows(
            self.conn,
            """
            SELECT f.table_id, min(f.commit_ms) AS first_ms, any_value(s.columns) AS columns
            FROM table_files f JOIN schemas s ON s.schema_hash = f.current_schema_hash
            WHERE f.table_id IN (SELECT unnest(?1))
            GROUP BY f.table_id HAVING count(DISTINCT f.current_schema_hash) = 1""",
            [table_ids],
        ):
            self._single[row["table_id"]] = (row["first_ms"], schema_columns(row["columns"]))


def _names_tried(key: TableKey) -> list[tuple[str | None, tuple[str, ...]]]:
    """(catalog, name) of the views or tables a reference may name: as resolved, and without its
    leading part when that part, read as a namespace level, may be a catalog."""
    catalog, namespace, name = key
    tries = [(catalog, (*namespace, name)), (None, (*namespace[1:], name))]
    return [(wanted_catalog, wanted) for wanted_catalog, wanted in tries if len(wanted) >= 2]


@functools.lru_cache(maxsize=2**16)  # a question asks it of every use of every reader, for each step
def _match(reference: TableKey, wanted: TableKey, catalogs: frozenset[str]) -> int | None:
    """How surely a reference names the object (an index into `MATCHES`), by `uses_as_of`'s rules;
    None when it cannot name it."""
    (catalog, namespace, name), (wanted_catalog, wanted_namespace, wanted_name) = reference, wanted
    if name != wanted_name:
        return None
    if namespace == wanted_namespace:
        if catalog is not None and catalog == wanted_catalog:
            return 0
        if catalog is None or wanted_catalog is None:
            return 1
        return 2 if catalog not in catalogs else None
    if namespace[1:] == wanted_namespace and len(namespace) == len(wanted_namespace) + 1:
        leading = namespace[0]
        return 3 if wanted_catalog in (None, leading) or leading not in catalogs else None
    return None


def _walk(
    readers: list[_Reader],
    start: _Object,
    catalogs: frozenset[str],
    change: str,
    going_stale: Callable[[_Reader, _Object], _Staleness | None] | None = None,
) -> tuple[list[dict[str, Any]], set[str], set[str], set[str], set[str]]:
    """Breadth first from the changed column: each use of it, then each use of the output columns it
    flows into. A view that uses a dropped or renamed column in any way fails as a whole, and so does
    every view that reads it, whichever columns; a retyped one fails every view reading one whose
    output carries the column (its stored schema goes stale). Every (view, column) is visited once,
    at its smallest depth. Also returns the Spark views a rename leaves working: they only project
    the column through `*`s, and Spark reads a view's columns by position (`_Reader.missing_outputs`);
    and the views whose stored schema a type change leaves stale: of each view reading the
    table, or a view output the column flows into, the outputs `going_stale` names (all it
    carries the column into, when it cannot tell), and of those the views only assumed stale: no
    output of theirs is stale but one whose type cannot be inferred; and the views a type change
    fails where they pass the column to an argument Spark takes only as an INT."""
    breaks, retyped = change in (DROP, RENAME), change == CHANGE_TYPE
    uses: list[dict[str, Any]] = []
    by_position: set[str] = set()
    stale: set[str] = set()
    surely_stale: set[str] = set()
    refused: set[str] = set()  # views passing the retyped column where Spark takes only an INT
    queue = deque([(start, 1)])
    visited: set[tuple[TableKey, tuple[str, ...]]] = set()
    # Each reader's uses by the name of the table they read: only those can match a source (`_match`).
    named: list[dict[str, list[ColumnUse]]] = [{} for _ in readers]
    named_reads = [{key[2] for key in reader.reads} for reader in readers]
    for position, reader in enumerate(readers):
        for use in reader.lineage.uses:
            named[position].setdefault(use.table[2], []).append(use)
    while queue:
        source, depth = queue.popleft()
        if (source.key, source.column) in visited:
            continue
        visited.add((source.key, source.column))
        for position, reader in enumerate(readers):
            check_stopped()  # each step may analyse a view again (`going_stale`)
            if source.whole is not None and source.key[2] in named_reads[position]:
                whole = _whole_use(reader, source, depth, catalogs, source.whole)
                if whole is not None:
                    # A use of a retyped column need not fail the view: one failing whole says so.
                    if not any(
                        u["view_id"] == reader.view_id
                        and u["reads"] == source.name
                        and (not retyped or source.whole == "unknown" or u["kind"] == source.whole)
                        for u in uses
                    ):
                        uses.append(whole)
                    queue.append((_whole(reader, whole, source.whole), depth + 1))
            if source.whole is not None:
                continue
            known = source.schemas_known and not reader.lineage.unknown_schemas
            found = len(uses)
            matched = [
                (use, max(match, source.certainty))
                for use in named[position].get(source.key[2], ())
                if (match := reader.match(use.table, source.key, catalogs)) is not None
                and _reads(use, source.column)
                and not reader.past_stored(use)
                and not (breaks and _whole_argument(use, source.column))
                and not (use.counted and _holds_whole(use, source.column))  # `size(items)`: no field
            ]
            # Spark reads a view's columns by position, and up-casts a struct field by field by
            # position: a rename breaks no use that does not name the column (`*`, the struct).
            if (
                change == RENAME
                and reader.spark
                and matched
                and all(use.starred or _holds_whole(use, source.column) for use, _ in matched)
            ):
                by_position.add(reader.name)
                continue
            # Spark reads a lateral alias of the name instead (said, counted as failing), or
            # `to_json` writes the field's new name (or none): that view keeps running, on other values.
            rebinding = breaks and bool(matched) and all(use.rebinds for use, _ in matched)
            written = (
                breaks
                and bool(matched)
                and all(use.names_written and len(use.path) < len(source.column) for use, _ in matched)
            )
            # Spark reads a view's stored columns by position: a `*` that still gives as many without
            # the dropped column runs on, each stored column from the first it gave on shifted.
            shifts = (
                _shifts(reader, [use for use, _ in matched])
                if change == DROP and not source.shifted
                else None
            )
            written = written or source.shifted or shifts is not None
            # Of a view reading the table itself, which outputs' types no longer fit (None: unknown).
            fitting = going_stale(reader, source) if going_stale is not None else None
            for use, certainty in matched:
                wanted, read = source.column, tuple(part.lower() for part in use.path)
                column = ".".join(read)
                output = reader.output_name(use.output) if use.output is not None else None
                goes_stale = (
                    retyped
                    and use.output is not None
                    and (fitting is None or use.output.lower() in fitting.stale)
                )
                if (
                    retyped
                    and use.int_argument
                    and len(read) == len(wanted)
                    and not _int_type(source.new_type)
                ):
                    refused.add(reader.name)
                if goes_stale:
                    stale.add(reader.name)
                    if fitting is not None and (use.output or "").lower() not in fitting.assumed:
                        surely_stale.add(reader.name)
                uses.append(
                    {
                        **_row(reader, source, depth, column, use.kind, output, certainty),
                        "via": [*source.via, f"{source.name}.{'.'.join(wanted)}"],
                        "schemas_known": known,
                        "keeps_running": written,
                        "reason": _REBINDS.format(use.path[0])
                        if rebinding
                        else _SHIFTED.format(f"{source.name}.{'.'.join(wanted)}")
                        if source.shifted
                        else _SHIFTS.format(", ".join(reader.spelled), reader.spelled[shifts])
                        if shifts is not None
                        else _WRITTEN
                        if written
                        else _OPAQUE.format(column)
                        if use.opaque and len(read) < len(wanted)
                        else None,
                    }
                )
                if written and not source.shifted:
                    continue
                if output is not None and (not retyped or goes_stale):  # an output of unchanged type
                    below = (output.lower(), *wanted[len(read) :])  # takes the question no further
                    via = (*source.via, f"{source.name}.{'.'.join(wanted)}")
                    onward = max(certainty, reader.onward)
                    # A view's output the column flows into takes the type inferred for it.
                    new_type = fitting.types.get(use.output.lower()) if fitting and use.output else None
                    queue.append(
                        (
                            _Object(
                                reader.key,
                                reader.name,
                                below,
                                via,
                                known,
                                onward,
                                new_type=new_type,
                                shifted=source.shifted,
                            ),
                            depth + 1,
                        )
                    )
            for position in range(shifts, len(reader.columns)) if shifts is not None else ():
                via = (*source.via, f"{source.name}.{'.'.join(source.column)}")
                shifted = (reader.spelled[position].lower(),)
                onward = max(min(certainty for _, certainty in matched), reader.onward)
                queue.append(
                    (_Object(reader.key, reader.name, shifted, via, known, onward, shifted=True), depth + 1)
                )
            # A dropped or renamed column fails the view; a retyped one carried into an output
            # leaves its stored schema stale, which engines refuse when any reader resolves it.
            if len(uses) > found and not written and (breaks or reader.name in stale | refused):
                queue.append((_whole(reader, uses[-1], "fails"), depth + 1))
            elif len(uses) == found and _schema_unknown(reader, source, catalogs):
                unresolved = _whole_use(reader, source, depth, catalogs, "unknown")
                if unresolved is not None:
                    uses.append(unresolved)
                    queue.append((_whole(reader, unresolved, "unknown"), depth + 1))
    order = {
        "projected": 0,
        "aggregate": 1,
        "window": 2,
        "filter": 3,
        "join-key": 4,
        "group-by": 5,
        "order-by": 6,
        "fails": 7,
        "unknown": 8,
    }
    unique: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in uses:  # a use found in a view's file in force and in a tied one: the surer match
        key = (row["view_id"], row["depth"], row["reads"], row["column"], row["kind"], row["output"])
        if key not in unique or MATCHES.index(row["match"]) < MATCHES.index(unique[key]["match"]):
            unique[key] = row
    ordered = sorted(
        unique.values(),
        key=lambda u: (
            u["depth"],
            u["view"],
            u["view_id"],
            u["column"],
            order.get(u["kind"], 9),
            u["output"] or "",
        ),
    )
    return ordered, by_position - {use["view"] for use in ordered}, stale, stale - surely_stale, refused


class _Staleness(NamedTuple):
    """Of a view's outputs (as the SQL names them, case-folded), those whose stored type a type
    change leaves stale, and those among them only assumed to be: their type cannot be inferred."""

    stale: frozenset[str]
    assumed: frozenset[str]
    types: dict[str, str | None]
    """Each output's type with the change, as inferred (None: not inferred)."""


def _outputs_going_stale(
    reader: _Reader, source: _Object, catalogs: frozenset[str], change: Change
) -> _Staleness | None:
    """The outputs of a view reading `source` (the table, or a view an output of which the column
    flows into, as that view will type it once re-created) whose type, with the column retyped, may
    no longer up-cast to the view's stored type; None when the analysis fails or the type `source`
    takes was not inferred. An output stays fitting only if its type up-casts to the stored one and
    either it is the column as it is, or sqlglot infers the same type for it before and after the
    change: an inferred type that changes may be off by the engine's own rules, so it counts as
    stale, as does (assumed) a type that cannot be inferred. A view's output the column flows into
    takes the type inferred for it (`_Object.new_type`)."""
    new_type = source.new_type
    if change.target is None or new_type is None:
        return None
    retyped = {
        key: [(name, _retyped(kind, source.column, new_type) if name.lower() == source.column[0] else kind)
              for name, kind in columns]
        if _match(key, source.key, catalogs) is not None
        else columns
        for key, columns in reader.schemas.items()
    }  # fmt: skip
    before = ANALYSES.lineage(reader.request, reader.schemas, reader.resolved, typed=True)
    after = ANALYSES.lineage(reader.request, retyped, reader.resolved, typed=True)
    if _failed(before) or _failed(after):
        return None
    stored = dict(enumerate(reader.stored_types))  # by position, as engines line them up
    old = dict(enumerate(before.output_types))
    outputs = list(zip(after.outputs, after.output_types, after.direct_outputs, strict=True))
    return _Staleness(
        frozenset(
            output.lower()
            for position, (output, kind, direct) in enumerate(outputs)
            if not (
                _up_casts(kind, stored.get(position), reader.spark) and (direct or old.get(position) == kind)
            )
        ),
        frozenset(output.lower() for output, kind, _ in outputs if kind is None),
        {output.lower(): kind for output, kind, _ in outputs},
    )


def _int_type(kind: str | None) -> bool:
    """Whether a type (Spark's spelling) is one Spark takes where only an INT goes; unknown: yes."""
    return kind is None or kind.upper() in ("INT", "SMALLINT", "TINYINT")


def _retyped(kind: str, path: tuple[str, ...], new_type: str) -> str:
    """A column's Spark type with the field at `path` (below the column; `element`, `key` and
    `value` step into arrays and maps) of `new_type`."""
    if len(path) == 1:
        return new_type
    built = exp.DataType.build(kind, dialect="spark")
    node = built
    for step in path[1:]:
        child = _field_type(node, step)
        if child is None:
            return kind  # not a field of it: the analysis sees the column as it is
        node = child
    node.replace(exp.DataType.build(new_type, dialect="spark"))
    return built.sql("spark")


def _field_type(kind: exp.DataType, step: str) -> exp.DataType | None:
    """The type of a struct's field `step`, an array's `element`, a map's `key` or `value`."""
    members = kind.expressions
    if kind.is_type(exp.DataType.Type.STRUCT):
        for member in members:
            if isinstance(member, exp.ColumnDef) and member.name.lower() == step.lower():
                found = member.args.get("kind")
                return found if isinstance(found, exp.DataType) else None
        return None
    wanted = {"element": 0} if kind.is_type(exp.DataType.Type.ARRAY) else {"key": 0, "value": 1}
    at = wanted.get(step.lower()) if kind.is_type(exp.DataType.Type.ARRAY, exp.DataType.Type.MAP) else None
    return members[at] if at is not None and at < len(members) else None


_WIDER = {
    "TINYINT": ("SMALLINT", "INT", "BIGINT"),
    "SMALLINT": ("INT", "BIGINT"),
    "INT": ("BIGINT",),
    "FLOAT": ("DOUBLE",),
}
"""The wider types a narrower one up-casts to without loss, as Spark's `UpCast` and Trino's view
coercion take them."""


def _up_casts(kind: str | None, stored: str | None, by_position: bool = False) -> bool:
    """Whether a query's output of type `kind` fits a view's stored column of type `stored` (both
    in Spark's spelling); unknown is no. Spark (`by_position`) up-casts a struct field by field in
    order, whatever the fields' names (a renamed nested field leaves the view working)."""
    if kind is None or stored is None:
        return False
    if kind == stored or stored in _WIDER.get(kind, ()):
        return True
    if by_position and "STRUCT<" in kind and _unnamed(kind) == _unnamed(stored):
        return True
    narrow, wide = SPARK_DECIMAL.match(kind), SPARK_DECIMAL.match(stored)
    if narrow and wide:
        (p, s), (wide_p, wide_s) = map(int, narrow.groups()), map(int, wide.groups())
        return s <= wide_s and p - s <= wide_p - wide_s
    return False


def _unnamed(kind: str) -> str:
    """A Spark type with its struct fields named by position: what Spark's up-cast compares."""
    node = exp.DataType.build(kind, dialect="spark")
    for definition in node.find_all(exp.ColumnDef):
        position = definition.parent.expressions.index(definition) if definition.parent else 0
        definition.set("this", exp.to_identifier(f"_{position}"))
    return node.sql(dialect="spark")


def _column_type(fields: dict[tuple[str, ...], str], path: tuple[str, ...]) -> str | None:
    """A column's type in the table's schema, in Spark's spelling; None if the schema lacks it."""
    kind = fields.get(tuple(part.lower() for part in path))
    return None if kind is None else _spark_type(iceberg_type_sql(kind))


@functools.lru_cache(maxsize=2**12)  # sqlglot's parse of a type: the same few types, again and again
def _spark_type(kind: str) -> str | None:
    """A Spark type string in sqlglot's canonical spelling (`bigint` -> `BIGINT`, struct fields
    quoted only where they must be, as inferred types spell them); None if unparsable."""
    try:
        return spark_type(exp.DataType.build(kind, dialect="spark"))
    except SqlglotError:
        return None


def _holds_whole(use: ColumnUse, column: tuple[str, ...]) -> bool:
    """Whether `use` reads the struct, list or map holding the nested field `column` as a whole
    value: not its fields by name (`ColumnUse.opaque`), nor their names (`names_written`)."""
    return len(use.path) < len(column) and not use.opaque and not use.names_written


def _whole_argument(use: ColumnUse, column: tuple[str, ...]) -> bool:
    """Whether `use` passes the holder of the nested field `column` whole to what does not output
    it (a LATERAL VIEW's generator: `posexplode(items)` when only `pos` and another field are read):
    dropping or renaming the field leaves it working (the seventeenth new-user trial, on Spark)."""
    return use.kind == OTHER and _holds_whole(use, column)


def _reads(use: ColumnUse, column: tuple[str, ...]) -> bool:
    """Whether `use` reads `column` (a struct field reads its struct and each field below it)."""
    read = tuple(part.lower() for part in use.path)
    within = read[:-1] if read[-1:] == ("*",) else read  # `s.*` reads every field of s
    return within[: len(column)] == column or column[: len(within)] == within
