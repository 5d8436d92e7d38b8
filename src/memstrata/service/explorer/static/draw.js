// A small force-directed layout drawn as SVG: enough for the few hundred nodes a view
// is cut to. Labels are SVG text nodes (textContent), never markup.
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

export function colour(group) {
  let hash = 0;
  for (const c of String(group)) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${hash % 360} 55% 55%)`;
}

// Positions for `count` nodes joined by `edges` ([a, b] index pairs): repulsion between
// all pairs, springs along edges, a pull to the centre so lone nodes stay near.
export function layout(count, edges, rounds = 300) {
  const ideal = 45;
  const pos = Array.from({ length: count }, (_, i) => {
    const a = i * 2.39996; // golden angle: an even start without overlaps
    const r = ideal * Math.sqrt(i + 1) * 0.8;
    return [r * Math.cos(a), r * Math.sin(a)];
  });
  for (let round = 0; round < rounds; round++) {
    const move = pos.map(() => [0, 0]);
    for (let i = 0; i < count; i++) {
      for (let j = i + 1; j < count; j++) {
        const dx = pos[i][0] - pos[j][0];
        const dy = pos[i][1] - pos[j][1];
        const d2 = Math.max(dx * dx + dy * dy, 1);
        if (d2 > 16 * ideal * ideal) continue;
        const f = (ideal * ideal) / d2;
        move[i][0] += dx * f; move[i][1] += dy * f;
        move[j][0] -= dx * f; move[j][1] -= dy * f;
      }
    }
    for (const [a, b] of edges) {
      const dx = pos[a][0] - pos[b][0];
      const dy = pos[a][1] - pos[b][1];
      const d = Math.max(Math.sqrt(dx * dx + dy * dy), 1);
      const f = ((d - ideal) / d) * 0.4;
      move[a][0] -= dx * f; move[a][1] -= dy * f;
      move[b][0] += dx * f; move[b][1] += dy * f;
    }
    const step = 10 * (1 - round / rounds) + 0.5;
    for (let i = 0; i < count; i++) {
      move[i][0] -= pos[i][0] * 0.04;
      move[i][1] -= pos[i][1] * 0.04;
      const len = Math.sqrt(move[i][0] ** 2 + move[i][1] ** 2) || 1;
      const s = Math.min(len, step) / len;
      pos[i][0] += move[i][0] * s;
      pos[i][1] += move[i][1] * s;
    }
  }
  return pos;
}

// An SVG of `view` (nodes and edges); `pick(node)` is called on a click.
export function drawGraph(view, pick) {
  const index = new Map(view.nodes.map((n, i) => [n.id, i]));
  const pairs = view.edges.map((e) => [index.get(e.source), index.get(e.target)]);
  const pos = layout(view.nodes.length, pairs);
  const xs = pos.map((p) => p[0]);
  const ys = pos.map((p) => p[1]);
  const pad = 50;
  const [x0, y0] = [Math.min(...xs, 0) - pad, Math.min(...ys, 0) - pad];
  const box = [x0, y0, Math.max(...xs, 0) + pad - x0, Math.max(...ys, 0) + pad - y0];
  const root = svg("svg", { class: "graph", viewBox: box.join(" "), role: "img" });
  view.edges.forEach((e, i) => {
    const [a, b] = pairs[i];
    const line = svg("line", { x1: pos[a][0], y1: pos[a][1], x2: pos[b][0], y2: pos[b][1] });
    if (e.invalid) line.classList.add("invalid");
    const title = svg("title");
    title.textContent = (e.invalid ? "[superseded] " : "") + (e.text || e.label);
    line.append(title);
    root.append(line);
  });
  view.nodes.forEach((n, i) => {
    const r = 5 + Math.min(8, Math.sqrt(n.hidden_children + 1) * 2);
    const dot = svg("circle", { cx: pos[i][0], cy: pos[i][1], r, fill: colour(n.group), "data-id": n.id });
    const title = svg("title");
    title.textContent = `${n.label} (${n.kind})`;
    dot.append(title);
    dot.addEventListener("click", () => {
      root.querySelectorAll("circle.selected").forEach((c) => c.classList.remove("selected"));
      dot.classList.add("selected");
      pick(n);
    });
    const label = svg("text", { x: pos[i][0] + r + 2, y: pos[i][1] + 3 });
    label.textContent = n.label.length > 24 ? `${n.label.slice(0, 23)}…` : n.label;
    root.append(dot, label);
  });
  return root;
}
