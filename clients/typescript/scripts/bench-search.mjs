// `npm run bench`: the latency of a search through this client beside the Python
// RemoteMemory's, against one `memstrata serve` over one store (SQLite, MiniLM, the
// default recipe). Each client runs the same queries one at a time, after a warm-up
// pass, in alternating rounds; prints the p50 and p95 of each in ms. Needs `npm run
// build` first (it loads dist/).
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";

import { RemoteMemory } from "../dist/index.js";
import { childEnv, python, startServer } from "./server.mjs";

const ITEMS = Number(process.env.BENCH_ITEMS ?? 200);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 50);
const ROUNDS = 3;
const NAMESPACE = "bench-ts";

const people = ["Ana", "Ben", "Chloe", "Dmitri", "Eun-ji", "Farah", "Goran", "Hana"];
const things = ["a bicycle", "the cello", "a greyhound", "sourdough", "a flat in Porto", "chess", "a kayak", "Japanese"];
const verbs = ["bought", "started learning", "talked about", "wants", "gave away", "is fond of"];
const items = Array.from({ length: ITEMS }, (_, i) => ({
  id: `b${i}`,
  text: `${people[i % 8]} ${verbs[i % 6]} ${things[(i * 5) % 8]} in week ${i}.`,
}));
const queries = Array.from({ length: QUERIES }, (_, i) => `What did ${people[(i * 3) % 8]} say about ${things[i % 8]}?`);

function summary(ms) {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return { p50: Number(at(0.5).toFixed(2)), p95: Number(at(0.95).toFixed(2)) };
}

async function typescript(client) {
  const ms = [];
  for (const q of queries) {
    const start = performance.now();
    await client.search(q, { k: 10 });
    ms.push(performance.now() - start);
  }
  return ms;
}

const PYTHON = `
import json, sys, time
from memstrata.service.remote import RemoteMemory
url, key, namespace, queries = json.loads(sys.stdin.read())
with RemoteMemory(url, key, namespace=namespace) as memory:
    for q in queries[:3]:
        memory.search(q, k=10)
    ms = []
    for q in queries:
        start = time.perf_counter()
        memory.search(q, k=10)
        ms.append((time.perf_counter() - start) * 1000)
print(json.dumps(ms))
`;

function pythonSide(root, key) {
  return new Promise((done, fail) => {
    const child = spawn(python(), ["-c", PYTHON], { env: childEnv(), stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", fail);
    child.on("close", (code) => (code === 0 ? done(JSON.parse(out)) : fail(new Error(`python exited ${code}`))));
    child.stdin.end(JSON.stringify([root, key, NAMESPACE, queries]));
  });
}

const server = await startServer({ args: ["--workers", "0"] });
try {
  const root = server.url.replace(/\/v1$/, "");
  const client = new RemoteMemory(root, server.adminKey, { namespace: NAMESPACE });
  await client.addMany(items);
  for (const q of queries.slice(0, 3)) await client.search(q, { k: 10 });
  const ts = [];
  const py = [];
  for (let round = 0; round < ROUNDS; round++) {
    ts.push(...(await typescript(client)));
    py.push(...(await pythonSide(root, server.adminKey)));
  }
  client.close();
  const rows = [
    ["TypeScript RemoteMemory (node:http)", summary(ts)],
    ["Python RemoteMemory (aiohttp)", summary(py)],
  ];
  console.log(`search, ${ITEMS} items, ${QUERIES} queries x ${ROUNDS} rounds, k=10`);
  console.log("| client | p50 ms | p95 ms |\n|---|---:|---:|");
  for (const [name, s] of rows) console.log(`| ${name} | ${s.p50} | ${s.p95} |`);
} finally {
  await server.stop();
}
