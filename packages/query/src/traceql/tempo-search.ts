import { FloeError } from '@floe/errors';
import { create, TempoSearchResponseSchema, type TempoSearchRequest, type TempoSearchResponse } from '@floe/proto';
import { TRACE_SEARCH_DEFAULTS, type FoundTrace, type TraceSearch } from '../ir/traces.ts';
import { legacyTagConditions } from './legacy-tags.ts';
import { parseTraceQL } from './parse.ts';

/**
 * Tempo's search messages (tempopb SearchRequest and SearchResponse) as Floe's trace search and
 * back: the querier's Querier.SearchRecent and the router's StreamingQuerier.Search (what
 * Grafana's Tempo data source calls with streaming on) answer the same search the router's
 * /api/search does.
 */

const NS_PER_SECOND = 1_000_000_000n;

/** A SearchRequest as the search of the router's /api/search (spec 1: the TraceQL subset, tags, durations, spans per span set). */
export function tempoSearchOf(req: TempoSearchRequest, nowNs: bigint): TraceSearch {
  const tags = Object.entries(req.Tags);
  if (req.Query.trim() !== '' && tags.length > 0) throw new FloeError('bad_data', 'invalid search: Query and Tags are mutually exclusive');
  const conditions = req.Query.trim() !== '' ? parseTraceQL(req.Query) : legacyTagConditions(tags);
  const endNs = req.end ? BigInt(req.end) * NS_PER_SECOND + NS_PER_SECOND : nowNs;
  const startNs = req.start ? BigInt(req.start) * NS_PER_SECOND : endNs - TRACE_SEARCH_DEFAULTS.lookbackNs;
  if (startNs >= endNs) throw new FloeError('bad_data', 'invalid range: end must be after start');
  if (req.MaxDurationMs && req.MinDurationMs > req.MaxDurationMs) throw new FloeError('bad_data', 'invalid search: MaxDurationMs is less than MinDurationMs');
  return {
    table: 'traces',
    range: { startNs, endNs },
    conditions,
    ...(req.MinDurationMs ? { minDurationNs: BigInt(req.MinDurationMs) * 1_000_000n } : {}),
    ...(req.MaxDurationMs ? { maxDurationNs: BigInt(req.MaxDurationMs) * 1_000_000n } : {}),
    limit: Math.min(req.Limit || TRACE_SEARCH_DEFAULTS.limit, TRACE_SEARCH_DEFAULTS.maxLimit),
    ...(req.SpansPerSpanSet ? { spansPerSpanSet: req.SpansPerSpanSet } : {}),
  };
}

export function tempoSearchResponse(found: readonly FoundTrace[]): TempoSearchResponse {
  return create(TempoSearchResponseSchema, {
    traces: found.map((t) => {
      const spanSet = {
        matched: t.matched,
        spans: t.spans.map((s) => ({
          spanID: s.spanId,
          name: s.name ?? '',
          startTimeUnixNano: s.startNs,
          durationNanos: s.durationNs,
          attributes: s.attributes.map((a) => ({ key: a.key, value: { value: anyValue(a.value) } })),
        })),
      };
      return {
        traceID: t.traceId,
        rootServiceName: t.rootServiceName,
        rootTraceName: t.rootTraceName ?? '',
        startTimeUnixNano: t.startNs,
        durationMs: Number(t.durationNs / 1_000_000n),
        spanSet,
        spanSets: [spanSet],
      };
    }),
    metrics: { inspectedTraces: found.length, completedJobs: 1, totalJobs: 1 },
  });
}

function anyValue(v: FoundTrace['spans'][number]['attributes'][number]['value']) {
  switch (v.type) {
    case 'string':
      return { case: 'stringValue' as const, value: v.value };
    case 'int':
      return { case: 'intValue' as const, value: v.value };
    case 'float':
      return { case: 'doubleValue' as const, value: v.value };
    case 'bool':
      return { case: 'boolValue' as const, value: v.value };
  }
}

