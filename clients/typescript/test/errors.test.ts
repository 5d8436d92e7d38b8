// The service's errors arrive as memstrata's kinds; what the client refuses is refused
// before anything is sent.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, describe, test } from "node:test";

import {
  ConfigError,
  EpisodeNotFoundError,
  Forbidden,
  InvalidInputError,
  MemstrataError,
  NamespaceNotFoundError,
  NotFound,
  RemoteMemory,
  StoreError,
  Unauthorized,
} from "../src/index.js";
import type { EpisodeInput, RecipeName } from "../src/index.js";
import { ROOT, admin, closeAll, tenant, track } from "./served.js";

after(closeAll);

describe("the service's errors", () => {
  test("an unknown namespace is NamespaceNotFoundError, naming it", async () => {
    const memory = admin("errors-nowhere");
    for (const call of [
      () => memory.search("anything"),
      () => memory.ask("anything?"),
      () => memory.list(),
      () => memory.history("e1"),
      () => memory.delete([]),
      () => memory.delete(["e1"]),
      () => memory.stats(),
    ]) {
      await assert.rejects(call(), (err: unknown) => {
        assert.ok(err instanceof NamespaceNotFoundError, String(err));
        assert.ok(err instanceof MemstrataError);
        assert.equal(err.namespace, "errors-nowhere");
        assert.equal(err.status, 404);
        assert.equal(err.code, "namespace_not_found");
        assert.match(err.message, /unknown namespace 'errors-nowhere'/);
        return true;
      });
    }
    assert.ok(!(await memory.namespaces()).includes("errors-nowhere")); // nothing made it
  });

  test("a missing episode is EpisodeNotFoundError: NotFound and InvalidInputError", async () => {
    const memory = admin("errors-episode");
    await memory.add("Something to hold the namespace.", { id: "here" });
    for (const call of [() => memory.update("gone", "new text"), () => memory.history("gone")]) {
      await assert.rejects(call(), (err: unknown) => {
        assert.ok(err instanceof EpisodeNotFoundError);
        assert.ok(err instanceof NotFound);
        assert.ok(err instanceof InvalidInputError);
        assert.deepEqual([err.id, err.namespace, err.status], ["gone", "errors-episode", 404]);
        return true;
      });
    }
    await assert.rejects(memory.job("job_ffffffffffffffff"), (err: unknown) => {
      assert.ok(err instanceof NotFound && !(err instanceof InvalidInputError));
      return true;
    });
  });

  test("a bad key is Unauthorized, a short scope Forbidden", async () => {
    const wrong = track(new RemoteMemory(ROOT, "msk_not-a-key", { namespace: "errors-keys" }));
    const none = track(new RemoteMemory(ROOT, null, { namespace: "errors-keys" }));
    for (const client of [wrong, none]) {
      await assert.rejects(client.namespaces(), (err: unknown) => {
        assert.ok(err instanceof Unauthorized);
        assert.equal(err.status, 401);
        assert.equal(err.code, "unauthorized");
        return true;
      });
      await assert.rejects(client.add("not stored"), Unauthorized);
    }
    await admin("errors-keys").add("Readable.", { id: "r1" });
    const reader = await tenant(["errors-keys"], "read");
    assert.equal((await reader.get("r1"))[0]?.text, "Readable.");
    await assert.rejects(reader.add("Not writable."), (err: unknown) => {
      assert.ok(err instanceof Forbidden);
      assert.equal(err.status, 403);
      return true;
    });
    await assert.rejects(reader.createKey({ namespaces: ["errors-keys"] }), Forbidden);
    assert.equal((await reader.list()).episodes.length, 1);
  });

  test("input the service refuses is InvalidInputError, naming the field", async () => {
    const memory = admin("errors-input");
    await memory.add("A stored line.", { id: "s1" });
    await assert.rejects(memory.add("   "), (err: unknown) => {
      assert.ok(err instanceof InvalidInputError);
      assert.equal(err.status, 422);
      assert.equal(err.code, "invalid_request");
      assert.equal(err.problems[0]?.at, "body.episodes.0.text");
      assert.match(err.message, /body\.episodes\.0\.text/);
      return true;
    });
    await assert.rejects(memory.search("a query", { k: 0 }), (err: unknown) => {
      assert.ok(err instanceof InvalidInputError);
      assert.equal(err.problems[0]?.at, "body.k");
      return true;
    });
    await assert.rejects(memory.add("a line", { namespace: "bad\u0001name" }), (err: unknown) => {
      assert.ok(err instanceof InvalidInputError);
      assert.equal(err.code, "invalid_input");
      assert.match(err.message, /control character/);
      return true;
    });
    await assert.rejects(memory.search("a query", { recipe: "no-such-recipe" as RecipeName }), ConfigError);
    await assert.rejects(memory.build(undefined, { tier: "no-such-tier" }), (err: unknown) => {
      assert.ok(err instanceof ConfigError && !(err instanceof InvalidInputError));
      assert.deepEqual([err.status, err.code], [400, "invalid_config"]);
      assert.match(err.message, /unknown tier 'no-such-tier'/);
      return true;
    });
    assert.deepEqual((await memory.list()).episodes.map((e) => e.id), ["s1"]);
  });

  test("a service that cannot be reached is StoreError", async () => {
    const port = await new Promise<number>((done) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const address = probe.address();
        probe.close(() => done(typeof address === "object" && address ? address.port : 0));
      });
    });
    const nowhere = track(new RemoteMemory(`http://127.0.0.1:${port}`, null));
    await assert.rejects(nowhere.namespaces(), (err: unknown) => {
      assert.ok(err instanceof StoreError);
      assert.match(err.message, /cannot reach the service/);
      return true;
    });
  });
});

describe("refused before anything is sent", () => {
  const bad: [string, unknown][] = [
    ["NaN", { score: Number.NaN }],
    ["Infinity", { deep: { list: [1, Number.POSITIVE_INFINITY] } }],
    ["a function", { call: () => 1 }],
    ["a bigint", { big: 10n }],
    ["undefined in a list", { list: [undefined] }],
    ["a Date", { when: new Date(0) }],
    ["a Map", { map: new Map([["a", 1]]) }],
    ["a symbol", { s: Symbol("x") }],
  ];
  for (const [what, metadata] of bad) {
    test(`metadata holding ${what}`, async () => {
      const memory = admin(`errors-json-${what.replace(/\W+/g, "-")}`);
      const items = [{ text: "A fine line." }, { text: "Another.", metadata } as EpisodeInput];
      await assert.rejects(memory.addMany(items), (err: unknown) => {
        assert.ok(err instanceof InvalidInputError);
        assert.match(err.message, /^item 1: metadata/);
        return true;
      });
      await assert.rejects(memory.list(), NamespaceNotFoundError); // not even the first line
    });
  }

  test("a cycle, an unknown key, text that is not a string", async () => {
    const memory = admin("errors-shape");
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    const cases: [unknown, RegExp][] = [
      [{ text: "x", metadata: cycle }, /refers back to itself/],
      [{ text: "x", colour: "red" }, /unknown key 'colour'/],
      [{ text: 5 }, /text is a string/],
      [{ text: "x", at: "2024-01-01", occurred_at: "2024-01-02" }, /not both/],
      [42, /an episode is text or an object/],
    ];
    for (const [item, why] of cases) {
      await assert.rejects(memory.addMany(["first", item as EpisodeInput]), (err: unknown) => {
        assert.ok(err instanceof InvalidInputError);
        assert.match(err.message, why);
        return true;
      });
    }
    await assert.rejects(memory.update("x", "t", { metadata: { n: Number.NaN } }), InvalidInputError);
    await assert.rejects(memory.list({ limit: 0 }), InvalidInputError);
    await assert.rejects(memory.addMany(["x"], { batchSize: 0 }), InvalidInputError);
    await assert.rejects(memory.list(), NamespaceNotFoundError);
  });
});
