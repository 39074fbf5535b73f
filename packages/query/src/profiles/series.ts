import type { TimeRange } from '../ir/logs.ts';
import { NAME_LABEL, PROFILE_TYPE_LABEL, SERVICE_LABEL } from './labels.ts';
import { EXEMPLAR_COLUMNS, labelColumn } from './plan.ts';

/**
 * Rows of the series plans (plan.ts planProfileSeries, planProfileSeriesPoints) → the label sets
 * and time series of Pyroscope's Series and SelectSeries answers (reference/api-contracts.md §4.4).
 * A label whose value is '' is absent from the profile and left out of its set, as Prometheus and
 * Pyroscope leave absent labels out.
 */

/** The labels of a Series answer when the request names none: what identifies a profile series in Floe. */
export const DEFAULT_SERIES_LABELS: readonly string[] = [NAME_LABEL, PROFILE_TYPE_LABEL, SERVICE_LABEL];

export interface LabelPair {
  name: string;
  value: string;
}

export interface SeriesPoint {
  /** Unix milliseconds: the end of the point's step. */
  timestampMs: number;
  value: number;
  /** The point's largest profile, when exemplars were asked for and one qualifies. */
  exemplar?: SeriesExemplar;
}

export interface SeriesExemplar {
  profileId: string;
  /** Unix milliseconds: the profile's own time. */
  timestampMs: number;
  value: bigint;
  /** '' when the profile is linked to no span. */
  spanId: string;
  traceId: string;
}

const text = (v: unknown) => (typeof v === 'string' ? v : '');

function exemplarOf(row: Row): SeriesExemplar | undefined {
  const X = EXEMPLAR_COLUMNS;
  const value = row[X.value];
  if (value === null || value === undefined) return undefined;
  return {
    profileId: text(row[X.profileId]),
    timestampMs: Number(BigInt(row[X.timeNs] as bigint | number) / NS_PER_MS),
    value: BigInt(value as bigint | number),
    spanId: text(row[X.spanId]),
    traceId: text(row[X.traceId]),
  };
}

export interface ProfileSeriesData {
  labels: LabelPair[];
  points: SeriesPoint[];
}

type Row = Record<string, unknown>;

const NS_PER_MS = 1_000_000n;

function labelsOf(row: Row, names: readonly string[]): LabelPair[] {
  const labels: LabelPair[] = [];
  names.forEach((name, i) => {
    const value = row[labelColumn(i)];
    if (typeof value === 'string' && value !== '') labels.push({ name, value });
  });
  return labels;
}

/** The distinct non-empty label sets of planProfileSeries's rows, in row order. */
export function labelSetsOf(rows: readonly Row[], names: readonly string[]): LabelPair[][] {
  const seen = new Set<string>();
  const sets: LabelPair[][] = [];
  for (const row of rows) {
    const labels = labelsOf(row, names);
    const key = JSON.stringify(labels);
    // Two rows differing only in '' versus absent collapse into one set.
    if (labels.length === 0 || seen.has(key)) continue;
    seen.add(key);
    sets.push(labels);
  }
  return sets;
}

/**
 * planProfileSeriesPoints's rows as one series per group, in the plan's order (by label values).
 * With a limit, the series are ordered by their sum of values, largest first and equal sums in
 * label order, and only the first `limit` kept (Pyroscope's top-series rule).
 */
export function seriesOf(rows: readonly Row[], groupBy: readonly string[], range: TimeRange, stepNs: bigint, limit?: number): ProfileSeriesData[] {
  const byGroup = new Map<string, ProfileSeriesData>();
  for (const row of rows) {
    const labels = labelsOf(row, groupBy);
    const key = JSON.stringify(labels);
    let series = byGroup.get(key);
    if (!series) {
      series = { labels, points: [] };
      byGroup.set(key, series);
    }
    const slot = BigInt(row.slot as bigint | number);
    const exemplar = exemplarOf(row);
    series.points.push({ timestampMs: Number((range.startNs + slot * stepNs) / NS_PER_MS), value: Number(row.value), ...(exemplar ? { exemplar } : {}) });
  }
  const all = [...byGroup.values()];
  if (limit === undefined || limit <= 0) return all;
  const sum = (s: ProfileSeriesData) => s.points.reduce((a, p) => a + p.value, 0);
  // Array.prototype.sort is stable: equal sums keep the plan's label order.
  return all.map((s) => ({ s, total: sum(s) })).sort((a, b) => b.total - a.total).slice(0, limit).map(({ s }) => s);
}
