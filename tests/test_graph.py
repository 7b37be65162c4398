"""`graph`: lineage around a view or table at a time, compared between two times, as JSON, a
table, Graphviz dot and Mermaid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.rows import Batch, Removal
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.queries import api, graph
from viewlineage.queries.cli import cli
from viewlineage.queries.web import api as web_api
from viewlineage.sinks.readers import open_reader
from viewlineage.sinks.store import Store

from .conftest import settings_for
from .metadata_files import Table, View, schema_of

A, B, C, D = (f"9a000000-0000-4000-8000-00000000000{letter}" for letter in "abcd")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Table db.t; at 1,000: view a reads it, b reads a, c reads `other.db.t` (a leading part more:
    uncertain), d does not parse (lineage unknown); at 2,000, b reads db.t instead of a."""
    root = tmp_path_factory.mktemp("graph") / "warehouse"
    Table(root, "db", "t", "9a000000-0000-4000-8000-000000000001").commit(500, 1)
    View(root, "db", "a", A).commit(1000, "SELECT * FROM db.t")
    b = View(root, "db", "b", B)
    b.commit(1000, "SELECT * FROM db.a")
    View(root, "db", "c", C).commit(1000, "SELECT * FROM other.db.t")
    View(root, "db", "d", D).commit(1000, "SELEC x FROM")
    b.commit(2000, "SELECT id FROM db.t")
    db = root.parent / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    return db


def edges(answer: dict[str, object]) -> list[tuple[str, ...]]:
    return [tuple(edge.values()) for edge in answer["edges"]]  # type: ignore[attr-defined]


def test_a_tables_readers_at_a_time(store: Path) -> None:
    with open_reader(store) as conn:
        answer = graph.lineage_graph(conn, "db.t", 1500)
    assert answer["root"] == {
        "id": "lake.db.t",
        "name": "lake.db.t",
        "kind": "table",
        "lineage": None,
        "current": None,
    }
    assert [(n["name"], n["kind"], n["lineage"], n["level"]) for n in answer["nodes"]] == [
        ("lake.db.t", "table", None, 0),
        ("lake.db.a", "view", "known", 1),
        ("lake.db.c", "view", "known", 1),
        ("lake.db.d", "view", "unknown", 1),
        ("lake.db.b", "view", "known", 2),
    ]
    assert edges(answer) == [
        (A, B, "exact"),
        ("lake.db.t", A, "exact"),
        ("lake.db.t", C, "leading-part"),
        ("lake.db.t", D, "unknown"),
    ]
    assert answer["uncertain"] == 2


def test_depth_and_a_views_both_sides(store: Path) -> None:
    with open_reader(store) as conn:
        assert edges(graph.lineage_graph(conn, "db.t", 1500, depth=1)) == [
            ("lake.db.t", A, "exact"),
            ("lake.db.t", C, "leading-part"),
            ("lake.db.t", D, "unknown"),
        ]
        around_a = graph.lineage_graph(conn, "lake.db.a", 1500)
    assert [(n["name"], n["level"]) for n in around_a["nodes"]] == [
        ("lake.db.t", -1),
        ("lake.db.a", 0),
        ("lake.db.b", 1),
        ("lake.db.d", 1),
    ]
    assert edges(around_a) == [(A, B, "exact"), (A, D, "unknown"), ("lake.db.t", A, "exact")]


def test_compare_marks_what_changed_between_two_times(store: Path) -> None:
    with open_reader(store) as conn:
        answer = graph.compared(
            graph.lineage_graph(conn, "db.t", 1500), graph.lineage_graph(conn, "db.t", 2500)
        )
    assert [(e["source"], e["target"], e["change"]) for e in answer["edges"]] == [
        (A, B, "removed"),
        ("lake.db.t", A, "kept"),
        ("lake.db.t", B, "added"),
        ("lake.db.t", C, "kept"),
        ("lake.db.t", D, "kept"),
    ]
    assert (answer["added"], answer["removed"]) == ({"nodes": 0, "edges": 1}, {"nodes": 0, "edges": 1})
    assert (answer["as_of_ms"], answer["compare_as_of_ms"]) == (2500, 1500)
    assert graph.to_mermaid(answer) == "\n".join(
        [
            "flowchart LR",
            '  n0["lake.db.t"]',
            '  n1("lake.db.a")',
            '  n2("lake.db.b")',
            '  n3("lake.db.c")',
            '  n4("lake.db.d (lineage unknown)")',
            "  n1 --> n2",
            "  n0 --> n1",
            "  n0 --> n2",
            '  n0 -.->|"leading-part"| n3',
            '  n0 -.->|"unknown"| n4',
            "  linkStyle 0 stroke:red",
            "  linkStyle 2 stroke:darkgreen",
        ]
    )


def test_a_view_before_it_existed_is_a_lone_node(store: Path) -> None:
    with open_reader(store) as conn:
        before = graph.lineage_graph(conn, "db.b", 900, allow_absent=True)
        after = graph.lineage_graph(conn, "db.b", 1500, allow_absent=True)
        answer = graph.compared(before, after)
        with pytest.raises(
            UsageError, match=r"view lake\.db\.b was not current at 1970-01-01T00:00:00\.900Z"
        ):
            graph.lineage_graph(conn, "db.b", 900)  # asked alone, not compared (the fifth new-user trial)
    assert (before["root"]["current"], before["edges"]) == (False, [])
    assert [(n["name"], n["change"]) for n in answer["nodes"]] == [  # b is new too (the fifth trial)
        ("lake.db.t", "added"),
        ("lake.db.a", "added"),
        ("lake.db.b", "added"),
        ("lake.db.d", "added"),
    ]


def test_dot_draws_kinds_matches_and_changes(store: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["graph", "db.c", "--as-of", "1500ms", "--compare", "900ms", "--format", "dot", "--db", str(store)],
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "digraph lineage {",
        "  rankdir=LR;",
        '  node [fontname="Helvetica"];',
        '  "lake.other.db.t" [label="lake.other.db.t", shape=box, color=darkgreen, fontcolor=darkgreen];',
        f'  "{C}" [label="lake.db.c", shape=ellipse, penwidth=2, color=darkgreen, fontcolor=darkgreen];',
        f'  "{D}" [label="lake.db.d", shape=ellipse, style=dashed, xlabel="lineage unknown", '
        "color=darkgreen, fontcolor=darkgreen];",
        f'  "{C}" -> "{D}" [style=dotted, label="unknown", color=darkgreen, fontcolor=darkgreen];',
        f'  "lake.other.db.t" -> "{C}" [style=dashed, label="leading-part", '
        "color=darkgreen, fontcolor=darkgreen];",
        "}",
    ]


def test_text_and_csv_name_the_ends(store: Path) -> None:
    result = CliRunner().invoke(
        cli, ["graph", "db.t", "--as-of", "2500ms", "--format", "csv", "--db", str(store)]
    )
    assert result.output.splitlines() == [
        "source,target,match",
        "lake.db.t,lake.db.a,exact",
        "lake.db.t,lake.db.b,exact",
        "lake.db.t,lake.db.c,leading-part",
        "lake.db.t,lake.db.d,unknown",
    ]
    with open_reader(store) as conn:  # found by the fifth adversarial trial: the API's CSV gave ids
        over_http = web_api.answer_on(
            conn, 10, "graph", [("name", "db.t"), ("as_of", "2500ms"), ("format", "csv")]
        )
        nodes = web_api.answer_on(conn, 10, "graph", [("name", "db.t"), ("format", "csv"), ("rows", "nodes")])
    assert over_http.csv is not None and over_http.csv.splitlines() == result.output.splitlines()
    assert nodes.csv is not None and nodes.csv.splitlines()[0].startswith("id,")


def test_unknown_names_and_bad_depths_are_refused(store: Path) -> None:
    with open_reader(store) as conn, pytest.raises(UsageError, match="did you mean") as raised:
        graph.lineage_graph(conn, "db.tt")
    assert "no table or view 'db.tt'" in str(raised.value)
    result = CliRunner().invoke(cli, ["graph", "db.t", "--depth", "0", "--db", str(store)])
    assert result.exit_code == 2 and "0 is not in the range x>=1" in result.output


def test_text_says_a_roots_lineage_is_unknown(store: Path) -> None:
    result = CliRunner().invoke(cli, ["graph", "db.d", "--as-of", "1500ms", "--db", str(store)])
    assert result.output.splitlines() == [
        "root: lake.db.d",
        "lineage: unknown",
        "as_of: 1970-01-01T00:00:01.500Z",
        "edges: (no rows)",
        "uncertain: 0",
    ]


def test_a_removed_view_says_whether_it_is_still_current(tmp_path: Path) -> None:
    """Found by the sixth new-user trial: a view dropped before the later time was `current: true`
    among the removed nodes (taken from the earlier graph)."""
    root = tmp_path / "warehouse"
    Table(root, "db", "t", "9b000000-0000-4000-8000-000000000001").commit(500, 1)
    dropped = View(root, "db", "gone", "9b000000-0000-4000-8000-000000000002").commit(
        1000, "SELECT * FROM db.t"
    )
    moved = View(root, "db", "moved", "9b000000-0000-4000-8000-000000000003")
    moved.commit(1000, "SELECT * FROM db.t")
    moved.commit(2000, "SELECT 1 AS x")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with Store(db, replica_interval=None) as writer:
        writer.write(Batch(removals=[Removal(str(dropped), 2000, "watch")]))
    with open_reader(db) as conn:
        answer = graph.lineage_answer(conn, "db.t", 2500, None, 1500)
    assert [(n["name"], n["change"], n["current"]) for n in answer["nodes"]] == [
        ("lake.db.t", "kept", None),
        ("lake.db.gone", "removed", False),
        ("lake.db.moved", "removed", True),
    ]


def test_mermaid_labels_hold_no_html(tmp_path: Path) -> None:
    """Found by the eighth adversarial trial: Mermaid renders labels as HTML, and a view named
    `<img src=x onerror=alert(1)>` went into one as it is."""
    root = tmp_path / "warehouse"
    View(root, "db", "<img src=x onerror=alert(1)>", "cf000000-0000-4000-8000-000000000001").commit(
        1000, "SELECT a FROM db.base"
    )
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    drawn = CliRunner().invoke(cli, ["graph", "db.base", "--format", "mermaid", "--db", str(db)])
    assert drawn.stdout.splitlines()[1:3] == [
        '  n0["db.base"]',
        '  n1("lake.db.#60;img src=x onerror=alert(1)#62;")',
    ]


def test_a_view_created_again_at_its_path_is_told_apart_in_text(tmp_path: Path) -> None:
    """Found by the tenth new-user trial: `graph --compare` around a view dropped and created again
    at its path listed the same "added" and "removed" edge in text; only JSON's ids told them apart."""
    root = tmp_path / "warehouse"
    Table(root, "db", "t", "9c000000-0000-4000-8000-000000000001").commit(500, 1)
    first = View(root, "db", "v", "9c100000-0000-4000-8000-000000000002").commit(1000, "SELECT * FROM db.t")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    with Store(db, replica_interval=None) as writer:
        writer.write(Batch(removals=[Removal(str(first), 2000, "watch")]))
    View(root, "db", "v", "9c200000-0000-4000-8000-000000000003").commit(3000, "SELECT * FROM db.t")
    index_locations([str(root)], settings_for(db, f"{root}=lake"))
    text = CliRunner().invoke(
        cli, ["graph", "db.t", "--as-of", "3500ms", "--compare", "1500ms", "--format", "csv", "--db", str(db)]
    )
    assert [line.split(",")[:2] + line.split(",")[-1:] for line in text.stdout.splitlines()] == [
        ["source", "target", "change"],
        ["lake.db.t", "lake.db.v (9c100000)", "removed"],
        ["lake.db.t", "lake.db.v (9c200000)", "added"],
    ]
    # Found by the twentieth new-user trial: the page drew two nodes labelled `lake.db.v`, and its
    # nodes table and the dot and mermaid drawings named them alike too.
    answer = CliRunner().invoke(
        cli,
        ["graph", "db.t", "--as-of", "3500ms", "--compare", "1500ms", "--format", "json", "--db", str(db)],
    )
    labels = [(node["label"], node["change"]) for node in json.loads(answer.stdout)["nodes"]]
    assert labels == [
        ("lake.db.t", "kept"),
        ("lake.db.v (9c200000)", "added"),
        ("lake.db.v (9c100000)", "removed"),
    ]
    dot = CliRunner().invoke(
        cli, ["graph", "db.t", "--as-of", "3500ms", "--compare", "1500ms", "--format", "dot", "--db", str(db)]
    )
    assert 'label="lake.db.v (9c100000)"' in dot.stdout and 'label="lake.db.v (9c200000)"' in dot.stdout


def test_a_name_two_tables_share_is_drawn_and_asked_about_as_a_guess(tmp_path: Path) -> None:
    """Found by the thirteenth new-user trial: with `shop.Sales` and `shop.sales` two tables (a
    JDBC catalog keeps them apart), a view's read was `exact` in `graph` and `deps`, and the graph
    of the name, which the web UI links its table nodes to, was refused as ambiguous."""
    root = tmp_path / "warehouse"
    columns = schema_of(("id", "int"))
    Table(root, "shop", "Sales", "d5000000-0000-4000-8000-000000000001", schema=columns).commit(1000, 1)
    Table(root, "shop", "sales", "d5000000-0000-4000-8000-000000000002", schema=columns).commit(1000, 2)
    View(root, "shop", "v", "d5000000-0000-4000-8000-000000000003").commit(2000, "SELECT id FROM shop.Sales")
    db = tmp_path / "store.duckdb"
    index_locations([str(root)], settings_for(db, f"{root}=prod"))
    with open_reader(db) as conn:
        up = graph.lineage_graph(conn, "prod.shop.v")
        down = graph.lineage_graph(conn, "prod.shop.sales")
        read = api.deps(conn, "prod.shop.v")["reads"]
        used = api.uses(conn, "shop.sales")
    view = "d5000000-0000-4000-8000-000000000003"
    assert (
        up["edges"]
        == down["edges"]
        == [{"source": "prod.shop.sales", "target": view, "match": "shared-name"}]
    )
    assert (up["uncertain"], down["uncertain"]) == (1, 1)
    assert [(r["table"], r["match"]) for r in read] == [("prod.shop.sales", "shared-name")]
    assert [(v["view"], v["match"]) for v in used["views"]] == [("prod.shop.v", "shared-name")]
