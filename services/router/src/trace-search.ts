import { FloeError } from '@floe/errors';
import { TRACE_SEARCH_COLUMNS, parseTraceQL, searchAttributes, type SpanCondition, type SpanField, type SpanValue, type TimeRange, type TraceSearch } from '@floe/query';
import { parseDurationParam } from './logquery/params.ts';
import type { Row } from './logquery/results.ts';
import type { RequestParams } from './request-params.ts';

/**
 * Tempo's search and tag discovery over the traces table (spec 1, "Trace query API"; shapes in
 * reference/api-contracts.md §3.3-3.4): request parameters → Query IR, querier rows → Tempo's JSON.
 * Grafana decodes /api/search strictly against the tempopb it vendors (reference §0 S5), so
 * answers carry only fields that schema knows.
 */

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_TRACE_PARAM' });

const NS_PER_SECOND = 1_000_000_000n;
export const TAG_WINDOW_NS = 3600n * NS_PER_SECOND;
/** Tempo's default search limit. */
export const DEFAULT_SEARCH_LIMIT = 20;
export const MAX_SEARCH_LIMIT = 1000;
/** Spec 1, Limits: the tag endpoints sample 1000 rows and list at most 1000 values per tag. */
export const TAG_SAMPLE_ROWS = 1000;
export const MAX_TAG_VALUES = 1000;
/** Spec 1, tag discovery rule 5: listed even when the window holds no traces. */
export const INTRINSIC_TAGS = ['duration', 'kind', 'name', 'rootName', 'rootServiceName', 'status'] as const;
/** What Tempo shows for a trace whose root span it has not seen. */
export const ROOT_NOT_RECEIVED = '<root span not yet received>';

/** Unix seconds (Tempo's start and end); a value of milliseconds or nanoseconds is refused, not misread. */
export function parseUnixSeconds(name: string, raw: string | undefined): bigint | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw bad(`invalid ${name}: expected unix seconds, got ${JSON.stringify(raw.slice(0, 32))}`);
  if (raw.length > 11) throw bad(`invalid ${name}: ${raw} is too large for unix seconds (milliseconds?)`);
  return BigInt(raw) * NS_PER_SECOND;
}

/**
 * The window of [start, end] in unix seconds, as a half-open range of nanoseconds that includes
 * the whole `end` second. `end` defaults to now, `start` to `lookbackNs` before end.
 */
export function secondsWindow(p: RequestParams, nowNs: bigint, lookbackNs: bigint): TimeRange {
  const end = parseUnixSeconds('end', p.get('end'));
  const start = parseUnixSeconds('start', p.get('start'));
  const endNs = end === undefined ? nowNs : end + NS_PER_SECOND;
  const startNs = start ?? endNs - lookbackNs;
  if (start !== undefined && end !== undefined && end <= start) throw bad('invalid range: end must be after start');
  if (startNs >= endNs) throw bad('invalid range: start must be before end');
  return { startNs, endNs };
}

function positiveInt(name: string, raw: string | undefined, fallback: number | undefined, max: number): number | undefined {
  if (raw === undefined) return fallback;
  if (!/^\d{1,9}$/.test(raw)) throw bad(`invalid ${name}: expected a positive integer, got ${JSON.stringify(raw.slice(0, 32))}`);
  const n = Number(raw);
  if (n === 0) throw bad(`invalid ${name}: must be greater than 0`);
  if (n > max) throw bad(`invalid ${name}: ${n} exceeds the maximum ${max}`);
  return n;
}

/**
 * Tempo's legacy `tags` parameter, logfmt (`service.name=api http.status_code=500 name="GET /"`),
 * as conditions: name and service.name are their intrinsics, any other key an attribute of the
 * span or resource; integers, floats and true/false compare as those types, anything else as text.
 */
export function tagsConditions(raw: string): SpanCondition[] {
  const out: SpanCondition[] = [];
  let i = 0;
  const fail = () => bad(`invalid tags: expected logfmt such as service.name=api http.method="GET", got ${JSON.stringify(raw.slice(0, 64))}`);
  while (i < raw.length) {
    if (raw[i] === ' ' || raw[i] === '\t') {
      i++;
      continue;
    }
    const eq = raw.indexOf('=', i);
    if (eq <= i) throw fail();
    const key = raw.slice(i, eq);
    if (/[\s"]/.test(key)) throw fail();
    i = eq + 1;
    let value: string;
    if (raw[i] === '"') {
      let j = i + 1;
      let text = '';
      for (; j < raw.length && raw[j] !== '"'; j++) {
        if (raw[j] === '\\' && j + 1 < raw.length) j++;
        text += raw[j];
      }
      if (j >= raw.length) throw fail();
      value = text;
      i = j + 1;
      if (i < raw.length && raw[i] !== ' ' && raw[i] !== '\t') throw fail();
    } else {
      let j = i;
      while (j < raw.length && raw[j] !== ' ' && raw[j] !== '\t') j++;
      value = raw.slice(i, j);
      if (value.includes('"')) throw fail();
      i = j;
    }
    const field: SpanField = key === 'name' ? { kind: 'name' } : key === 'service.name' ? { kind: 'service' } : { kind: 'attribute', scope: 'any', key };
    out.push({ field, value: field.kind === 'attribute' ? typedValue(value) : { type: 'string', value } });
  }
  return out;
}

function typedValue(text: string): SpanValue {
  if (/^-?\d{1,18}$/.test(text)) return { type: 'int', value: BigInt(text) };
  if (/^-?\d+\.\d+$/.test(text)) return { type: 'float', value: Number(text) };
  if (text === 'true' || text === 'false') return { type: 'bool', value: text === 'true' };
  return { type: 'string', value: text };
}

/** GET /api/search's parameters as a TraceSearch (spec 1; reference §3.1). */
export function searchRequest(p: RequestParams, nowNs: bigint): TraceSearch {
  const q = p.get('q');
  const tags = p.get('tags');
  if (q !== undefined && tags !== undefined) throw bad('invalid search: q and tags are mutually exclusive');
  const conditions = q !== undefined ? parseTraceQL(q) : tags !== undefined ? tagsConditions(tags) : [];
  const min = p.get('minDuration');
  const max = p.get('maxDuration');
  const minDurationNs = min === undefined ? undefined : parseDurationParam('minDuration', min);
  const maxDurationNs = max === undefined ? undefined : parseDurationParam('maxDuration', max);
  if (minDurationNs !== undefined && maxDurationNs !== undefined && maxDurationNs < minDurationNs) throw bad('invalid search: maxDuration is less than minDuration');
  const spssRaw = p.get('spss');
  // spss=0 is what an unset field looks like on Tempo's wire; spec 1 reads an omitted spss as "all spans".
  const spansPerSpanSet = spssRaw === '0' ? undefined : positiveInt('spss', spssRaw, undefined, 100_000);
  return {
    table: 'traces',
    range: secondsWindow(p, nowNs, TAG_WINDOW_NS),
    conditions,
    ...(minDurationNs !== undefined ? { minDurationNs } : {}),
    ...(maxDurationNs !== undefined ? { maxDurationNs } : {}),
    limit: positiveInt('limit', p.get('limit'), DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)!,
    ...(spansPerSpanSet !== undefined ? { spansPerSpanSet } : {}),
  };
}

type KeyValue = { key: string; value: { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean } };

interface SearchSpan {
  spanID: string;
  name?: string;
  startTimeUnixNano: string;
  durationNanos: string;
  attributes?: KeyValue[];
}

interface SpanSet {
  spans: SearchSpan[];
  matched: number;
}

export interface TraceSearchMetadata {
  traceID: string;
  rootServiceName: string;
  rootTraceName?: string;
  startTimeUnixNano: string;
  durationMs: number;
  spanSet: SpanSet;
  spanSets: SpanSet[];
}

const C = TRACE_SEARCH_COLUMNS;
const TYPES = ['str', 'int', 'double', 'bool'] as const;

/** A span attribute of the query as an OTLP KeyValue, undefined when the span lacks it. */
function keyValue(key: string, row: Row, i: number): KeyValue | undefined {
  for (const t of TYPES) {
    const v = row[C.attribute(i, t)];
    if (v === null || v === undefined) continue;
    if (t === 'str') return { key, value: { stringValue: String(v) } };
    if (t === 'int') return { key, value: { intValue: String(v) } };
    if (t === 'double') return { key, value: { doubleValue: Number(v) } };
    return { key, value: { boolValue: v === true } };
  }
  return undefined;
}

/** planTraceSearch's rows (a trace's spans together, newest trace first) as Tempo's search answer. */
export function searchResponse(ir: TraceSearch, rows: readonly Row[]): { traces: TraceSearchMetadata[]; metrics: Record<string, number> } {
  const attributes = searchAttributes(ir.conditions);
  const traces: TraceSearchMetadata[] = [];
  for (const row of rows) {
    const traceId = String(row[C.traceId]);
    let trace = traces.at(-1);
    if (!trace || trace.traceID !== traceId) {
      const start = BigInt(row[C.traceStart] as bigint);
      const end = BigInt(row[C.traceEnd] as bigint);
      const spanSet: SpanSet = { spans: [], matched: Number(row[C.matched]) };
      const rootService = row[C.rootService];
      trace = {
        traceID: traceId,
        rootServiceName: typeof rootService === 'string' ? rootService : ROOT_NOT_RECEIVED,
        ...(typeof row[C.rootName] === 'string' ? { rootTraceName: row[C.rootName] as string } : {}),
        startTimeUnixNano: start.toString(),
        durationMs: Number((end - start) / 1_000_000n),
        // The deprecated single span set, still read by older clients: the same object.
        spanSet,
        spanSets: [spanSet],
      };
      traces.push(trace);
    }
    const attrs: KeyValue[] = [];
    if (typeof row[C.service] === 'string') attrs.push({ key: 'service.name', value: { stringValue: row[C.service] as string } });
    attributes.forEach((a, i) => {
      const kv = keyValue(a.key, row, i);
      if (kv) attrs.push(kv);
    });
    const name = row[C.spanName];
    trace.spanSet.spans.push({
      spanID: String(row[C.spanId]),
      ...(typeof name === 'string' && name !== '' ? { name } : {}),
      startTimeUnixNano: String(row[C.spanStart]),
      durationNanos: String(row[C.spanDuration] ?? 0),
      ...(attrs.length ? { attributes: attrs } : {}),
    });
  }
  return { traces, metrics: { inspectedTraces: traces.length, completedJobs: 1, totalJobs: 1 } };
}

/** Tag scopes of the v2 answer, in Tempo's order. */
export const TAG_SCOPES = ['resource', 'span', 'intrinsic'] as const;
export type TagScope = (typeof TAG_SCOPES)[number];
/** Scopes Tempo knows and Floe stores nothing for: valid, always empty. */
const EMPTY_SCOPES = new Set(['event', 'link', 'instrumentation']);

/** The `scope` parameter: undefined for all, 'none' for a valid scope without stored keys. */
export function parseTagScope(raw: string | undefined): TagScope | 'none' | undefined {
  if (raw === undefined || raw === 'all') return undefined;
  if ((TAG_SCOPES as readonly string[]).includes(raw)) return raw as TagScope;
  if (EMPTY_SCOPES.has(raw)) return 'none';
  throw bad(`invalid scope: ${JSON.stringify(raw.slice(0, 32))}; expected resource, span, intrinsic, event, link, instrumentation or all`);
}

/** planTraceTagNames' rows grouped by scope (intrinsics added), each sorted and cut at `limit`. */
export function tagNamesByScope(rows: readonly Row[], limit: number): Record<TagScope, string[]> {
  const byScope: Record<TagScope, string[]> = { resource: [], span: [], intrinsic: [...INTRINSIC_TAGS] };
  for (const r of rows) {
    const scope = r.scope === 'resource' ? 'resource' : 'span';
    byScope[scope].push(String(r.name));
  }
  for (const s of TAG_SCOPES) byScope[s] = [...new Set(byScope[s])].sort().slice(0, limit);
  return byScope;
}

/**
 * The field a tag names. v1 names attributes bare (`http.method`) and the intrinsics by name;
 * v2 names them as TraceQL does (`span.http.method`, `.http.method`, `resource.x`, `name`,
 * `span:status`). Spec 1: a scoped name resolves to the same attribute as the unscoped form.
 * Undefined for a tag that has no stored values (duration, rootName, …).
 */
export function tagField(tag: string): SpanField | undefined {
  switch (tag) {
    case 'name':
    case 'span:name':
      return { kind: 'name' };
    case 'status':
    case 'span:status':
      return { kind: 'status' };
    case 'kind':
    case 'span:kind':
      return { kind: 'kind' };
  }
  if (/^[a-zA-Z]+:/.test(tag) || (INTRINSIC_TAGS as readonly string[]).includes(tag)) return undefined;
  const key = tag.startsWith('resource.') ? tag.slice('resource.'.length) : tag.startsWith('span.') ? tag.slice('span.'.length) : tag.startsWith('.') ? tag.slice(1) : tag;
  if (key === '') return undefined;
  if (key === 'service.name') return { kind: 'service' };
  return { kind: 'attribute', scope: 'any', key };
}

/** The conditions of a tag request's `q` when it is a TraceQL query of the subset; Grafana sends half-typed ones, which narrow nothing. */
export function tagConditions(q: string | undefined): SpanCondition[] {
  if (q === undefined) return [];
  try {
    return parseTraceQL(q);
  } catch {
    return [];
  }
}
