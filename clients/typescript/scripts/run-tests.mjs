// `npm test`: starts `memstrata serve` over a fresh store (guarded by an admin key, the
// mnemis recipe, no background worker, so that a job waits for the build a test asks
// for), runs node's test runner on the compiled tests against it, and stops it.
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { startServer } from "./server.mjs";

const here = fileURLToPath(new URL("..", import.meta.url));
const files = [
  ...readdirSync(join(here, "build", "test")).filter((f) => f.endsWith(".test.js")).map((f) => join("build", "test", f)),
  ...readdirSync(join(here, "test")).filter((f) => f.endsWith(".test.mjs")).map((f) => join("test", f)),
].sort();

const server = await startServer({ env: { MEMSTRATA_RECIPE: "mnemis" }, args: ["--workers", "0"] });
let code = 1;
try {
  const runner = spawn(process.execPath, ["--test", "--test-reporter=spec", ...files], {
    cwd: here,
    stdio: "inherit",
    env: { ...process.env, SERVED_URL: server.url, SERVED_ADMIN_KEY: server.adminKey },
  });
  code = await new Promise((done) => runner.on("close", (status) => done(status ?? 1)));
} finally {
  await server.stop();
}
if (code !== 0 && process.env.SERVED_LOG) console.error(server.log());
process.exit(code);
