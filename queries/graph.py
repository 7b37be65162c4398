"""Lineage as a graph at a time: what a view reads, through views, and the views that read a view or
table, through views; each edge as sure as its reference (`match`), views whose lineage is unknown
drawn as such; and what changed between two times. JSON for programs and the web UI, Graphviz dot
and Mermaid for docs and tickets.

Edges point the way data flows: `source` is read by `target`.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb

from viewlineage.indexer.errors import UsageError
from viewlineage.queries import api
from viewlineage.queries.names import FOREVER_MS, dotted, iso, query_rows, tables_named, views_named

GRAPH_FORMATS = ("json", "dot", "mermaid")
UNKNOWN = "unknown"
"""The `match` of an edge to a view whose lineage is unknown: it may read the source, or not."""
_SURENESS = (*api.MATCHES, UNKNOWN)


@dataclass(frozen=True)
class _Read:
    reader: str
    source: str
    match: str


class _Lineage:
    """Every current view's reads at one time, walked both ways."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, at: int) -> None:
        self.names = {
            row["view_id"]: row["name"]
            for row in query_rows(
                conn,
                "SELECT view_id, CASE WHEN name_path IS NULL THEN view_id "
                "ELSE path_name(catalog, name_path) END AS name FROM view_heads_as_of(?)",
                [at],
            )
        }
        self.unknown = {row["view_id"] for row in api.lineage_unknown(conn, at)}
        self.absent: set[str] = set()
        self.reads_of: dict[str, list[_Read]] = {}
        self.readers_of: dict[str, list[_Read]] = {}
        for row in query_rows(
            conn,
            "SELECT DISTINCT view_id, catalog, namespace, table_name, target_view_id, read_match "
            "FROM view_reads_as_of(?)",
            [at],
        ):
            source = row["target_view_id"] or dotted([row["catalog"], *row["namespace"], row["table_name"]])
            read = _Read(row["view_id"], source, api.MATCHES[row["read_match"] or 0])
            self.reads_of.setdefault(read.reader, []).append(read)
            self.readers_of.setdefault(read.source, []).append(read)


def lineage_graph(
    conn: duckdb.DuckDBPyConnection,
    ref: str,
    as_of_ms: int | None = None,
    depth: int | None = None,
    allow_absent: bool = False,
) -> dict[str, Any]:
    """The graph around view or table `ref` at `as_of_ms` (default: the latest state), `depth`
    steps up and down (default: all). A view that was not current then (not created yet, or
    dropped) is an error, or with `allow_absent` (comparing two times) a lone node of no lineage."""
    if depth is not None and depth < 1:
        raise UsageError(f"depth is 1 or more, not {depth}")
    at = FOREVER_MS if as_of_ms is None else as_of_ms
    catalog, reference = api.read_target(conn, ref, at)
    lineage = _Lineage(conn, at)
    named = views_named(conn, ref, at) if not tables_named(conn, ref, at) else []
    root = named[0]["view_id"] if named else dotted([catalog, *reference])
    if named and root not in lineage.names:  # not current at `at` (before it was created, or dropped)
        name = dotted([named[0]["catalog"], *named[0]["name"]])
        if not allow_absent:
            raise UsageError(
                f"view {name} was not current at {iso(as_of_ms) or 'the latest state'} (not created yet, "
                "or dropped): ask as of another time, or compare two times"
            )
        lineage.names[root] = name
        lineage.absent.add(root)
    direct = query_rows(
        conn,
        "SELECT DISTINCT view_id, match FROM uses_as_of(?, ?, ?) WHERE depth = 1",
        [catalog, reference, at],
    )
    if root not in lineage.names and not direct and not api.is_named(conn, reference):
        api.uses(conn, ref, as_of_ms)  # raises: no such name, with candidates
    # The root's readers: by its name (a table's, or a view's as other views' SQL names it), and,
    # when it is a view, the reads other views resolved to it.
    readers = [_Read(row["view_id"], root, row["match"]) for row in direct if row["view_id"] != root]
    readers += [read for read in lineage.readers_of.get(root, []) if read.reader != root]
    readers += [_Read(view_id, root, UNKNOWN) for view_id in sorted(lineage.unknown - {root})]
    up = _walk(root, lambda node: lineage.reads_of.get(node, []), lambda read: read.source, depth)
    down = _walk(
        root,
        lambda node: readers if node == root else lineage.readers_of.get(node, []),
        lambda read: read.reader,
        depth,
    )
    edges: dict[tuple[str, str], str] = {}
    for read in [*up[1], *down[1]]:  # a read found twice (by name and resolved): its surest match
        known = edges.get((read.source, read.reader))
        if known is None or _SURENESS.index(read.match) < _SURENESS.index(known):
            edges[(read.source, read.reader)] = read.match
    nodes = {root: 0} | {node: -d for node, d in up[0].items()} | dict(down[0])
    return _labelled(
        {
            "root": _node(root, lineage),
            "as_of_ms": as_of_ms,
            "as_of": iso(as_of_ms),
            "depth": depth,
            "nodes": [
                _node(node, lineage) | {"level": level} for node, level in sorted(nodes.items(), key=_order)
            ],
            "edges": [
                {"source": source, "target": target, "match": match}
                for (source, target), match in sorted(edges.items())
            ],
            "uncertain": sum(match != "exact" for match in edges.values()),
        }
    )


def _walk(
    root: str, steps: Callable[[str], list[_Read]], next_node: Callable[[_Read], str], depth: int | None
) -> tuple[dict[str, int], list[_Read]]:
    """Breadth first from `root`: each node reached with its distance, and the edges taken (every
    edge between reached nodes, cycles included)."""
    reached, taken, queue = {root: 0}, list[_Read](), deque([root])
    while queue:
        node = queue.popleft()
        if depth is not None and reached[node] >= depth:
            continue
        for read in steps(node):
            taken.append(read)
            found = next_node(read)
            if found not in reached:
                reached[found] = reached[node] + 1
                queue.append(found)
    del reached[root]
    return reached, taken


def _order(item: tuple[str, int]) -> tuple[int, str]:
    return item[1], item[0]


def _node(node: str, lineage: _Lineage) -> dict[str, Any]:
    if node in lineage.names:
        return {
            "id": node,
            "name": lineage.names[node],
            "kind": "view",
            "lineage": UNKNOWN if node in lineage.unknown else None if node in lineage.absent else "known",
            "current": node not in lineage.absent,
        }
    return {"id": node, "name": node, "kind": "table", "lineage": None, "current": None}


def lineage_answer(
    conn: duckdb.DuckDBPyConnection,
    ref: str,
    as_of_ms: int | None = None,
    depth: int | None = None,
    compare_ms: int | None = None,
) -> dict[str, Any]:
    """`lineage_graph` at `as_of_ms`; with `compare_ms`, `compared` from that time to `as_of_ms`
    (the view may be absent at either): what `graph` and `/api/graph` answer."""
    if compare_ms is None:
        return lineage_graph(conn, ref, as_of_ms, depth)
    answer = compared(
        lineage_graph(conn, ref, compare_ms, depth, allow_absent=True),
        lineage_graph(conn, ref, as_of_ms, depth, allow_absent=True),
    )
    # A removed view is drawn from the earlier graph: whether it is still current at the later time
    # (it no longer reads or is read on the way), or was dropped by then, is asked of that time.
    removed = [
        node["id"] for node in answer["nodes"] if node["change"] == "removed" and node["kind"] == "view"
    ]
    if removed:
        at = FOREVER_MS if as_of_ms is None else as_of_ms
        current = query_rows(
            conn, "SELECT view_id FROM view_heads_as_of(?) WHERE list_contains(?, view_id)", [at, removed]
        )
        still = {row["view_id"] for row in current}
        for node in answer["nodes"]:
            if node["id"] in removed:
                node["current"] = node["id"] in still
    return answer


def _labelled(graph: dict[str, Any]) -> dict[str, Any]:
    """Each node with its `label`: its name, and where two nodes have one name (one view dropped and
    one created again at its path), the start of its uuid too."""
    held = Counter(node["name"] for node in graph["nodes"])
    for node in graph["nodes"]:
        node["label"] = node["name"] if held[node["name"]] == 1 else f"{node['name']} ({node['id'][:8]})"
    return graph


def compared(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """`after` with `before`'s nodes and edges it lacks, each marked `change`: `added` (only in
    `after`), `removed` (only in `before`) or `kept`; an edge whose match changed is `kept` with
    `match_before`."""
    # A view not current at a time (before its creation, after its drop) is a node of neither graph.
    old_nodes = {node["id"]: node for node in before["nodes"] if node["current"] is not False}
    new_nodes = {node["id"]: node for node in after["nodes"] if node["current"] is not False}
    old_edges = {(edge["source"], edge["target"]): edge for edge in before["edges"]}
    new_edges = {(edge["source"], edge["target"]): edge for edge in after["edges"]}
    nodes = [
        node
        | {"change": "kept" if node["id"] in old_nodes else "added" if node["id"] in new_nodes else "absent"}
        for node in after["nodes"]
    ]
    nodes += [node | {"change": "removed"} for key, node in old_nodes.items() if key not in new_nodes]
    edges = []
    for key, edge in new_edges.items():
        if key not in old_edges:
            edges.append(edge | {"change": "added"})
        elif old_edges[key]["match"] != edge["match"]:
            edges.append(edge | {"change": "kept", "match_before": old_edges[key]["match"]})
        else:
            edges.append(edge | {"change": "kept"})
    edges += [edge | {"change": "removed"} for key, edge in old_edges.items() if key not in new_edges]
    edges.sort(key=lambda edge: (edge["source"], edge["target"]))
    return _labelled(
        after
        | {
            "compare_as_of_ms": before["as_of_ms"],
            "compare_as_of": before["as_of"],
            "nodes": nodes,
            "edges": edges,
            "added": {
                "nodes": sum(n["change"] == "added" for n in nodes),
                "edges": sum(e["change"] == "added" for e in edges),
            },
            "removed": {
                "nodes": sum(n["change"] == "removed" for n in nodes),
                "edges": sum(e["change"] == "removed" for e in edges),
            },
        }
    )


_CHANGE_COLOURS = {"added": "darkgreen", "removed": "red"}
"""Colour names Graphviz and CSS (Mermaid) both know."""


def to_dot(graph: dict[str, Any]) -> str:
    """Graphviz: tables as boxes, views as ellipses (dashed: lineage unknown), uncertain edges
    dashed and labelled with their match; in a comparison, added green and removed red."""
    lines = ["digraph lineage {", "  rankdir=LR;", '  node [fontname="Helvetica"];']
    for node in graph["nodes"]:
        style = ["shape=box" if node["kind"] == "table" else "shape=ellipse"]
        if node["lineage"] == UNKNOWN:
            style.append('style=dashed, xlabel="lineage unknown"')
        if node["id"] == graph["root"]["id"]:
            style.append("penwidth=2")
        style += _colour(node)
        lines.append(f"  {_dot_id(node['id'])} [label={_dot_id(node['label'])}, {', '.join(style)}];")
    for edge in graph["edges"]:
        style = []
        if edge["match"] != "exact":
            style.append(f"style={'dotted' if edge['match'] == UNKNOWN else 'dashed'}")
            style.append(f"label={_dot_id(edge['match'])}")
        style += _colour(edge)
        attributes = f" [{', '.join(style)}]" if style else ""
        lines.append(f"  {_dot_id(edge['source'])} -> {_dot_id(edge['target'])}{attributes};")
    lines.append("}")
    return "\n".join(lines)


def _colour(item: dict[str, Any]) -> list[str]:
    colour = _CHANGE_COLOURS.get(item.get("change", ""))
    return [f"color={colour}", f"fontcolor={colour}"] if colour else []


def _dot_id(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a double-quoted dot ID takes JSON's escapes


def to_mermaid(graph: dict[str, Any]) -> str:
    """A Mermaid flowchart: tables as rectangles, views rounded (lineage unknown: a note in the
    label), uncertain edges dotted with their match; in a comparison, added green, removed red."""
    ids = {node["id"]: f"n{i}" for i, node in enumerate(graph["nodes"])}
    lines = ["flowchart LR"]
    for node in graph["nodes"]:
        label = _mermaid_label(node["label"] + (" (lineage unknown)" if node["lineage"] == UNKNOWN else ""))
        lines.append(
            f"  {ids[node['id']]}{'[' + label + ']' if node['kind'] == 'table' else '(' + label + ')'}"
        )
    styles = []
    for i, edge in enumerate(graph["edges"]):
        arrow = "-->" if edge["match"] == "exact" else f"-.->|{_mermaid_label(edge['match'])}|"
        lines.append(f"  {ids[edge['source']]} {arrow} {ids[edge['target']]}")
        if colour := _CHANGE_COLOURS.get(edge.get("change", "")):
            styles.append(f"  linkStyle {i} stroke:{colour}")
    for node in graph["nodes"]:
        if colour := _CHANGE_COLOURS.get(node.get("change", "")):
            styles.append(f"  style {ids[node['id']]} stroke:{colour}")
    return "\n".join(lines + styles)


def _mermaid_label(text: str) -> str:
    # Mermaid takes a quoted label with `#quot;` for a quote; `#` starts an entity; it renders
    # labels as HTML, so `<` and `>` are entities too (a name holding `<img onerror=...>`).
    escaped = text.replace("#", "#35;").replace('"', "#quot;").replace("<", "#60;").replace(">", "#62;")
    return f'"{escaped}"'


def edge_rows(graph: dict[str, Any]) -> dict[str, Any]:
    """The graph as a record whose `edges` name their ends by their nodes' labels (for text, csv and
    markdown)."""
    names = {node["id"]: node["label"] for node in graph["nodes"]}
    edges = [
        {"source": names[edge["source"]], "target": names[edge["target"]]}
        | {key: value for key, value in edge.items() if key not in ("source", "target")}
        for edge in graph["edges"]
    ]
    edges.sort(key=lambda edge: (edge["source"], edge["target"], edge.get("change", "")))
    shown = {"root": graph["root"]["name"], "lineage": graph["root"]["lineage"], "as_of": graph["as_of"]}
    if "compare_as_of" in graph:
        shown |= {
            "compare_as_of": graph["compare_as_of"],
            "added": graph["added"],
            "removed": graph["removed"],
        }
    return shown | {"edges": edges, "uncertain": graph["uncertain"]}
