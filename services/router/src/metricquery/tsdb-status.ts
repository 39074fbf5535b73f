import type { PromLabels } from '@floe/query';

/** One `{name, value}` entry of Prometheus's cardinality lists. */
export interface TsdbStat {
  name: string;
  value: number;
}

/**
 * Prometheus's `/api/v1/status/tsdb` body (what its TSDB Status page and cardinality tooling
 * read), over the series of a window instead of a head block: each list is the `limit` largest,
 * largest first, ties by name.
 */
export interface TsdbStatus {
  headStats: { numSeries: number; numLabelPairs: number; chunkCount: number; minTime: number; maxTime: number };
  seriesCountByMetricName: TsdbStat[];
  labelValueCountByLabelName: TsdbStat[];
  /** Per label name, the bytes of its distinct values, as Prometheus counts them. */
  memoryInBytesByLabelName: TsdbStat[];
  seriesCountByLabelValuePair: TsdbStat[];
}

/** The cardinality statistics of `series` (distinct label sets, `__name__` among the labels). */
export function tsdbStatus(series: readonly PromLabels[], limit: number, window: { startMs: number; endMs: number }): TsdbStatus {
  // label name → value → series carrying that pair
  const pairs = new Map<string, Map<string, number>>();
  for (const labels of series) {
    for (const [name, value] of Object.entries(labels)) {
      let values = pairs.get(name);
      if (!values) pairs.set(name, (values = new Map()));
      values.set(value, (values.get(value) ?? 0) + 1);
    }
  }
  const valueCounts: TsdbStat[] = [];
  const bytes: TsdbStat[] = [];
  const pairCounts: TsdbStat[] = [];
  let numLabelPairs = 0;
  for (const [name, values] of pairs) {
    valueCounts.push({ name, value: values.size });
    let size = 0;
    for (const [value, n] of values) {
      size += Buffer.byteLength(value);
      pairCounts.push({ name: `${name}=${value}`, value: n });
      numLabelPairs++;
    }
    bytes.push({ name, value: size });
  }
  const byName = [...(pairs.get('__name__') ?? new Map<string, number>())].map(([name, value]) => ({ name, value }));
  return {
    headStats: { numSeries: series.length, numLabelPairs, chunkCount: 0, minTime: window.startMs, maxTime: window.endMs },
    seriesCountByMetricName: top(byName, limit),
    labelValueCountByLabelName: top(valueCounts, limit),
    memoryInBytesByLabelName: top(bytes, limit),
    seriesCountByLabelValuePair: top(pairCounts, limit),
  };
}

const top = (stats: TsdbStat[], limit: number): TsdbStat[] =>
  stats.sort((a, b) => b.value - a.value || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).slice(0, limit);
