/**
 * @floe/client: the HTTP client of the router's public API (management and query) for Floe's own
 * clients, the `floe` CLI and the agent tools: the same surface a user calls (STYLE habit 14),
 * never a side door to the metadata DB or a querier. Errors come back in the shared envelope and
 * are raised as ApiError with the server's message.
 */
import { shapeProblem, type Shape } from './answer-shape.ts';

export { optional, shapeProblem, type AnswerOf, type Shape } from './answer-shape.ts';
export { SCM_INSTALLATION, SCM_INSTALLATIONS, SCM_LINK, sourceContextShape } from './scm-answers.ts';
export { OPS_CHECK_PAGE, OPS_DROP_DAMAGED, OPS_JOB, OPS_JOB_STARTED, OPS_REGISTER, OPS_ROLLBACK, OPS_UNREGISTERED_PAGE } from './ops-answers.ts';
export type { CheckAnswer, CheckPageAnswer, DropDamagedAnswer, JobAnswer, JobStartedAnswer, RegisterAnswer, RollbackAnswer, TableProblem, UnregisteredAnswer, UnregisteredPageAnswer, UnregisteredTable } from './ops-answers.ts';

export interface ConnectionOptions {
  url: string;
  apiKey?: string;
  /** A whole Authorization header value, forwarded as it is (wins over apiKey): the agent tools pass their caller's. */
  authorization?: string;
  /** Sent as X-Tenant-ID: with an API key it must name the key's tenant. */
  tenant?: string;
  /** Sent as X-Dataset-ID; the tenant's default dataset when absent. */
  dataset?: string;
  /** Longest one call may take, answer included (default DEFAULT_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Largest answer read, bytes (default DEFAULT_MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
  /** Abandons the calls made with these options when it fires (an agent's cancelled tool call). */
  signal?: AbortSignal;
}

/**
 * The environment variables naming the client certificate (PEM files) that Floe's clients present
 * to a server demanding one (mutual TLS). Here, in the package every client loads and that loads
 * nothing itself, so the CLI can ask whether one is named before it loads the runtime that reads
 * and presents it (@floe/runtime clientCertificateFromEnv).
 */
export const CLIENT_CERT_FILE_ENV = 'FLOE_CLIENT_CERT_FILE';
export const CLIENT_KEY_FILE_ENV = 'FLOE_CLIENT_KEY_FILE';

/**
 * A router that accepts the connection but never answers must not hold a command (or an agent's
 * tool call) forever. Above the router's own query deadline (query_timeout, 30 s by default), so
 * that a slow query still gets the router's 504 with its message.
 */
export const DEFAULT_TIMEOUT_MS = 5 * 60_000;
/**
 * Answers are read whole before they are printed or parsed; past this a process would spend
 * gigabytes on one answer (a misrouted URL, a broken proxy) before V8 refuses the string anyway.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

export class ApiError extends Error {
  readonly status: number;
  readonly errorType: string;
  constructor(status: number, errorType: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.errorType = errorType;
  }
}

/** Query-string parameters; an array repeats the name (`match[]`), undefined leaves it out. */
export type QueryParams = Record<string, string | readonly string[] | undefined>;

export interface RequestOptions {
  /** A JSON body. */
  body?: unknown;
  /** A body sent as it is, with its media type (a rule group's YAML). */
  rawBody?: { text: string; contentType: string };
  query?: QueryParams;
}

/**
 * One request, answered with the body exactly as the router sent it, so a caller can print it
 * byte for byte. Any status other than 2xx is raised as ApiError from the error envelope.
 */
export async function callApiText(conn: ConnectionOptions, method: string, path: string, opts: RequestOptions = {}): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (conn.authorization) headers.authorization = conn.authorization;
  else if (conn.apiKey) headers.authorization = `Bearer ${conn.apiKey}`;
  if (conn.tenant) headers['x-tenant-id'] = conn.tenant;
  if (conn.dataset) headers['x-dataset-id'] = conn.dataset;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.rawBody) headers['content-type'] = opts.rawBody.contentType;
  // Relative to the base so a router behind a path prefix keeps it.
  const url = new URL(path.replace(/^\/+/, ''), conn.url.endsWith('/') ? conn.url : `${conn.url}/`);
  for (const [name, value] of Object.entries(opts.query ?? {})) {
    for (const v of typeof value === 'string' ? [value] : (value ?? [])) url.searchParams.append(name, v);
  }
  const timeoutMs = conn.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = conn.signal ? AbortSignal.any([deadline, conn.signal]) : deadline;
  // Why a call was abandoned, in words: fetch reports both as a bare abort.
  const abandoned = (err: unknown): ApiError | undefined => {
    if (deadline.aborted) return new ApiError(0, 'timeout', `no answer from ${conn.url} within ${timeoutMs} ms`);
    if (conn.signal?.aborted) return new ApiError(0, 'canceled', 'the call was cancelled');
    return err instanceof ApiError ? err : undefined;
  };
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: opts.rawBody ? opts.rawBody.text : opts.body === undefined ? undefined : JSON.stringify(opts.body), signal });
  } catch (err) {
    const known = abandoned(err);
    if (known) throw known;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new ApiError(0, 'unavailable', `cannot reach ${conn.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  let text: string;
  try {
    text = await readBounded(res, conn.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
  } catch (err) {
    const known = abandoned(err);
    if (known) throw known;
    throw new ApiError(0, 'unavailable', `${conn.url} closed the connection before its answer (HTTP ${res.status}) was complete`);
  }
  if (!res.ok) throw errorOf(res.status, text, res.headers.get('content-type'));
  return { status: res.status, text };
}

/** The body as text, refused once it passes `maxBytes` (without reading the rest). */
async function readBounded(res: Response, maxBytes: number): Promise<string> {
  if (!res.body) return '';
  const declared = Number(res.headers.get('content-length'));
  if (declared > maxBytes) {
    await res.body.cancel();
    throw tooLarge(res.status, maxBytes);
  }
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let seen = 0;
  for await (const chunk of res.body) {
    seen += chunk.byteLength;
    if (seen > maxBytes) {
      // Leaving the loop early cancels the stream, which closes the connection.
      throw tooLarge(res.status, maxBytes);
    }
    parts.push(decoder.decode(chunk, { stream: true }));
  }
  parts.push(decoder.decode());
  return parts.join('');
}

const tooLarge = (status: number, maxBytes: number) => new ApiError(status, 'too_large', `the answer (HTTP ${status}) is larger than ${Math.round(maxBytes / 1024 / 1024)} MiB; narrow the request`);

function errorOf(status: number, text: string, contentType: string | null): ApiError {
  let e: unknown;
  try {
    e = text === '' ? undefined : JSON.parse(text);
  } catch {
    return new ApiError(status, 'internal', notJson(status, contentType));
  }
  // Only the envelope's own string fields: anything else from a stranger prints as [object Object].
  const field = (name: string) => {
    const v = e !== null && typeof e === 'object' ? (e as Record<string, unknown>)[name] : undefined;
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  return new ApiError(status, field('errorType') ?? 'internal', field('error') ?? `router answered ${status}`);
}

const notJson = (status: number, contentType: string | null) => `router answered ${status} with a body that is not JSON${contentType ? ` (${contentType.split(';')[0]})` : ''}`;

/**
 * A 2xx answer that is not what the caller relies on: not JSON, empty, or of another shape. The
 * message names the path and what was wrong (`unexpected answer from /api/v1/tenants: tenants:
 * expected a list, got 5`), so a command can print it as it is.
 */
export class UnexpectedAnswer extends ApiError {
  /** The path asked, as `/api/v1/…`. */
  readonly path: string;
  /** What was wrong with the answer. */
  readonly problem: string;
  constructor(status: number, path: string, problem: string) {
    const shownPath = `/${path.replace(/^\/+/, '')}`;
    super(status, 'internal', `unexpected answer from ${shownPath}: ${problem}`);
    this.name = 'UnexpectedAnswer';
    this.path = shownPath;
    this.problem = problem;
  }
}

/** `value` typed as T once it has `shape`; otherwise UnexpectedAnswer for `path`. For answers whose shape depends on a field (a union). */
export function expectShape<T>(value: unknown, shape: Shape, path: string, status = 200): T {
  const problem = shapeProblem(value, shape);
  if (problem !== undefined) throw new UnexpectedAnswer(status, path, problem);
  return value as T;
}

export interface CallOptions {
  /** A JSON body. */
  body?: unknown;
  query?: QueryParams;
  /**
   * What the caller reads of the answer: checked before it is returned, so a wrong shape is an
   * UnexpectedAnswer naming the path rather than a TypeError in the caller. With it, a 204 (no
   * body) is unexpected too.
   */
  expect?: Shape;
}

/**
 * callApiText with the body parsed as JSON: an object or array, or undefined for a 204 when no
 * shape is expected. Anything else (an empty 200, a bare `null`, a body that is not JSON) and an
 * answer of another shape than `expect` are refused as UnexpectedAnswer, so a command reading
 * fields of the answer says what the router did rather than failing on a property of undefined.
 */
export async function callApi<T = unknown>(conn: ConnectionOptions, method: string, path: string, opts: CallOptions = {}): Promise<T> {
  const { status, text } = await callApiText(conn, method, path, { body: opts.body, query: opts.query });
  if (status === 204 && opts.expect === undefined) return undefined as T;
  if (text === '') throw new UnexpectedAnswer(status, path, `HTTP ${status} with an empty body`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UnexpectedAnswer(status, path, `HTTP ${status} with a body that is not JSON`);
  }
  if (parsed === null || typeof parsed !== 'object') throw new UnexpectedAnswer(status, path, `expected an object or a list, got ${JSON.stringify(parsed).slice(0, 40)}`);
  return opts.expect === undefined ? (parsed as T) : expectShape<T>(parsed, opts.expect, path, status);
}

/** A path segment from user input, escaped (ids are validated by the server). */
export const seg = (s: string) => encodeURIComponent(s);
