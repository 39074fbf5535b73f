import { hash } from 'node:crypto';
import type { TypedAttributes } from './attributes.ts';

/**
 * `series_id` of the metrics and metric_exemplars tables: the first 16 hex digits (64 bits) of a
 * SHA-256 over a canonical text of what makes a series in OpenTelemetry's data model: the metric
 * name, the resource attributes, the scope name and version, and the data point attributes.
 * Attributes are canonical: sorted by key, each with its type (so int 1, double 1 and string "1"
 * are different series, as in OTLP), the value as the typed maps hold it. The same series gives
 * the same id in every request, process and version of Floe; the id is stored, never recomputed
 * by readers, who only group by it.
 *
 * The text is `JSON([metric, scope name, scope version]) \n canon(resource) \n canon(point)`, where
 * canon is the JSON array of `[key, type, value]` (type s, i, d or b; values as the row's maps
 * hold them: int64 beyond 2^53 and non-finite doubles as strings) sorted by key, then type.
 * Remote-write series use the same function (their labels are string point attributes). The
 * metric, resource and scope part is built once per metric (`seriesPrefix`), the rest per point.
 */

type Entry = [key: string, type: 's' | 'i' | 'd' | 'b', value: unknown];

export function canonicalAttributes(t: TypedAttributes): string {
  const entries: Entry[] = [];
  for (const k of Object.keys(t.str)) entries.push([k, 's', t.str[k]]);
  for (const k of Object.keys(t.int)) entries.push([k, 'i', t.int[k]]);
  for (const k of Object.keys(t.double)) entries.push([k, 'd', t.double[k]]);
  for (const k of Object.keys(t.bool)) entries.push([k, 'b', t.bool[k]]);
  if (entries.length > 1) entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return JSON.stringify(entries);
}

/** The metric-wide part of the series text; `resource` is canonicalAttributes of the resource. */
export function seriesPrefix(metricName: string, resource: string, scopeName: string, scopeVersion: string): string {
  return `${JSON.stringify([metricName, scopeName, scopeVersion])}\n${resource}\n`;
}

export function seriesId(prefix: string, point: TypedAttributes): string {
  return hash('sha256', prefix + canonicalAttributes(point), 'hex').slice(0, 16);
}
