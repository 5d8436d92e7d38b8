// Namespaces: what a namespace holds (per record kind and per design), its build
// queue, the enrichments that failed and why, and a retry for them.
import { api, canWrite, ns, report, show, state } from "./app.js";
import { h, table } from "./dom.js";

export async function render(main) {
  const stats = await api(ns("/stats"));
  const row = stats.namespaces.find((s) => s.namespace === state.namespace);
  main.append(h("h2", {}, `Namespace ${state.namespace}`));
  if (!row) return;
  const box = (title, content) => h("div", {}, h("h3", {}, title), content);
  main.append(
    table(["episodes", "embedded", "recipe", "build mode"], [[row.episodes, row.embedded, stats.recipe, stats.build_mode]]),
  );
  main.append(h("div", { class: "boxes" },
    box("Records per kind", table(["kind", "records"], Object.entries(row.records).map(([k, n]) => [k, n]))),
    box("Records per design", table(
      ["design (builder)", "records"],
      Object.entries(row.records_by_builder).map(([b, kinds]) => [
        b,
        Object.entries(kinds).map(([k, n]) => `${k}: ${n}`).join(", "),
      ]),
    )),
    box("Build status", table(
      ["builder", "done", "queued", "failed", "dead", "repairs pending"],
      Object.entries(row.builds).map(([b, c]) => [b, c.done, c.queued, c.failed, c.dead, (row.repairs || {})[b] || 0]),
    )),
  ));
  const failures = row.failures || [];
  main.append(h("h3", {}, `Failed enrichments (${failures.length})`));
  if (failures.length) {
    main.append(
      table(
        ["episode", "builder", "status", "attempts", "reason"],
        failures.map((f) => [f.episode, f.builder, f.status, f.attempts, f.error]),
      ),
    );
  } else {
    main.append(h("p", { class: "muted" }, "None."));
  }
  if (canWrite()) {
    const done = h("span", { class: "muted", id: "retried" });
    const retry = async () => {
      try {
        const out = await api(ns("/retry"), { method: "POST" });
        done.textContent = `queued ${out.queued} episode(s) again`;
      } catch (error) {
        report(error);
      }
    };
    main.append(h("p", {}, h("button", { id: "retry", type: "button", onclick: retry }, "Retry failed enrichments"), " ", done));
  }
  main.append(h("p", {}, h("button", { type: "button", onclick: () => show() }, "Refresh")));
}
