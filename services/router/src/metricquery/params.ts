import { FloeError } from '@floe/errors';
import { PROM_MAX_TIME_MS, PROM_MIN_TIME_MS, parsePromDuration } from '@floe/query';
import type { ParameterDoc } from '../openapi.ts';
import { RequestParams as PromParams } from '../request-params.ts';

/**
 * Request parameters of the Prometheus-compatible API (reference/api-contracts.md §2): query
 * string plus, on POST, a form body; times as unix seconds (fractions allowed) or RFC3339;
 * durations as Prometheus durations or float seconds. Every refusal is bad_data naming the
 * parameter, in Prometheus's words where it has them.
 */

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_PROMQL_PARAM' });

/** Prometheus's request parameters: the query string, then on POST the form body. */
export { PromParams };

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** A time parameter as unix milliseconds (Prometheus's resolution). */
export function parsePromTime(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (/^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/.test(raw)) {
    const s = Number(raw);
    const ms = Math.round(s * 1000);
    if (!Number.isFinite(ms)) throw bad(`invalid parameter "${name}": cannot parse "${raw.slice(0, 64)}" to a valid timestamp`);
    return Math.min(PROM_MAX_TIME_MS, Math.max(PROM_MIN_TIME_MS, ms));
  }
  const m = RFC3339.exec(raw);
  if (m) {
    const [, y, mo, d, h, mi, s, frac, zone] = m;
    let ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) + Math.floor(Number(`0.${frac ?? '0'}`) * 1000);
    if (zone !== 'Z' && zone !== 'z') ms -= (zone!.startsWith('-') ? -1 : 1) * (Number(zone!.slice(1, 3)) * 60 + Number(zone!.slice(4, 6))) * 60_000;
    if (Number.isFinite(ms)) return ms;
  }
  throw bad(`invalid parameter "${name}": cannot parse "${raw.slice(0, 64)}" to a valid timestamp`);
}

/** A duration parameter (step, lookback_delta, timeout) in milliseconds. */
export function parsePromDurationParam(name: string, raw: string): number {
  const d = parsePromDuration(raw);
  if (d !== undefined) return d;
  throw bad(`invalid parameter "${name}": cannot parse "${raw.slice(0, 64)}" to a valid duration`);
}

export function requireParam(p: PromParams, name: string): string {
  const v = p.get(name);
  if (v === undefined) throw bad(`invalid parameter "${name}": parameter is required`);
  return v;
}

/** start / end of label and series requests: end defaults to now, start to an hour before (spec 1, Limits). */
export function labelWindow(p: PromParams, nowMs: number): { startMs: number; endMs: number } {
  const endMs = parsePromTime('end', p.get('end'), nowMs);
  const startMs = parsePromTime('start', p.get('start'), endMs - 3_600_000);
  if (endMs < startMs) throw bad('invalid parameter "end": end timestamp must not be before start time');
  return { startMs, endMs };
}

export function parsePromLimit(raw: string | undefined, name = 'limit'): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw bad(`invalid parameter "${name}": cannot parse "${raw.slice(0, 32)}" to a valid limit`);
  const n = Number(raw);
  return n === 0 ? undefined : n;
}

const TIMES = 'unix seconds (fractions allowed) or RFC3339';

/** The parameters above as the OpenAPI document lists them (documentation only: the routes parse their own). */
export const PROM_PARAMS = {
  query: { name: 'query', required: true, description: 'PromQL expression.' },
  time: { name: 'time', description: `Evaluation time (${TIMES}); default now.` },
  start: { name: 'start', description: `Start of the window (${TIMES}); default an hour before end.` },
  end: { name: 'end', description: `End of the window (${TIMES}); default now.` },
  step: { name: 'step', required: true, description: 'Resolution step, a duration (15s, 1m) or float seconds.' },
  timeout: { name: 'timeout', description: 'Evaluation timeout, a duration; at most the router’s query timeout.' },
  lookbackDelta: { name: 'lookback_delta', description: 'Lookback of instant selectors, a duration; default 5m.' },
  match: { name: 'match[]', schema: { type: 'array', items: { type: 'string' } }, description: 'Series selectors; a series matching any is selected (default: every series).' },
  limit: { name: 'limit', schema: { type: 'integer', minimum: 0 }, description: 'Most entries returned (0 or absent: all).' },
  seriesLimit: { name: 'limit', schema: { type: 'integer', minimum: 0 }, description: 'Most series returned (0 or absent: all); a cut result carries the warning "results truncated due to limit".' },
  limitPerMetric: { name: 'limit_per_metric', schema: { type: 'integer', minimum: 0 }, description: 'Most metadata entries per metric family (0 or absent: all).' },
} satisfies Record<string, ParameterDoc>;
