// memstrata: long-term memory for LLM agents, as a TypeScript client of `memstrata serve`.
export { RemoteMemory, plainJson, GET_AT_ONCE, MAX_EPISODES, MAX_IDS, MAX_PAGE, MAX_QUERIES } from "./client.js";
export type { ClientOptions } from "./client.js";
export {
  ConfigError,
  ConflictError,
  EpisodeNotFoundError,
  Forbidden,
  InvalidInputError,
  LLMBackendError,
  LLMError,
  MemstrataError,
  Misdirected,
  NamespaceNotFoundError,
  NotFound,
  Overloaded,
  RequestTimeout,
  StoreError,
  Unauthorized,
  errorOf,
} from "./errors.js";
export type { ErrorBody } from "./errors.js";
export type * from "./types.js";
export type { components, operations, paths } from "./openapi.js";
