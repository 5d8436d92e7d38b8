// Writes src/openapi.ts from the service's OpenAPI document: from the server at the URL
// given (http://host:port/v1), from a JSON file given, or, with no argument, from a
// server started for the purpose over a temporary store.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { fetchDocument, render } from "./render.mjs";
import { startServer } from "./server.mjs";

const target = fileURLToPath(new URL("../src/openapi.ts", import.meta.url));
const given = process.argv[2];
let document;
if (given?.startsWith("http")) {
  document = await fetchDocument(given);
} else if (given) {
  document = JSON.parse(readFileSync(given, "utf8"));
} else {
  const server = await startServer();
  try {
    document = await fetchDocument(server.url);
  } finally {
    await server.stop();
  }
}
writeFileSync(target, await render(document));
console.log(`wrote ${target}`);
