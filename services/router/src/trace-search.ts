import { FloeError } from '@floe/errors';
import { TRACE_SEARCH_DEFAULTS, legacyTagConditions, parseTraceQL, type FoundTrace, type SpanCondition, type SpanField, type TimeRange, type TraceSearch } from '@floe/query';
import { parseDurationParam } from './logquery/params.ts';
import type { ParameterDoc } from './openapi.ts';
import type { RequestParams } from './request-params.ts';

/**
 * Tempo's search and tag discovery over the traces table (spec 1, "Trace query API"; shapes in
 * reference/api-contracts.md §3.3-3.4): request parameters → Query IR, querier rows → Tempo's JSON.
 * Grafana decodes /api/search strictly against the tempopb it vendors (reference §0 S5), so
 * answers carry only fields that schema knows.
 */

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_TRACE_PARAM' });

const NS_PER_SECOND = 1_000_000_000n;
/** Spec 1, tag discovery rule 2: the window is the hour before end unless start says otherwise (searches too). */
export const TAG_WINDOW_NS = TRACE_SEARCH_DEFAULTS.lookbackNs;
/** Spec 1, Limits: the tag endpoints sample 1000 rows and list at most 1000 values per tag. */
export const TAG_SAMPLE_ROWS = 1000;
export const MAX_TAG_VALUES = 1000;
/** Spec 1, tag discovery rule 5: listed even when the window holds no traces. */
export const INTRINSIC_TAGS = ['duration', 'kind', 'name', 'rootName', 'rootServiceName', 'status'] as const;

const TRACE_ID_RE = /^[0-9a-fA-F]{1,32}$/;

/** The trace id path parameter of the OpenAPI document, as storedTraceId reads it. */
export const TRACE_ID_PARAM: ParameterDoc = { name: 'trace_id', schema: { type: 'string', pattern: TRACE_ID_RE.source }, description: 'Trace id: up to 32 hex digits (shorter ids are left-padded with zeros).' };

/** A trace id from a path as stored: 32 lower-case hex digits (shorter ids are left-padded, as Tempo reads them). */
export function storedTraceId(raw: string): string {
  if (!TRACE_ID_RE.test(raw)) throw bad(`invalid trace id ${JSON.stringify(raw.slice(0, 64))}: expected up to 32 hex digits`);
  return raw.toLowerCase().padStart(32, '0');
}

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

/** Tempo's legacy `tags` parameter, logfmt (`service.name=api http.status_code=500 name="GET /"`), as conditions (legacyTagConditions). */
export function tagsConditions(raw: string): SpanCondition[] {
  const pairs: Array<[string, string]> = [];
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
    pairs.push([key, value]);
  }
  return legacyTagConditions(pairs);
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
    limit: positiveInt('limit', p.get('limit'), TRACE_SEARCH_DEFAULTS.limit, TRACE_SEARCH_DEFAULTS.maxLimit)!,
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

/** OTLP JSON of a typed value (64-bit integers as strings, as protobuf JSON writes them). */
function jsonValue(v: FoundTrace['spans'][number]['attributes'][number]['value']): KeyValue['value'] {
  switch (v.type) {
    case 'string':
      return { stringValue: v.value };
    case 'int':
      return { intValue: v.value.toString() };
    case 'float':
      return { doubleValue: v.value };
    case 'bool':
      return { boolValue: v.value };
  }
}

/** Found traces as Tempo's search answer (tempopb SearchResponse in protobuf JSON). */
export function searchResponse(found: readonly FoundTrace[]): { traces: TraceSearchMetadata[]; metrics: Record<string, number> } {
  const traces = found.map((t): TraceSearchMetadata => {
    const spanSet: SpanSet = {
      spans: t.spans.map((s) => ({
        spanID: s.spanId,
        ...(s.name !== undefined ? { name: s.name } : {}),
        startTimeUnixNano: s.startNs.toString(),
        durationNanos: s.durationNs.toString(),
        ...(s.attributes.length ? { attributes: s.attributes.map((a) => ({ key: a.key, value: jsonValue(a.value) })) } : {}),
      })),
      matched: t.matched,
    };
    return {
      traceID: t.traceId,
      rootServiceName: t.rootServiceName,
      ...(t.rootTraceName !== undefined ? { rootTraceName: t.rootTraceName } : {}),
      startTimeUnixNano: t.startNs.toString(),
      durationMs: Number(t.durationNs / 1_000_000n),
      // The deprecated single span set, still read by older clients: the same object.
      spanSet,
      spanSets: [spanSet],
    };
  });
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
export function tagNamesByScope(rows: ReadonlyArray<Record<string, unknown>>, limit: number): Record<TagScope, string[]> {
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
 * `span:status`, `trace:rootService`). Spec 1: a scoped name resolves to the same attribute as the
 * unscoped form. A trace's root service and name are the service and name of its root spans.
 * Undefined for a tag that has no stored values (duration, event:name, …).
 */
export function tagField(tag: string): { field: SpanField; rootOnly?: true } | undefined {
  switch (tag) {
    case 'name':
    case 'span:name':
      return { field: { kind: 'name' } };
    case 'status':
    case 'span:status':
      return { field: { kind: 'status' } };
    case 'kind':
    case 'span:kind':
      return { field: { kind: 'kind' } };
    case 'rootServiceName':
    case 'trace:rootService':
      return { field: { kind: 'service' }, rootOnly: true };
    case 'rootName':
    case 'trace:rootName':
      return { field: { kind: 'name' }, rootOnly: true };
  }
  if (/^[a-zA-Z]+:/.test(tag) || (INTRINSIC_TAGS as readonly string[]).includes(tag)) return undefined;
  const key = tag.startsWith('resource.') ? tag.slice('resource.'.length) : tag.startsWith('span.') ? tag.slice('span.'.length) : tag.startsWith('.') ? tag.slice(1) : tag;
  if (key === '') return undefined;
  if (key === 'service.name') return { field: { kind: 'service' } };
  return { field: { kind: 'attribute', scope: 'any', key } };
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
