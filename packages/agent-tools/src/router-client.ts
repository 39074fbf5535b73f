import { ApiError, callApi, seg, type QueryParams, type Shape } from '@floe/client';

/**
 * How the agent tools reach the router's public APIs (the query APIs, and the source-control
 * routes): through @floe/client, like the CLI, with the credentials of the caller the tools act
 * for, forwarded unchanged (the APIs authenticate, authorize and budget them again).
 */
export { ApiError, seg, type QueryParams };

/** The caller's credentials, forwarded unchanged to every router call. */
export interface RouterCredentials {
  /** The whole Authorization header value (`Bearer <key>`), as the caller sent it. */
  authorization?: string;
  tenant?: string;
  dataset?: string;
}

export interface RouterConnection {
  /** Base URL of the router, such as http://127.0.0.1:3000 (a path prefix is kept). */
  url: string;
  credentials: RouterCredentials;
  /** Longest one router call may take (default: the client's DEFAULT_TIMEOUT_MS). */
  timeoutMs?: number;
  /**
   * The tool call's own signal: it fires when the agent cancels the call (notifications/cancelled)
   * or its HTTP request goes away, and the router call is abandoned with it, so the query it runs
   * is cancelled rather than left to finish for no one.
   */
  signal?: AbortSignal;
}

const connectionOf = (conn: RouterConnection) => ({ url: conn.url, ...conn.credentials, timeoutMs: conn.timeoutMs, signal: conn.signal });

/**
 * GET `path` (relative to the router's base URL) and parse the JSON answer, which must have
 * `expect`, the shape of what the tool reads of it: a router of another version or a proxy
 * answering otherwise is a tool error naming the path, not a TypeError deep in the tool.
 */
export const routerGet = <T = unknown>(conn: RouterConnection, path: string, expect: Shape, query: QueryParams = {}): Promise<T> =>
  callApi<T>(connectionOf(conn), 'GET', path, { query, expect });

/** POST to `path`, with a JSON body or none (the source-context lookup, the source-control link routes); the answer checked as routerGet's. */
export const routerPost = <T = unknown>(conn: RouterConnection, path: string, expect: Shape, body?: unknown): Promise<T> =>
  callApi<T>(connectionOf(conn), 'POST', path, { body, expect });

/** DELETE `path`; a 204 resolves to undefined. */
export const routerDelete = (conn: RouterConnection, path: string): Promise<unknown> => callApi(connectionOf(conn), 'DELETE', path);
