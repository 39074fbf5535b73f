import { FloeError } from '@floe/errors';
import { parseDuration, type Direction, type TimeRange } from '@floe/query';
import type { ParameterDoc } from '../openapi.ts';
import { RequestParams } from '../request-params.ts';

/**
 * Request parameters of the Loki-compatible API (reference/api-contracts.md §1.1), read the way
 * Loki reads them: timestamps as unix nanoseconds (more than 10 digits), unix seconds (up to 10
 * digits, or with a fraction) or RFC3339; durations as Prometheus durations (`5m`, `1h30m`) or
 * seconds. Every refusal is bad_data naming the parameter.
 */

export const NS_PER_SECOND = 1_000_000_000n;
export const HOUR_NS = 3600n * NS_PER_SECOND;
/** Loki's default limit, and its max_entries_limit_per_query. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 5000;

/** Each prefix of the log API's routes and what their operation ids start with (the document needs one id per path). */
export const LOKI_PREFIXES = { '/api/v1': '', '/loki/api/v1': 'loki_' } as const;

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_LOGQL_PARAM' });

export { RequestParams };

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** A timestamp parameter as unix nanoseconds; `fallback` when absent. */
export function parseTime(name: string, raw: string | undefined, fallback: bigint): bigint {
  if (raw === undefined) return fallback;
  const float = /^(-?\d+)\.(\d*)$/.exec(raw);
  if (float) {
    const frac = (float[2]! + '000000000').slice(0, 9);
    const secs = BigInt(float[1]!);
    const ns = BigInt(frac);
    return secs * NS_PER_SECOND + (float[1]!.startsWith('-') ? -ns : ns);
  }
  if (/^-?\d+$/.test(raw)) {
    if (raw.length > 20) throw bad(`invalid ${name}: ${JSON.stringify(raw)} is out of range`);
    // Loki's rule: up to 10 characters are seconds, longer values nanoseconds.
    return raw.length <= 10 ? BigInt(raw) * NS_PER_SECOND : BigInt(raw);
  }
  const m = RFC3339.exec(raw);
  if (m) {
    const [, y, mo, d, h, mi, s, frac, zone] = m;
    const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
    // Date.UTC rolls fields over (Feb 31 is Mar 3, hour 25 the next day); Go's time.Parse, as Loki reads it, refuses them.
    const t = new Date(ms);
    const exact = t.getUTCFullYear() === Number(y) && t.getUTCMonth() === Number(mo) - 1 && t.getUTCDate() === Number(d) && t.getUTCHours() === Number(h) && t.getUTCMinutes() === Number(mi) && t.getUTCSeconds() === Number(s);
    const zoneValid = zone!.length === 1 || (Number(zone!.slice(1, 3)) <= 23 && Number(zone!.slice(4, 6)) <= 59);
    if (Number.isFinite(ms) && exact && zoneValid) {
      let offsetMin = 0;
      if (zone !== 'Z' && zone !== 'z') offsetMin = (zone!.startsWith('-') ? -1 : 1) * (Number(zone!.slice(1, 3)) * 60 + Number(zone!.slice(4, 6)));
      return (BigInt(ms) - BigInt(offsetMin) * 60_000n) * 1_000_000n + BigInt(((frac ?? '') + '000000000').slice(0, 9));
    }
  }
  throw bad(`invalid ${name}: cannot parse ${JSON.stringify(raw.slice(0, 64))} as unix seconds, unix nanoseconds or an RFC3339 time`);
}

/** A duration parameter (`5m`, `1h30m`, `250ms`, `1.5s`, or seconds such as `30` / `0.5`) in nanoseconds. */
export function parseDurationParam(name: string, raw: string): bigint {
  if (/^\d+(?:\.\d+)?$/.test(raw)) {
    const [whole, frac = ''] = raw.split('.');
    return BigInt(whole!) * NS_PER_SECOND + BigInt((frac + '000000000').slice(0, 9));
  }
  const prom = parseDuration(raw);
  if (prom !== undefined) return BigInt(prom) * 1_000_000n;
  // Go's time.Duration spelling (`1.5s`, `1m30s`, `500us`), which some clients send.
  const units: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
  if (/^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/.test(raw)) {
    let ns = 0;
    for (const part of raw.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ns += Number(part[1]) * units[part[2]!]!;
    return BigInt(Math.round(ns));
  }
  throw bad(`invalid ${name}: cannot parse ${JSON.stringify(raw.slice(0, 64))} as a duration (such as 30s, 5m) or a number of seconds`);
}

export function parseDirection(raw: string | undefined): Direction {
  if (raw === undefined) return 'backward';
  const v = raw.toLowerCase();
  if (v === 'forward' || v === 'backward') return v;
  throw bad(`invalid direction ${JSON.stringify(raw.slice(0, 32))}: expected forward or backward`);
}

export function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (!/^\d+$/.test(raw) || Number(raw) <= 0) throw bad(`invalid limit ${JSON.stringify(raw.slice(0, 32))}: expected a positive integer`);
  const n = Number(raw);
  if (n > MAX_LIMIT) throw bad(`max entries limit per query exceeded, limit > max_entries_limit_per_query (${n} > ${MAX_LIMIT})`);
  return n;
}

/** A positive integer parameter (limit, line_limit, …); `fallback` when absent. */
export function parseCount(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) <= 0 || !Number.isSafeInteger(Number(raw))) throw bad(`invalid ${name} ${JSON.stringify(raw.slice(0, 32))}: expected a positive integer`);
  return Number(raw);
}

/**
 * `start` / `end` / `since` of range and label requests: end defaults to now, start to end minus
 * `since` or minus `lookbackNs`. The result is half-open [start, end).
 */
export function parseRange(p: RequestParams, now: bigint, lookbackNs: bigint): TimeRange {
  const endNs = parseTime('end', p.get('end'), now);
  const since = p.get('since');
  const startNs = parseTime('start', p.get('start'), endNs - (since === undefined ? lookbackNs : parseDurationParam('since', since)));
  if (endNs < startNs) throw bad('invalid time range: end timestamp must not be before start time');
  return { startNs, endNs };
}

/**
 * Loki's default step when a range query names none: the range over 250 points, whole seconds,
 * at least one second.
 */
export function defaultStepNs(startNs: bigint, endNs: bigint): bigint {
  const seconds = (endNs - startNs) / NS_PER_SECOND / 250n;
  return (seconds < 1n ? 1n : seconds) * NS_PER_SECOND;
}

/** Loki's `interval` (log queries): a duration or seconds; absent or 0: every line. */
export function parseInterval(raw: string | undefined): bigint | undefined {
  if (raw === undefined || raw === '') return undefined;
  const ns = parseDurationParam('interval', raw);
  if (ns < 0n) throw bad('invalid interval: must not be negative');
  return ns === 0n ? undefined : ns;
}

/** The `step` of a range request in nanoseconds: positive, or Loki's default for `range` when absent. */
export function parseStep(raw: string | undefined, range: TimeRange): bigint {
  if (raw === undefined) return defaultStepNs(range.startNs, range.endNs);
  const step = parseDurationParam('step', raw);
  if (step <= 0n) throw bad('invalid step: must be positive');
  return step;
}

export function requireQuery(p: RequestParams, name = 'query'): string {
  const q = p.get(name);
  if (q === undefined) throw bad(`missing ${name} parameter`);
  return q;
}

export const nowNs = (): bigint => BigInt(Date.now()) * 1_000_000n;

const TIMES = 'unix nanoseconds, unix seconds (up to 10 digits, or with a fraction) or RFC3339';

/** The parameters above as the OpenAPI document lists them (documentation only: the routes parse their own). */
export const LOG_PARAMS = {
  query: { name: 'query', required: true, description: 'LogQL query.' },
  selector: { name: 'query', description: 'LogQL stream selector narrowing the streams (default: every stream).' },
  start: { name: 'start', description: `Start of the window (${TIMES}); default end minus since.` },
  end: { name: 'end', description: `End of the window (${TIMES}); default now.` },
  since: { name: 'since', description: 'How long before end the window starts when start is absent, a duration such as 30m; default 1h.' },
  time: { name: 'time', description: `Evaluation time (${TIMES}); default now. A log query reads the hour before it.` },
  step: { name: 'step', description: 'The step between points, a duration (30s, 5m) or seconds; default the window over 250 points.' },
  interval: { name: 'interval', description: 'Log queries: return only lines at least this far apart (a duration or seconds), each measured from the previous line returned, in the query\'s direction across all streams.' },
  direction: { name: 'direction', schema: { type: 'string', enum: ['forward', 'backward'] }, description: 'Log queries: oldest (forward) or newest (backward, the default) lines first.' },
  limit: { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT }, description: `Log queries: most lines returned (default ${DEFAULT_LIMIT}).` },
} satisfies Record<string, ParameterDoc>;

/** start, end and since: the window of range and discovery requests. */
export const LOG_WINDOW: readonly ParameterDoc[] = [LOG_PARAMS.start, LOG_PARAMS.end, LOG_PARAMS.since];

/** A positive count parameter (parseCount) and its default. */
export const countParam = (name: string, what: string, fallback: number): ParameterDoc => ({ name, schema: { type: 'integer', minimum: 1 }, description: `${what} (default ${fallback}).` });
