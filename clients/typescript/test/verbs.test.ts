// Every verb of the client against the live service: what is stored is what is read back.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { ConflictError, NamespaceNotFoundError, NotFound, Unauthorized } from "../src/index.js";
import { admin, closeAll, tenant } from "./served.js";

after(closeAll);

const TURNS = [
  { id: "t1", text: "Maya booked flights to Lisbon for the June conference.", speaker: "Maya", session: "s1" },
  { id: "t2", text: "Tomas adopted a greyhound called Pepper.", speaker: "Tomas", session: "s1" },
  { id: "t3", text: "Maya said the talk is about streaming pipelines.", speaker: "Maya", session: "s2" },
  { id: "t4", text: "Ines is learning the cello on Tuesdays.", speaker: "Ines", session: "s2", at: "2024-03-02T10:21:00Z" },
  { id: "t5", text: "Tomas walks Pepper along the river every morning.", speaker: "Tomas", session: "s3" },
];

describe("writing", () => {
  test("add stores one episode and reads it back; the same again is a no-op", async () => {
    const memory = admin("verbs-add");
    const stored = await memory.add("Ana is vegetarian since May.", {
      id: "a1",
      speaker: "Ana",
      role: "user",
      session: "chat-1",
      occurred_at: new Date("2024-05-01T09:00:00Z"),
      metadata: { topic: "food", tags: ["diet"], weight: 1.5 },
    });
    assert.equal(stored.id, "a1");
    assert.equal(stored.namespace, "verbs-add");
    assert.equal(stored.text, "Ana is vegetarian since May.");
    assert.deepEqual([stored.speaker, stored.role, stored.session], ["Ana", "user", "chat-1"]);
    assert.equal(Date.parse(stored.occurred_at ?? ""), Date.parse("2024-05-01T09:00:00Z"));
    assert.deepEqual(stored.metadata, { topic: "food", tags: ["diet"], weight: 1.5 });
    const again = await memory.add("Ana is vegetarian since May.", {
      id: "a1",
      speaker: "Ana",
      role: "user",
      session: "chat-1",
      occurred_at: "2024-05-01T09:00:00Z",
      metadata: { topic: "food", tags: ["diet"], weight: 1.5 },
    });
    assert.equal(again.seq, stored.seq);
    assert.equal((await memory.list()).episodes.length, 1);
  });

  test("add of a stored id with other content is a ConflictError, unless replace", async () => {
    const memory = admin("verbs-conflict");
    await memory.add("The meeting is on Monday.", { id: "m1" });
    await assert.rejects(memory.add("The meeting is on Friday.", { id: "m1" }), (err: unknown) => {
      assert.ok(err instanceof ConflictError);
      assert.deepEqual(err.ids, ["m1"]);
      assert.equal(err.namespace, "verbs-conflict");
      return true;
    });
    assert.equal((await memory.get("m1"))[0]?.text, "The meeting is on Monday.");
    const replaced = await memory.add("The meeting is on Friday.", { id: "m1", replace: true });
    assert.equal(replaced.text, "The meeting is on Friday.");
    assert.deepEqual((await memory.history("m1")).map((v) => v.text), ["The meeting is on Monday."]);
  });

  test("addMany sends batches, hears each, reads `at` as occurred_at", async () => {
    const memory = admin("verbs-many");
    const heard: number[] = [];
    const report = await memory.addMany([...TURNS, "A line with no id."], {
      batchSize: 2,
      progress: (n) => heard.push(n),
    });
    assert.deepEqual(heard, [2, 2, 2]);
    assert.deepEqual(report.added.slice(0, 5), ["t1", "t2", "t3", "t4", "t5"]);
    assert.equal(report.added.length, 6);
    assert.deepEqual([report.existing, report.conflicts, report.updated], [[], [], []]);
    const [t4] = await memory.get("t4");
    assert.equal(Date.parse(t4?.occurred_at ?? ""), Date.parse("2024-03-02T10:21:00Z"));
    const rerun = await memory.addMany(TURNS);
    assert.deepEqual(rerun.existing, ["t1", "t2", "t3", "t4", "t5"]);
    assert.deepEqual(rerun.added, []);
  });

  test("update keeps what is left out, clears what is null, keeps history", async () => {
    const memory = admin("verbs-update");
    await memory.add("Tomas adopted a greyhound.", { id: "u1", speaker: "Tomas", session: "s1", metadata: { n: 1 } });
    const changed = await memory.update("u1", "Tomas adopted a cat.", { session: null });
    assert.equal(changed.text, "Tomas adopted a cat.");
    assert.equal(changed.speaker, "Tomas");
    assert.equal(changed.session, null);
    assert.deepEqual(changed.metadata, { n: 1 });
    await memory.update("u1", "Tomas adopted two cats.", { metadata: { n: 2 } });
    const versions = await memory.history("u1");
    assert.deepEqual(versions.map((v) => [v.version, v.text]), [
      [1, "Tomas adopted a greyhound."],
      [2, "Tomas adopted a cat."],
    ]);
    assert.deepEqual((await memory.get("u1"))[0]?.metadata, { n: 2 });
    await memory.update("u1", "Tomas adopted three cats.", { keep_history: false });
    assert.deepEqual(await memory.history("u1"), []);
  });

  test("delete by id and by list names what was missing; deleteNamespace empties it", async () => {
    const memory = admin("verbs-delete");
    await memory.addMany(TURNS);
    assert.deepEqual(await memory.delete("t1"), { deleted: 1, missing: [] });
    assert.deepEqual(await memory.delete(["t2", "t3", "nope"]), { deleted: 2, missing: ["nope"] });
    assert.deepEqual(await memory.delete([]), { deleted: 0, missing: [] });
    assert.deepEqual((await memory.list()).episodes.map((e) => e.id), ["t4", "t5"]);
    const many = Array.from({ length: 130 }, (_, i) => ({ id: `bulk-${i}`, text: `note number ${i}` }));
    await memory.addMany(many);
    const gone = await memory.delete(many.map((e) => e.id)); // over the 100 ids a request carries
    assert.equal(gone.deleted, 130);
    assert.equal(await memory.deleteNamespace("verbs-delete"), 2);
    assert.ok(!(await memory.namespaces()).includes("verbs-delete"));
    await assert.rejects(memory.list(), NamespaceNotFoundError);
  });
});

describe("reading", () => {
  test("get keeps the order given and leaves out ids not stored", async () => {
    const memory = admin("verbs-get");
    await memory.addMany(TURNS);
    const found = await memory.get(["t3", "missing", "t1", "t3"]);
    assert.deepEqual(found.map((e) => e.id), ["t3", "t1", "t3"]);
    assert.deepEqual(await memory.get("missing"), []);
    assert.deepEqual(await memory.get("t2", { namespace: "verbs-never-added" }), []);
  });

  test("list pages in the order added and filters by speaker, session and time", async () => {
    const memory = admin("verbs-list");
    await memory.addMany(TURNS);
    const first = await memory.list({ limit: 2 });
    assert.deepEqual(first.episodes.map((e) => e.id), ["t1", "t2"]);
    assert.ok(first.next);
    const second = await memory.list({ limit: 2, after: first.next });
    const third = await memory.list({ limit: 2, after: second.next });
    assert.deepEqual(second.episodes.map((e) => e.id), ["t3", "t4"]);
    assert.deepEqual(third.episodes.map((e) => e.id), ["t5"]);
    assert.equal(third.next, null);
    const maya = await memory.list({ filters: { speakers: ["Maya"] } });
    assert.deepEqual(maya.episodes.map((e) => e.id), ["t1", "t3"]);
    const s2 = await memory.list({ filters: { sessions: ["s2", "s3"] } });
    assert.deepEqual(s2.episodes.map((e) => e.id), ["t3", "t4", "t5"]);
    const march = await memory.list({ filters: { since: "2024-03-01T00:00:00Z", until: "2024-03-31T00:00:00Z" } });
    assert.deepEqual(march.episodes.map((e) => e.id), ["t4"]);
  });

  test("search finds the episode and names it as the hit's source", async () => {
    const memory = admin("verbs-search");
    await memory.addMany(TURNS);
    const found = await memory.search("What is the name of Tomas's dog?", { k: 3 });
    assert.equal(found.namespace, "verbs-search");
    assert.ok(found.hits.length > 0 && found.hits.length <= 3);
    assert.ok(found.hits[0]?.sources.includes("t2"), JSON.stringify(found.hits[0]));
    assert.match(found.context, /Pepper/);
    const inS2 = await memory.search("Pepper the greyhound", { filters: { sessions: ["s2"] } });
    const sources = new Set(inS2.hits.flatMap((h) => h.sources));
    assert.ok([...sources].every((id) => id === "t3" || id === "t4"), [...sources].join(","));
    const unlimited = await memory.search("cello lessons", { max_tokens: null, recipe: "default" });
    assert.ok(unlimited.hits[0]?.sources.includes("t4"));
  });

  test("searchMany answers each query in order, past the 100 of one request", async () => {
    const memory = admin("verbs-search-many");
    await memory.addMany(TURNS);
    const queries = Array.from({ length: 101 }, (_, i) => (i % 2 ? "greyhound Pepper" : "cello Tuesdays"));
    const results = await memory.searchMany(queries, { k: 1, recipe: "default" });
    assert.equal(results.length, 101);
    assert.deepEqual(results.map((r) => r.query), queries);
    assert.ok(results[0]?.hits[0]?.sources.includes("t4"));
    assert.ok(results[100]?.hits[0]?.sources.includes("t4"));
    assert.ok(results[99]?.hits[0]?.sources.includes("t2"));
  });

  test("ask answers citing the episode it rests on", async () => {
    const memory = admin("verbs-ask");
    await memory.addMany(TURNS);
    const answer = await memory.ask("What instrument is Ines learning?", { recipe: "default" });
    assert.equal(answer.abstained, false, JSON.stringify(answer));
    assert.match(answer.text, /cello/);
    assert.deepEqual(answer.sources, ["t4"]);
  });

  test("namespaces, stats and recipes", async () => {
    const memory = admin("verbs-stats");
    await memory.addMany(TURNS);
    assert.ok((await memory.namespaces()).includes("verbs-stats"));
    const stats = (await memory.stats()) as { namespaces: { namespace: string; episodes: number }[] };
    const mine = stats.namespaces.find((n) => n.namespace === "verbs-stats");
    assert.equal(mine?.episodes, 5);
    const names = (await memory.recipes()).map((r) => r.name);
    assert.ok(names.includes("default") && names.includes("mnemis"), names.join(","));
  });
});

describe("building", () => {
  test("an add's job waits for the build; wait follows it to the end", async () => {
    const memory = admin("verbs-build");
    const report = await memory.addMany(TURNS);
    assert.equal(report.jobs.length, 1);
    const job = report.jobs[0];
    assert.ok(job);
    assert.equal(job.namespace, "verbs-build");
    assert.equal(job.episodes, 5);
    const queued = await memory.job(job.id);
    assert.equal(queued.state, "queued"); // the server runs no background worker
    const finished = memory.wait(job.id);
    const heard: number[] = [];
    const reports = await memory.build(undefined, { progress: (n) => heard.push(n) });
    assert.ok(reports.length > 0);
    assert.equal(reports.reduce((sum, r) => sum + (r.episodes ?? 0), 0), heard.reduce((a, b) => a + b, 0));
    assert.ok(reports.some((r) => r.episodes === 5), JSON.stringify(reports));
    const done = await finished;
    assert.equal(done.state, "succeeded");
    assert.equal(done.done, done.steps);
    assert.equal(await memory.retry(), 0);
    const [pepper] = await memory.show("Pepper"); // the entity the build found
    assert.equal(pepper?.text, "Pepper (name)");
    const lines = pepper?.children?.map((c) => c.text) ?? [];
    assert.ok(lines.some((t) => t.includes("[t2]")), lines.join(" | ")); // names its episode
    assert.deepEqual(await memory.show("nothing by this name"), []);
    await assert.rejects(memory.job("job_0000000000000000"), NotFound);
  });

  test("wait gives the job as it stands when the time is up", async () => {
    const memory = admin("verbs-wait");
    const [job] = (await memory.addMany(["Ines plays in a quartet."])).jobs;
    assert.ok(job);
    const late = await memory.wait(job.id, { timeoutMs: 300 });
    assert.equal(late.state, "queued");
    await memory.build();
    assert.equal((await memory.wait(job.id)).state, "succeeded");
  });
});

describe("keys", () => {
  test("an admin makes, lists and revokes a key; a revoked key is refused", async () => {
    const boss = admin();
    const made = await boss.createKey({ namespaces: ["verbs-keys"], scope: "read", label: "reader" });
    assert.match(made.key, /^msk_/);
    assert.deepEqual([made.scope, made.namespaces, made.label], ["read", ["verbs-keys"], "reader"]);
    const listed = (await boss.keys()).find((k) => k.id === made.id);
    assert.ok(listed && listed.revoked_at === null && !("key" in listed));
    const reader = await tenant(["verbs-keys"], "read");
    assert.deepEqual(await reader.namespaces(), []);
    assert.equal(await boss.revokeKey(made.id), true);
    const revoked = (await boss.keys()).find((k) => k.id === made.id);
    assert.ok(revoked?.revoked_at);
    const { RemoteMemory } = await import("../src/index.js");
    const gone = new RemoteMemory(boss.baseUrl.replace(/\/v1$/, ""), made.key);
    try {
      await assert.rejects(gone.namespaces(), Unauthorized);
    } finally {
      gone.close();
    }
  });
});
