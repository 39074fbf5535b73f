/**
 * @floe/client: the HTTP client of the router's public API (management and query) for Floe's own
 * clients, the `floe` CLI and the agent tools: the same surface a user calls (STYLE habit 14),
 * never a side door to the metadata DB or a querier. Errors come back in the shared envelope and
 * are raised as ApiError with the server's message.
 */
export interface ConnectionOptions {
  url: string;
  apiKey?: string;
  /** A whole Authorization header value, forwarded as it is (wins over apiKey): the agent tools pass their caller's. */
  authorization?: string;
  /** Sent as X-Tenant-ID: with an API key it must name the key's tenant. */
  tenant?: string;
  /** Sent as X-Dataset-ID; the tenant's default dataset when absent. */
  dataset?: string;
}

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
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: opts.rawBody ? opts.rawBody.text : opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new ApiError(0, 'unavailable', `cannot reach ${conn.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) throw errorOf(res.status, text);
  return { status: res.status, text };
}

function errorOf(status: number, text: string): ApiError {
  let e: { errorType?: string; error?: string } | undefined;
  try {
    e = text === '' ? undefined : (JSON.parse(text) as typeof e);
  } catch {
    return new ApiError(status, 'internal', `router answered ${status} with a body that is not JSON`);
  }
  return new ApiError(status, e?.errorType ?? 'internal', e?.error ?? `router answered ${status}`);
}

/** callApiText with the body parsed as JSON (undefined for an empty body, such as a 204). */
export async function callApi<T = unknown>(conn: ConnectionOptions, method: string, path: string, body?: unknown, query?: QueryParams): Promise<T> {
  const { status, text } = await callApiText(conn, method, path, { body, query });
  if (text === '') return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError(status, 'internal', `router answered ${status} with a body that is not JSON`);
  }
}

/** A path segment from user input, escaped (ids are validated by the server). */
export const seg = (s: string) => encodeURIComponent(s);
