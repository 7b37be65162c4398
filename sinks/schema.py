"""The store's schema: versioned migrations (`migrations/NNNN_name.sql`) recorded in `_migrations`,
and the query macros of `viewlineage.queries`, installed by a writer that brings other ones.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import resources

import duckdb

MARKED_VIEW = "preferred_versions"
"""The view whose comment names the queries installed. Every release's queries create it (CREATE
OR REPLACE), which clears its comment: a writer that installs others, an older release included,
leaves no comment this one would take for its own."""
REINDEX_MARKER = "-- requires: reindex"
"""In a migration: rows it adds can only be derived from the stored documents (`reindex`)."""


@dataclass(frozen=True, slots=True)
class Migration:
    id: int
    name: str
    sql: str

    @property
    def requires_reindex(self) -> bool:
        return REINDEX_MARKER in self.sql.splitlines()


def migrations() -> list[Migration]:
    found = []
    for entry in resources.files("viewlineage.sinks").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number = entry.name.partition("_")[0]
            found.append(Migration(int(number), entry.name.removesuffix(".sql"), entry.read_text()))
    return sorted(found, key=lambda m: m.id)


SCHEMA_VERSION = max(m.id for m in migrations())
OPEN_MS = 2**63 - 1
"""The open end of a span (`view_spans.until_ms`): later than any time a query asks about
(BIGINT's largest)."""
LATEST_MS = 2**62
"""The time queries ask at for "the latest state": an activation dated after it (a timestamp far
out of range) holds from it, so that the latest state shows it rather than no version."""


def applied(conn: duckdb.DuckDBPyConnection) -> list[int]:
    exists = conn.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = '_migrations'"
    ).fetchone()
    if not exists or not exists[0]:
        return []
    return [row[0] for row in conn.execute("SELECT id FROM _migrations ORDER BY id").fetchall()]


def migrate(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply the migrations this store lacks, in the caller's transaction (see `Store`). Returns
    their names. One that requires a reindex of a store holding files is recorded in
    `_reindex_needed`."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS _reindex_needed (migration VARCHAR PRIMARY KEY)")
    done = set(applied(conn))
    pending = [migration for migration in migrations() if migration.id not in done]
    for migration in pending:
        conn.execute(migration.sql)
        conn.execute("INSERT INTO _migrations (id, name) VALUES (?, ?)", [migration.id, migration.name])
        if migration.requires_reindex:
            conn.execute(
                "INSERT OR IGNORE INTO _reindex_needed SELECT ? WHERE EXISTS (SELECT 1 FROM files)",
                [migration.name],
            )
    return [migration.name for migration in pending]


def reindex_needed(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Migrations applied to a store that held files, whose rows only `reindex` derives."""
    return [row[0] for row in conn.execute("SELECT migration FROM _reindex_needed ORDER BY 1").fetchall()]


@functools.cache
def _query_texts() -> tuple[str, ...]:
    folder = resources.files("viewlineage.queries").joinpath("sql")
    return tuple(
        entry.read_text()
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".sql")
    )


@functools.cache
def queries_marker() -> str:
    """The comment that names this release's queries on `MARKED_VIEW`."""
    digest = hashlib.blake2b("\0".join(_query_texts()).encode(), digest_size=16)
    return f"viewlineage queries {digest.hexdigest()}"


def installed_queries(conn: duckdb.DuckDBPyConnection) -> str | None:
    """The marker of the queries the store holds (None: none, or another's that left no marker)."""
    found = conn.execute(
        "SELECT comment FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND view_name = ?",
        [MARKED_VIEW],
    ).fetchall()
    return found[0][0] if found else None


def install_queries(conn: duckdb.DuckDBPyConnection, reinstall: bool = False) -> None:
    """Create the query views and macros from `queries/sql/*.sql`, in file-name order, unless the
    store holds these very ones (and no `reinstall`: a migration that changed a table leaves views
    on it unusable until they are created again). Installing them cost ~50-90 ms an open."""
    texts, marker = _query_texts(), queries_marker()
    if installed_queries(conn) == marker and not reinstall:
        return
    for text in texts:
        conn.execute(text)
    conn.execute(f"COMMENT ON VIEW {MARKED_VIEW} IS '{marker}'")
