// Building the page from data. Stored text only ever goes in as text nodes
// (textContent), never as markup: an episode saying "<script>" shows those characters.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

// `text` with the character ranges [start, end) of `spans` wrapped in <mark>.
export function highlighted(text, spans) {
  const out = h("div", { class: "text" });
  const ranges = spans.map((s) => [s.start, s.end]).sort((a, b) => a[0] - b[0]);
  let at = 0;
  for (const [start, end] of ranges) {
    if (end <= at) continue;
    const from = Math.max(start, at);
    if (from > at) out.append(document.createTextNode(text.slice(at, from)));
    out.append(h("mark", {}, text.slice(from, end)));
    at = end;
  }
  if (at < text.length) out.append(document.createTextNode(text.slice(at)));
  return out;
}

export function table(head, rows) {
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))),
  );
}

// Name/value rows, without a header.
export function pairs(entries) {
  return h("table", { class: "pairs" }, h("tbody", {}, entries.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v)))));
}

export function field(label, input) {
  return h("label", {}, `${label} `, input);
}

// A modal yes/no question; resolves true when confirmed.
export function confirmed(question) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirmtext").textContent = question;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

export function when(iso) {
  return iso ? iso.replace("T", " ").slice(0, 16) : "";
}
