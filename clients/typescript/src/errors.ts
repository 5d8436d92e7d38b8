// The errors of memstrata (memstrata/errors.py), as the service names them: its error
// JSON carries a `code`, and each code stands for one class here, so code written
// against the Python client catches the same kinds. Every class also keeps the HTTP
// status and the code it came from.

/** What the service says went wrong: `{"error": {"code", "message", ...}}`. */
export interface ErrorBody {
  code: string;
  message: string;
  problems?: { at: string; problem: string }[];
  ids?: string[];
}

/** Base class of every error memstrata raises on purpose. */
export class MemstrataError extends Error {
  /** The HTTP status the service answered (undefined: no answer, or raised here). */
  status: number | undefined;
  /** The service's code for it (`invalid_input`, `namespace_not_found`, ...). */
  code: string | undefined;

  constructor(message: string, options?: { status?: number; code?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options?.status;
    this.code = options?.code;
  }
}

/** Text or parameters memstrata cannot store or use; `problems` names the fields of a
 * request that does not match its schema. Nothing was changed. */
export class InvalidInputError extends MemstrataError {
  problems: { at: string; problem: string }[] = [];

  /** An episode that is not found is also invalid input, as in Python (where
   * EpisodeNotFoundError derives from both NotFound and InvalidInputError). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      Function.prototype[Symbol.hasInstance].call(this, value) ||
      (this === InvalidInputError && value instanceof EpisodeNotFoundError)
    );
  }
}

/** `add` named ids already stored with different content; nothing was changed. */
export class ConflictError extends InvalidInputError {
  constructor(
    readonly ids: string[],
    readonly namespace: string,
    options?: { status?: number; code?: string },
  ) {
    const shown = ids.slice(0, 5).map((i) => `'${i}'`).join(", ");
    const more = ids.length > 5 ? ` and ${ids.length - 5} more` : "";
    super(
      `episode ${shown}${more} is already stored in namespace '${namespace}' with different ` +
        "content; nothing was changed. To replace it (the stored version is kept in its " +
        "history), call update(id, text) or pass replace: true",
      options,
    );
  }
}

/** A verb named a namespace that holds nothing, or that the key does not reach (the two
 * look the same). */
export class NamespaceNotFoundError extends MemstrataError {
  constructor(
    readonly namespace: string,
    options?: { status?: number; code?: string },
  ) {
    super(`unknown namespace '${namespace}' (nothing has been added to it)`, options);
  }
}

/** A job, key or episode that was asked for is not there (or not within the key's reach). */
export class NotFound extends MemstrataError {}

/** An update or a history named an episode id the namespace does not hold. */
export class EpisodeNotFoundError extends NotFound {
  constructor(
    readonly id: string,
    readonly namespace: string,
    options?: { status?: number; code?: string },
  ) {
    super(`no episode '${id}' in namespace '${namespace}'; add it with add()`, options);
  }
}

/** The store could not be reached, opened or written (also: the service cannot be reached). */
export class StoreError extends MemstrataError {}

/** The configuration is incomplete or contradictory (an unknown recipe, ...). */
export class ConfigError extends MemstrataError {}

/** No live key, or one that is not valid (HTTP 401). */
export class Unauthorized extends MemstrataError {}

/** A valid key whose scope is short (HTTP 403). */
export class Forbidden extends MemstrataError {}

/** The service was asked under a host name that is not its own (HTTP 421). */
export class Misdirected extends MemstrataError {}

/** The request body did not reach the service in time (HTTP 408). */
export class RequestTimeout extends MemstrataError {}

/** Every slot of the service this caller may take is in use (HTTP 429); retry after
 * `retryAfter` seconds. */
export class Overloaded extends MemstrataError {
  retryAfter: number | undefined;
}

/** The model failed: its output could not be used (HTTP 502). */
export class LLMError extends MemstrataError {}

/** The model's server could not be reached, or is overloaded (HTTP 503). */
export class LLMBackendError extends LLMError {}

const BY_CODE: Record<string, new (message: string, options?: { status?: number; code?: string }) => MemstrataError> = {
  invalid_input: InvalidInputError,
  malformed_json: InvalidInputError,
  invalid_request: InvalidInputError,
  too_large: InvalidInputError,
  invalid_config: ConfigError,
  not_found: NotFound,
  unauthorized: Unauthorized,
  forbidden: Forbidden,
  store_busy: StoreError,
  store_unavailable: StoreError,
  misdirected_request: Misdirected,
  request_timeout: RequestTimeout,
  too_many_requests: Overloaded,
  llm_unavailable: LLMBackendError,
  llm_bad_reply: LLMError,
};

/**
 * The error an answer of the service stands for. `segments` are the decoded segments of
 * the path after /v1 (`["namespaces", ns, "episodes", id]`): an unknown namespace or
 * episode is named from them, as the Python client does.
 */
export function errorOf(
  status: number,
  body: string,
  segments: string[],
  retryAfter?: string,
): MemstrataError {
  let error: ErrorBody;
  try {
    error = (JSON.parse(body) as { error: ErrorBody }).error;
    if (typeof error?.code !== "string" || typeof error.message !== "string") throw new Error();
  } catch {
    return new StoreError(`the service answered ${status}: ${body.slice(0, 200)}`, { status });
  }
  const where = { status, code: error.code };
  const namespace = segments[0] === "namespaces" ? (segments[1] ?? "") : "";
  if (error.code === "namespace_not_found") return new NamespaceNotFoundError(namespace, where);
  if (error.code === "conflict") return new ConflictError(error.ids ?? [], namespace, where);
  if (error.code === "not_found" && segments[2] === "episodes" && segments.length > 3) {
    return new EpisodeNotFoundError(segments[3] ?? "", namespace, where);
  }
  const Kind = BY_CODE[error.code] ?? MemstrataError;
  let message = error.message;
  if (error.code === "invalid_request" && error.problems?.length) {
    const shown = error.problems.slice(0, 3).map((p) => `${p.at}: ${p.problem}`);
    message = `${message} (${shown.join("; ")})`;
  }
  const made = new Kind(message, where);
  if (made instanceof InvalidInputError) made.problems = error.problems ?? [];
  if (made instanceof Overloaded && retryAfter !== undefined) made.retryAfter = Number(retryAfter);
  return made;
}
