import { FloeError } from '@floe/errors';

/**
 * A Flight ticket is either the SQL text itself (what any Flight client can send) or Floe's JSON
 * form `{"sql": "...", "params": [...], "hints": {...}}` used by the router. Hints only narrow
 * which files are opened (hour range, trace id); the SQL alone decides the result.
 */
export interface Ticket {
  sql: string;
  params: Array<string | number | boolean | null>;
  hints: { traceId?: string; startNs?: bigint; endNs?: bigint };
  /** The hints object as sent (what a signature covers). */
  rawHints: unknown;
  /** Signature of Floe's planner (see @floe/auth signTicket), if any. */
  sig: string | undefined;
}

const MAX_TICKET_BYTES = 256 * 1024;

export function parseTicket(bytes: Uint8Array): Ticket {
  if (bytes.length === 0) throw new FloeError('bad_data', 'empty ticket: send SQL text or {"sql": ...}');
  if (bytes.length > MAX_TICKET_BYTES) throw new FloeError('too_large', `ticket larger than ${MAX_TICKET_BYTES} bytes`);
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
  if (!Array.isArray(params) || !params.every((p) => p === null || ['string', 'number', 'boolean'].includes(typeof p))) {
    throw new FloeError('bad_data', 'ticket "params" must be an array of strings, numbers, booleans or null');
  }
  const hints: Ticket['hints'] = {};
  const h = t.hints ?? {};
  if (typeof h.trace_id === 'string' && /^[0-9a-f]{32}$/.test(h.trace_id)) hints.traceId = h.trace_id;
  for (const [k, target] of [['start_ns', 'startNs'], ['end_ns', 'endNs']] as const) {
    const v = h[k];
    if (typeof v === 'string' && /^\d{1,20}$/.test(v)) hints[target] = BigInt(v);
  }
  return { sql: t.sql, params: params as Ticket['params'], hints, rawHints: t.hints ?? {}, sig: typeof t.sig === 'string' ? t.sig : undefined };
}
