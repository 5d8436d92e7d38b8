// `memstrata serve` over a fresh store in a temporary folder, for the tests and for
// regenerating the types. The memstrata it runs is this checkout's (../../src first on
// PYTHONPATH), under the Python that MEMSTRATA_PYTHON names, else the checkout's .venv,
// else python3.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(fileURLToPath(new URL("../../..", import.meta.url)));
/** How long the server may take to start: it imports FastAPI and the MCP SDK. */
const START_MS = 180_000;

export function python() {
  if (process.env.MEMSTRATA_PYTHON) return process.env.MEMSTRATA_PYTHON;
  const venv = join(ROOT, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

/** This environment for memstrata, without MEMSTRATA_PYTHON (memstrata reads every
 * MEMSTRATA_* variable as its configuration, and refuses one it does not know). */
export function childEnv(extra = {}) {
  const { MEMSTRATA_PYTHON: _, ...env } = process.env;
  const path = [join(ROOT, "src"), env.PYTHONPATH].filter(Boolean).join(delimiter);
  return { ...env, PYTHONPATH: path, ...extra };
}

/** Runs `python -m memstrata ARGS` to its end; its stdout, or an error with its stderr. */
function memstrata(args, env) {
  return new Promise((done, fail) => {
    const child = spawn(python(), ["-m", "memstrata", ...args], {
      env: childEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    child.on("error", fail);
    child.on("close", (code) =>
      code === 0 ? done(out) : fail(new Error(`memstrata ${args[0]} exited ${code}: ${err}`)),
    );
  });
}

/**
 * Starts a server; resolves once uvicorn says the app has started, with its URL (…/v1),
 * an admin key of every namespace (the store is guarded: every request needs a key), and
 * stop(). `env` is added to the server's environment (MEMSTRATA_RECIPE, …), `args` to its
 * command line.
 */
export async function startServer({ env = {}, args = [] } = {}) {
  const folder = mkdtempSync(join(tmpdir(), "memstrata-ts-"));
  const db = join(folder, "served.db");
  const adminKey = (
    await memstrata(["keys", "create", "--db", db, "-n", "*", "--scope", "admin"], env)
  ).trim();
  const child = spawn(
    python(),
    ["-m", "memstrata", "serve", "--db", db, "--port", "0", ...args],
    { env: childEnv(env), stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  const url = await new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no server after ${START_MS} ms: ${log}`)), START_MS);
    let address = null;
    child.stderr.on("data", (chunk) => {
      log += chunk;
      address ??= /serving .* on (http:\/\/\S+\/v1)/.exec(log)?.[1] ?? null;
      if (address && log.includes("Application startup complete")) {
        clearTimeout(timer);
        done(address);
      }
    });
    child.on("error", (err) => {
      clearTimeout(timer);
      fail(err);
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`the server exited (${code}) before it started: ${log}`));
    });
  });
  child.stderr.resume();
  const stopped = new Promise((done) => child.once("close", done));
  return {
    url,
    adminKey,
    db,
    log: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const late = setTimeout(() => child.kill("SIGKILL"), 30_000);
        await stopped;
        clearTimeout(late);
      }
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
