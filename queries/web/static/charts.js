// Draws every chart a page embeds: <div data-spec-id="ID"> and <script type="application/json" id="ID">.
"use strict";
for (const target of document.querySelectorAll("[data-spec-id]")) {
  const spec = JSON.parse(document.getElementById(target.dataset.specId).textContent);
  vegaEmbed(target, spec, { actions: false, renderer: "svg" })
    .then(() => target.setAttribute("data-drawn", "true"))
    .catch((error) => console.error("chart", target.id, error));
}
