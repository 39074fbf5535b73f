import { FloeError } from '@floe/errors';
import { DEFAULT_MAX_NODES, MAX_MAX_NODES, parseDuration, type TimeRange } from '@floe/query';
import type { ParameterDoc } from '../openapi.ts';
import type { RequestParams } from '../request-params.ts';

/**
 * Request parameters of the profile query API, read the way Pyroscope reads them
 * (reference/api-contracts.md §4.1; spec 1, profile query rule 1): times as `now`, `now-1h`,
 * `now-30m` (any Prometheus duration after `now-` or `now+`), or all-digit unix times whose
 * length gives the unit (up to 10 digits seconds, 13 milliseconds, 16 microseconds, 19
 * nanoseconds). Every refusal is bad_data naming the parameter.
 */

export const NS_PER_MS = 1_000_000n;
export const HOUR_NS = 3_600_000n * NS_PER_MS;

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_PROFILE_PARAM' });

export const nowNs = (): bigint => BigInt(Date.now()) * NS_PER_MS;

/** The latest time a profile row can carry (int64 unix nanoseconds, as stored: the year 2262). */
export const MAX_TIME_NS = 2n ** 63n - 1n;

/**
 * A requested time held to the times profiles have, 1970 to MAX_TIME_NS: a bound beyond them (ten
 * 9s of unix seconds, an int64 of milliseconds over Connect, now-300y) selects the same rows,
 * while its nanoseconds would overflow the query's int64 arithmetic (time - start) and the
 * answer's int64 fields.
 */
export const clampTimeNs = (ns: bigint): bigint => (ns > MAX_TIME_NS ? MAX_TIME_NS : ns < 0n ? 0n : ns);

/** A time parameter as unix nanoseconds; `fallback` when absent. */
export function parseProfileTime(name: string, raw: string | undefined, now: bigint, fallback: bigint): bigint {
  if (raw === undefined) return fallback;
  const t = raw.trim();
  if (t === 'now') return now;
  const relative = /^now([+-])(.+)$/.exec(t);
  if (relative) {
    const ms = parseDuration(relative[2]!);
    if (ms === undefined) throw bad(`invalid ${name}: ${JSON.stringify(raw.slice(0, 64))} is not now-<duration> (such as now-1h, now-30m, now-7d)`);
    return clampTimeNs(relative[1] === '-' ? now - BigInt(ms) * NS_PER_MS : now + BigInt(ms) * NS_PER_MS);
  }
  if (/^\d+$/.test(t)) {
    const n = BigInt(t);
    if (t.length <= 10) return clampTimeNs(n * 1_000_000_000n);
    if (t.length <= 13) return n * NS_PER_MS;
    if (t.length <= 16) return n * 1000n;
    if (t.length <= 19) return clampTimeNs(n);
  }
  throw bad(`invalid ${name}: cannot parse ${JSON.stringify(raw.slice(0, 64))} as unix seconds, unix milliseconds or a relative time such as now-1h`);
}

/**
 * A half-open window [from, until) from two parameters: until defaults to now, from to an hour
 * before until (Pyroscope's render default, and the lookback of every discovery endpoint of Floe).
 */
export function parseWindow(p: RequestParams, now: bigint, names: { from: string; until: string } = { from: 'from', until: 'until' }, fallback?: { from?: string; until?: string }): TimeRange {
  const untilRaw = p.get(names.until) ?? fallback?.until;
  const fromRaw = p.get(names.from) ?? fallback?.from;
  const endNs = parseProfileTime(names.until, untilRaw, now, now);
  const startNs = parseProfileTime(names.from, fromRaw, now, endNs - HOUR_NS);
  if (endNs < startNs) throw bad(`invalid time range: ${names.until} must not be before ${names.from}`);
  return { startNs, endNs };
}

/** Functions a DOT call graph draws when the request names no max-nodes (a graph of thousands is unreadable). */
export const DOT_MAX_NODES = 100;

/** render's `format`: json (default) or dot. */
export function parseRenderFormat(raw: string | undefined): 'json' | 'dot' {
  if (raw === undefined || raw === '' || raw === 'json') return 'json';
  if (raw === 'dot') return 'dot';
  throw bad(`invalid format ${JSON.stringify(raw.slice(0, 32))}: expected json or dot`);
}

/** render's `aggregation`: sum (default) or avg. */
export function parseAggregation(raw: string | undefined): 'sum' | 'avg' {
  if (raw === undefined || raw === '' || raw === 'sum') return 'sum';
  if (raw === 'avg') return 'avg';
  throw bad(`invalid aggregation ${JSON.stringify(raw.slice(0, 32))}: expected sum or avg`);
}

/** `max-nodes` / `maxNodes`: the flamegraph's node cap; absent or 0 is the default, more than the ceiling is the ceiling. */
export function parseMaxNodes(p: RequestParams): number {
  const raw = p.get('max-nodes') ?? p.get('maxNodes');
  if (raw === undefined) return DEFAULT_MAX_NODES;
  if (!/^\d+$/.test(raw)) throw bad(`invalid max-nodes ${JSON.stringify(raw.slice(0, 32))}: expected a non-negative integer`);
  return maxNodesOf(Number(raw));
}

/** A requested node cap (render's max-nodes, Connect's max_nodes): absent or 0 is the default, more than the ceiling is the ceiling. */
export function maxNodesOf(n: number | undefined): number {
  if (n === undefined || n === 0) return DEFAULT_MAX_NODES;
  return Math.min(n, MAX_MAX_NODES);
}

export function requireParam(p: RequestParams, name: string): string {
  const v = p.get(name);
  if (v === undefined) throw bad(`missing ${name} parameter`);
  return v;
}

/** How parseProfileTime reads a time, for the OpenAPI document. */
export const PROFILE_TIMES = 'now, now-<duration> (now-1h), or unix seconds, milliseconds, microseconds or nanoseconds (by digit count)';

/** The parameters above as the OpenAPI document lists them (documentation only: the routes parse their own). */
export const PROFILE_PARAMS = {
  from: { name: 'from', description: `Start of the window (${PROFILE_TIMES}); default an hour before until.` },
  until: { name: 'until', description: `End of the window (${PROFILE_TIMES}); default now.` },
  query: { name: 'query', required: true, description: 'Profile selector: a profile type and label matchers, such as process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="api"}.' },
  selector: { name: 'query', description: 'Profile selector narrowing the profiles considered (default: all).' },
  maxNodes: { name: 'max-nodes', schema: { type: 'integer', minimum: 0 }, description: `Most flamegraph nodes (alias maxNodes; absent or 0: ${DEFAULT_MAX_NODES}, at most ${MAX_MAX_NODES}; format=dot: absent ${DOT_MAX_NODES}).` },
  groupBy: { name: 'groupBy', description: 'A label: the answer adds one timeline per value in `groups` (the first groupBy only, as Pyroscope).' },
  aggregation: { name: 'aggregation', schema: { type: 'string', enum: ['sum', 'avg'] }, description: 'How a timeline slot combines its profiles (default sum).' },
  format: { name: 'format', schema: { type: 'string', enum: ['json', 'dot'] }, description: 'json (default) or dot: a Graphviz call graph as text.' },
} satisfies Record<string, ParameterDoc>;
