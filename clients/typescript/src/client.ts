// A client of `memstrata serve` with the verbs of the Python RemoteMemory
// (memstrata/service/remote.py): the same verbs, arguments and answers, and the
// service's errors as the same kinds of exception (src/errors.ts).
import http from "node:http";
import https from "node:https";

import {
  ConflictError,
  EpisodeNotFoundError,
  InvalidInputError,
  MemstrataError,
  NamespaceNotFoundError,
  NotFound,
  StoreError,
  errorOf,
} from "./errors.js";
import type { components } from "./openapi.js";
import type {
  AddReport,
  Answer,
  ApiKey,
  BuildReport,
  DeleteReport,
  Episode,
  EpisodeInput,
  EpisodePage,
  EpisodeVersion,
  Filters,
  JobStatus,
  NewKey,
  ReadOptions,
  RecipeName,
  Scope,
  SearchResult,
  ShowNode,
  Time,
  UpdatedEpisode,
} from "./types.js";

type Schemas = components["schemas"];

/** Episodes `get` asks for at once (one request each), as the Python client. */
export const GET_AT_ONCE = 8;
/** The service's caps on one request (memstrata/service/limits.py): longer calls split. */
export const MAX_EPISODES = 10_000;
export const MAX_IDS = 100;
export const MAX_QUERIES = 100;
export const MAX_PAGE = 1000;

const EPISODE_KEYS = new Set(["text", "id", "speaker", "role", "occurred_at", "at", "session", "metadata"]);
const FINAL = new Set(["succeeded", "failed", "removed"]);

export interface ClientOptions {
  /** The namespace the verbs use when given none. */
  namespace?: string;
  /** How long one request may take, in milliseconds (default 60 s). */
  timeoutMs?: number;
}

interface Call {
  json?: unknown;
  query?: [string, string][];
}

/**
 * The service at `url` (`http://host:port`), as `key` sees it. Requests go through
 * keep-alive connections of the client's own agent; `close()` ends them.
 */
export class RemoteMemory {
  /** The namespace the verbs use when given none. */
  readonly namespace: string;
  /** The service's API root (`…/v1`). */
  readonly baseUrl: string;
  private readonly origin: URL;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;

  constructor(url: string, key?: string | null, options: ClientOptions = {}) {
    this.namespace = options.namespace ?? "default";
    this.baseUrl = url.replace(/\/+$/, "") + "/v1";
    this.origin = new URL(this.baseUrl);
    if (this.origin.protocol !== "http:" && this.origin.protocol !== "https:") {
      throw new InvalidInputError(`the service's URL is http:// or https://, not ${url}`);
    }
    this.transport = this.origin.protocol === "https:" ? https : http;
    this.agent = new this.transport.Agent({ keepAlive: true, maxSockets: 16 });
    this.headers = { accept: "application/json" };
    if (key) this.headers.authorization = `Bearer ${key}`;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** Close the connections to the service. */
  close(): void {
    this.agent.destroy();
  }

  // writing ------------------------------------------------------------------------------

  /**
   * Remember one piece of text; resolves to the stored episode. An `id` stored with the
   * same content is a no-op; with other content a ConflictError, unless `replace`.
   */
  async add(
    text: string,
    options: Omit<EpisodeInput, "text"> & { namespace?: string; replace?: boolean } = {},
  ): Promise<Episode> {
    const { namespace, replace, ...fields } = options;
    const ns = this.ns(namespace);
    const report = await this.addMany([{ ...fields, text }], { namespace: ns, replace: replace ?? false });
    if (report.conflicts.length) throw new ConflictError(report.conflicts, ns);
    const stored = [...report.added, ...report.existing, ...report.updated][0];
    if (stored === undefined) throw new MemstrataError("the service stored nothing and said no why");
    const [found] = await this.get(stored, { namespace: ns });
    if (!found) throw new EpisodeNotFoundError(stored, ns); // deleted by another caller meanwhile
    return found;
  }

  /**
   * Remember many episodes (strings or episode objects), one request per batch of
   * `batchSize` (each batch all or nothing on the service; `progress` hears of each).
   * Every item is checked before the first request: an unknown key, text that is not a
   * string or metadata that is not JSON stops the call with nothing sent.
   */
  async addMany(
    items: Iterable<string | EpisodeInput>,
    options: {
      namespace?: string;
      batchSize?: number;
      progress?: (n: number) => void;
      replace?: boolean;
    } = {},
  ): Promise<AddReport> {
    const batchSize = options.batchSize ?? 256;
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new InvalidInputError(`batchSize must be a positive integer, got ${String(batchSize)}`);
    }
    const episodes: Record<string, unknown>[] = [];
    let i = 0;
    for (const item of items) {
      try {
        episodes.push(wire(item));
      } catch (err) {
        if (err instanceof InvalidInputError) throw new InvalidInputError(`item ${i}: ${err.message}`);
        throw err;
      }
      i += 1;
    }
    const path = this.path(options.namespace, "episodes");
    const size = Math.min(batchSize, MAX_EPISODES);
    const total: AddReport = { added: [], existing: [], conflicts: [], updated: [], jobs: [] };
    for (let start = 0; start < episodes.length; start += size) {
      const batch = episodes.slice(start, start + size);
      const body = { episodes: batch, replace: options.replace ?? false };
      const report = await this.call<Schemas["Added"]>("POST", path, { json: body });
      total.added.push(...report.added);
      total.existing.push(...report.existing);
      total.conflicts.push(...report.conflicts);
      total.updated.push(...report.updated);
      if (report.job) total.jobs.push(report.job);
      options.progress?.(batch.length);
    }
    return total;
  }

  /**
   * Correct a stored episode: the old version goes to `history` (or, with
   * `keep_history: false`, is erased with the earlier ones). A context field left out
   * keeps its stored value, null clears it. EpisodeNotFoundError when `id` is not stored.
   */
  async update(
    id: string,
    text: string,
    options: {
      namespace?: string;
      speaker?: string | null;
      role?: string | null;
      occurred_at?: Time | null;
      session?: string | null;
      metadata?: Record<string, unknown> | null;
      keep_history?: boolean;
    } = {},
  ): Promise<UpdatedEpisode> {
    const { namespace, ...given } = options;
    const body: Record<string, unknown> = { text: checkText(text) };
    for (const [name, value] of Object.entries(given)) {
      if (value === undefined) continue;
      body[name] = name === "occurred_at" ? time(value as Time | null) : value;
    }
    if (body.metadata != null) plainJson(body.metadata, "metadata");
    return this.call<UpdatedEpisode>("PUT", this.path(namespace, "episodes", oneId(id)), { json: body });
  }

  /** Delete episodes by id (a bare string is one id): how many were removed, and the
   * ids given that were not stored. */
  async delete(ids: string | Iterable<string>, options: { namespace?: string } = {}): Promise<DeleteReport> {
    const wanted = episodeIds(ids);
    const path = this.path(options.namespace, "episodes");
    if (!wanted.length) {
      // nothing to delete, but an unknown namespace still says so
      await this.call("GET", path, { query: [["limit", "1"]] });
      return { deleted: 0, missing: [] };
    }
    const report: DeleteReport = { deleted: 0, missing: [] };
    for (let start = 0; start < wanted.length; start += MAX_IDS) {
      const query = wanted.slice(start, start + MAX_IDS).map((id): [string, string] => ["id", id]);
      const done = await this.call<Schemas["Deleted"]>("DELETE", path, { query });
      report.deleted += done.deleted;
      report.missing.push(...done.missing);
    }
    return report;
  }

  /** Delete the namespace named and everything in it; the number of episodes it held. */
  async deleteNamespace(namespace: string): Promise<number> {
    if (typeof namespace !== "string" || !namespace) {
      throw new InvalidInputError("deleteNamespace needs the namespace's name");
    }
    return (await this.call<Schemas["NamespaceDeleted"]>("DELETE", this.path(namespace))).deleted;
  }

  // reading ------------------------------------------------------------------------------

  /** The stored episodes with these ids, in the order given (ids not stored are left
   * out). A bare string is one id. */
  async get(ids: string | Iterable<string>, options: { namespace?: string } = {}): Promise<Episode[]> {
    const wanted = episodeIds(ids);
    const distinct = [...new Set(wanted)];
    const found = new Map<string, Episode>();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < distinct.length) {
        const id = distinct[next++] as string;
        try {
          found.set(id, await this.call<Episode>("GET", this.path(options.namespace, "episodes", id)));
        } catch (err) {
          if (!(err instanceof NotFound || err instanceof NamespaceNotFoundError)) throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(GET_AT_ONCE, distinct.length) }, worker));
    return wanted.flatMap((id) => (found.has(id) ? [found.get(id) as Episode] : []));
  }

  /** The versions of episode `id` that updates replaced, oldest first. */
  async history(id: string, options: { namespace?: string } = {}): Promise<EpisodeVersion[]> {
    const path = this.path(options.namespace, "episodes", oneId(id), "history");
    return (await this.call<Schemas["Versions"]>("GET", path)).versions;
  }

  /**
   * A page of the namespace's episodes in the order they were added, optionally
   * filtered; `after` is the `next` of the previous page (an opaque cursor).
   */
  async list(
    options: { namespace?: string; after?: string | null; limit?: number; filters?: Filters | null } = {},
  ): Promise<EpisodePage> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new InvalidInputError(`limit must be an integer from 1 to ${MAX_PAGE}, got ${String(limit)}`);
    }
    const query: [string, string][] = [["limit", String(limit)]];
    if (options.after != null) query.push(["after", options.after]);
    const filters = options.filters;
    if (filters) {
      for (const speaker of filters.speakers ?? []) query.push(["speaker", speaker]);
      for (const session of filters.sessions ?? []) query.push(["session", session]);
      if (filters.since != null) query.push(["since", time(filters.since) as string]);
      if (filters.until != null) query.push(["until", time(filters.until) as string]);
    }
    return this.call<EpisodePage>("GET", this.path(options.namespace, "episodes"), { query });
  }

  /** Best hits for `query`, each with the episodes it rests on (`sources`), fitted to a
   * token budget (`max_tokens`: -1 the service's, null none). */
  async search(query: string, options: ReadOptions = {}): Promise<SearchResult> {
    const body = { ...reading(options), query };
    return this.call<SearchResult>("POST", this.path(options.namespace, "search"), { json: body });
  }

  /** `search` for many queries at once (embedded together on the service), in order. */
  async searchMany(queries: string[], options: ReadOptions = {}): Promise<SearchResult[]> {
    const path = this.path(options.namespace, "search_many");
    const out: SearchResult[] = [];
    for (let start = 0; start < queries.length; start += MAX_QUERIES) {
      const body = { ...reading(options), queries: queries.slice(start, start + MAX_QUERIES) };
      out.push(...(await this.call<Schemas["Results"]>("POST", path, { json: body })).results);
    }
    return out;
  }

  /** An answer citing episode ids, or `abstained` when memory does not hold it. */
  async ask(question: string, options: ReadOptions = {}): Promise<Answer> {
    const body = { ...reading(options), question };
    return this.call<Answer>("POST", this.path(options.namespace, "ask"), { json: body });
  }

  /** What the designs hold under `name` (a category, an entity, ...). */
  async show(name: string, options: { namespace?: string } = {}): Promise<ShowNode[]> {
    return (await this.call<Schemas["Nodes"]>("GET", this.path(options.namespace, "show", name))).nodes;
  }

  /** The namespaces that hold episodes and that the key reaches. */
  async namespaces(): Promise<string[]> {
    return (await this.call<Schemas["NamespaceList"]>("GET", "/namespaces")).namespaces;
  }

  /** Counts, the build queue per builder, LLM usage per stage. */
  async stats(namespace?: string): Promise<Record<string, unknown>> {
    return this.call<Record<string, unknown>>("GET", this.path(namespace, "stats"));
  }

  /** Every recipe the service knows: name, description, builders, routes, answerer. */
  async recipes(): Promise<Record<string, unknown>[]> {
    return (await this.call<Schemas["RecipeList"]>("GET", "/recipes")).recipes;
  }

  // building -----------------------------------------------------------------------------

  /** Fold pending episodes in now, on the service; one report per builder. */
  async build(
    namespace?: string,
    options: { recipe?: RecipeName | null; tier?: string | null; rebuild?: boolean; progress?: (n: number) => void } = {},
  ): Promise<BuildReport[]> {
    const body = { recipe: options.recipe ?? null, tier: options.tier ?? null, rebuild: options.rebuild ?? false };
    const { reports } = await this.call<Schemas["Builds"]>("POST", this.path(namespace, "build"), { json: body });
    for (const report of reports) if (options.progress && report.episodes) options.progress(report.episodes);
    return reports;
  }

  /** Queue failed enrichments again (of one builder, if named); how many episodes. */
  async retry(namespace?: string, options: { builder?: string | null } = {}): Promise<number> {
    const body = { builder: options.builder ?? null };
    return (await this.call<Schemas["Queued"]>("POST", this.path(namespace, "retry"), { json: body })).queued;
  }

  // jobs ---------------------------------------------------------------------------------

  /** Where a job stands; NotFound when the service knows no such job for this key. */
  async job(jobId: string): Promise<JobStatus> {
    return this.call<JobStatus>("GET", `/jobs/${segment(jobId)}`);
  }

  /**
   * The job once it is final (succeeded, failed or removed), or as it stands when
   * `timeoutMs` has passed. Follows the job's event stream (the service says each change
   * as it happens), so it answers as soon as the job ends, without polling.
   */
  async wait(jobId: string, options: { timeoutMs?: number } = {}): Promise<JobStatus> {
    const timeoutMs = options.timeoutMs ?? 600_000;
    const path = `/jobs/${segment(jobId)}/events`;
    const stream = new AbortController();
    const timer = setTimeout(() => stream.abort(), timeoutMs);
    try {
      for await (const [event, data] of this.events(path, stream.signal)) {
        if (event === "error") {
          const error = JSON.parse(data) as { code: string; message: string };
          throw errorOf(200, JSON.stringify({ error }), ["jobs", jobId]);
        }
        const job = JSON.parse(data) as JobStatus;
        if (FINAL.has(job.state)) return job;
      }
    } catch (err) {
      if (!stream.signal.aborted) throw err;
    } finally {
      clearTimeout(timer);
      stream.abort();
    }
    return this.job(jobId);
  }

  // keys ---------------------------------------------------------------------------------

  /** A new key for `namespaces` ("*": all) with `scope`; its text is `key`, shown once.
   * Needs an admin key, and makes keys only for the namespaces that key reaches. */
  async createKey(options: { namespaces: string[]; scope?: Scope; label?: string | null }): Promise<NewKey> {
    const body = { namespaces: options.namespaces, scope: options.scope ?? "read", label: options.label ?? null };
    return this.call<NewKey>("POST", "/keys", { json: body });
  }

  /** The keys (never their text) of the namespaces the admin key reaches. */
  async keys(): Promise<ApiKey[]> {
    return (await this.call<Schemas["KeyList"]>("GET", "/keys")).keys;
  }

  /** Revoke a key by its id (`key_...`); NotFound when no such key is in reach. */
  async revokeKey(keyId: string): Promise<boolean> {
    return (await this.call<Schemas["Revoked"]>("DELETE", `/keys/${segment(keyId)}`)).revoked;
  }

  // transport ----------------------------------------------------------------------------

  /** A namespace path: each name one percent-encoded segment ("/" included). */
  private path(namespace: string | undefined, ...rest: string[]): string {
    return "/" + ["namespaces", this.ns(namespace), ...rest].map(segment).join("/");
  }

  private ns(namespace: string | undefined): string {
    const name = namespace ?? this.namespace;
    if (typeof name !== "string" || !name) {
      throw new InvalidInputError(`a namespace is a non-empty string, not ${JSON.stringify(name)}`);
    }
    return name;
  }

  private async call<T>(method: string, path: string, options: Call = {}): Promise<T> {
    const { status, body, retryAfter } = await this.send(method, path, options, true);
    if (status >= 400) throw errorOf(status, body, segments(path), retryAfter);
    return JSON.parse(body) as T;
  }

  private send(
    method: string,
    path: string,
    options: Call,
    again: boolean,
  ): Promise<{ status: number; body: string; retryAfter: string | undefined }> {
    const payload = options.json === undefined ? undefined : Buffer.from(JSON.stringify(options.json), "utf8");
    return new Promise((done, fail) => {
      const request = this.transport.request(
        this.origin,
        {
          method,
          path: this.origin.pathname + path + query(options.query),
          agent: this.agent,
          headers: payload
            ? { ...this.headers, "content-type": "application/json", "content-length": payload.length }
            : this.headers,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("error", fail);
          response.on("end", () => {
            const retryAfter = response.headers["retry-after"];
            done({
              status: response.statusCode ?? 0,
              body: Buffer.concat(chunks).toString("utf8"),
              retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
            });
          });
        },
      );
      request.setTimeout(this.timeoutMs, () => request.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      request.on("error", (err: NodeJS.ErrnoException) => {
        // a kept-alive connection the server had closed meanwhile: it read nothing of
        // this request, which goes again on a new connection (once)
        if (again && request.reusedSocket && err.code === "ECONNRESET") {
          this.send(method, path, options, false).then(done, fail);
          return;
        }
        fail(new StoreError(`cannot reach the service at ${this.baseUrl}: ${err.message}`, { cause: err }));
      });
      request.end(payload);
    });
  }

  /** The events of a server-sent event stream, as [event, data] pairs; an error answer
   * is thrown as its exception. Ends when the stream does or `signal` aborts it. */
  private async *events(path: string, signal: AbortSignal): AsyncGenerator<[string, string]> {
    const response = await new Promise<http.IncomingMessage>((done, fail) => {
      const request = this.transport.request(this.origin, {
        method: "GET",
        path: this.origin.pathname + path,
        agent: this.agent,
        headers: { ...this.headers, accept: "text/event-stream" },
        signal,
      });
      request.on("response", done);
      request.on("error", (err) =>
        fail(signal.aborted ? err : new StoreError(`cannot reach the service at ${this.baseUrl}: ${err.message}`)),
      );
      request.end();
    });
    if ((response.statusCode ?? 0) >= 400) {
      const chunks: Buffer[] = [];
      for await (const chunk of response) chunks.push(chunk as Buffer);
      throw errorOf(response.statusCode ?? 0, Buffer.concat(chunks).toString("utf8"), segments(path));
    }
    response.setEncoding("utf8");
    let pending = "";
    for await (const chunk of response) {
      pending += (chunk as string).replace(/\r\n/g, "\n");
      let end: number;
      while ((end = pending.indexOf("\n\n")) >= 0) {
        const block = pending.slice(0, end);
        pending = pending.slice(end + 2);
        let event = "message";
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue; // a comment: the stream is alive
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event = value;
          else if (field === "data") data.push(value);
        }
        if (data.length) yield [event, data.join("\n")];
      }
    }
  }
}

// helpers ----------------------------------------------------------------------------------

/** One path segment: percent-encoded, "." too, so that no name reads as "." or "..". */
function segment(name: string): string {
  return encodeURIComponent(name).replace(/[!'()*.]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

function segments(path: string): string[] {
  return path.split("/").slice(1).map(decodeURIComponent);
}

function query(pairs: [string, string][] | undefined): string {
  return pairs?.length ? "?" + new URLSearchParams(pairs).toString() : "";
}

function reading(options: ReadOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {
    k: options.k ?? null,
    recipe: options.recipe ?? null,
    adaptive: options.adaptive ?? false,
    max_tokens: options.max_tokens === undefined ? -1 : options.max_tokens, // null: no limit
  };
  if (options.filters != null) body.filters = filtersBody(options.filters);
  return body;
}

function filtersBody(filters: Filters): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(filters)) {
    if (value == null) continue;
    body[name] = name === "since" || name === "until" ? time(value as Time) : value;
  }
  return body;
}

function time(value: Time | null): string | null {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new InvalidInputError("an invalid Date is no time");
    return value.toISOString();
  }
  return value;
}

function checkText(text: unknown): string {
  if (typeof text !== "string") throw new InvalidInputError(`text is a string, not ${typeof text}`);
  return text;
}

function oneId(id: unknown): string {
  if (typeof id !== "string" || !id) throw new InvalidInputError(`an episode id is a non-empty string, not ${JSON.stringify(id)}`);
  return id;
}

function episodeIds(ids: string | Iterable<string>): string[] {
  const list = typeof ids === "string" ? [ids] : [...ids];
  for (const id of list) oneId(id);
  return list;
}

/** One episode as the service's add takes it: known keys only, `at` read as
 * `occurred_at`, times as ISO text, null fields left out, metadata plain JSON. */
function wire(item: string | EpisodeInput): Record<string, unknown> {
  if (typeof item === "string") return { text: item };
  if (item === null || typeof item !== "object" || Array.isArray(item)) {
    throw new InvalidInputError(`an episode is text or an object, not ${JSON.stringify(item) ?? typeof item}`);
  }
  const unknown = Object.keys(item).filter((k) => !EPISODE_KEYS.has(k));
  if (unknown.length) {
    throw new InvalidInputError(`unknown key ${unknown.map((k) => `'${k}'`).join(", ")}; an episode has ${[...EPISODE_KEYS].join(", ")}`);
  }
  if (item.at != null && item.occurred_at != null) {
    throw new InvalidInputError("give occurred_at or at, not both");
  }
  const out: Record<string, unknown> = { text: checkText(item.text) };
  for (const name of ["id", "speaker", "role", "session"] as const) {
    const value = item[name];
    if (value == null) continue;
    if (typeof value !== "string") throw new InvalidInputError(`${name} is a string, not ${typeof value}`);
    out[name] = value;
  }
  const when = item.occurred_at ?? item.at;
  if (when != null) out.occurred_at = time(when);
  if (item.metadata != null) {
    plainJson(item.metadata, "metadata");
    if (typeof item.metadata !== "object" || Array.isArray(item.metadata)) {
      throw new InvalidInputError("metadata is an object");
    }
    out.metadata = item.metadata;
  }
  return out;
}

/**
 * Refuses what JSON cannot carry as it is, before anything is sent: undefined, functions,
 * symbols, BigInt, NaN and infinities, objects that are not plain (a Date, a Map, a
 * class instance) and cycles. JSON.stringify would drop or change them silently.
 */
export function plainJson(value: unknown, at = "value", seen: Set<object> = new Set()): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new InvalidInputError(`${at} is ${value}, which JSON cannot hold`);
    return;
  }
  if (typeof value !== "object") throw new InvalidInputError(`${at} is a ${typeof value}, which JSON cannot hold`);
  if (seen.has(value)) throw new InvalidInputError(`${at} refers back to itself, which JSON cannot hold`);
  const proto = Object.getPrototypeOf(value) as unknown;
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
    const kind = (value as object).constructor?.name ?? "object";
    throw new InvalidInputError(`${at} is a ${kind}, not plain JSON (send its text or its fields)`);
  }
  seen.add(value);
  if (Array.isArray(value)) value.forEach((v, i) => plainJson(v, `${at}[${i}]`, seen));
  else for (const [k, v] of Object.entries(value)) plainJson(v, `${at}.${k}`, seen);
  seen.delete(value);
}
