import { FloeError } from '@floe/errors';

/**
 * The router's calls to the compactor's admin port (its `GET /status`, the `POST /compact`
 * actions and `POST /tables/check|rollback|drop-damaged-files|unregistered|register`), for /api/v1/ops. The router is where operators are authenticated; the
 * compactor's actions take only the services' shared key, which this client presents. An
 * unreachable compactor is 503.
 */
/** The compactor admin actions the router calls. */
export type CompactorPath = '/status' | '/compact' | '/compact/dry-run' | '/tables/check' | '/tables/rollback' | '/tables/drop-damaged-files' | '/tables/unregistered' | '/tables/register';

export interface CompactorClient {
  /** The compactor's answer (status and JSON body), passed on as it came. */
  call(method: 'GET' | 'POST', path: CompactorPath, body?: unknown, options?: { timeoutMs?: number }): Promise<{ status: number; body: unknown }>;
}

/**
 * A dry run plans every table's files, and a check lists and reads every table's, which can take a
 * while on a large catalog: the CLI asks for a check a page at a time (a page ends after 15 s).
 */
const TIMEOUT_MS = 60_000;

/**
 * A check or drop that reads the table's pages (check_pages) reads every data file whole: given
 * longer, and still under the CLI's own 5 minutes (@floe/client DEFAULT_TIMEOUT_MS), so the
 * router's answer reaches it rather than the CLI's timeout.
 */
export const PAGE_CHECK_TIMEOUT_MS = 270_000;

export function createCompactorClient(baseUrl: string, key: string): CompactorClient {
  const base = baseUrl.replace(/\/+$/, '');
  return {
    async call(method, path, body, options) {
      let res: Response;
      try {
        res = await fetch(`${base}${path}`, {
          method,
          headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(options?.timeoutMs ?? TIMEOUT_MS),
        });
      } catch (err) {
        throw new FloeError('unavailable', `compactor unreachable at ${base}`, { code: 'FLOE_ERR_NO_COMPACTOR', cause: err });
      }
      const text = await res.text();
      try {
        return { status: res.status, body: JSON.parse(text) as unknown };
      } catch {
        throw new FloeError('unavailable', `compactor at ${base} answered ${res.status} without JSON`, { code: 'FLOE_ERR_NO_COMPACTOR' });
      }
    },
  };
}
