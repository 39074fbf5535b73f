import { LABEL_COLUMNS, LOG_COLUMNS, STREAM_LABELS } from '@floe/query';

/**
 * Querier rows → the JSON shapes of Loki's API (reference/api-contracts.md §1.2). A stream is
 * identified by service_name and level (spec 1, label resolution rule 6); an empty label is left
 * out, as Prometheus and Loki do. Each entry's structured metadata (spec 1, "Log entry structured
 * metadata") is trace_id, span_id and the record's, resource's and scope's attributes flattened to
 * strings by the planner (LOG_COLUMNS.attributes).
 */

export type Row = Record<string, unknown>;
export type StreamValue = [string, string] | [string, string, { structuredMetadata?: Record<string, string> }];

export interface Stream {
  stream: Record<string, string>;
  values: StreamValue[];
}

/** The rows of an Arrow table (anything iterable of row objects) as plain objects (map values stay as they come). */
export function rowsOf(table: Iterable<unknown>): Row[] {
  const out: Row[] = [];
  for (const r of table) {
    const json = typeof (r as { toJSON?: unknown }).toJSON === 'function' ? (r as { toJSON(): unknown }).toJSON() : r;
    out.push(json as Row);
  }
  return out;
}

export function streamLabels(row: Row): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const { label } of STREAM_LABELS) {
    const v = row[label];
    if (typeof v === 'string' && v !== '') labels[label] = v;
  }
  return labels;
}

/**
 * Rows (already in the requested direction and cut at the limit) grouped into streams; each
 * stream keeps its entries in row order. Streams are ordered by their labels.
 *
 * Categorized (the client sent `categorize-labels`, as Grafana does): a stream is its
 * service_name and level, and each entry carries its structured metadata as a third element.
 * Otherwise, as Loki answers such clients (logcli, scripts), the metadata joins the stream's
 * labels, so a stream is one distinct label set (attributes named like a stream label's alias stay out).
 */
export function toStreams(rows: Row[], categorize: boolean): Stream[] {
  const byKey = new Map<string, { order: string; rest: Array<[string, string]>; stream: Stream }>();
  for (const row of rows) {
    const own = streamLabels(row);
    const metadata = structuredMetadata(row);
    const order = JSON.stringify(STREAM_LABELS.map(({ label }) => own[label] ?? ''));
    const rest = categorize ? [] : Object.entries(metadata).filter(([k]) => !STREAM_ALIASES.has(k));
    const key = rest.length === 0 ? order : `${order}${JSON.stringify(rest)}`;
    let s = byKey.get(key);
    if (!s) byKey.set(key, (s = { order, rest, stream: { stream: rest.length === 0 ? own : sortedLabels({ ...own, ...Object.fromEntries(rest) }), values: [] } }));
    const ts = String(row[LOG_COLUMNS.time]);
    const line = typeof row[LOG_COLUMNS.line] === 'string' ? (row[LOG_COLUMNS.line] as string) : '';
    if (!categorize) s.stream.values.push([ts, line]);
    else s.stream.values.push([ts, line, Object.keys(metadata).length === 0 ? {} : { structuredMetadata: metadata }]);
  }
  // By service_name and level, then by the rest of the labels pair by pair (a label set that is
  // a prefix of another first).
  return [...byKey.values()].sort((a, b) => compareText(a.order, b.order) || compareEntries(a.rest, b.rest)).map((s) => s.stream);
}

/**
 * Names that resolve to a stream label's column (service.name, severity, …): an attribute so
 * named stays out of the stream labels, where a filter on the name would read the column, not it.
 */
const STREAM_ALIASES = new Set(Object.keys(LABEL_COLUMNS).filter((name) => STREAM_LABELS.some(({ column }) => column === LABEL_COLUMNS[name])));

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function compareEntries(a: Array<[string, string]>, b: Array<[string, string]>): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareText(a[i]![0], b[i]![0]) || compareText(a[i]![1], b[i]![1]);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

const sortedLabels = (labels: Record<string, string>): Record<string, string> => Object.fromEntries(Object.keys(labels).sort().map((k) => [k, labels[k]!]));

/** The entry's attributes (LOG_COLUMNS.attributes, flattened by the planner) plus trace_id / span_id, keys sorted. */
export function structuredMetadata(row: Row): Record<string, string> {
  const attributes = row[LOG_COLUMNS.attributes];
  // JSON.parse defines every key as an own property: an attribute `__proto__` is a key like any other.
  const out = (typeof attributes === 'string' ? JSON.parse(attributes) : {}) as Record<string, string>;
  for (const id of [LOG_COLUMNS.traceId, LOG_COLUMNS.spanId]) {
    const v = row[id];
    if (typeof v === 'string' && v !== '') out[id] = v;
  }
  return sortedLabels(out);
}

/** A matrix series of Loki's API: `values` are `[unix seconds, "value"]`, oldest first. */
export interface MatrixSeries {
  metric: Record<string, string>;
  values: Array<[number, string]>;
}

/** An instant-vector sample: `value` is `[unix seconds, "value"]`. */
export interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** Unix nanoseconds as the float seconds Loki and Prometheus put in sample pairs (millisecond precision). */
export const secondsOf = (ns: bigint): number => Number(ns / 1_000_000n) / 1000;
