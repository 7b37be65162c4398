"""Dialect names as writers spell them, mapped to sqlglot dialects.

Names are trimmed and case-folded, then looked up in `DIALECT_ALIASES`; a name sqlglot itself knows
is accepted as is. Anything else is unknown: its representation gets `unknown-dialect`, no lineage.
"""

from __future__ import annotations

import functools

DIALECT_ALIASES: dict[str, str] = {
    "spark-sql": "spark",
    "sparksql": "spark",
    "spark_sql": "spark",
    "spark3": "spark",
    "pyspark": "spark",
    "databricks-sql": "databricks",
    "trino-sql": "trino",
    "starburst": "trino",
    "presto-sql": "presto",
    "prestodb": "presto",
    "prestosql": "trino",
    "hive-ql": "hive",
    "hiveql": "hive",
    "impala": "hive",
    "postgresql": "postgres",
    "pg": "postgres",
    "bq": "bigquery",
    "google-bigquery": "bigquery",
    "mssql": "tsql",
    "sqlserver": "tsql",
    "sql-server": "tsql",
    "dremio-sql": "dremio",
    "flink": "hive",
    "flink-sql": "hive",
    "snowflake-sql": "snowflake",
    "redshift-sql": "redshift",
}
"""Writer spellings seen in the wild -> sqlglot dialect. Flink SQL has no sqlglot dialect; its
query syntax for table references is Hive's (backquoted, case-insensitive), which is all lineage needs."""

CASE_INSENSITIVE = frozenset(
    {
        "spark",
        "spark2",
        "databricks",
        "hive",
        "trino",
        "presto",
        "athena",
        "duckdb",
        "mysql",
        "doris",
        "starrocks",
        "dremio",
        "drill",
        "clickhouse",
        "sqlite",
        "tsql",
        "bigquery",
        "postgres",
        "redshift",
        "snowflake",
        "oracle",
        "teradata",
        "materialize",
        "risingwave",
        "exasol",
    }
)
"""Dialects whose catalog/schema/table names compare case-insensitively (unquoted identifiers
fold). Lower-casing is the canonical form: Iceberg catalogs store these names lower-case."""


@functools.lru_cache(maxsize=4096)
def canonical_dialect(name: str) -> str | None:
    """The sqlglot dialect for a writer's dialect name, or None when unknown. Resolved once per
    process and name: sqlglot looks an unknown name up in its plugins' entry points (~3.6 ms).

    >>> canonical_dialect(" Spark-SQL "), canonical_dialect("trino"), canonical_dialect("cobol")
    ('spark', 'trino', None)
    """
    folded = name.strip().lower()
    if not folded:
        return None
    folded = DIALECT_ALIASES.get(folded, folded)
    if folded.split(",", 1)[0].strip() not in _dialect_names():
        return None
    # Imported here: settings validate dialect names, and a query command, which loads settings
    # but analyses no SQL, would otherwise spend ~90 ms loading sqlglot.
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise(folded)
    except ValueError:
        return None
    return folded


@functools.cache
def _dialect_names() -> frozenset[str]:
    """The dialects sqlglot has, its own and its plugins' (entry points), read once: it looks an
    unknown name up among the plugins each time it is asked (~3.5 ms), so a file naming 20,000
    dialects (the seventeenth adversarial trial) held a follower for minutes."""
    from importlib.metadata import entry_points

    from sqlglot.dialects.dialect import PLUGIN_GROUP_NAME, Dialect, Dialects

    plugins = {entry.name for entry in entry_points(group=PLUGIN_GROUP_NAME)}
    return frozenset({*(known.value for known in Dialects), *Dialect._classes, *plugins, ""})


@functools.lru_cache(maxsize=4096)
def unknown_dialect_hint(name: str) -> str:
    """sqlglot's own message for an unknown dialect, with its "Did you mean" suggestion."""
    from sqlglot.helper import suggest_closest_match_and_fail

    try:
        suggest_closest_match_and_fail("dialect", name.strip().lower(), sorted(_dialect_names() - {""}))
    except ValueError as exc:
        return str(exc)
    return f"Unknown dialect {name!r}"


_TEMPORAL_SYNONYMS = {"SYSTEM_VERSION": "VERSION", "SYSTEM_TIME": "TIMESTAMP"}
SPARK_FAMILY = frozenset({"spark", "spark2", "databricks", "hive"})
"""Dialects of Spark's SQL (and Hive's, which it grew from): time travel's synonyms, a generator's
default column names (`col`, `key` and `value`)."""
LATERAL_ALIAS_DIALECTS = frozenset({"spark", "databricks"})
"""Dialects whose engines resolve a name an earlier output of the SELECT list has (Spark 3.4+'s
lateral column aliases): not Hive's nor Spark 2's."""


def sqlglot_spelling(sql: str, dialect: str) -> str:
    """`sql` with the spellings its dialect accepts and sqlglot does not parse replaced by ones it
    does: Spark's time travel `[FOR] SYSTEM_VERSION AS OF` and `[FOR] SYSTEM_TIME AS OF` (synonyms
    of `VERSION AS OF` and `TIMESTAMP AS OF`, SPARK-37219), and the standard's queries `TABLE t`
    (`SELECT * FROM t`) and `VALUES (...)` (a query of its rows). Matched on tokens, so strings,
    comments and quoted names that hold those words are kept.

    >>> sqlglot_spelling("SELECT 'system_time as of' FROM t FOR SYSTEM_TIME AS OF '2026-01-01'", "spark")
    "SELECT 'system_time as of' FROM t FOR TIMESTAMP AS OF '2026-01-01'"
    >>> sqlglot_spelling("TABLE db.t", "spark"), sqlglot_spelling("VALUES (1, 'a');", "trino")
    ('SELECT * FROM db.t', "SELECT * FROM (VALUES (1, 'a'))")
    """
    lowered = sql.lower()
    temporal = dialect in SPARK_FAMILY and "system_" in lowered
    if not temporal and not lowered.lstrip().startswith(("table", "values")):
        return sql
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import TokenError

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    except TokenError:
        return sql  # the parser reports it
    follows_table = {TokenType.FOR, TokenType.VAR, TokenType.IDENTIFIER}  # not `SELECT system_time AS of`
    spans = [
        (token.start, token.end + 1, _TEMPORAL_SYNONYMS[token.text.upper()])
        for before, token, after, then in zip(tokens, tokens[1:], tokens[2:], tokens[3:], strict=False)
        if before.token_type in follows_table
        and token.token_type == TokenType.VAR
        and token.text.upper() in _TEMPORAL_SYNONYMS
        and after.text.upper() == "AS"
        and then.text.upper() == "OF"
    ]
    if tokens and tokens[0].token_type == TokenType.TABLE:
        spans.insert(0, (tokens[0].start, tokens[0].end + 1, "SELECT * FROM"))
    elif tokens and tokens[0].token_type == TokenType.VALUES:
        last = tokens[-2] if len(tokens) > 1 and tokens[-1].token_type == TokenType.SEMICOLON else tokens[-1]
        spans = [(tokens[0].start, tokens[0].start, "SELECT * FROM ("), *spans, (last.end + 1, len(sql), ")")]
    for start, end, synonym in reversed(spans):
        sql = sql[:start] + synonym + sql[end:]
    return sql
