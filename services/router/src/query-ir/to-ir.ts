import { FloeError } from '@floe/errors';
import {
  KIND_KEYWORDS,
  STATUS_KEYWORDS,
  parseTypedProfileSelector,
  re2Source,
  type LabelMatch,
  type LabelPredicate,
  type LogSelect,
  type ProfileSelection,
  type ProfileTypeRef,
  type RowFilter,
  type SpanCondition,
  type SpanField,
  type SpanValue,
  type TimeRange,
  type TraceSearch,
} from '@floe/query';
import { parseDurationParam, parseTime } from '../logquery/params.ts';
import type { LogsQuery, MetricsQuery, ProfilesQuery, RangeJson, TraceCondition, TracesQuery } from './schema.ts';

/**
 * The native Query IR's JSON (schema.ts) → @floe/query's IR types. The JSON schema has already
 * checked shapes and enums; what is left here are the rules a schema cannot say (time order, which
 * value type an operator takes), each refused as bad_data naming the field, and the valid
 * requests Floe cannot answer yet, refused as not_implemented (501). Pure: no I/O.
 */

const bad = (field: string, message: string) => new FloeError('bad_data', `body.${field} ${message}`, { code: 'FLOE_ERR_QUERY_IR' });
const unsupported = (field: string, message: string) => new FloeError('not_implemented', `body.${field}: ${message}`, { code: 'FLOE_ERR_QUERY_IR_UNSUPPORTED' });

export const DEFAULT_LOG_LIMIT = 100;
export const DEFAULT_TRACE_LIMIT = 20;
export const DEFAULT_MAX_NODES = 1024;
/** Functions a `top` profile answer lists (the rest is cut and `truncated` says so). */
export const DEFAULT_TOP_FUNCTIONS = 100;
/** Profiles a `profiles` view lists, newest first. */
export const DEFAULT_PROFILE_LIST = 100;

/** `range` as a half-open range: RFC 3339, unix nanoseconds or unix seconds (Loki's reading, shared with /logquery). */
export function rangeOf(range: RangeJson): TimeRange {
  const startNs = inInt64('range.start', parseTime('body.range.start', range.start, 0n));
  const endNs = inInt64('range.end', parseTime('body.range.end', range.end, 0n));
  if (endNs <= startNs) throw bad('range.end', 'must be after range.start');
  return { startNs, endNs };
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Stored times are int64 nanoseconds (years 1677 to 2262); a time past them has no query, so it is named rather than handed to SQL. */
function inInt64(field: string, ns: bigint): bigint {
  if (ns < INT64_MIN || ns > INT64_MAX) throw bad(field, 'is out of range: times are int64 unix nanoseconds, between the years 1677 and 2262');
  return ns;
}

/** RE2 is what the querier runs; a pattern it refuses is named here rather than surfacing as the engine's message. */
function checkedRegex(pattern: string, at: string): string {
  try {
    re2Source(pattern);
  } catch (err) {
    throw bad(at, `is not a valid RE2 regular expression: ${(err as Error).message}`);
  }
  return pattern;
}

const REGEX_OPS = new Set(['=~', '!~', 'match', 'not_match']);
const regexChecked = (op: string, value: string, at: string) => (REGEX_OPS.has(op) ? checkedRegex(value, at) : value);

/** A log selection; `limit + 1` rows are read so the answer can tell a cut result from a complete one. */
export function logSelectOf(q: LogsQuery): LogSelect {
  return {
    kind: 'log_select',
    table: 'logs',
    range: rangeOf(q.range),
    streams: (q.streams ?? []).map((m, i) => ({ label: m.label, op: m.op, value: regexChecked(m.op, m.value, `streams[${i}].value`) })),
    filters: (q.filters ?? []).map((f, i) => rowFilterOf(f, `filters[${i}]`)),
    direction: q.direction ?? 'backward',
    limit: (q.limit ?? DEFAULT_LOG_LIMIT) + 1,
  };
}

const NUMERIC_OPS = new Set(['>', '>=', '<', '<=', '==']);

function rowFilterOf(f: NonNullable<LogsQuery['filters']>[number], at: string): RowFilter {
  if (f.type === 'line') {
    if (typeof f.value !== 'string') throw bad(`${at}.value`, 'must be a string for a line filter');
    return { kind: 'line', line: { op: f.op as 'contains' | 'not_contains' | 'match' | 'not_match', values: [regexChecked(f.op, f.value, `${at}.value`)] } };
  }
  if (f.label === undefined) throw bad(`${at}`, "must have required property 'label'");
  return { kind: 'labels', predicate: labelPredicateOf(f.label, f.op, f.value, at) };
}

/** A string value matches (=, !=, =~, !~); a number compares (>, >=, <, <=, ==, !=), as LogQL's label filters do. */
function labelPredicateOf(label: string, op: string, value: string | number, at: string): LabelPredicate {
  if (typeof value === 'number') {
    if (!NUMERIC_OPS.has(op) && op !== '!=') throw bad(`${at}.op`, `${op} takes a string value; compare numbers with >, >=, <, <=, == or !=`);
    return { kind: 'compare', label, op: op as '>' | '>=' | '<' | '<=' | '==' | '!=', value };
  }
  if (NUMERIC_OPS.has(op)) throw bad(`${at}.value`, `must be a number for ${op}`);
  if (!['=', '!=', '=~', '!~'].includes(op)) throw bad(`${at}.op`, `${op} is not a line operator for a label`);
  const match: LabelMatch = { label, op: op as LabelMatch['op'], value: regexChecked(op, value, `${at}.value`) };
  return { kind: 'match', match };
}

/** TraceQL's intrinsics that the IR does not hold yet: valid names, 501. */
const LATER_INTRINSICS = new Set(['duration', 'rootName', 'rootServiceName', 'traceDuration', 'statusMessage']);

/**
 * A condition's field, spelled as in TraceQL: `name`, `status`, `kind`, `span.<key>`,
 * `resource.<key>` or `.<key>` (span or resource); `resource.service.name` and `.service.name`
 * are the service column, as parseTraceQL reads them.
 */
export function spanFieldOf(field: string, at: string): SpanField {
  if (field === 'name' || field === 'status' || field === 'kind') return { kind: field };
  if (LATER_INTRINSICS.has(field)) throw unsupported(at, `the intrinsic ${field} is not supported yet; supported: name, status, kind and attributes`);
  const m = /^(span|resource|)\.(.+)$/.exec(field);
  if (!m) {
    if (/^(event|link|instrumentation)\./.test(field)) throw unsupported(at, `${field.split('.')[0]} attributes are not stored`);
    throw bad(at, `must be name, status, kind, span.<key>, resource.<key> or .<key>, got ${JSON.stringify(field.slice(0, 64))}`);
  }
  const scope = m[1] === '' ? 'any' : (m[1] as 'span' | 'resource');
  const key = m[2]!;
  if (key === 'service.name' && scope !== 'span') return { kind: 'service' };
  return { kind: 'attribute', scope, key };
}

function spanValueOf(c: TraceCondition, field: SpanField, at: string): SpanValue {
  const v = c.value;
  if (field.kind === 'status' || field.kind === 'kind') {
    const allowed: readonly string[] = field.kind === 'status' ? STATUS_KEYWORDS : KIND_KEYWORDS;
    if (typeof v !== 'string' || !allowed.includes(v)) throw bad(`${at}.value`, `must be one of ${allowed.join(', ')} for ${field.kind}`);
    return { type: 'keyword', value: v };
  }
  if (field.kind !== 'attribute' && typeof v !== 'string') throw bad(`${at}.value`, `must be a string for ${field.kind === 'service' ? 'service.name' : 'name'}`);
  if (typeof v === 'string') return { type: 'string', value: v };
  if (typeof v === 'boolean') return { type: 'bool', value: v };
  // JSON has one number type: an integral number is an int attribute unless `type` says float.
  if (c.type === 'float' || !Number.isInteger(v)) return { type: 'float', value: v };
  if (!Number.isSafeInteger(v)) throw bad(`${at}.value`, 'is not a safe integer');
  return { type: 'int', value: BigInt(v) };
}

export function traceSearchOf(q: TracesQuery): TraceSearch {
  const conditions: SpanCondition[] = (q.conditions ?? []).map((c, i) => {
    const field = spanFieldOf(c.field, `conditions[${i}].field`);
    return { field, value: spanValueOf(c, field, `conditions[${i}]`) };
  });
  const minDurationNs = q.min_duration === undefined ? undefined : parseDurationParam('body.min_duration', q.min_duration);
  const maxDurationNs = q.max_duration === undefined ? undefined : parseDurationParam('body.max_duration', q.max_duration);
  if (minDurationNs !== undefined && maxDurationNs !== undefined && maxDurationNs < minDurationNs) throw bad('max_duration', 'must not be less than min_duration');
  return {
    table: 'traces',
    range: rangeOf(q.range),
    conditions,
    ...(minDurationNs !== undefined ? { minDurationNs } : {}),
    ...(maxDurationNs !== undefined ? { maxDurationNs } : {}),
    limit: (q.limit ?? DEFAULT_TRACE_LIMIT) + 1,
    ...(q.spans_per_trace !== undefined ? { spansPerSpanSet: q.spans_per_trace } : {}),
  };
}

/** A profile selection: the Pyroscope selector names the profile type (`type{label="v"}`). */
export function profileSelectionOf(q: ProfilesQuery): ProfileSelection & { profileType: ProfileTypeRef } {
  let selector;
  try {
    selector = parseTypedProfileSelector(q.selector);
  } catch (err) {
    if (err instanceof FloeError && err.kind === 'bad_data') throw bad('selector', err.message);
    throw err;
  }
  return { range: rangeOf(q.range), ...selector };
}

/** A PromQL range evaluation: the grid in milliseconds, as the evaluator takes it. */
export function metricGridOf(q: MetricsQuery): { startMs: number; endMs: number; stepMs: number } {
  const { startNs, endNs } = rangeOf(q.range);
  const stepNs = parseDurationParam('body.step', q.step);
  if (stepNs <= 0n) throw bad('step', 'must be greater than 0');
  return { startMs: Number(startNs / 1_000_000n), endMs: Number((endNs - 1n) / 1_000_000n), stepMs: Number(stepNs / 1_000_000n) || 1 };
}
