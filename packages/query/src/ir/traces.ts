/**
 * Floe's Query IR for trace search and tag discovery (spec 1, "Trace query API"): what to read,
 * storage-neutral. TraceQL (traceql/parse.ts) and Tempo's legacy `tags` parameter lower to it;
 * sql/traces.ts plans it. Times are unix nanoseconds as bigint; ranges are half-open.
 */
import type { TimeRange } from './logs.ts';

/** A value a span field is compared with: TraceQL's static types that the subset keeps. */
export type SpanValue =
  | { type: 'string'; value: string }
  | { type: 'int'; value: bigint }
  | { type: 'float'; value: number }
  | { type: 'bool'; value: boolean }
  /** A bare identifier: a status (ok, error, unset) or a kind (server, client, …). */
  | { type: 'keyword'; value: string };

/**
 * What a condition reads. `service` is the resource's service.name (its own column); an
 * attribute in scope `any` (TraceQL's unscoped `.key`) matches the span's attribute or the
 * resource's.
 */
export type SpanField =
  | { kind: 'name' }
  | { kind: 'status' }
  | { kind: 'kind' }
  | { kind: 'service' }
  | { kind: 'attribute'; scope: 'span' | 'resource' | 'any'; key: string };

/**
 * Tempo's search defaults, for every surface that searches (the router's /api/search, the
 * querier's SearchRecent): the window when none is given, the number of traces, and the most a
 * caller may ask for.
 */
export const TRACE_SEARCH_DEFAULTS = { lookbackNs: 3_600_000_000_000n, limit: 20, maxLimit: 1000 } as const;

/** What Tempo names the root service of a trace whose root span it has not seen. */
export const ROOT_NOT_RECEIVED = '<root span not yet received>';

/** `field = value`: the only comparison of the subset. */
export interface SpanCondition {
  field: SpanField;
  value: SpanValue;
}

/**
 * A search: the traces with at least one span in `range` for which every condition holds (an
 * empty list is TraceQL's `{}`), newest first. A trace's duration (first span start to last span
 * end, within the range) must lie within [minDurationNs, maxDurationNs] when they are set.
 */
export interface TraceSearch {
  table: 'traces';
  range: TimeRange;
  conditions: SpanCondition[];
  minDurationNs?: bigint;
  maxDurationNs?: bigint;
  /** Traces returned at most. */
  limit: number;
  /** Matching spans returned per trace at most (undefined: all); `matched` still counts them all. */
  spansPerSpanSet?: number;
}

/** Attribute keys of the newest `sampleLimit` spans in `range`, per scope. */
export interface TraceTagNames {
  table: 'traces';
  range: TimeRange;
  /** Only keys of spans that meet these (a tag request's `q`). */
  conditions: SpanCondition[];
  sampleLimit: number;
}

/**
 * Distinct values of one field over the newest `sampleLimit` spans in `range` that meet
 * `conditions`, at most `limit` of them.
 */
export interface TraceTagValues {
  table: 'traces';
  range: TimeRange;
  field: SpanField;
  /** Values of root spans only (a trace's rootServiceName and rootName). */
  rootOnly?: boolean;
  conditions: SpanCondition[];
  sampleLimit: number;
  limit: number;
}

/**
 * One trace a search found: its bounds within the range and its root span (ROOT_NOT_RECEIVED and
 * no name when the root is not stored), how many spans matched, and the first of them with the
 * query's attributes.
 */
export interface FoundTrace {
  traceId: string;
  rootServiceName: string;
  rootTraceName?: string;
  startNs: bigint;
  durationNs: bigint;
  matched: number;
  spans: Array<{
    spanId: string;
    name?: string;
    startNs: bigint;
    durationNs: bigint;
    attributes: Array<{ key: string; value: Exclude<SpanValue, { type: 'keyword' }> }>;
  }>;
}
