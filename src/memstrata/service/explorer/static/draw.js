// A small force-directed layout drawn as SVG, for the few hundred nodes a view is cut to
// by default and up to a few thousand when asked. Labels are SVG text nodes
// (textContent), never markup.
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
// nodes closer than REACH, springs along edges, a pull to the centre so lone nodes stay
// near. Nodes are binned in a grid of REACH-wide cells, so a round looks at each node's
// own and adjacent cells only (all pairs would cost 27 s for 5,000 nodes); large views
// take fewer rounds (their spiral start is already even).
const IDEAL = 45;
// nodes labelled in the picture, at most: the first ones (the best-connected, or the
// nearest to the focus); the others show their name on hover (a few thousand labels
// would hide the picture and cost as much to lay out as the rest of it)
const LABELS = 300;
const REACH = 4 * IDEAL;

export function rounds(count) {
  return count <= 500 ? 300 : Math.max(60, Math.round(150000 / count));
}

export function layout(count, edges, total = rounds(count)) {
  const ideal = IDEAL;
  const xs = new Float64Array(count);
  const ys = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const a = i * 2.39996; // golden angle: an even start without overlaps
    const r = ideal * Math.sqrt(i + 1) * 0.8;
    xs[i] = r * Math.cos(a);
    ys[i] = r * Math.sin(a);
  }
  const mx = new Float64Array(count);
  const my = new Float64Array(count);
  const cells = new Int32Array(count);
  const grid = new Map();
  const near = (i, j) => {
    const dx = xs[i] - xs[j];
    const dy = ys[i] - ys[j];
    const d2 = Math.max(dx * dx + dy * dy, 1);
    if (d2 > REACH * REACH) return;
    const f = (ideal * ideal) / d2;
    mx[i] += dx * f; my[i] += dy * f;
    mx[j] -= dx * f; my[j] -= dy * f;
  };
  for (let round = 0; round < total; round++) {
    mx.fill(0);
    my.fill(0);
    grid.clear();
    for (let i = 0; i < count; i++) {
      const key = (Math.floor(xs[i] / REACH) + 4096) * 8192 + Math.floor(ys[i] / REACH) + 4096;
      cells[i] = key;
      const members = grid.get(key);
      if (members) members.push(i);
      else grid.set(key, [i]);
    }
    for (let i = 0; i < count; i++) {
      for (let gx = -8192; gx <= 8192; gx += 8192) {
        for (let gy = -1; gy <= 1; gy++) {
          const members = grid.get(cells[i] + gx + gy);
          if (!members) continue;
          for (let k = 0; k < members.length; k++) if (members[k] > i) near(i, members[k]);
        }
      }
    }
    for (const [a, b] of edges) {
      const dx = xs[a] - xs[b];
      const dy = ys[a] - ys[b];
      const d = Math.max(Math.sqrt(dx * dx + dy * dy), 1);
      const f = ((d - ideal) / d) * 0.4;
      mx[a] -= dx * f; my[a] -= dy * f;
      mx[b] += dx * f; my[b] += dy * f;
    }
    const step = 10 * (1 - round / total) + 0.5;
    for (let i = 0; i < count; i++) {
      mx[i] -= xs[i] * 0.04;
      my[i] -= ys[i] * 0.04;
      const len = Math.sqrt(mx[i] ** 2 + my[i] ** 2) || 1;
      const s = Math.min(len, step) / len;
      xs[i] += mx[i] * s;
      ys[i] += my[i] * s;
    }
  }
  return Array.from(xs, (x, i) => [x, ys[i]]);
}

// An SVG of `view` (nodes and edges); `pick(node)` is called on a click.
export function drawGraph(view, pick) {
  const index = new Map(view.nodes.map((n, i) => [n.id, i]));
  const pairs = view.edges.map((e) => [index.get(e.source), index.get(e.target)]);
  const pos = layout(view.nodes.length, pairs);
  performance.mark("graph-laid-out");
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
    root.append(dot);
    if (i >= LABELS) return;
    const label = svg("text", { x: pos[i][0] + r + 2, y: pos[i][1] + 3 });
    label.textContent = n.label.length > 24 ? `${n.label.slice(0, 23)}…` : n.label;
    root.append(label);
  });
  return root;
}
