// The server `npm test` started (scripts/run-tests.mjs), and clients of it.
import { RemoteMemory } from "../src/index.js";
import type { Scope } from "../src/index.js";

const api = process.env.SERVED_URL;
const key = process.env.SERVED_ADMIN_KEY;
if (!api || !key) throw new Error("run the tests with `npm test`, which starts the server they use");

/** The server's root URL, as a client takes it. */
export const ROOT = api.replace(/\/v1$/, "");
export const ADMIN_KEY = key;

const open: RemoteMemory[] = [];

/** A client with the admin key of every namespace. */
export function admin(namespace?: string): RemoteMemory {
  return track(new RemoteMemory(ROOT, ADMIN_KEY, namespace === undefined ? {} : { namespace }));
}

/** A client with a key of its own, made by the admin, for `namespaces`. */
export async function tenant(namespaces: string[], scope: Scope = "write"): Promise<RemoteMemory> {
  const made = await admin().createKey({ namespaces, scope, label: `test ${namespaces.join(",")}` });
  return track(new RemoteMemory(ROOT, made.key, { namespace: namespaces[0] ?? "default" }));
}

export function track(client: RemoteMemory): RemoteMemory {
  open.push(client);
  return client;
}

/** Closes every client made here (call in an `after` hook). */
export function closeAll(): void {
  for (const client of open.splice(0)) client.close();
}
