// The lineage page: draws the embedded /api/graph answer with cytoscape.js and the dagre layout
// (sources left, readers right), and moves `as of` along the day slider.
"use strict";
const CHANGE_COLOURS = { added: "#1a7f37", removed: "#cf222e" };

function drawGraph(target) {
  const graph = JSON.parse(document.getElementById(target.dataset.graphId).textContent);
  const elements = [
    ...graph.nodes.map((node) => ({ data: { ...node }, classes: classesOf(node, graph) })),
    ...graph.edges.map((edge) => ({
      data: { ...edge, id: `${edge.source}->${edge.target}`, label: edge.match === "exact" ? "" : edge.match },
      classes: [edge.match === "exact" ? "" : edge.match === "unknown" ? "unknown" : "uncertain",
                edge.change || ""].join(" ").trim(),
    })),
  ];
  const cy = cytoscape({
    container: target,
    elements,
    layout: { name: "dagre", rankDir: "LR", nodeSep: 20, rankSep: 80 },
    style: [
      // A node as wide as its name (about 6.5 px a character at 11 px), as `width: "label"` did
      { selector: "node", style: { label: "data(label)", "font-size": 11, "text-valign": "center",
          "text-halign": "center", width: (node) => Math.max(24, node.data("label").length * 6.5),
          height: 24, padding: 8, "background-color": "#ddf4ff",
          "border-width": 1, "border-color": "#0969da", shape: "round-rectangle" } },
      { selector: "node.table", style: { shape: "rectangle", "background-color": "#f6f8fa", "border-color": "#59636e" } },
      { selector: "node.root", style: { "border-width": 3 } },
      { selector: "node.unknown", style: { "border-style": "dashed" } },
      { selector: "edge", style: { width: 1.5, "curve-style": "bezier", "target-arrow-shape": "triangle",
          label: "data(label)", "font-size": 9, "line-color": "#8c959f", "target-arrow-color": "#8c959f" } },
      { selector: "edge.uncertain", style: { "line-style": "dashed" } },
      { selector: "edge.unknown", style: { "line-style": "dotted" } },
      ...Object.entries(CHANGE_COLOURS).flatMap(([change, colour]) => [
        { selector: `node.${change}`, style: { "border-color": colour, "border-width": 2 } },
        { selector: `edge.${change}`, style: { "line-color": colour, "target-arrow-color": colour } },
      ]),
    ],
  });
  cy.on("tap", "node", (event) => {
    const node = event.target.data();
    window.location.href = node.kind === "view"
      ? `/view?${new URLSearchParams({ view: node.id })}`
      : `/lineage?${new URLSearchParams({ name: node.name, ...JSON.parse(target.dataset.keep || "{}") })}`;
  });
  window.lineageGraph = cy;
  target.setAttribute("data-drawn", "true");
}

function classesOf(node, graph) {
  return [node.kind, node.id === graph.root.id ? "root" : "", node.lineage === "unknown" ? "unknown" : "",
          node.change || ""].join(" ").trim();
}

const target = document.querySelector("[data-graph-id]");
if (target) {
  drawGraph(target);
}
const slider = document.getElementById("day-slider");
if (slider) {
  const days = slider.dataset.days.split(",");
  slider.addEventListener("input", () => {
    document.getElementById("day-shown").value = days[slider.value];
  });
  slider.addEventListener("change", () => {
    document.getElementById("as-of").value = `${days[slider.value]}T23:59:59.999Z`;
    document.getElementById("lineage-form").submit();
  });
}
