"""Point-in-time and lineage answers on the committed real-writer warehouse (Spark 3.5 + Iceberg 1.10).

Times are the scenario's step completion times from `data/sample/steps.json`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.rows import Batch, Removal
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries import api, graph, impact
from viewlineage.queries import changes as changes_module
from viewlineage.queries.cli import cli
from viewlineage.queries.names import version_copy
from viewlineage.queries.search import search
from viewlineage.sinks.readers import open_reader
from viewlineage.sinks.store import Store

from .conftest import settings_for
from .data.restore_mtimes import SAMPLE
from .generate import generate
from .metadata_files import Table, View, schema_of, write
from .realwriter.scenario_checks import CHECKS, Check, load_steps

STEPS = load_steps(SAMPLE)
EVENT_AGG = "d9f43627-b716-4982-b052-9e38d3e11a0b"
BIG_DAYS_OLD = "4314fa7c-bbf3-4c33-9cd2-a483e994ddf4"
BIG_DAYS_NEW = "621f9620-d632-4552-aa8d-b485775cc8b8"
CUSTOMER_REVENUE = "9af11850-f036-44e4-b5ae-7d333009536e"


@pytest.fixture
def conn(sample_store: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    with open_reader(sample_store) as connection:
        yield connection


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_scenario(conn: duckdb.DuckDBPyConnection, check: Check) -> None:
    check(conn, STEPS)


def test_sample_uuids_are_the_ones_spark_wrote(conn: duckdb.DuckDBPyConnection) -> None:
    assert [api.show(conn, "prod.db.big_days", STEPS[step])["view_id"] for step in (27, 34)] == [
        BIG_DAYS_OLD,
        BIG_DAYS_NEW,
    ]
    assert api.resolve_view(conn, "prod.db.event_agg").view_id == EVENT_AGG
    assert api.resolve_view(conn, "customer_revenue").view_id == CUSTOMER_REVENUE


def test_unknown_and_ambiguous_names(conn: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UsageError, match="no view 'nope'"):
        api.resolve_view(conn, "nope")
    assert api.resolve_view(conn, "event_agg").view_id == EVENT_AGG


def test_time_parsing() -> None:
    assert api.parse_time("2026-11-21T23:17:26.5") == 1795303046500
    assert api.parse_time("2026-11-21T23:17:26.5Z") == 1795303046500
    assert api.parse_time("2026-11-21t23:17:26.5z") == 1795303046500  # RFC 3339 (the fourth new-user trial)
    assert api.parse_time("2026-11-22T00:17:26.5+01:00") == 1795303046500
    assert api.iso(1795303046500) == "2026-11-21T23:17:26.500Z"
    with pytest.raises(UsageError):
        api.parse_time("yesterday")


def test_epoch_numbers_say_their_unit() -> None:
    """Epoch seconds were read as milliseconds (1970) and small numbers refused: a bare number is
    epoch ms from 10^11 on, smaller ones are refused with a hint, and units say which."""
    assert [api.parse_time(t) for t in ("1795607008s", "1795607008000ms", "1795607008000000us")] == [
        1795607008000
    ] * 3
    assert api.parse_time("100000000000") == 10**11
    with pytest.raises(
        UsageError, match=r"'1795607008': a bare number is epoch milliseconds, from 10\^11 on; "
    ):
        api.parse_time("1795607008")
    with pytest.raises(UsageError, match=r"give its unit \(2000s for seconds"):
        api.parse_time("2000")
    with pytest.raises(UsageError, match="time out of range"):
        api.parse_time("99999999999999999ms")


def test_times_past_year_9999_show_as_raw_numbers(tmp_path: Path) -> None:
    """An activation in microseconds written as milliseconds (year 58860) indexed fine, then
    `history` and `show` crashed (`year 58860 is out of range`): now its ISO-8601 form is null, the
    raw number stands, and the finding `timestamp-out-of-range` flags it."""
    root = tmp_path / "warehouse"
    far = 1795303046500 * 1000
    View(root, "db", "far", "d8000000-0000-4000-8000-000000000001").commit(far, "SELECT 1 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        shown = api.show(conn, "db.far")
        assert (shown["activated_ms"], shown["activated_at"]) == (far, None)
        assert [
            (e["activated_ms"], e["activated_at"]) for e in api.history(conn, "db.far")["activations"]
        ] == [(far, None)]
        codes = [f["code"] for f in api.findings(conn, view="db.far")]
    assert "timestamp-out-of-range" in codes
    assert "future-activation" in codes
    result = CliRunner().invoke(cli, ["--db", str(db), "history", "db.far"])
    assert result.exit_code == 0, result.output
    assert (api.iso(2**63 - 1), api.iso(-(2**63)), api.iso(253402300799999)) == (
        None,
        None,
        "9999-12-31T23:59:59.999Z",
    )


def test_a_name_nothing_has_or_reads_is_an_error_with_candidates(conn: duckdb.DuckDBPyConnection) -> None:
    """`uses prod.db.evnts` answered an empty list while `impact` refused: one rule now, with the
    closest stored names."""
    with pytest.raises(
        UsageError, match=r"no table or view 'prod.db.evnts' in the store.*did you mean prod.db.events"
    ):
        api.uses(conn, "prod.db.evnts")
    with pytest.raises(UsageError, match=r"no view 'event_ag' in the store; did you mean "):
        api.resolve_view(conn, "event_ag")


def test_cli_json_and_text(sample_store: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "--db",
            str(sample_store),
            "show",
            "prod.db.big_days",
            "--as-of",
            str(STEPS[27]),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["view_id"], document["activated_source"]) == (BIG_DAYS_OLD, "version-log")
    text = runner.invoke(cli, ["--db", str(sample_store), "uses", "prod.db.events", "--transitive"])
    assert text.exit_code == 0, text.output
    assert "prod.acme.finance.revenue_by_region > prod.db.event_agg" in text.output
    missing = runner.invoke(cli, ["--db", str(sample_store), "show", "nope"])
    assert (missing.exit_code, missing.output.strip()) == (2, "error: no view 'nope' in the store")


def test_cli_history_and_deps_at_several_times(sample_store: Path) -> None:
    def run(*args: str) -> str:
        result = CliRunner().invoke(cli, ["--db", str(sample_store), *args])
        assert result.exit_code == 0, result.output
        return result.output

    history = json.loads(run("history", "prod.db.event_agg", "--format", "json"))
    assert [a["version_id"] for a in history["activations"]] == list(range(1, 14))
    text = run("history", "prod.db.event_agg")
    assert "  version_id: 13\n" in text
    assert "    | +WHERE kind <> 'heartbeat'\n" in text
    expected_depth_2 = {
        16: ["prod.db.events"],
        20: ["prod.db.events", "prod.sales.orders"],
        22: ["prod.db.events"],
        30: ["prod.db.events", "prod.sales.customers", "prod.sales.orders"],
    }
    for step, tables in expected_depth_2.items():
        deps = json.loads(
            run(
                "deps",
                "prod.db.big_days",
                "--as-of",
                api.iso(STEPS[step]) or "",
                "--transitive",
                "--format",
                "json",
            )
        )
        assert deps["view_id"] == BIG_DAYS_OLD
        assert [r["table"] for r in deps["reads"]] == ["prod.db.event_agg", *tables], step
        assert {tuple(r["via"]) for r in deps["reads"][1:]} == {("prod.db.big_days", "prod.db.event_agg")}
    # After the re-create, the name answers with the new view; its text table shows the path.
    text = run("deps", "big_days", "--as-of", str(STEPS[34]), "--transitive")
    assert "view_id: 621f9620-d632-4552-aa8d-b485775cc8b8\n" in text
    assert "prod.sales.orders  2      prod.db.big_days > prod.db.event_agg" in text


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (SELECT 1) TO '/tmp/viewlineage-escape.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SET enable_external_access = true",
        "INSERT INTO quarantine VALUES ('x', 'r', 'm', 1, 1, now())",
    ],
)
def test_sql_is_read_only_and_sandboxed(sample_store: Path, statement: str) -> None:
    result = CliRunner().invoke(cli, ["--db", str(sample_store), "sql", statement])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: SQL failed:")
    assert not Path("/tmp/viewlineage-escape.csv").exists()


def test_sql_answers_queries(sample_store: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "--db",
            str(sample_store),
            "sql",
            "SELECT count(*) AS n FROM views_as_of(9e15::BIGINT)",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"n": 6}]


def test_per_view_lookups_agree_with_the_all_views_answers(
    conn: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    # `show` asks about one view through its indexes; `views_as_of` and lineage answer for every
    # view at once with aggregates and the spans the store keeps. At every time something changed
    # (and just before), all agree.
    generated = tmp_path / "warehouse"
    written = generate(generated, views=4, commits=8, seed=4, namespaces=2)
    # Two by two, files share a commit time (as in object stores' whole seconds): ties must break
    # the same way everywhere (higher sequence number, then greater location).
    for index, path in enumerate(sorted(written.files)):
        tied = (2_000_000_000 + index // 2) * 10**9
        os.utime(path, ns=(tied, tied))
    index_locations([str(generated)], settings_for(tmp_path / "generated.duckdb", f"{generated}=prod"))
    with open_reader(tmp_path / "generated.duckdb") as other:
        assert _compare_lookups(other) == (4, 4 * 8)
    assert _compare_lookups(conn) == (7, 21)


def _compare_lookups(store: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(views, distinct activation times) compared."""
    changes = "SELECT commit_ms FROM view_files UNION SELECT timestamp_ms FROM activations"
    times = {t + d for (t,) in store.execute(changes).fetchall() for d in (-1, 0)} | {api.FOREVER_MS}
    views = [v for (v,) in store.execute("SELECT DISTINCT view_id FROM view_names").fetchall()]
    for at in sorted(times):
        files = dict(store.execute("SELECT view_id, location FROM view_files_as_of(?)", [at]).fetchall())
        spans = "SELECT view_id, location FROM view_spans WHERE from_ms <= ?1 AND ?1 < until_ms"
        assert dict(store.execute(spans, [at]).fetchall()) == files
        current = {
            v: (version, since)
            for v, version, since in store.execute("SELECT * FROM current_versions(?)", [at]).fetchall()
        }
        for view in views:
            one_file = store.execute("SELECT location FROM view_file_as_of(?, ?)", [view, at]).fetchall()
            one_version = store.execute(
                "SELECT version_id, activated_ms FROM view_current_version(?, ?)", [view, at]
            ).fetchall()
            assert one_file == [(files[view],)]
            assert one_version == ([current[view]] if view in current else [])
            # One view's whole state at T from its spans, as `show` reads it.
            state = store.execute(
                """
                SELECT location, active_version_id, activated_ms, version_hash, dropped_location, dropped_ms
                FROM view_at(?, ?)""",
                [view, at],
            ).fetchall()
            version, since = current.get(view, (None, None))
            copy = version_copy(store, view, version) if version is not None else None
            dropped = store.execute("SELECT location, dropped_ms FROM view_drop(?)", [view]).fetchall()
            assert state == [
                (
                    files[view],
                    version,
                    since,
                    copy and copy["version_hash"],
                    *(dropped[0] if dropped else (None, None)),
                )
            ]
    activated = store.execute("SELECT count(DISTINCT timestamp_ms) FROM activations").fetchone()
    return len(views), activated[0] if activated else 0


def test_under_a_version_conflict_lineage_follows_the_preferred_copy(tmp_path: Path) -> None:
    """Two files give version 1 of one view different SQL: the copy in the file with the higher
    sequence number counts, for `uses` and `deps` alike."""
    root = tmp_path / "warehouse"
    uuid = "d4000000-0000-4000-8000-000000000001"
    View(root, "db", "v", uuid).commit(1000, "SELECT * FROM db.a")
    View(root, "db", "v", uuid, files=1).commit(2000, "SELECT * FROM db.b")  # version 1 again
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        assert conn.execute("SELECT count(*) FROM preferred_copies").fetchone() == (1,)
        assert [v["view"] for v in api.uses(conn, "prod.db.b", 3000)["views"]] == ["prod.db.v"]
        assert api.uses(conn, "prod.db.a", 3000)["views"] == []
        assert [r["table"] for r in api.deps(conn, "prod.db.v", 3000)["reads"]] == ["prod.db.b"]


def test_uses_matches_references_by_catalog(tmp_path: Path) -> None:
    """A reference naming the table's catalog matches exactly. One naming none, in a view with no
    catalog and no default catalog, may read any, and says so (`catalog_unknown`, `match`), down to
    the views above it; one naming a catalog no stored view or table is in (here: any, there being
    no catalog map) may be an engine's own name for it (`other-catalog`)."""
    root = tmp_path / "warehouse"
    explicit = View(root, "db", "explicit", "d5000000-0000-4000-8000-000000000001")
    explicit.commit(1000, "SELECT * FROM prod.db.t", **{"default-catalog": "prod"})
    elsewhere = View(root, "db", "elsewhere", "d5000000-0000-4000-8000-000000000002")
    elsewhere.commit(1000, "SELECT * FROM other.db.t", **{"default-catalog": "other"})
    View(root, "db", "bare", "d5000000-0000-4000-8000-000000000003").commit(1000, "SELECT * FROM db.t")
    View(root, "db", "above", "d5000000-0000-4000-8000-000000000004").commit(1000, "SELECT * FROM db.bare")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))  # no catalog map: the views have no catalog

    def readers(table: str) -> tuple[list[tuple[str, int, bool, str]], int]:
        found = api.uses(conn, table, 2000, transitive=True)
        views = [(v["view"], v["depth"], v["catalog_unknown"], v["match"]) for v in found["views"]]
        return views, found["uncertain"]

    with open_reader(db) as conn:
        assert readers("prod.db.t") == (
            [
                ("db.bare", 1, True, "namespace-and-name"),
                ("db.elsewhere", 1, False, "other-catalog"),
                ("db.explicit", 1, False, "exact"),
                ("db.above", 2, True, "namespace-and-name"),
            ],
            3,
        )
        assert readers("db.t") == (
            [
                ("db.bare", 1, True, "namespace-and-name"),
                ("db.elsewhere", 1, False, "namespace-and-name"),
                ("db.explicit", 1, False, "namespace-and-name"),
                ("db.above", 2, True, "namespace-and-name"),
            ],
            4,
        )


def test_uses_and_impact_list_every_view_that_could_read_the_table(tmp_path: Path) -> None:
    """Indexed without --catalog-map, a Spark view (default catalog spark_catalog) reading
    `lake.crm.customers`, where `lake` is a catalog the indexer cannot know, and the table's own
    metadata under crm/customers/: `uses` and `impact` once answered "no view". Now the view is
    listed as matched uncertainly (`leading-part`), indexing records `catalog-ambiguous`, and a
    view whose SQL does not parse is listed as of unknown lineage."""
    root = tmp_path / "warehouse"
    customers = Table(root, "crm", "customers", "d7000000-0000-4000-8000-0000000000aa")
    customers.schema = schema_of(("id", "long"), ("tier", "string"))
    customers.commit(900, snapshot_id=1)
    View(root, "crm", "gold", "d7000000-0000-4000-8000-000000000001").commit(
        1000,
        "SELECT id, tier FROM lake.crm.customers WHERE tier = 'gold'",
        **{"default-catalog": "spark_catalog"},
    )
    View(root, "crm", "broken", "d7000000-0000-4000-8000-000000000002").commit(1000, "SELECT FROM WHERE")
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(root)], settings_for(db))
    assert stats.findings["catalog-ambiguous"] == 1
    with open_reader(db) as conn:
        found = api.uses(conn, "crm.customers", 2000)
        assert [(v["view"], v["match"]) for v in found["views"]] == [("crm.gold", "leading-part")]
        assert found["uncertain"] == 1
        assert [(v["view"], v["reason"]) for v in found["lineage_unknown"]] == [
            ("crm.broken", "sql-parse-error at 1:17: Expected table name but got 'WHERE'")
        ]
        change = impact.parse_change("tier", None, None)
        affected = impact.impact(conn, "crm.customers", change, 2000)
        assert [(u["view"], u["column"], u["kind"], u["match"]) for u in affected["uses"]] == [
            ("crm.gold", "tier", "projected", "leading-part"),
            ("crm.gold", "tier", "filter", "leading-part"),
        ]
        assert (affected["views"], affected["uncertain"]) == (["crm.gold"], 1)
        assert [v["view"] for v in affected["lineage_unknown"]] == ["crm.broken"]
        broken = api.deps(conn, "crm.broken", 2000)
        assert (broken["lineage"], broken["reads"]) == ("unknown", [])
        assert broken["lineage_unknown"] == found["lineage_unknown"]


def test_views_without_a_name_are_each_current(tmp_path: Path) -> None:
    """A view whose metadata directory is an index root has no name: two such views are two views
    at once (not two holders of one name), each shown and walked by its id."""
    root = tmp_path / "warehouse"
    first = View(root, "db", "first", "d6000000-0000-4000-8000-000000000001")
    first.commit(1000, "SELECT * FROM db.t")
    second = View(root, "db", "second", "d6000000-0000-4000-8000-000000000002")
    second.commit(1500, "SELECT * FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([first.location, second.location], settings_for(db))
    with open_reader(db) as conn:
        current = conn.execute("SELECT view_id, name FROM views_as_of(2000) ORDER BY 1").fetchall()
        assert current == [(first.uuid, None), (second.uuid, None)]
        found = api.uses(conn, "db.t", 2000)["views"]
        assert [(v["view"], v["path"]) for v in found] == [
            (first.uuid, [first.uuid]),
            (second.uuid, [second.uuid]),
        ]
        # a misspelt name is a usage error, not a TypeError from the nameless views' suggestions
        with pytest.raises(UsageError, match=r"^no view 'db\.frist' in the store$"):
            api.show(conn, "db.frist")


def test_a_finding_code_is_matched_as_written(tmp_path: Path) -> None:
    """`findings --code %` listed every code with a `:` (a LIKE pattern): codes match as written,
    or as the part before a `:`."""
    root = tmp_path / "warehouse"
    View(root, "db", "v", "d9000000-0000-4000-8000-000000000001").commit(
        1000, "SELECT 1 AS x", summary={"n": 5}
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        with pytest.raises(UsageError, match=r"^no finding has code '%'"):
            api.findings(conn, "%")
        assert [f["code"] for f in api.findings(conn, "invalid-field")] == ["invalid-field:n"]
        assert [f["code"] for f in api.findings(conn, "invalid-field:n")] == ["invalid-field:n"]
        # findings name the view, not only its uuid
        assert [(f["view"], f["view_id"]) for f in api.findings(conn, "invalid-field")] == [
            ("db.v", "d9000000-0000-4000-8000-000000000001")
        ]


def test_a_copy_of_a_views_file_elsewhere_never_holds_the_view(tmp_path: Path) -> None:
    """A copy of a view's newest file in another directory (newer mtime, its document naming the
    view's own directory: location-mismatch) renamed the live view after the copy's path, and its
    removal then dropped the view. The file in place holds the view; the copy's removal drops
    nothing."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "da000000-0000-4000-8000-000000000001")
    view.commit(1000, "SELECT 1 AS x")
    newest = view.commit(2000, "SELECT 2 AS x")
    copy = root / "bad" / "m" / "metadata" / newest.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(newest.read_bytes())
    os.utime(copy, ns=(3_000_000_000, 3_000_000_000))
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        shown = api.show(conn, view.uuid)
        assert (shown["view"], shown["version_id"]) == ("db.v", 2)
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(copy), 4000, "watch")]))
    with open_reader(db) as conn:
        assert api.show(conn, view.uuid)["view"] == "db.v"
        assert api.history(conn, view.uuid)["dropped_ms"] is None
        assert conn.execute("SELECT view_id, name FROM views_as_of(5000)").fetchall() == [
            (view.uuid, ["db", "v"])
        ]


def test_a_copy_into_another_view_s_directory_of_a_moved_tree_takes_no_name(tmp_path: Path) -> None:
    """Found by the nineteenth adversarial trial: in a tree moved from where its files were written
    (every file's document names another root), a copy of view va's file into view vb's directory
    renamed va to vb: every file was `location-mismatch`, so none held its view before the copy.
    A file under another root with its own namespace and name is `location-moved` and in place; a
    store made before migration 0024 answers the same once a writer opens it."""
    root = tmp_path / "warehouse"
    elsewhere = "s3://old-bucket/wh"
    va = View(root, "db", "va", "db000000-0000-4000-8000-00000000000a")
    vb = View(root, "db", "vb", "db000000-0000-4000-8000-00000000000b")
    for view, sql in ((va, "SELECT 1 AS x"), (vb, "SELECT 2 AS x")):
        path = view.commit(1000, sql)
        document = json.loads(path.read_text())
        write(path, {**document, "location": f"{elsewhere}/db/{view.name}"}, 1000)
    newest = va.commit(2000, "SELECT 3 AS x")
    write(newest, {**json.loads(newest.read_text()), "location": f"{elsewhere}/db/va"}, 2000)
    copy = Path(vb.location) / "metadata" / f"00005-{va.uuid}.metadata.json"
    copy.write_bytes(newest.read_bytes())
    os.utime(copy, ns=(3_000_000_000, 3_000_000_000))
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))

    def answers() -> tuple[object, ...]:
        with open_reader(db) as conn:
            names = conn.execute("SELECT view_id, name FROM views_as_of(5000) ORDER BY 1").fetchall()
            codes = conn.execute("SELECT code, severity, message FROM findings ORDER BY ALL").fetchall()
            return names, codes

    fresh = answers()
    assert fresh[0] == [(va.uuid, ["db", "va"]), (vb.uuid, ["db", "vb"])]
    assert [code for code, _, _ in fresh[1]] == ["location-mismatch", *["location-moved"] * 3]
    with duckdb.connect(str(db)) as conn:  # as indexing left them before 0024
        conn.execute(
            "UPDATE file_findings SET code = 'location-mismatch', severity = 'warning', message = 'old' "
            "WHERE code = 'location-moved'"
        )
        conn.execute("DELETE FROM _migrations WHERE id = 24")
    with Store(db, replica_interval=None):
        pass
    assert answers() == fresh


def test_history_lists_property_changes_and_the_other_views_at_its_path(sample_store: Path) -> None:
    """An auditor sees `ALTER VIEW ... SET TBLPROPERTIES` commits with what they changed, and a view
    dropped and created again at the same path links the earlier one (and the reverse)."""
    with open_reader(sample_store) as conn:
        old = api.history(conn, BIG_DAYS_OLD)
        new = api.history(conn, "prod.db.big_days")
    changes = [
        (
            commit["version_id"],
            commit["property_only"],
            [(c["key"], c["before"], c["after"]) for c in commit["changes"]],
        )
        for commit in old["property_changes"]
    ]
    assert changes == [
        (1, False, [
            ("create_engine_version", None, "Spark 3.5.9"),
            ("engine_version", None, "Spark 3.5.9"),
            ("spark.query-column-names", None, "event_date,kind,event_count"),
        ]),
        (1, True, [("refresh", None, "daily"), ("team", None, "growth-team")]),
        (1, True, [("refresh", "daily", "hourly"), ("sla_minutes", None, "30")]),
        (1, True, [("sla_minutes", "30", None)]),
    ]  # fmt: skip
    assert [commit["location"].rsplit("/", 1)[1][:5] for commit in old["property_changes"]] == [
        "00000", "00001", "00002", "00003"
    ]  # fmt: skip
    assert new["view_id"] == "621f9620-d632-4552-aa8d-b485775cc8b8"
    assert [(v["view_id"], v["view"]) for v in new["incarnations"]] == [(BIG_DAYS_OLD, "prod.db.big_days")]
    assert [v["view_id"] for v in old["incarnations"]] == [new["view_id"]]
    text = CliRunner().invoke(cli, ["--db", str(sample_store), "history", BIG_DAYS_OLD]).output
    assert "property changes:\n" in text
    assert re.search(r"\n  \S+Z +1 +true +sla_minutes +30\n", text)
    assert "other views at its location or name:\n" in text


def test_a_reader_of_a_store_with_another_release_s_queries_says_what_to_do(
    sample_store: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "older.duckdb"
    shutil.copyfile(sample_store, copy)
    with duckdb.connect(str(copy)) as conn:
        conn.execute("DROP MACRO TABLE view_commits")
        conn.execute("COMMENT ON VIEW preferred_versions IS 'viewlineage queries 0123'")
    result = CliRunner().invoke(cli, ["--db", str(copy), "history", "prod.db.big_days"])
    assert (result.exit_code, result.stderr) == (
        1,
        f"error: store {copy} holds the queries of another viewlineage release: a writer "
        "(`viewlineage index`, `watch`, `consume` or `reindex`) installs this one's when it opens it\n",
    )
    with Store(copy, replica_interval=None):
        pass
    assert CliRunner().invoke(cli, ["--db", str(copy), "history", "prod.db.big_days"]).exit_code == 0


def test_deps_of_a_view_that_did_not_exist_then_is_an_error_not_an_empty_answer(
    sample_store: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "dropped.duckdb"
    shutil.copyfile(sample_store, copy)
    with open_reader(copy) as conn:
        first_ms, newest = conn.execute(
            "SELECT min(timestamp_ms), (SELECT location FROM view_file_as_of(?1, 1::BIGINT << 62)) "
            "FROM activations WHERE view_id = ?1",
            [BIG_DAYS_OLD],
        ).fetchall()[0]
    with Store(copy, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(newest, first_ms + 10**9, "watch")]))
    with open_reader(copy) as conn:
        with pytest.raises(UsageError, match=r"^view prod.db.big_days was dropped at "):
            api.deps(conn, BIG_DAYS_OLD)
        with pytest.raises(
            UsageError, match=r"^view prod.db.big_days was not created yet at .*: its first version "
        ):
            api.deps(conn, BIG_DAYS_OLD, first_ms - 1)
        assert api.deps(conn, BIG_DAYS_OLD, first_ms)["reads"]
    failed = CliRunner().invoke(cli, ["deps", BIG_DAYS_OLD, "--db", str(copy)])
    assert (failed.exit_code, failed.stderr.startswith("error: view prod.db.big_days was dropped at ")) == (
        2,
        True,
    )


@pytest.mark.parametrize("name", ["sales.orders", "prod.sales.orders", "orders"])
def test_uses_and_impact_agree_on_a_short_name(conn: duckdb.DuckDBPyConnection, name: str) -> None:
    """`uses sales.orders` called every read of `prod.sales.orders` `namespace-and-name` (its
    catalog left unknown), while `impact sales.orders` called the same reads `exact`: both now
    match reads against the indexed table the name resolves to."""
    readers = [("prod.sales.customer_revenue", "exact"), ("prod.sales.order_rank", "exact")]
    used = api.uses(conn, name)
    assert (used["table"], used["uncertain"]) == ("prod.sales.orders", 0)
    assert [(view["view"], view["match"]) for view in used["views"]] == readers
    impacted = impact.impact(conn, name, impact.parse_change("amount", None, None))
    assert sorted({(use["view"], use["match"]) for use in impacted["uses"] if use["depth"] == 1}) == readers


def test_dotted_and_case_only_names_are_views_of_their_own(tmp_path: Path) -> None:
    """The view in directory `db/a.b` displayed as `db.a.b`, the name of view `b` in namespace
    `db.a`, and could not be named at all; and of `db/Orders` and `db/orders` (two views in a
    case-sensitive catalog) the later hid the other, so `uses db.t` left out a view reading it."""
    root = tmp_path / "warehouse"
    x = schema_of(("x", "int"))
    dotted = View(root, "db", "a.b", "e1000000-0000-4000-8000-000000000001", schema=x)
    dotted.commit(1000, "SELECT x FROM db.t")
    View(root, "db/a", "b", "e1000000-0000-4000-8000-000000000002", schema=x).commit(
        2000, "SELECT x FROM db.u"
    )
    upper = View(root, "db", "Orders", "e1000000-0000-4000-8000-000000000003", schema=x)
    upper.commit(3000, "SELECT x FROM db.t")
    View(root, "db", "orders", "e1000000-0000-4000-8000-000000000004", schema=x).commit(
        4000, "SELECT x FROM db.u"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        assert [(v["view"], v["view_id"]) for v in api.uses(conn, "db.t")["views"]] == [
            ('db."a.b"', dotted.uuid),
            ("db.orders", upper.uuid),
        ]
        for typed in ('db."a.b"', "db.`a.b`", '"a.b"', 'DB."A.B"'):
            assert (api.show(conn, typed)["view"], api.show(conn, typed)["view_id"]) == (
                'db."a.b"',
                dotted.uuid,
            )
        assert api.show(conn, "db.a.b")["view_id"] == "e1000000-0000-4000-8000-000000000002"
        with pytest.raises(
            UsageError, match=r"^'db\.orders' is ambiguous: db\.orders \(e1.*name one by its uuid$"
        ):
            api.show(conn, "db.orders")
        assert api.show(conn, upper.uuid)["view"] == "db.orders"
        with pytest.raises(UsageError, match=r"""^unbalanced quote in name 'db\."a\.b'$"""):
            api.show(conn, 'db."a.b')
        with pytest.raises(UsageError, match=r"""did you mean db\."a\.b"\?$"""):
            api.show(conn, 'db."a.c"')


def test_a_catalog_the_store_does_not_know_names_the_table_without_one(
    sample_warehouse: Path, tmp_path: Path
) -> None:
    """Indexed without --catalog-map, `impact prod.sales.orders` took the indexed `sales.orders`
    for another, unindexed table (type unknown, "0 view(s) affected") and `uses` found only the
    reads spelled with `prod.`: a leading part the store knows as no catalog names the table."""
    db = tmp_path / "nomap.duckdb"
    index_locations([str(sample_warehouse)], settings_for(db))
    with open_reader(db) as conn:
        short, full = (
            api.uses(conn, name, transitive=True) for name in ("sales.orders", "prod.sales.orders")
        )
        assert full == short
        assert (full["table"], len(full["views"]), full["uncertain"]) == ("sales.orders", 3, 3)
        # deps says of each table read how surely it is the table, as uses does (found by the
        # second new-user trial: `deps` called a read of unknown catalog `exact`)
        direct = api.deps(conn, "db.event_agg")
        assert [(r["table"], r["catalog_unknown"], r["match"]) for r in direct["reads"]] == [
            ("db.events", True, "namespace-and-name")
        ]
        walked = api.deps(conn, "revenue_by_region", transitive=True)
        assert [(r["table"], r["depth"], r["match"]) for r in walked["reads"]] == [
            ("prod.db.event_agg", 1, "leading-part"),
            ("prod.sales.customer_revenue", 1, "leading-part"),
            ("db.events", 2, "leading-part"),
            ("prod.sales.customers", 2, "leading-part"),
            ("prod.sales.orders", 2, "leading-part"),
        ]
        assert walked["uncertain"] == 5
        changed = impact.impact(conn, "prod.sales.orders", impact.parse_change("amount", None, None))
        assert (changed["table_indexed"], changed["column_type"], len(changed["views"])) == (
            True,
            "decimal(10, 2)",
            3,
        )


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("", "sql-parse-error at 1:1: the SQL holds no statement"),
        ("-- nothing", "sql-parse-error at 1:1: the SQL holds no statement"),
        (
            "SELECT 1 AS c; SELECT x FROM db.t",
            "sql-parse-error at 1:1: the SQL holds 2 statements, where a view has one query",
        ),
    ],
)
def test_sql_that_gives_no_lineage_is_never_known_to_read_nothing(
    tmp_path: Path, sql: str, reason: str
) -> None:
    """Found by the adversarial trial: empty or comment-only SQL was "lineage: known, reads []", and
    of two statements `deps` and `uses` took the reads while `impact` left the view out."""
    root = tmp_path / "warehouse"
    View(root, "db", "v", "d8000000-0000-4000-8000-000000000001", schema=schema_of(("x", "int"))).commit(
        1000, sql
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        deps = api.deps(conn, "db.v")
        assert api.lineage_unknown(conn, api.FOREVER_MS) == [
            {"view": "db.v", "view_id": "d8000000-0000-4000-8000-000000000001", "reason": reason}
        ]
    # Found by the ninth adversarial trial: of two statements, `deps` listed the second's reads as
    # exact reads of the view, though its lineage is unknown.
    assert (deps["lineage"], deps["reads"]) == ("unknown", [])


def test_a_table_named_by_an_expression_is_unknown_lineage(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    View(root, "db", "dyn", "d8000000-0000-4000-8000-000000000002", schema=schema_of(("x", "int"))).commit(
        1000, "SELECT x FROM IDENTIFIER('db.' || 't')"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        unknown = api.uses(conn, "db.dyn")["lineage_unknown"]
    assert [(row["view"], row["reason"]) for row in unknown] == [
        ("db.dyn", "dynamic-identifier: IDENTIFIER('db.' || 't') names its table at run time; not resolved")
    ]


def test_an_earlier_incarnation_is_never_read_as_reading_nothing(tmp_path: Path) -> None:
    """Found by the adversarial trial: a view dropped and re-created at its path (the old files left
    in place), `deps <old uuid>` answered "lineage: known, reads: []", and the location named both."""
    root = tmp_path / "warehouse"
    old = View(root, "db", "v", "d9100000-0000-4000-8000-000000000001", schema=schema_of(("x", "int")))
    old.commit(1000, "SELECT x FROM db.a")
    new = View(root, "db", "v", "d9100000-0000-4000-8000-000000000002", schema=schema_of(("x", "int")))
    new.commit(3000, "SELECT x FROM db.b")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        assert [r["table"] for r in api.deps(conn, old.uuid, 2000)["reads"]] == ["db.a"]
        replaced = (
            r"^view db\.v \(d91.*1\) was replaced by a view created at its path at "
            r"1970-01-01T00:00:03\.000Z \(d91.*2\); `viewlineage history d91.*1` lists both; ask as of an "
            r"earlier time$"
        )
        with pytest.raises(UsageError, match=replaced):
            api.deps(conn, old.uuid)
        # Found by the twentieth new-user trial: `show` and `history` of the old uuid said nothing.
        with pytest.raises(UsageError, match=replaced):
            api.show(conn, old.uuid)
        assert api.show(conn, old.uuid, 2000)["version_id"] == 1
        history = api.history(conn, old.uuid)
        assert (history["dropped_at"], history["replaced_at"], history["replaced_by"]) == (
            None,
            "1970-01-01T00:00:03.000Z",
            new.uuid,
        )
        assert api.history(conn, new.uuid)["replaced_at"] is None
        assert [r["table"] for r in api.deps(conn, new.uuid)["reads"]] == ["db.b"]
        assert api.show(conn, new.location)["view_id"] == new.uuid
        assert api.show(conn, new.location, 2000)["view_id"] == old.uuid
        with pytest.raises(  # the sixth new-user trial read "no active version" as "broken"
            UsageError,
            match=r"^view db\.v was not created yet at 1970-01-01T00:00:00\.000Z: its first version became "
            r"current at 1970-01-01T00:00:01\.000Z$",
        ):
            api.show(conn, "db.v", 0)
        events = conn.execute(
            "SELECT changed_ms, view_id, kind, summary FROM change_events ORDER BY changed_ms, view_id"
        ).fetchall()
    assert events == [
        (1000, old.uuid, "created", "created at version 1"),
        (3000, old.uuid, "dropped", f"dropped at version 1, by the time view {new.uuid} was created at "
         "its path (its files left in place)"),
        (3000, new.uuid, "created", "created at version 1"),
    ]  # fmt: skip


def test_a_read_of_a_name_two_views_hold_is_a_guess_that_says_so(tmp_path: Path) -> None:
    """Found by the seventh adversarial trial: `db/CaseV` and `db/casev` are both `prod.db.casev`;
    `deps` of a view reading `prod.db.casev` gave one of them, `exact`, and `uses` of either called
    the reader exact. Each is a row of its own now, matched `shared-name`."""
    root = tmp_path / "warehouse"
    upper = View(root, "db", "CaseV", "e2000000-0000-4000-8000-000000000001", schema=schema_of(("a", "long")))
    upper.commit(1000, "SELECT a FROM db.case_upper")
    lower = View(root, "db", "casev", "e2000000-0000-4000-8000-000000000002", schema=schema_of(("a", "long")))
    lower.commit(1000, "SELECT a FROM db.case_lower")
    View(root, "db", "rdcase", "e2000000-0000-4000-8000-000000000003").commit(
        1000, "SELECT a FROM prod.db.casev"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        reads = api.deps(conn, "db.rdcase", transitive=True)
        users = api.uses(conn, "db.case_upper", transitive=True)
        direct = api.uses(conn, upper.uuid)
    assert [(r["table"], r["depth"], r["view_id"], r["match"]) for r in reads["reads"]] == [
        ("prod.db.casev", 1, upper.uuid, "shared-name"),
        ("prod.db.casev", 1, lower.uuid, "shared-name"),
        ("prod.db.case_lower", 2, None, "shared-name"),
        ("prod.db.case_upper", 2, None, "shared-name"),
    ]
    assert reads["uncertain"] == 4
    assert [(v["view"], v["depth"], v["match"]) for v in users["views"]] == [
        ("prod.db.casev", 1, "namespace-and-name"),  # db.case_upper: its catalog not known
        ("prod.db.rdcase", 2, "shared-name"),
    ]
    assert [(v["view"], v["match"]) for v in direct["views"]] == [("prod.db.rdcase", "shared-name")]
    # Found after the seventh trial: `impact` called the reader's match by its reference alone.
    with open_reader(db) as conn:
        dropped = impact.impact(conn, "db.case_upper", impact.parse_change("a", None, None))
        by_id = impact.impact(conn, upper.uuid, impact.parse_change("a", None, None))
    assert [(u["view"], u["view_id"], u["depth"], u["match"]) for u in dropped["uses"]] == [
        ("prod.db.casev", upper.uuid, 1, "namespace-and-name"),
        ("prod.db.rdcase", "e2000000-0000-4000-8000-000000000003", 2, "shared-name"),
    ]
    assert [(u["view"], u["match"]) for u in by_id["uses"]] == [("prod.db.rdcase", "shared-name")]


def test_a_name_a_table_and_a_view_hold_is_a_guess_that_says_so(tmp_path: Path) -> None:
    """Found by the eighteenth adversarial trial: a table dropped without its files (Spark's DROP
    TABLE without PURGE) and a view created at its name, in its directory: `deps` of a reader said it
    read the view, `uses` and `impact` that it read the table, each `exact`, with no finding."""
    root = tmp_path / "warehouse"
    Table(
        root, "db", "orders", "e4000000-0000-4000-8000-000000000001", schema=schema_of(("id", "long"))
    ).commit(500, 1)
    events = Table(
        root, "db", "events", "e4000000-0000-4000-8000-000000000002", schema=schema_of(("kind", "string"))
    )
    events.commit(500, 1)
    replaced = View(
        root, "db", "events", "e4000000-0000-4000-8000-000000000003",
        schema=schema_of(("id", "long"), ("kind", "string")),
    )  # fmt: skip
    replaced.commit(1000, "SELECT id, 'placed' AS kind FROM db.orders")
    View(root, "db", "reader", "e4000000-0000-4000-8000-000000000004").commit(
        2000, "SELECT kind FROM db.events"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        reads = api.deps(conn, "db.reader", transitive=True)
        users = api.uses(conn, "db.events")
        through = api.uses(conn, "db.orders", transitive=True)
        dropped = impact.impact(conn, "db.events", impact.parse_change("kind", None, None))
        of_view = impact.impact(conn, replaced.uuid, impact.parse_change("kind", None, None))
        findings = [(f["view_id"], f["code"]) for f in api.findings(conn) if f["code"] == "table-name-shared"]
    assert [(r["table"], r["depth"], r["target"], r["match"]) for r in reads["reads"]] == [
        ("prod.db.events", 1, "view", "shared-name"),
        ("prod.db.orders", 2, "table", "shared-name"),
    ]
    assert [(v["view"], v["match"]) for v in users["views"]] == [("prod.db.reader", "shared-name")]
    assert [(v["view"], v["depth"], v["match"]) for v in through["views"]] == [
        ("prod.db.events", 1, "exact"),
        ("prod.db.reader", 2, "shared-name"),
    ]
    assert [(u["view"], u["column"], u["match"]) for u in dropped["uses"]] == [
        ("prod.db.reader", "kind", "shared-name")
    ]
    assert [(u["view"], u["match"]) for u in of_view["uses"]] == [("prod.db.reader", "shared-name")]
    assert findings == [(replaced.uuid, "table-name-shared")]


def test_a_uuid_a_table_and_a_view_both_have_is_ambiguous(tmp_path: Path) -> None:
    """Found by the eighteenth adversarial trial: a view given a table's uuid was what `show` and
    `deps` of the uuid answered, the table what `uses` did, with no word of the other."""
    root = tmp_path / "warehouse"
    shared = "e5000000-0000-4000-8000-000000000001"
    Table(root, "db", "events", shared, schema=schema_of(("kind", "string"))).commit(500, 1)
    View(root, "hd", "v", shared).commit(1000, "SELECT kind FROM db.events")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    expected = (
        f"'{shared}' is ambiguous: the uuid of table prod.db.events and of view prod.hd.v; "
        "name one by its full name"
    )
    with open_reader(db) as conn:
        for ask in (
            lambda: api.uses(conn, shared),
            lambda: impact.impact(conn, shared, impact.parse_change("kind", None, None)),
            lambda: graph.lineage_graph(conn, shared),
        ):
            with pytest.raises(UsageError) as raised:
                ask()
            assert (str(raised.value), raised.value.suggestions) == (
                expected,
                ("prod.db.events", "prod.hd.v"),
            )
        assert [v["view"] for v in api.uses(conn, "prod.db.events")["views"]] == ["prod.hd.v"]


def test_tables_in_directories_whose_names_differ_in_case_are_two(tmp_path: Path) -> None:
    """Found by the second adversarial trial: of `db/Orders` and `db/orders`, `table db.orders`
    answered for one silently (and impact checked the other's columns)."""
    root = tmp_path / "warehouse"
    upper = Table(
        root, "db", "Orders", "f1000000-0000-4000-8000-000000000001", schema=schema_of(("big", "long"))
    )
    upper.commit(1000, 1)
    lower = Table(
        root, "db", "orders", "f1000000-0000-4000-8000-000000000002", schema=schema_of(("small", "long"))
    )
    lower.commit(1000, 1)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        with pytest.raises(
            UsageError, match=r"^'db\.orders' is ambiguous: db\.orders \(f1.*1\), db\.orders \(f1.*2\)"
        ):
            api.table(conn, "db.orders")
        assert api.table(conn, lower.uuid)["table_id"] == lower.uuid


def test_readers_of_a_view_of_unknown_lineage_could_read_anything(tmp_path: Path) -> None:
    """Found by the second adversarial trial: `uses db.t --transitive` and `impact` listed a view
    whose SQL does not parse as of unknown lineage, but not the view reading it."""
    root = tmp_path / "warehouse"
    x = schema_of(("x", "int"))
    View(root, "db", "fine", "d9200000-0000-4000-8000-000000000000", schema=x).commit(
        1000, "SELECT x FROM db.t"
    )
    View(root, "db", "broken", "d9200000-0000-4000-8000-000000000001", schema=x).commit(
        1000, "SELECT x FROM db.t WHERE"
    )
    View(root, "db", "over", "d9200000-0000-4000-8000-000000000002", schema=x).commit(
        2000, "SELECT x FROM db.broken"
    )
    View(root, "db", "top", "d9200000-0000-4000-8000-000000000003", schema=x).commit(
        3000, "SELECT x FROM db.over"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        walked = api.uses(conn, "db.t", transitive=True)["lineage_unknown"]
        direct = api.uses(conn, "db.t")["lineage_unknown"]
        changed = impact.impact(conn, "db.t", impact.parse_change("x", None, None))["lineage_unknown"]
    assert [(row["view"], row["reason"].split(":")[0]) for row in walked] == [
        ("db.broken", "sql-parse-error at 1"),
        ("db.over", "reads db.broken, whose lineage is unknown"),
        ("db.top", "reads db.broken, whose lineage is unknown"),
    ]
    assert changed == walked
    assert [row["view"] for row in direct] == ["db.broken"]


def test_a_name_with_a_backtick_prints_as_it_can_be_typed_back(tmp_path: Path) -> None:
    """Found by the fourth adversarial trial: the view in directory `w`8` printed as prod.db.w`8,
    which `show` refused (an unbalanced quote)."""
    root = tmp_path / "warehouse"
    View(root, "db", "w`8", "b7000000-0000-4000-8000-000000000001").commit(1000, "SELECT * FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        printed = api.uses(conn, "db.t")["views"][0]["view"]
        assert printed == 'prod.db."w`8"'
        assert api.show(conn, printed)["view"] == printed
        assert api.deps(conn, printed)["view"] == printed


def test_one_uuid_in_two_directories_shows_each_directory_s_own_sql(tmp_path: Path) -> None:
    """Found by the fourth adversarial trial: two directories whose files share a uuid, each naming
    its own directory, gave one version 1 (the other's copy): `show prod.db.impostor` printed the
    real view's SQL, and `uses` listed it as reading the real view's table, exactly."""
    root = tmp_path / "warehouse"
    real = View(root, "db", "real", "b8000000-0000-4000-8000-000000000001")
    real.commit(1000, "SELECT * FROM db.t_real")
    impostor = View(root, "db", "impostor", "b8000000-0000-4000-8000-000000000001")
    impostor.commit(2000, "SELECT * FROM db.t_impostor")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        now = api.show(conn, "prod.db.impostor")
        before = api.show(conn, "prod.db.real", 1500)
        readers = [v["view"] for v in api.uses(conn, "db.t_impostor")["views"]]
        conflicts = [f["code"] for f in api.findings(conn, "version-conflict")]
    assert (now["view"], now["representations"][0]["sql"]) == (
        "prod.db.impostor",
        "SELECT * FROM db.t_impostor",
    )
    assert (before["view"], before["representations"][0]["sql"]) == (
        "prod.db.real",
        "SELECT * FROM db.t_real",
    )
    assert readers == ["prod.db.impostor"]
    assert conflicts == ["version-conflict"]


def test_history_says_whether_each_activation_changed_the_sql(tmp_path: Path) -> None:
    """Found by the fourth new-user trial: an empty diff read the same for the first version and for
    a version whose schema alone changed."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "b9000000-0000-4000-8000-000000000001")
    view.commit(1000, "SELECT * FROM db.t")
    view.schema = schema_of(("id", "long"), ("kind", "string"), ("added", "int"))
    view.commit(2000, "SELECT * FROM db.t")  # the table gained a column: the SQL is the same
    view.commit(3000, "SELECT id FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))
    with open_reader(db) as conn:
        activations = api.history(conn, view.uuid)["activations"]
    assert [(a["version_id"], a["diff"] == "", a["sql_changed"]) for a in activations] == [
        (1, False, None),
        (2, True, False),
        (3, False, True),
    ]


def test_deps_says_what_each_read_names_a_dropped_view_included(tmp_path: Path) -> None:
    """Found by the fourth new-user trial: after `DROP VIEW prod.sales.v_star`, `deps` of a view
    reading it showed it as a table, `exact`, as if it were there."""
    root = tmp_path / "warehouse"
    Table(root, "db", "t", "ba000000-0000-4000-8000-000000000001").commit(500, 1)
    star = View(root, "db", "v_star", "ba000000-0000-4000-8000-000000000002")
    newest = star.commit(1000, "SELECT * FROM db.t")
    View(root, "db", "reader", "ba000000-0000-4000-8000-000000000003").commit(
        1000, "SELECT * FROM db.v_star JOIN db.t USING (id) JOIN db.elsewhere USING (id)"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(newest), 2000, "watch")]))
    with open_reader(db) as conn:
        before = api.deps(conn, "prod.db.reader", 1500)["reads"]
        after = api.deps(conn, "prod.db.reader")["reads"]
    assert [(r["table"], r["target"]) for r in before] == [
        ("prod.db.elsewhere", "not-indexed"),
        ("prod.db.t", "table"),
        ("prod.db.v_star", "view"),
    ]
    assert [(r["table"], r["target"]) for r in after] == [
        ("prod.db.elsewhere", "not-indexed"),
        ("prod.db.t", "table"),
        ("prod.db.v_star", "view-not-current"),
    ]


def test_a_version_id_listed_twice_in_one_file_is_a_finding_and_the_last_copy_counts(tmp_path: Path) -> None:
    """Found by the fifth adversarial trial: a file listing version 1 twice, with different SQL, had
    one picked silently (by no stated rule), and the version-conflict finding named a rule of
    sequence numbers, which one file cannot break."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "d4000000-0000-4000-8000-000000000002")
    view.commit(1000, "SELECT * FROM db.a")
    view.versions.append({**view.versions[0], "representations": [
        {"type": "sql", "sql": "SELECT * FROM db.b", "dialect": "spark"}
    ]})  # fmt: skip
    view.commit(2000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        shown = api.show(conn, "prod.db.v", 3000)
        found = {(f["code"], f["message"]) for f in api.findings(conn, None, "prod.db.v")}
        reads = [r["table"] for r in api.deps(conn, "prod.db.v", 3000)["reads"]]
    assert [r["sql"] for r in shown["representations"]] == ["SELECT * FROM db.b"]
    assert reads == ["prod.db.b"]
    assert (
        "duplicate-version-id",
        "version-id 1 is listed 2 times, with 2 different contents: the one listed last is used",
    ) in found
    assert (
        "version-conflict",
        "version 1 has 2 different contents: each file in force shows the copy it lists (the one listed "
        "last, if it lists two), a file listing none the copy in the file with the highest sequence number",
    ) in found


def test_files_tied_with_the_one_in_force_are_named(tmp_path: Path) -> None:
    """Found by the fifth adversarial trial: one uuid in two directories, committed at the same time
    with the same sequence number, answered one directory's name with the other's SQL, and nothing
    said that which file holds the view was a guess."""
    root = tmp_path / "warehouse"
    uuid = "d4000000-0000-4000-8000-00000000000a"
    first = View(root, "db", "va", uuid).commit(1000, "SELECT * FROM db.a")
    second = View(root, "db", "vb", uuid).commit(1000, "SELECT * FROM db.b")
    alone = View(root, "db", "vc", "d4000000-0000-4000-8000-00000000000b")
    alone.commit(1000, "SELECT * FROM db.c")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        shown = api.show(conn, "prod.db.va")
        read = api.deps(conn, "prod.db.va")
        untied = api.show(conn, "prod.db.vc")
    assert (shown["properties_file"], shown["tied_files"]) == (str(second), [str(first)])
    assert read["tied_files"] == [str(first)]
    assert untied["tied_files"] == []
    result = CliRunner().invoke(cli, ["show", "prod.db.va", "--db", str(db)])
    assert result.stdout.splitlines()[-1] == f"tied_files: {first}"


def test_a_read_matched_by_its_leading_part_names_the_indexed_table(tmp_path: Path) -> None:
    """Found by the sixth new-user trial: indexed without --catalog-map, `deps` said `prod.db.t` was
    `not-indexed` while `uses db.t` and `graph` matched the same read to the indexed `db.t`."""
    root = tmp_path / "warehouse"
    Table(root, "db", "t", "d6000000-0000-4000-8000-000000000001").commit(1000, 1)
    View(root, "db", "v", "d6000000-0000-4000-8000-000000000002").commit(2000, "SELECT * FROM prod.db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db))  # no catalog map: `prod` is no known catalog
    with open_reader(db) as conn:
        reads = api.deps(conn, "db.v")["reads"]
        users = api.uses(conn, "db.t")["views"]
    assert [(r["table"], r["target"], r["match"]) for r in reads] == [("prod.db.t", "table", "leading-part")]
    assert [(u["view"], u["match"]) for u in users] == [("db.v", "leading-part")]


def test_a_read_whose_first_part_may_be_a_catalog_is_no_exact_match(tmp_path: Path) -> None:
    """Found by the sixth adversarial trial: `ext.raw.clicks`, `ext` no known catalog, is read as
    namespace `ext.raw` of the view's catalog (indexing says `catalog-ambiguous`), and `deps`
    called it `exact` when nothing of either name was indexed. A read naming its catalog is exact;
    a view read through the guessed read inherits the doubt."""
    root = tmp_path / "warehouse"
    View(root, "db", "v", "d7000000-0000-4000-8000-000000000001").commit(
        1000, "SELECT * FROM ext.raw.clicks JOIN prod.ns.sub.t USING (id)"
    )
    View(root, "db", "w", "d7000000-0000-4000-8000-000000000002").commit(1000, "SELECT * FROM db.v")
    View(root, "db", "x", "d7000000-0000-4000-8000-000000000003").commit(1000, "SELECT * FROM db.v_alias.v")
    View(root, "ext/raw", "nested", "d7000000-0000-4000-8000-000000000004").commit(1000, "SELECT * FROM db.t")
    View(root, "db", "y", "d7000000-0000-4000-8000-000000000005").commit(1000, "SELECT * FROM ext.raw.nested")
    db = tmp_path / "store.duckdb"
    stats = index_locations([str(root)], settings_for(db, f"{root}=prod"))
    assert stats.findings["catalog-ambiguous"] == 3
    with open_reader(db) as conn:
        reads = api.deps(conn, "db.w", transitive=True)
        guessed_view = api.deps(conn, "db.x")
        through_guess = api.deps(conn, "db.y", transitive=True)
    assert [(r["table"], r["depth"], r["target"], r["match"]) for r in reads["reads"]] == [
        ("prod.db.v", 1, "view", "exact"),
        ("prod.ext.raw.clicks", 2, "not-indexed", "leading-part"),
        ("prod.ns.sub.t", 2, "not-indexed", "exact"),
    ]
    assert reads["uncertain"] == 1
    assert [(r["table"], r["match"]) for r in guessed_view["reads"]] == [
        ("prod.db.v_alias.v", "leading-part")
    ]
    assert [(r["table"], r["depth"], r["target"], r["match"]) for r in through_guess["reads"]] == [
        ("prod.ext.raw.nested", 1, "view", "leading-part"),
        ("prod.db.t", 2, "not-indexed", "leading-part"),
    ]


def test_views_whose_documents_name_one_location_are_not_incarnations(tmp_path: Path) -> None:
    """Found by the sixth adversarial trial: two live views in `db/a` and `db/b` whose documents
    both wrote `"location": "s3://lake/wh/db/shared"` were linked as earlier and later views of one
    path, in `history` and `changes --view`; with 9,000 such views `history` took minutes."""
    root = tmp_path / "warehouse"
    for name, uuid in (
        ("a", "d7000000-0000-4000-8000-000000000001"),
        ("b", "d7000000-0000-4000-8000-000000000002"),
    ):
        path = View(root, "db", name, uuid).commit(1000, "SELECT 1 AS x")
        document = json.loads(path.read_text())
        document["location"] = "s3://lake/wh/db/shared"
        write(path, document, 1000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        assert api.history(conn, "db.a")["incarnations"] == []
        assert changes_module.changes(conn, view="db.a")["total"] == 1


def test_an_activation_dated_past_every_question_is_the_latest_state(tmp_path: Path) -> None:
    """Found by the sixth adversarial trial: a version activated at 2^63 - 1 ms made the view have
    "no active version at any time", and `uses` and `impact` left it out altogether."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "v", "d8000000-0000-4000-8000-000000000001")
    view.commit(1000, "SELECT * FROM db.t")
    view.log[-1]["timestamp-ms"] = view.versions[-1]["timestamp-ms"] = 2**63 - 1
    view.commit(2000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        assert api.show(conn, "db.v")["activated_ms"] == 2**63 - 1
        assert [v["view"] for v in api.uses(conn, "db.t")["views"]] == ["prod.db.v"]
        assert {f["code"] for f in api.findings(conn, view="db.v")} >= {"timestamp-out-of-range"}


def test_a_version_log_that_leaves_the_current_version_open_is_a_finding(tmp_path: Path) -> None:
    """Found by the seventh adversarial trial: an empty version-log made a view current at no time
    (left out of `uses` without a word); a log making two versions current at one instant, in one
    file or across two, and a current-version-id other than the last logged were resolved silently."""
    root = tmp_path / "warehouse"
    empty = View(root, "db", "nolog", "e3000000-0000-4000-8000-000000000001")
    path = empty.commit(1000, "SELECT a FROM db.t")
    document = json.loads(path.read_text())
    document["version-log"] = []
    write(path, document, 1000)
    path, document = _tied_view(root, "e3000000-0000-4000-8000-000000000002")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        assert api.show(conn, "db.nolog")["version_id"] == 1
        assert [v["view"] for v in api.uses(conn, "db.t")["views"]] == ["prod.db.nolog"]
        assert [(f["code"], f["position"]) for f in api.findings(conn, view="db.nolog")] == [
            ("empty-version-log", "$.version-log")
        ]
        # The file's current-version-id settles the tie, as the spec has it (the twelfth adversarial
        # trial: version 2, the greater id, held, and `uses` called its reads certain).
        shown = api.show(conn, "db.tied")
        assert (shown["version_id"], shown["tied_activations"]) == (1, [])
        assert [v["view"] for v in api.uses(conn, "db.one")["views"]] == ["prod.db.tied"]
        assert api.uses(conn, "db.two")["views"] == []
        assert api.findings(conn, view="db.tied") == []
    # A tie no file settles (its only file names a later version current): the greater id, and it
    # says so (the tenth adversarial trial: only `findings` did, not `show` itself).
    _open_tie(root, document, "e3000000-0000-4000-8000-000000000003")
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        shown = api.show(conn, "db.open_tie", 2500)
        assert (shown["version_id"], shown["tied_activations"]) == (2, [1])
        assert api.deps(conn, "db.open_tie", 2500)["tied_activations"] == [1]
        assert api.show(conn, "db.open_tie", 3500)["tied_activations"] == []
        assert [(f["code"], f["message"]) for f in api.findings(conn, view="db.open_tie")] == [
            (
                "activation-tie",
                "versions 1, 2 are made current at one instant (2000) by version-logs; the greatest id "
                "is taken as current from then, and what the others read is matched tied-file",
            )
        ]
        # Found by the thirteenth adversarial trial: what version 1 reads was left out of `uses`
        # and `impact`, and version 2's reads were `exact`, though which one holds is a guess.
        one = [(v["view"], v["match"]) for v in api.uses(conn, "db.one", 2500)["views"]]
        two = [(v["view"], v["match"]) for v in api.uses(conn, "db.two", 2500)["views"]]
        dropped = impact.impact(conn, "db.one", impact.parse_change("a", None, None), 2500)
    assert one == [("prod.db.open_tie", "tied-file"), ("prod.db.tied", "namespace-and-name")]
    assert two == [("prod.db.open_tie", "namespace-and-name")]  # `db.two`: its catalog unknown
    assert [(u["view"], u["match"]) for u in dropped["uses"]] == one


def _open_tie(root: Path, tied: dict[str, Any], uuid: str) -> None:
    """View `db.open_tie`: `_tied_view`'s document logging a third version later, its current:
    versions 1 and 2 made current at one instant, which no file settles."""
    document = {**tied, "view-uuid": uuid, "location": str(root / "db" / "open_tie"), "current-version-id": 3}
    document["versions"] = [*tied["versions"], {**tied["versions"][-1], "version-id": 3}]
    document["version-log"] = [*tied["version-log"], {"timestamp-ms": 3000, "version-id": 3}]
    write(root / "db" / "open_tie" / "metadata" / "00001-e3.metadata.json", document, 3000)


def _tied_view(root: Path, uuid: str) -> tuple[Path, dict[str, Any]]:
    """View `db.tied` whose second file logs versions 2 and 1 at one instant, naming 1 current:
    the file, and its document."""
    tied = View(root, "db", "tied", uuid)
    tied.commit(1000, "SELECT a FROM db.one")
    path = tied.commit(2000, "SELECT a FROM db.two")
    document = json.loads(path.read_text())
    document["version-log"] = [
        {"timestamp-ms": 2000, "version-id": 2},
        {"timestamp-ms": 2000, "version-id": 1},
    ]
    document["current-version-id"] = 1
    write(path, document, 2000)
    return path, document


def test_migration_0022_derives_again_the_spans_of_views_with_tied_activations(tmp_path: Path) -> None:
    """A store whose spans took the greater id of a tie its file settles answers by the file's
    current-version-id once a writer applies migration 0022."""
    root = tmp_path / "warehouse"
    _tied_view(root, "e3100000-0000-4000-8000-000000000001")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with duckdb.connect(str(db)) as conn:  # as the old rule left them, and before 0022
        conn.execute("UPDATE view_spans SET version_id = 2 WHERE version_id = 1")
        conn.execute("DELETE FROM _migrations WHERE id = 22")
        conn.execute("DELETE FROM _stale_spans")
    with Store(db, replica_interval=None):
        pass
    with open_reader(db) as conn:
        assert api.show(conn, "db.tied")["version_id"] == 1


def test_migration_0023_keeps_what_the_versions_of_an_open_tie_read(tmp_path: Path) -> None:
    """A store whose spans left out what the other versions of a tie no file settles read matches
    those reads `tied-file` once a writer applies migration 0023."""
    root = tmp_path / "warehouse"
    _, document = _tied_view(root, "e3200000-0000-4000-8000-000000000001")
    _open_tie(root, document, "e3200000-0000-4000-8000-000000000002")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with duckdb.connect(str(db)) as conn:  # as spans were derived before 0023
        conn.execute("UPDATE view_spans SET tied_read_paths = NULL")
        conn.execute("DELETE FROM _migrations WHERE id = 23")
        conn.execute("DELETE FROM _stale_spans")
    with Store(db, replica_interval=None):
        pass
    with open_reader(db) as conn:
        used = [(v["view"], v["match"]) for v in api.uses(conn, "db.one", 2500)["views"]]
    assert used == [("prod.db.open_tie", "tied-file"), ("prod.db.tied", "namespace-and-name")]


def test_an_ambiguous_name_suggests_the_full_names(tmp_path: Path) -> None:
    """Found by the seventh new-user trial: `show v_flip` said "name one by its uuid" though
    `analytics.v_flip` or `dev.v_flip` would do; the refusal now offers those names."""
    root = tmp_path / "warehouse"
    for namespace, uuid in (
        ("analytics", "e5000000-0000-4000-8000-000000000001"),
        ("dev", "e5000000-0000-4000-8000-000000000002"),
    ):
        View(root, namespace, "v_flip", uuid).commit(1000, "SELECT 1 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn, pytest.raises(UsageError) as refused:
        api.show(conn, "v_flip")
    assert str(refused.value) == (
        "'v_flip' is ambiguous: prod.analytics.v_flip (e5000000-0000-4000-8000-000000000001), "
        "prod.dev.v_flip (e5000000-0000-4000-8000-000000000002); name one by its full name or its uuid"
    )
    assert refused.value.suggestions == ("prod.analytics.v_flip", "prod.dev.v_flip")


def test_a_view_that_reads_itself_is_a_finding(tmp_path: Path) -> None:
    """Found by the seventh adversarial trial: a view reading itself got no finding."""
    root = tmp_path / "warehouse"
    View(root, "db", "loop", "e6000000-0000-4000-8000-000000000001").commit(
        1000, "SELECT x FROM prod.db.loop"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        found = [(f["code"], f["version_id"], f["message"]) for f in api.findings(conn, "reads-itself")]
    assert found == [
        ("reads-itself", 1, "the version reads its own view (prod.db.loop): no engine can run it")
    ]


def test_views_sharing_ancestors_are_walked_once_per_depth_not_per_path(tmp_path: Path) -> None:
    """A ladder of views, each reading both views of the level below: `uses`, `deps` and `impact`
    walked every path, 2^levels of them (40 levels held a query for hours and 1.3 GB). Now a view is
    walked once per depth (and, for `uses`, per view reading the table directly)."""
    root = tmp_path / "warehouse"
    levels = 16
    for level in range(levels):
        below = "db.t" if level == levels - 1 else f"db.l{level + 1}a JOIN db.l{level + 1}b USING (x)"
        for side in "ab":
            uuid = f"e6200000-0000-4000-8000-{level:06d}00000{'ab'.index(side)}"
            View(root, "db", f"l{level}{side}", uuid).commit(1000, f"SELECT x FROM {below}")
    top = View(root, "db", "top", "e6200000-0000-4000-8000-999999999999")
    top.commit(1000, "SELECT x FROM db.l0a, db.l0b")
    table = Table(root, "db", "t", "e6200000-0000-4000-8000-888888888888", schema=schema_of(("x", "int")))
    table.commit(900, 1)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        deps = api.deps(conn, "db.top", transitive=True)
        uses = api.uses(conn, "db.t", transitive=True)
        broken = impact.impact(conn, "db.t", impact.parse_change("x", None, None))
    # Each view's reads once: top's two, both of each upper level's, the lowest level's table.
    assert len(deps["reads"]) == 2 + (levels - 1) * 2 * 2 + 2
    upper_a = ["prod.db.top", *[f"prod.db.l{n}a" for n in range(levels - 1)]]
    last = [[*upper_a, f"prod.db.l{levels - 1}a"], [*upper_a, f"prod.db.l{levels - 1}b"]]
    assert [(r["table"], r["depth"], r["via"]) for r in deps["reads"][-2:]] == [
        ("prod.db.t", levels + 1, last[0]),
        ("prod.db.t", levels + 1, last[1]),
    ]
    # Each view once per view reading the table directly: the lowest level's two, then two each.
    assert len(uses["views"]) == 2 + (levels - 1) * 2 * 2 + 2
    assert [(v["view"], v["depth"], v["path"]) for v in uses["views"] if v["view"] == "prod.db.top"] == [
        ("prod.db.top", levels + 1, last[0]),
        ("prod.db.top", levels + 1, last[1]),
    ]
    assert sorted({use["view"] for use in broken["uses"]}) == sorted(
        ["prod.db.top", *[f"prod.db.l{n}{side}" for n in range(levels) for side in "ab"]]
    )


def test_views_that_read_each_other_are_a_cycle_deps_names(tmp_path: Path) -> None:
    """`a` reads `b` reads `a`: `deps` stopped where the walk came back, without a word, so the
    answer read as two views reading one another as any two views do. Now it names the cycle."""
    root = tmp_path / "warehouse"
    View(root, "db", "a", "e6100000-0000-4000-8000-000000000001").commit(1000, "SELECT x FROM db.b JOIN db.t")
    View(root, "db", "b", "e6100000-0000-4000-8000-000000000002").commit(1000, "SELECT x FROM db.a")
    View(root, "db", "top", "e6100000-0000-4000-8000-000000000003").commit(1000, "SELECT x FROM db.a")
    View(root, "db", "loop", "e6100000-0000-4000-8000-000000000004").commit(1000, "SELECT x FROM db.loop")
    View(root, "db", "solo", "e6100000-0000-4000-8000-000000000005").commit(1000, "SELECT x FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    a_b_a = {
        "view": "prod.db.a",
        "path": ["prod.db.a", "prod.db.b", "prod.db.a"],
        "view_ids": [f"e6100000-0000-4000-8000-00000000000{n}" for n in (1, 2, 1)],
    }
    with open_reader(db) as conn:
        top = api.deps(conn, "db.top")  # one step asked: the cycle below is named all the same
        deep = api.deps(conn, "db.top", transitive=True)
        loop = api.deps(conn, "db.loop")
        plain = api.deps(conn, "db.solo", transitive=True)
    assert top["cycles"] == deep["cycles"] == [a_b_a]
    assert [(r["table"], r["depth"]) for r in deep["reads"]] == [
        ("prod.db.a", 1), ("prod.db.b", 2), ("prod.db.t", 2), ("prod.db.a", 3)
    ]  # fmt: skip
    assert [c["path"] for c in loop["cycles"]] == [["prod.db.loop", "prod.db.loop"]]
    assert plain["cycles"] == []
    text = CliRunner().invoke(cli, ["deps", "db.top", "--db", str(db)])
    assert text.stdout.splitlines()[-4:] == [
        "cycles:",
        "  view       path                               view_ids",
        "  ---------  ---------------------------------  " + "-" * 112,
        "  prod.db.a  prod.db.a > prod.db.b > prod.db.a  " + ", ".join(a_b_a["view_ids"]),
    ]
    csv_run = CliRunner().invoke(cli, ["deps", "db.top", "--format", "csv", "--db", str(db)])
    assert csv_run.stderr.splitlines() == [
        "warning: views that read themselves through views: no engine can run them: prod.db.a "
        "(not in this table; --format text, json or markdown lists them)"
    ]


def test_commit_times_that_run_against_sequence_numbers_are_a_finding(tmp_path: Path) -> None:
    """Found by the eighth adversarial trial: files 00001 (v1, a=1), 00002 (a=2) and 00003 (v2, a=2)
    whose modification times ran backwards (a copy that did not keep them) gave a property change
    `a` 2 -> 1 that never happened, and `show` properties of 00001 with version 2, with no finding."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "reversed", "ea000000-0000-4000-8000-000000000001")
    view.properties["a"] = "1"
    first = view.commit(1000, "SELECT 1 AS x")
    view.properties["a"] = "2"
    second = view.commit(1100)
    third = view.commit(1200, "SELECT 2 AS x")
    for path, ms in ((first, 9000), (second, 8000), (third, 7000)):  # copied, times reversed
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        found = [(f["location"], f["message"]) for f in api.findings(conn, "commit-order-mismatch")]
    assert found == [
        (
            str(later),
            f"committed at {ms} ms (mtime), before {earlier} ({earlier_ms} ms), whose sequence number is "
            "lower: times copied over (a sync or copy that did not keep them)? Which file held the view when "
            "follows the times, a guess",
        )
        for later, ms, earlier, earlier_ms in ((second, 8000, first, 9000), (third, 7000, first, 9000))
    ]


def test_every_file_committed_before_a_file_of_a_lower_sequence_number_is_a_finding(tmp_path: Path) -> None:
    """Found by the twenty-first new-user trial: files 00003 to 00005 uploaded before 00000 to 00002
    (a copy in another order) flagged 00003 alone, each file being compared with the one before it;
    and two files of one sequence number (a competing commit) were said to have a lower one."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "copied", "ea000000-0000-4000-8000-000000000002")
    files = [view.commit(1000 + 100 * n, f"SELECT {n} AS x") for n in range(6)]
    for n, path in enumerate(files):  # 00003 to 00005 first, then the others, as a copy did
        ms = 5000 + 10 * n if n >= 3 else 9000 + 10 * n
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))
    twin = files[5].with_name(f"00005-{'0' * 8}-0000-4000-8000-000000000099.metadata.json")
    twin.write_bytes(files[5].read_bytes())  # a competing commit of 00005, committed after it
    os.utime(twin, ns=(5060 * 1_000_000, 5060 * 1_000_000))
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        found = sorted(
            (Path(f["location"]).name[:5], f["message"].split(", before ")[1].split(" (")[0])
            for f in api.findings(conn, "commit-order-mismatch")
        )
    assert found == [(f"0000{n}", str(files[2])) for n in (3, 4, 5, 5)]


def test_names_that_differ_only_in_unicode_normalization_are_a_finding(tmp_path: Path) -> None:
    """Found by the eighth adversarial trial: `db/café` in NFC and in NFD were two views of one
    look, and nothing said they differ."""
    root = tmp_path / "warehouse"
    composed, decomposed = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    View(root, "db", composed, "eb000000-0000-4000-8000-000000000001").commit(1000, "SELECT 1 AS x")
    View(root, "db", decomposed, "eb000000-0000-4000-8000-000000000002").commit(1000, "SELECT 2 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        found = [(f["view_id"], f["message"]) for f in api.findings(conn, "normalization-twin")]
    assert found == [
        (
            f"eb000000-0000-4000-8000-00000000000{mine}",
            f"its name prod.db.{name} and view eb000000-0000-4000-8000-00000000000{other}'s look the same "
            "but differ in Unicode normalization (NFC and NFD): engines take them as two names, and a read "
            "names the one whose bytes it has",
        )
        for mine, name, other in ((1, composed, 2), (2, decomposed, 1))
    ]


def test_a_copy_of_a_view_s_file_elsewhere_names_no_view(tmp_path: Path) -> None:
    """Found by the eighth adversarial trial: with `db/orders_v`'s file copied into
    `db/orders_v_backup/metadata/`, `show prod.db.orders_v_backup` answered for the view under the
    backup's name, and `search` listed it, though such a copy "neither names nor drops the view"."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "orders_v", "ec000000-0000-4000-8000-000000000001")
    original = view.commit(1000, "SELECT a FROM db.orders")
    backup = root / "db" / "orders_v_backup" / "metadata"
    backup.mkdir(parents=True)
    shutil.copy2(original, backup / original.name)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        with pytest.raises(
            UsageError, match=r"^no view 'prod\.db\.orders_v_backup' in the store; did you mean"
        ):
            api.show(conn, "prod.db.orders_v_backup")
        by_copy = api.show(conn, str(backup / original.name))
        found = search(conn, "orders_v")
    assert (by_copy["view"], by_copy["view_id"]) == ("prod.db.orders_v", view.uuid)
    assert [(r["name"], r["id"]) for r in found["results"]] == [("prod.db.orders_v", view.uuid)]


def test_copies_under_a_second_root_neither_hold_a_table_nor_split_a_view(tmp_path: Path) -> None:
    """Found by the thirteenth adversarial trial: a view's and a table's directories copied under
    a second indexed root (a backup, dated by when it was copied):
    - the copy of the table's older file, dated later, answered for the table while newer files
      stayed in place;
    - once the view's directory was removed, `show prod.db.v` was "ambiguous" between its name
      and the copy's, two names of one uuid."""
    root, backup = tmp_path / "warehouse", tmp_path / "backup"
    table = Table(
        root, "db", "events", "ee000000-0000-4000-8000-000000000001", schema=schema_of(("id", "int"))
    )
    table.commit(1000, 1)
    view = View(root, "db", "v", "ee000000-0000-4000-8000-000000000002")
    view.commit(1500, "SELECT id FROM db.events")
    for name in ("events", "v"):  # copied now: dated decades after the files in place
        shutil.copytree(root / "db" / name, backup / "db" / name)
    newer = table.commit(2000, 2)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    index_locations([str(backup)], settings_for(db))
    with open_reader(db) as conn:
        held = api.table(conn, "prod.db.events")
    assert (held["snapshot"]["snapshot_id"], held["properties_file"]) == (2, str(newer))
    shutil.rmtree(root / "db" / "v")
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        shown = [api.show(conn, name)["view_id"] for name in ("prod.db.v", "db.v")]
    assert shown == [view.uuid, view.uuid]


def test_a_read_with_no_namespace_is_asked_about_as_deps_prints_it(tmp_path: Path) -> None:
    """Found by the eighth adversarial trial: a view with no default namespace reading `lonely`
    showed `prod.lonely` in `deps`, and `uses prod.lonely` answered that no stored SQL reads it."""
    root = tmp_path / "warehouse"
    View(root, "db", "v", "ed000000-0000-4000-8000-000000000001").commit(
        1000, "SELECT a FROM lonely", **{"default-namespace": []}
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        printed = api.deps(conn, "db.v")["reads"][0]["table"]
        used = api.uses(conn, printed)
    assert printed == "prod.lonely"
    assert [(v["view"], v["match"]) for v in used["views"]] == [("prod.db.v", "exact")]


def test_version_ids_no_stored_file_lists_are_a_finding(tmp_path: Path) -> None:
    """A follower that missed the files of some replaces, which the view's metadata then expired
    (it keeps the last few versions), lost those versions for good, and nothing said so."""
    root = tmp_path / "warehouse"
    view = View(root, "db", "gappy", "ee000000-0000-4000-8000-000000000001")
    for ms in range(1000, 7000, 1000):
        view.commit(ms, f"SELECT {ms} AS x")
    files = sorted((root / "db" / "gappy" / "metadata").iterdir())
    for seen in files[:-1]:
        seen.unlink()  # indexed only the last, which keeps versions 1, 2 and 6 (3 to 5 expired)
    document = json.loads(files[-1].read_text())
    document["versions"] = [v for v in document["versions"] if v["version-id"] in (1, 2, 6)]
    document["version-log"] = [e for e in document["version-log"] if e["version-id"] in (1, 2, 6)]
    write(files[-1], document, 6000)
    # Found by the tenth adversarial trial: versions 1 and -2 gave "versions -1 to 0 never stored"
    negative = View(root, "db", "negative", "ee000000-0000-4000-8000-000000000002")
    negative.commit(1000, "SELECT 1 AS x")
    negative.commit(2000, "SELECT 2 AS x")
    newest = sorted((root / "db" / "negative" / "metadata").iterdir())[-1]
    numbered = json.loads(newest.read_text())
    numbered["versions"][1]["version-id"] = numbered["version-log"][1]["version-id"] = -2
    numbered["current-version-id"] = -2
    write(newest, numbered, 2000)
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        found = [(f["version_id"], f["message"]) for f in api.findings(conn, "version-gap")]
    assert found == [
        (
            6,
            "versions 3 to 5 of the view were never stored: no indexed file lists them (expired from its "
            "metadata before one was indexed, or in a file quarantined or never seen), if its writer numbers "
            "versions one by one, as Iceberg's Java library does",
        )
    ]


def test_a_view_created_again_is_asked_about_by_name_from_its_activation(tmp_path: Path) -> None:
    """Found by the ninth new-user trial: a view dropped and created again answered `show` by name
    as of its new version's activation (before its file's modification time) with "dropped ... ask
    as of an earlier time", while `uses` at that instant read the new view."""
    root = tmp_path / "warehouse"
    old = View(root, "db", "again", "f0000000-0000-4000-8000-000000000001")
    old_file = old.commit(1000, "SELECT a FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with Store(db, replica_interval=None) as store:
        store.write(Batch(removals=[Removal(str(old_file), 2000, "watch")]))
    old_file.unlink()
    new_file = View(root, "db", "again", "f0000000-0000-4000-8000-000000000002").commit(
        3000, "SELECT a FROM db.t"
    )
    os.utime(new_file, ns=(3100 * 1_000_000, 3100 * 1_000_000))  # written after the version it holds
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        shown = api.show(conn, "db.again", 3050)
        readers = [v["view_id"] for v in api.uses(conn, "db.t", 3050)["views"]]
    assert shown["view_id"] == readers[0] == "f0000000-0000-4000-8000-000000000002"
