import { FloeError, kindFromGrpcCode } from '@floe/errors';
import { signTicket } from '@floe/auth';
import { flightDoGet } from '@floe/flight';
import type { Table } from 'apache-arrow';

/**
 * How the router asks a querier for rows: an Arrow Flight DoGet whose ticket is the JSON form
 * `{sql, params, hints}` (README: "Flight tickets"). The caller's own credentials travel in the
 * gRPC metadata, so the querier authorises the request exactly as the router did.
 */
export interface QueryRequest {
  sql: string;
  params?: Array<string | number | boolean | null>;
  /** Pruning hints: they only narrow which files are opened, never the result. */
  hints?: { trace_id?: string; start_ns?: string; end_ns?: string };
}

export interface CallerCredentials {
  authorization: string;
  tenant: string;
  dataset: string | undefined;
}

export interface QuerierClient {
  query(creds: CallerCredentials, req: QueryRequest, deadlineMs: number): Promise<Table>;
}

/**
 * `internalKey` signs the planner's SQL so the querier may run it on its warm instance instead of
 * a per-query sandbox (empty: unsigned, always sandboxed).
 */
export function createQuerierClient(urls: () => readonly string[], internalKey = ''): QuerierClient {
  let next = 0;
  return {
    async query(creds, req, deadlineMs) {
      const all = urls();
      if (all.length === 0) throw new FloeError('unavailable', 'no querier available', { code: 'FLOE_ERR_NO_QUERIER' });
      const url = all[next++ % all.length]!;
      const metadata: Record<string, string> = { authorization: creds.authorization, 'x-tenant-id': creds.tenant };
      if (creds.dataset) metadata['x-dataset-id'] = creds.dataset;
      try {
        const params = req.params ?? [];
        const ticket: Record<string, unknown> = { sql: req.sql, params, hints: req.hints ?? {} };
        if (internalKey) ticket.sig = signTicket(internalKey, { tenant: creds.tenant, dataset: creds.dataset ?? '', sql: req.sql, params, hints: req.hints ?? {} });
        return await flightDoGet({ url, ticket: Buffer.from(JSON.stringify(ticket)), metadata, deadlineMs });
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (typeof code === 'number') {
          const kind = kindFromGrpcCode(code);
          const details = (err as { details?: string }).details ?? 'querier error';
          if (kind === 'timeout') throw new FloeError('timeout', 'query timed out', { code: 'FLOE_ERR_QUERY_TIMEOUT', cause: err });
          if (kind === 'unavailable') throw new FloeError('unavailable', 'querier unavailable', { code: 'FLOE_ERR_QUERIER_UNAVAILABLE', cause: err });
          if (kind !== 'internal') throw new FloeError(kind, details, { cause: err });
        }
        throw err;
      }
    },
  };
}

/** Arrow rows as plain objects: int64 stays bigint, maps become plain objects. */
export function tableRows<T>(table: Table): T[] {
  const out: T[] = [];
  for (const row of table) {
    if (row) out.push(row.toJSON() as T);
  }
  return out;
}
