// Ask: the answer, each cited episode a link to its text, an abstention shown as one.
import { api, ns, recipePicker, report } from "./app.js";
import { clear, field, h } from "./dom.js";
import { showSources } from "./search.js";

export async function render(main) {
  const question = h("input", { name: "question", size: 50, placeholder: "a question about the conversation" });
  const recipe = recipePicker();
  const out = h("div", { id: "answer", class: "panel" });
  const cited = h("div", { id: "cited", class: "panel" }, h("p", { class: "muted" }, "Click a source to read it."));
  const run = async (event) => {
    event.preventDefault();
    if (!question.value.trim()) return;
    const body = { question: question.value };
    if (recipe.value) body.recipe = recipe.value;
    clear(out).append(h("p", { class: "muted" }, "Thinking…"));
    performance.mark("ask-start");
    const answer = await api(ns("/ask"), { method: "POST", body });
    clear(out);
    // an abstention is one line: the answer's own text ("Not in memory."), marked
    out.append(h("p", { class: answer.abstained ? "text answer-text abstained" : "text answer-text" }, answer.text));
    if (answer.extractive && !answer.abstained) out.append(h("p", { class: "muted" }, "Quoted from the sources (no model wrote it)."));
    const spans = (answer.hits || []).flatMap((hit) => hit.spans || []);
    out.append(
      h("p", {}, "Sources: ", answer.sources.length ? "" : h("span", { class: "muted" }, "none"),
        answer.sources.map((id) => h("button", { type: "button", class: "cite", onclick: () => showSources(cited, [id], spans).catch(report) }, id))),
    );
    performance.mark("ask-done");
  };
  main.append(
    h("h2", {}, "Ask"),
    h("form", { class: "toolbar", id: "ask-form", onsubmit: (e) => run(e).catch(report) },
      field("Question", question), field("Recipe", recipe), h("button", { type: "submit" }, "Ask")),
    h("div", { class: "cols" }, out, cited),
  );
  question.focus();
}
