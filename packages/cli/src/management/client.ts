/**
 * The CLI's HTTP client for the router's management API: the same public surface a user or an
 * agent calls (STYLE habit 14), never a side door to the metadata DB. Errors come back in the
 * shared envelope and are raised as ApiError with the server's message.
 */
export interface ConnectionOptions {
  url: string;
  apiKey?: string;
  /** Sent as X-Tenant-ID: with an API key it must name the key's tenant. */
  tenant?: string;
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

export async function callApi<T = unknown>(conn: ConnectionOptions, method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (conn.apiKey) headers.authorization = `Bearer ${conn.apiKey}`;
  if (conn.tenant) headers['x-tenant-id'] = conn.tenant;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(new URL(path, conn.url.endsWith('/') ? conn.url : `${conn.url}/`), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new ApiError(0, 'unavailable', `cannot reach ${conn.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new ApiError(res.status, 'internal', `router answered ${res.status} with a body that is not JSON`);
  }
  if (!res.ok) {
    const e = json as { errorType?: string; error?: string } | undefined;
    throw new ApiError(res.status, e?.errorType ?? 'internal', e?.error ?? `router answered ${res.status}`);
  }
  return json as T;
}

/** A path segment from user input, escaped (ids are validated by the server). */
export const seg = (s: string) => encodeURIComponent(s);
