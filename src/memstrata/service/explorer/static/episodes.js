// Episodes: a paged, filtered list, each with when it was said; one episode's text, history, what was derived
// from it, and (with a write key) correcting or deleting it after a confirmation.
import { api, canWrite, enc, ns, report } from "./app.js";
import { clear, confirmed, field, h, highlighted, table, when } from "./dom.js";

const PAGE = 25;

export async function render(main) {
  const speaker = h("input", { name: "speaker", placeholder: "any", size: 10 });
  const session = h("input", { name: "session", placeholder: "any", size: 10 });
  const list = h("div", { id: "episode-list", class: "panel" });
  const detail = h("div", { id: "episode-detail", class: "panel" }, h("p", { class: "muted" }, "Pick an episode."));
  const more = h("button", { type: "button", id: "more", hidden: true }, "More");
  let next = null; // the opaque cursor of the next page (null: the first)
  const load = async (fresh) => {
    if (fresh) {
      clear(list);
      next = null;
    }
    const query = { after: next, limit: PAGE, speaker: speaker.value.trim(), session: session.value.trim() };
    const page = await api(ns("/episodes"), { query });
    for (const e of page.episodes) {
      const row = h(
        "div",
        { class: "row episode", "data-id": e.id },
        h("span", { class: "chip" }, e.id),
        e.occurred_at ? h("span", { class: "muted date" }, `${when(e.occurred_at)} `) : null,
        e.speaker ? h("strong", {}, `${e.speaker}: `) : null,
        h("span", { class: "text" }, e.text),
      );
      row.addEventListener("click", () => {
        list.querySelectorAll(".selected").forEach((r) => r.classList.remove("selected"));
        row.classList.add("selected");
        open(detail, e.id).catch(report);
      });
      list.append(row);
    }
    if (!list.childElementCount) list.append(h("p", { class: "muted" }, "No episodes match."));
    next = page.next;
    more.hidden = next === null;
  };
  more.addEventListener("click", () => load(false).catch(report));
  const filter = (event) => {
    event.preventDefault();
    load(true).catch(report);
  };
  main.append(
    h("h2", {}, "Episodes"),
    h("form", { class: "toolbar", onsubmit: filter }, field("Speaker", speaker), field("Session", session), h("button", { type: "submit" }, "Filter")),
    h("div", { class: "cols" }, h("div", {}, list, more), detail),
  );
  await load(true);
}

// One episode in `panel`; `spans` (optional) are highlighted in its text.
export async function open(panel, id, spans = []) {
  const e = await api(ns(`/episodes/${enc(id)}`));
  clear(panel).append(
    h("h3", {}, `Episode ${e.id}`),
    h("p", { class: "muted" }, [e.speaker, e.session && `session ${e.session}`, when(e.occurred_at)].filter(Boolean).join(" · ")),
    h("div", { class: "episode-text" }, highlighted(e.text, spans.filter((s) => s.episode === e.id))),
  );
  if (canWrite()) panel.append(editor(panel, e));
  const [history, derived] = await Promise.all([
    api(ns(`/episodes/${enc(id)}/history`)),
    api(ns("/derived"), { query: { episode: id } }),
  ]);
  panel.append(h("h3", {}, `History (${history.versions.length} earlier version(s))`));
  for (const v of history.versions) {
    panel.append(h("div", { class: "version" }, h("span", { class: "muted" }, `v${v.version} ${when(v.written_at)} `), h("span", { class: "text" }, v.text)));
  }
  panel.append(h("h3", {}, `Derived from it (${derived.records.length}${derived.more ? "+" : ""})`));
  if (derived.records.length) {
    panel.append(
      table(
        ["design", "kind", "record", "from"],
        derived.records.map((r) => [r.builder, r.kind, r.text, r.spans.map((s) => e.text.slice(s.start, s.end)).join(" | ")]),
      ),
    );
  }
}

function editor(panel, e) {
  const text = h("textarea", { id: "edit-text" });
  text.value = e.text;
  const save = async () => {
    if (!(await confirmed(`Replace the text of episode ${e.id}? The old text stays in its history.`))) return;
    await api(ns(`/episodes/${enc(e.id)}`), { method: "PUT", body: { text: text.value } });
    await open(panel, e.id);
  };
  const remove = async () => {
    if (!(await confirmed(`Delete episode ${e.id} and what was derived from it alone?`))) return;
    await api(ns("/episodes"), { method: "DELETE", query: { id: e.id } });
    const row = document.querySelector(`.episode[data-id="${CSS.escape(e.id)}"]`);
    if (row) row.remove();
    clear(panel).append(h("p", { class: "muted" }, `Deleted ${e.id}.`));
  };
  return h(
    "details",
    { class: "edit" },
    h("summary", {}, "Correct or delete"),
    text,
    h("p", {}, h("button", { type: "button", id: "update", onclick: () => save().catch(report) }, "Save new text"), " ",
      h("button", { type: "button", id: "delete", class: "danger", onclick: () => remove().catch(report) }, "Delete episode")),
  );
}
