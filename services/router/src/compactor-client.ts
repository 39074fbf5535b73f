import { FloeError } from '@floe/errors';
import { OPS_JOB_WAIT_DEFAULT_MS } from '@floe/schema';

/**
 * The router's calls to the compactor's admin port (its `GET /status`, the `POST /compact`
 * actions, `POST /tables/check|rollback|drop-damaged-files|unregistered|register` and
 * `GET /jobs/{id}`), for /api/v1/ops. The router is where operators are authenticated; the
 * compactor's actions take only the services' shared key, which this client presents. An
 * unreachable compactor is 503.
 */
/** The compactor admin actions the router calls. */
export type CompactorPath = '/status' | '/compact' | '/compact/dry-run' | '/tables/check' | '/tables/rollback' | '/tables/drop-damaged-files' | '/tables/unregistered' | '/tables/register' | `/jobs/${string}`;

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
 * A check or drop that reads the table's pages (check_pages) runs as a job on the compactor
 * (services/compactor/src/maintenance-jobs.ts), which answers once the job is done or its
 * `wait_ms` has passed (then 202 and the job to poll), however large the table (default and bound
 * in @floe/schema): the router gives such a call that wait and a margin for the rest of the call.
 */
const JOB_WAIT_MARGIN_MS = 15_000;

/** How long the router waits for a call whose job the compactor waits `waitMs` for (absent: its default). */
export const jobCallTimeoutMs = (waitMs: number | undefined): number => (waitMs ?? OPS_JOB_WAIT_DEFAULT_MS) + JOB_WAIT_MARGIN_MS;

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
