// Two tenants, each with a key of its own namespace: neither sees anything of the other.
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { Forbidden, NamespaceNotFoundError, NotFound } from "../src/index.js";
import { admin, closeAll, tenant } from "./served.js";

after(closeAll);

test("a second tenant's data is invisible, and out of reach of every verb", async () => {
  const acme = await tenant(["tenant-acme"]);
  const globex = await tenant(["tenant-globex"]);
  const mine = await acme.addMany([{ id: "a1", text: "Acme's launch is on the ninth of May." }]);
  const theirs = await globex.addMany([
    { id: "g1", text: "Globex's launch is on the third of June." },
    { id: "g2", text: "Globex hires a new designer." },
  ]);
  assert.deepEqual(await acme.namespaces(), ["tenant-acme"]);
  assert.deepEqual(await globex.namespaces(), ["tenant-globex"]);

  const found = await acme.search("When is the launch?");
  assert.deepEqual([...new Set(found.hits.flatMap((h) => h.sources))], ["a1"]);
  const there = { namespace: "tenant-globex" };
  for (const call of [
    () => acme.search("When is the launch?", there),
    () => acme.ask("When is Globex's launch?", there),
    () => acme.list(there),
    () => acme.history("g1", there),
    () => acme.update("g1", "Overwritten by Acme.", there),
    () => acme.delete(["g1", "g2"], there),
    () => acme.add("Planted by Acme.", there),
    () => acme.deleteNamespace("tenant-globex"),
    () => acme.stats("tenant-globex"),
    () => acme.build("tenant-globex"),
  ]) {
    await assert.rejects(call(), (err: unknown) => {
      assert.ok(err instanceof NamespaceNotFoundError, String(err)); // as if it did not exist
      assert.equal(err.namespace, "tenant-globex");
      return true;
    });
  }
  assert.deepEqual(await acme.get(["g1", "g2"], there), []);
  const job = theirs.jobs[0];
  assert.ok(job && mine.jobs[0]);
  await assert.rejects(acme.job(job.id), NotFound); // another tenant's job does not exist
  assert.equal((await globex.job(job.id)).id, job.id);
  await assert.rejects(acme.createKey({ namespaces: ["tenant-globex"] }), Forbidden);

  // nothing of Globex's changed, and the admin of every namespace sees both
  const kept = await globex.list();
  assert.deepEqual(kept.episodes.map((e) => [e.id, e.text]), [
    ["g1", "Globex's launch is on the third of June."],
    ["g2", "Globex hires a new designer."],
  ]);
  const everyone = await admin().namespaces();
  assert.ok(everyone.includes("tenant-acme") && everyone.includes("tenant-globex"));
});

test("a key of two namespaces reaches both and no third", async () => {
  await admin("tenant-third").add("A third tenant's line.");
  const both = await tenant(["tenant-one", "tenant-two"]);
  await both.add("One's line.", { namespace: "tenant-one", id: "x" });
  await both.add("Two's line.", { namespace: "tenant-two", id: "x" });
  assert.deepEqual((await both.namespaces()).sort(), ["tenant-one", "tenant-two"]);
  assert.equal((await both.get("x", { namespace: "tenant-two" }))[0]?.text, "Two's line.");
  await assert.rejects(both.list({ namespace: "tenant-third" }), NamespaceNotFoundError);
});
