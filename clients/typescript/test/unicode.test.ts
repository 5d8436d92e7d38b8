// Text, names and ids beyond ASCII, and names that are awkward in a URL ("/", "%", "..",
// "?", "#"), go and come back unchanged.
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { admin, closeAll } from "./served.js";

after(closeAll);

const LINES = [
  { id: "日本/1", text: "東京で寿司を食べました。とても美味しかった！", speaker: "健太" },
  { id: "ар-2 ✓", text: "Мы поехали в Санкт-Петербург летом.", speaker: "Аня" },
  { id: "..", text: "مرحبا، أنا أحب القهوة العربية ☕", speaker: "ليلى" },
  { id: "%20?#", text: "Zoë’s café serves crème brûlée — naïve façade, 🙂🎻", speaker: "Zoë" },
  { id: ".", text: "e\u0301 written with a combining accent, and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", speaker: "José" },
];

for (const namespace of ["ünïcode/東京", "..", "a%2Fb ?#&="]) {
  test(`non-ASCII text round-trips in namespace ${JSON.stringify(namespace)}`, async () => {
    const memory = admin(namespace);
    const report = await memory.addMany(LINES.map((l) => ({ ...l, metadata: { note: `${l.speaker} — ✓` } })));
    assert.deepEqual(report.added, LINES.map((l) => l.id));
    assert.ok((await memory.namespaces()).includes(namespace));

    const got = await memory.get(LINES.map((l) => l.id));
    assert.deepEqual(
      got.map((e) => [e.id, e.namespace, e.text, e.speaker, e.metadata.note]),
      LINES.map((l) => [l.id, namespace, l.text, l.speaker, `${l.speaker} — ✓`]),
    );
    const listed = await memory.list({ filters: { speakers: ["健太", "Zoë"] } });
    assert.deepEqual(listed.episodes.map((e) => e.id), ["日本/1", "%20?#"]);

    const found = await memory.search("寿司 東京", { k: 2, recipe: "default" });
    assert.ok(found.hits[0]?.sources.includes("日本/1"), JSON.stringify(found.hits[0]));
    const cafe = await memory.search("Zoë café crème brûlée", { k: 2, recipe: "default" });
    assert.ok(cafe.hits[0]?.sources.includes("%20?#"), JSON.stringify(cafe.hits[0]));

    const changed = await memory.update("..", "مرحبا، أنا أحب الشاي", { speaker: "ليلى" });
    assert.equal(changed.text, "مرحبا، أنا أحب الشاي");
    assert.deepEqual((await memory.history("..")).map((v) => v.text), [LINES[2]?.text]);
    assert.deepEqual(await memory.delete(["ар-2 ✓", "."]), { deleted: 2, missing: [] });
    assert.equal(await memory.deleteNamespace(namespace), 3);
  });
}
