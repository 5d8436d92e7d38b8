// The committed types (src/openapi.ts) are those of the document the live service
// publishes: a change to the service's API that was not generated again fails here.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { fetchDocument, render } from "../scripts/render.mjs";

test("src/openapi.ts is generated from the live service's document", async () => {
  const document = await fetchDocument(process.env.SERVED_URL);
  assert.equal(document.info.title, "memstrata");
  const operations = Object.values(document.paths).flatMap((item) => Object.keys(item));
  assert.ok(operations.length >= 26, `${operations.length} operations`);
  const committed = readFileSync(new URL("../src/openapi.ts", import.meta.url), "utf8");
  const live = await render(document);
  assert.ok(
    committed === live,
    "src/openapi.ts differs from the service's document: run `npm run generate` and commit it",
  );
});
