import { hash } from 'node:crypto';
import type { TypedAttributes } from './attributes.ts';

/**
 * `series_id` of the metrics and metric_exemplars tables: 16 hex digits (64 bits) that name a
 * series in OpenTelemetry's data model: the metric name, the resource attributes, the scope name
 * and version, and the data point attributes. The same series gives the same id in every request
 * and process; the id is stored, never recomputed by readers, who only group by it and select by
 * it.
 *
 * The id is clustered by scrape target, because the tables are sorted by (metric_name,
 * series_id, time): a query for one job or one instance then reads a narrow id range, which
 * Parquet's row group statistics prune (a dashboard's `$instance` over a day read every row
 * group of every hour when ids were uniform hashes; bench/RESULTS.md, seventh session).
 *   - digits 1-2: SHA-256 of the series' Prometheus job (`service.namespace/service.name`, or
 *     service.name; remote write's `job` label is its service.name);
 *   - digits 3-4: SHA-256 of the canonical resource (the target: remote write's job and
 *     instance);
 *   - digits 5-16: SHA-256 of the series text. Two series collide only when their job and
 *     resource digits also agree, so the odds are those of 48-bit hashes among the series of one
 *     target bucket, not of all series.
 * Ids written before this layout (Floe before the seventh session) were the first 16 digits of
 * the series text's hash alone; a series written across that upgrade reads as two series until
 * the older one ages out of the queried window.
 *
 * The series text is `JSON([metric, scope name, scope version]) \n canon(resource) \n
 * canon(point)`, where canon is the JSON array of `[key, type, value]` (type s, i, d or b; values
 * as the row's maps hold them: int64 beyond 2^53 and non-finite doubles as strings) sorted by
 * key, then type. Remote-write series use the same functions (their labels are string point
 * attributes). The resource's part is built once per resource (`seriesResource`), the metric's
 * and scope's once per metric (`seriesPrefix`), the rest per point.
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

/** What a series' id takes from its resource: the canonical text and the target digits. */
export interface SeriesResource {
  readonly canon: string;
  /** Digits 1-4 of the ids of every series of the resource (job, then target). */
  readonly target: string;
}

/** The metric-wide part of a series' id: its target digits and the text its own digits hash. */
export interface SeriesPrefix {
  /** The resource's target digits (SeriesResource.target). */
  readonly target: string;
  readonly text: string;
}

export function seriesResource(resource: TypedAttributes): SeriesResource {
  const canon = canonicalAttributes(resource);
  return { canon, target: hash('sha256', resourceJob(resource.str), 'hex').slice(0, 2) + hash('sha256', canon, 'hex').slice(0, 2) };
}

/** The Prometheus job of a resource's string attributes, as the OTLP translation names it. */
function resourceJob(str: Readonly<Record<string, string>>): string {
  const name = str['service.name'] ?? '';
  const namespace = str['service.namespace'];
  return namespace ? `${namespace}/${name}` : name;
}

export function seriesPrefix(metricName: string, resource: SeriesResource, scopeName: string, scopeVersion: string): SeriesPrefix {
  return { target: resource.target, text: `${JSON.stringify([metricName, scopeName, scopeVersion])}\n${resource.canon}\n` };
}

export function seriesId(prefix: SeriesPrefix, point: TypedAttributes): string {
  return prefix.target + hash('sha256', prefix.text + canonicalAttributes(point), 'hex').slice(0, 12);
}
