// The explorer's shell: the API key, the namespace picker and the views by URL hash.
// The hash says everything shown: "#VIEW[/MORE][?PARAMS]", PARAMS holding the
// namespace as "ns", so a link opens the same view of the same namespace, and going
// back and forward in the browser's history goes through the views and namespaces.
import { clear, h } from "./dom.js";
import * as namespaces from "./namespaces.js";
import * as episodes from "./episodes.js";
import * as search from "./search.js";
import * as ask from "./ask.js";
import * as designs from "./designs.js";

const VIEWS = { namespaces, episodes, search, ask, designs };
const KEY = "memstrata.key";
const NS = "memstrata.namespace";
const $ = (id) => document.getElementById(id);

class NeedKey extends Error {}

export async function api(path, { method = "GET", body, query } = {}) {
  const url = new URL(`/v1${path}`, location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    for (const one of [].concat(v)) if (one !== "" && one !== null && one !== undefined) url.searchParams.append(k, one);
  }
  const headers = {};
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 401) {
    sessionStorage.removeItem(KEY);
    askForKey("That key is not valid (or was revoked).");
    throw new NeedKey("an API key is needed");
  }
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error ? data.error.message : `HTTP ${res.status}`);
  return data;
}

export const ns = (path = "") => `/namespaces/${encodeURIComponent(state.namespace)}${path}`;
export const enc = encodeURIComponent;
export const state = { who: null, namespace: null, names: [], recipes: null };
export const canWrite = () => ["write", "admin"].includes(state.who && state.who.scope);

// The view's path and parameters in the URL's hash.
export function here() {
  const [path, search] = location.hash.slice(1).split("?");
  return { path: path || "namespaces", params: new URLSearchParams(search || "") };
}

// A link to `path` with `params`, in the namespace shown (or `namespace`).
export function link(path, params = {}, namespace = state.namespace) {
  const query = new URLSearchParams(params);
  query.delete("ns");
  if (namespace) query.set("ns", namespace);
  const tail = query.toString();
  return `#${path}${tail ? `?${tail}` : ""}`;
}

export function report(error) {
  if (error instanceof NeedKey) return;
  $("status").textContent = error ? String(error.message || error) : "";
}

export async function recipes() {
  if (!state.recipes) state.recipes = (await api("/recipes")).recipes.map((r) => r.name);
  return state.recipes;
}

export function recipePicker() {
  const select = h("select", { name: "recipe" }, h("option", { value: "" }, "(default)"));
  recipes().then((names) => names.forEach((n) => select.append(h("option", { value: n }, n)))).catch(report);
  return select;
}

function askForKey(message = "") {
  $("keyform").hidden = false;
  $("keyerror").textContent = message;
  $("key").focus();
}

async function start() {
  report(null);
  const who = await api("/whoami");
  if (who.scope === null) {
    askForKey();
    return;
  }
  state.who = who;
  $("keyform").hidden = true;
  $("signout").hidden = !who.keys;
  $("who").textContent = who.keys ? `key: ${who.scope}` : "open service (no keys)";
  state.names = (await api("/namespaces")).namespaces;
  const select = clear($("namespace"));
  state.names.forEach((n) => select.append(h("option", { value: n }, n)));
  const saved = sessionStorage.getItem(NS);
  state.namespace = state.names.includes(saved) ? saved : state.names[0] || null;
  await show();
}

// The namespace the URL names, when this key reaches it; else the one shown, and a
// note (the same for a namespace that does not exist and for one of another tenant).
function namespaceOf(params) {
  const wanted = params.get("ns");
  if (wanted === null || wanted === state.namespace) return null;
  if (state.names.includes(wanted)) return wanted;
  return `no namespace "${wanted}" that this key reaches; showing "${state.namespace}"`;
}

export async function show() {
  const { path, params } = here();
  const name = path.split("/")[0];
  const view = VIEWS[name] || namespaces;
  let note = null;
  if (state.who) {
    const named = namespaceOf(params);
    if (named !== null && state.names.includes(named)) state.namespace = named;
    else note = named;
    if (state.namespace) sessionStorage.setItem(NS, state.namespace);
    $("namespace").value = state.namespace || "";
    if (params.get("ns") !== state.namespace) history.replaceState(null, "", link(path, params));
  }
  document.querySelectorAll("#nav a").forEach((a) => {
    a.classList.toggle("active", a.dataset.view === name);
    a.setAttribute("href", link(a.dataset.view));
  });
  // A fresh container per render: a slower render still running appends to its own
  // detached container, never into the view shown after it.
  const main = h("div", { id: `view-${name}` });
  clear($("main")).append(main);
  report(note ? new Error(note) : null);
  if (!state.who) return;
  if (!state.namespace) {
    main.append(h("p", { class: "muted" }, "No namespace this key reaches holds episodes yet."));
    return;
  }
  try {
    await view.render(main);
    // what benchmarks and tests wait for: this view has rendered (time from navigation)
    if (main.isConnected) {
      main.dataset.ready = name;
      performance.mark("view-ready", { detail: name });
    }
  } catch (error) {
    report(error);
  }
}

$("keyform").addEventListener("submit", (event) => {
  event.preventDefault();
  const key = $("key").value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY, key);
  $("key").value = "";
  start().catch(report);
});
$("signout").addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  state.who = null;
  clear($("main"));
  clear($("namespace"));
  $("who").textContent = "";
  start().catch(report);
});
// Another namespace: the same view, from its start, as a new entry in the history.
$("namespace").addEventListener("change", (event) => {
  location.hash = link(here().path.split("/")[0], {}, event.target.value);
});
window.addEventListener("hashchange", () => show());
start().catch(report);
