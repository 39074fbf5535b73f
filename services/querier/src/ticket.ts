import { FloeError } from '@floe/errors';
import type { FileOrder } from '@floe/query';

/**
 * A Flight ticket is either the SQL text itself (what any Flight client can send) or Floe's JSON
 * form `{"sql": "...", "params": [...], "hints": {...}}` used by the router. Hints only narrow
 * which files are opened (hour range, trace id); the SQL alone decides the result.
 */
export interface Ticket {
  sql: string;
  /** JSON scalars from a ticket; Flight SQL's bound values may also be bigints, bytes and instants. */
  params: unknown[];
  hints: { traceId?: string; startNs?: bigint; endNs?: bigint; perFile?: PerFileQuery; fileOrder?: FileOrder };
  /** The hints object as sent (what a signature covers). */
  rawHints: unknown;
  /** Signature of Floe's planner (see @floe/auth signTicket), if any. */
  sig: string | undefined;
}

/**
 * The planner's per-file form of a point-lists query (@floe/query planMetricSeriesPoints): the
 * same rows without the time window, grouped by data file too (series-lists.ts). Used only on
 * signed tickets.
 */
export interface PerFileQuery {
  sql: string;
  params: Ticket['params'];
}

const MAX_TICKET_BYTES = 256 * 1024;

const isParams = (p: unknown): p is Array<string | number | boolean | null> =>
  Array.isArray(p) && p.every((x) => x === null || ['string', 'number', 'boolean'].includes(typeof x));

export function parseTicket(bytes: Uint8Array): Ticket {
  if (bytes.length === 0) throw new FloeError('bad_data', 'empty ticket: send SQL text or {"sql": ...}');
  if (bytes.length > MAX_TICKET_BYTES) throw new FloeError('too_large', `ticket larger than ${MAX_TICKET_BYTES} bytes: send a shorter query`);
  const text = Buffer.from(bytes).toString('utf8');
  if (!text.trimStart().startsWith('{')) return { sql: text, params: [], hints: {}, rawHints: {}, sig: undefined };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new FloeError('bad_data', 'ticket looks like JSON but does not parse');
  }
  const t = raw as { sql?: unknown; params?: unknown; hints?: Record<string, unknown>; sig?: unknown };
  if (typeof t.sql !== 'string' || t.sql.trim() === '') throw new FloeError('bad_data', 'ticket JSON needs a non-empty "sql" string');
  const params = t.params ?? [];
  if (!isParams(params)) {
    throw new FloeError('bad_data', 'ticket "params" must be an array of strings, numbers, booleans or null');
  }
  const hints: Ticket['hints'] = {};
  const h = t.hints ?? {};
  if (typeof h.trace_id === 'string' && /^[0-9a-f]{32}$/.test(h.trace_id)) hints.traceId = h.trace_id;
  for (const [k, target] of [['start_ns', 'startNs'], ['end_ns', 'endNs']] as const) {
    const v = h[k];
    if (typeof v === 'string' && /^\d{1,20}$/.test(v)) hints[target] = BigInt(v);
  }
  if (h.file_order === 'newest_first' || h.file_order === 'oldest_first') hints.fileOrder = h.file_order;
  const perFile = h.per_file as { sql?: unknown; params?: unknown } | undefined;
  if (perFile && typeof perFile === 'object' && typeof perFile.sql === 'string' && isParams(perFile.params)) hints.perFile = { sql: perFile.sql, params: perFile.params };
  return { sql: t.sql, params, hints, rawHints: t.hints ?? {}, sig: typeof t.sig === 'string' ? t.sig : undefined };
}
