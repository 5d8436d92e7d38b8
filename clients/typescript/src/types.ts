// Names for the shapes of the service's OpenAPI document (src/openapi.ts, generated).
// Fields are spelled as the service spells them (`occurred_at`, `max_tokens`), so what
// is sent and what is read back match, and match the Python client's keywords.
import type { components } from "./openapi.js";

type Schemas = components["schemas"];

/** A stored episode: a conversation turn, a message or a document chunk. */
export type Episode = Schemas["StoredEpisode"];
/** An episode as an update left it, with the job that rebuilds what rests on it. */
export type UpdatedEpisode = Schemas["Updated"];
/** A version of an episode that an update replaced. */
export type EpisodeVersion = Schemas["EpisodeVersion"];
/** One page of `list`, and the cursor of the next. */
export type EpisodePage = Schemas["EpisodeList"];
/** Hits for one query, the context they render to, and its size in tokens. */
export type SearchResult = Schemas["SearchResult"];
/** One retrieved item, with `sources`: the ids of the episodes it rests on. */
export type Hit = Schemas["Hit"];
/** An answer citing episode ids, or `abstained` when memory does not hold it. */
export type Answer = Schemas["Answer"];
/** Where a job (the building of added episodes' structures) stands. */
export type JobStatus = Schemas["JobStatus"];
export type ShowNode = Schemas["ShowNode"];
export type BuildReport = Schemas["BuildReport"];
/** An API key as stored (never the key itself). */
export type ApiKey = Schemas["ApiKey"];
/** A key just made: `key` is its text, shown this once. */
export type NewKey = Schemas["NewKey"];
/** Restrictions applied before ranking: speakers, sessions, a time window. */
export type Filters = Schemas["FiltersBody"];
/** A recipe the service knows. */
export type RecipeName = NonNullable<Schemas["SearchBody"]["recipe"]>;
/** A key's scope: read; write (also read); admin (also make and revoke keys). */
export type Scope = Schemas["KeyBody"]["scope"];

/** A time: ISO 8601 text, or a Date (sent as ISO text). */
export type Time = string | Date;

/** One episode to remember (`at` is `occurred_at`, as import lines name it). */
export interface EpisodeInput {
  text: string;
  id?: string | null;
  speaker?: string | null;
  role?: string | null;
  occurred_at?: Time | null;
  at?: Time | null;
  session?: string | null;
  metadata?: Record<string, unknown> | null;
}

/** What `addMany` did, per id, and the jobs that build the episodes' structures. */
export interface AddReport {
  added: string[];
  existing: string[];
  conflicts: string[];
  updated: string[];
  jobs: JobStatus[];
}

/** How many episodes a delete removed, and the ids given that were not stored. */
export interface DeleteReport {
  deleted: number;
  missing: string[];
}

/** The options a search and an ask share. */
export interface ReadOptions {
  namespace?: string;
  /** How many hits (1 to 200); the recipe's default when left out. */
  k?: number | null;
  recipe?: RecipeName | null;
  filters?: Filters | null;
  /** The context's token budget: -1 (the default) the service's, null none. */
  max_tokens?: number | null;
  /** Cut to as many source turns as the evidence needs (at most k). */
  adaptive?: boolean;
}
