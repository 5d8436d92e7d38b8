// Designs: each design's own pictures of its records (GET .../views), drawn as a
// graph or a tree, cut to a limit; a node's details, sources and neighbourhood.
// "#designs/VIEW?limit=N&depth=D&focus=ID&ns=NS" opens one view directly (a link to share,
// and what benchmarks load); the page sets performance marks "view-fetched" and
// "view-drawn" (after the next paint) and #view-area[data-drawn] once it is shown.
import { api, enc, here, link, ns, report } from "./app.js";
import { clear, field, h, pairs } from "./dom.js";
import { colour, drawGraph } from "./draw.js";
import { showSources } from "./search.js";

const DEFAULT_LIMIT = 150;
const MAX_LIMIT = 5000;
// edges listed under a graph, at most (all are drawn): ten thousand list items cost a
// second to lay out and nobody reads them
const EDGE_LIST = 500;

// The view and query a "#designs/VIEW?..." link names.
function linked() {
  const { path, params } = here();
  return [decodeURIComponent(path.split("/")[1] || ""), params];
}

// Resolves once the browser has laid out and painted what was just added.
function painted() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

export async function render(main) {
  const { views } = await api(ns("/views"));
  main.append(h("h2", {}, "Designs"));
  if (!views.length) {
    main.append(h("p", { class: "muted" }, "No design has built records in this namespace yet."));
    return;
  }
  const tabs = h("div", { class: "toolbar", id: "view-tabs" });
  const [wanted, params] = linked();
  const limit = h("input", { name: "limit", type: "number", min: 1, max: MAX_LIMIT, value: params.get("limit") || DEFAULT_LIMIT, size: 5 });
  const depth = h("input", { name: "depth", type: "number", min: 0, max: 64, value: params.get("depth") || "", size: 3, placeholder: "all" });
  const area = h("div", { id: "view-area" });
  let current = views.find((v) => v.name === wanted) || views[0];
  let focus = params.get("focus");
  const load = async () => {
    const query = { limit: limit.value };
    if (focus) query.focus = focus;
    if (depth.value !== "") query.depth = depth.value;
    delete area.dataset.drawn;
    const view = await api(ns(`/views/${enc(current.name)}`), { query });
    performance.mark("view-fetched", { detail: current.name });
    tabs.querySelectorAll("button").forEach((b) => b.classList.toggle("active", b.dataset.view === current.name));
    history.replaceState(null, "", link(`designs/${enc(current.name)}`, query));
    draw(clear(area), view, (id) => {
      focus = id;
      load().catch(report);
    });
    await painted();
    area.dataset.drawn = current.name;
    performance.mark("view-drawn", { detail: current.name });
  };
  for (const v of views) {
    tabs.append(h("button", { type: "button", "data-view": v.name, title: v.description, onclick: () => {
      current = v;
      focus = null;
      load().catch(report);
    } }, `${v.design}: ${v.title}`));
  }
  const top = () => {
    focus = null;
    load().catch(report);
  };
  main.append(
    tabs,
    h("div", { class: "toolbar" }, field("Nodes at most", limit), field("Tree depth", depth),
      h("button", { type: "button", onclick: () => load().catch(report) }, "Redraw"), h("button", { type: "button", onclick: top }, "From the top")),
    area,
  );
  await load();
}

function draw(area, view, refocus) {
  const shown = `${view.nodes.length} of ${view.total_nodes} nodes` + (view.layout === "graph" ? `, ${view.edges.length} of ${view.total_edges} edges` : "");
  area.append(h("p", { class: "muted", id: "view-summary" }, `${view.title} — ${shown}${view.truncated ? " (cut: focus a node to see its neighbourhood)" : ""}${view.focus ? ` around ${view.focus}` : ""}`));
  const details = h("div", { class: "panel", id: "node-detail" }, h("p", { class: "muted" }, "Click a node."));
  const pick = (node) => showNode(details, node, refocus);
  if (view.layout === "graph") {
    const names = new Map(view.nodes.map((n) => [n.id, n.label]));
    const edges = view.edges.slice(0, EDGE_LIST).map((e) => {
      const item = h("li", { class: e.invalid ? "edge invalid" : "edge" }, `${names.get(e.source)} → ${names.get(e.target)}: ${e.text || e.label}`,
        e.invalid ? h("span", { class: "chip" }, "superseded") : null);
      item.addEventListener("click", () => showEdge(details, e, names));
      return item;
    });
    area.append(
      h("div", { class: "cols" }, drawGraph(view, pick), details),
      h("h3", {}, "Edges"),
      h("ul", { id: "edge-list" }, edges),
      view.edges.length > EDGE_LIST ? h("p", { class: "muted", id: "edges-unlisted" }, `${view.edges.length - EDGE_LIST} more edges drawn, not listed (focus a node to list its own).`) : null,
    );
  } else {
    area.append(h("div", { class: "cols" }, h("div", { class: "panel tree", id: "tree" }, treeList(view, pick)), details));
  }
  legend(area, view);
}

function treeList(view, pick) {
  const kids = new Map();
  for (const n of view.nodes) {
    if (!kids.has(n.parent)) kids.set(n.parent, []);
    kids.get(n.parent).push(n);
  }
  const list = (parent) => h("ul", {}, (kids.get(parent) || []).map((n) => {
    const label = h("span", { class: "node", "data-id": n.id },
      h("span", { class: "chip", style: null }, n.group || n.kind), n.label,
      n.hidden_children ? h("span", { class: "muted" }, ` (+${n.hidden_children})`) : null);
    label.addEventListener("click", () => {
      document.querySelectorAll(".tree .node.selected").forEach((x) => x.classList.remove("selected"));
      label.classList.add("selected");
      pick(n);
    });
    return h("li", {}, label, kids.has(n.id) ? list(n.id) : null);
  }));
  return list(null);
}

function showNode(panel, node, refocus) {
  clear(panel).append(
    h("h3", {}, node.label),
    h("p", {}, h("span", { class: "chip" }, node.kind), node.group ? h("span", { class: "chip" }, node.group) : null,
      node.invalid ? h("span", { class: "chip invalid" }, "superseded") : null),
    node.text ? h("div", { class: "text node-text" }, node.text) : null,
    Object.keys(node.details).length ? pairs(Object.entries(node.details).filter(([, v]) => v)) : null,
    h("p", {}, h("button", { type: "button", id: "focus", onclick: () => refocus(node.id) },
      node.hidden_children ? `Expand (${node.hidden_children} more)` : "Centre here")),
  );
  sources(panel, node.sources);
}

function showEdge(panel, edge, names) {
  clear(panel).append(
    h("h3", {}, `${names.get(edge.source)} → ${names.get(edge.target)}`),
    h("p", {}, h("span", { class: "chip" }, edge.label || "edge"), edge.invalid ? h("span", { class: "chip invalid" }, "superseded") : null),
    h("div", { class: edge.invalid ? "text invalid" : "text" }, edge.text),
  );
  sources(panel, edge.sources);
}

function sources(panel, spans) {
  const episodes = [...new Set(spans.map((s) => s.episode))];
  const where = h("div", { class: "node-sources" });
  if (episodes.length) {
    panel.append(h("p", {}, "Sources: ", episodes.map((id) =>
      h("button", { type: "button", class: "cite", onclick: () => showSources(where, [id], spans).catch(report) }, id))), where);
  }
}

function legend(area, view) {
  const groups = [...new Set(view.nodes.map((n) => n.group).filter(Boolean))].slice(0, 20);
  const items = groups.map((g) => h("span", { class: "chip" }, h("span", { style: null }, "● "), g));
  items.forEach((item, i) => { item.firstChild.style.color = colour(groups[i]); });
  const notes = Object.entries(view.legend).map(([k, v]) => h("span", { class: "chip" }, `${k}: ${v}`));
  area.append(h("p", { class: "legend" }, items, notes));
}
