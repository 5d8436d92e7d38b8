// Search playground: query, recipe and k; each hit's relevance and why it was found (its
// rank in each route and in the route's own lists, the query terms it holds, the rules
// that moved it); a hit's source episodes with the exact characters it rests on highlighted.
import { api, ns, recipePicker, report } from "./app.js";
import { clear, field, h } from "./dom.js";
import { open } from "./episodes.js";

export async function render(main) {
  const query = h("input", { name: "query", size: 40, placeholder: "what to look for" });
  const recipe = recipePicker();
  const k = h("input", { name: "k", type: "number", min: 1, max: 200, value: 8, size: 4 });
  const hits = h("div", { id: "hits", class: "panel" });
  const sources = h("div", { id: "sources", class: "panel" }, h("p", { class: "muted" }, "Click a hit to see its sources."));
  const run = async (event) => {
    event.preventDefault();
    if (!query.value.trim()) return;
    const body = { query: query.value, k: Number(k.value) || 8 };
    if (recipe.value) body.recipe = recipe.value;
    performance.mark("search-start");
    const result = await api(ns("/search"), { method: "POST", body });
    clear(hits).append(
      h("p", { class: "muted" }, `${result.hits.length} hit(s)` + (result.pending ? `, ${result.pending} episode(s) not built yet` : "")),
    );
    result.hits.forEach((hit, i) => hits.append(card(hit, i, sources)));
    performance.mark("search-done");
  };
  main.append(
    h("h2", {}, "Search"),
    h("form", { class: "toolbar", id: "search-form", onsubmit: (e) => run(e).catch(report) },
      field("Query", query), field("Recipe", recipe), field("k", k), h("button", { type: "submit" }, "Search")),
    h("div", { class: "cols" }, hits, sources),
  );
  query.focus();
}

function card(hit, i, sources) {
  const ranks = Object.entries(hit.ranks || {}).map(([route, rank]) => h("span", { class: "chip rank" }, `${route} #${rank}`));
  const row = h(
    "div",
    { class: "row hit", "data-id": hit.id },
    h("div", {}, h("strong", {}, `${i + 1}. `), h("span", { class: "chip" }, hit.kind),
      h("span", { class: "score", title: "relevance to the query, 0..1, one scale for every query" }, `score ${hit.score.toFixed(3)}`)),
    h("div", { class: "text hit-text" }, hit.text),
    h("div", {}, ranks, h("span", { class: "muted" }, ` sources: ${hit.sources.join(", ")}`)),
    why(hit.why),
  );
  row.addEventListener("click", () => {
    row.parentElement.querySelectorAll(".selected").forEach((r) => r.classList.remove("selected"));
    row.classList.add("selected");
    showSources(sources, hit.sources, hit.spans || []).catch(report);
  });
  return row;
}

// Why a hit was found: its rank in each of its route's lists, the query terms it holds,
// the rules that moved it (the share of its score each added or took away), its cosine.
function why(reason) {
  if (!reason) return null;
  const lists = Object.entries(reason.lists || {}).map(([name, rank]) => h("span", { class: "chip list" }, `${name} #${rank}`));
  const terms = reason.terms.map((t) => h("span", { class: "chip term" }, t));
  const moved = reason.moved.map((m) => h("span", { class: m.effect < 0 ? "chip rule lowered" : "chip rule" }, `${m.rule} ${m.effect > 0 ? "+" : ""}${m.effect.toFixed(2)}`));
  const cosine = reason.similarity === null ? "" : `cosine ${reason.similarity.toFixed(2)} · `;
  return h("div", { class: "why muted" },
    lists.length ? h("span", {}, "lists: ", lists) : null,
    h("span", {}, " terms: ", terms.length ? terms : "none"),
    moved.length ? h("span", {}, " moved by: ", moved) : null,
    h("span", { class: "fused" }, ` (${cosine}fused ${reason.fused.toFixed(4)})`));
}

// Each source episode with the spans of `spans` on it highlighted.
export async function showSources(panel, ids, spans) {
  clear(panel);
  for (const id of ids) {
    const one = h("div", { class: "source", "data-episode": id });
    panel.append(one);
    await open(one, id, spans);
  }
}
