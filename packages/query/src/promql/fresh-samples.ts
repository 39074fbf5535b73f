import { labelsKey, type Labels } from '../labels.ts';
import type { VectorSelector } from './ast.ts';
import type { RawSeries, SeriesSource } from './eval.ts';
import { METRIC_NAME } from './labels.ts';
import { matchLabels } from './series.ts';
import { isStaleNaN } from './staleness.ts';

/** A sample not yet readable from storage: its series' labels (`__name__` included), time (ms) and value. */
export interface FreshSample {
  labels: Labels;
  t: number;
  v: number;
}

/**
 * Fresh samples found by metric name: the index is made on first use and kept, so a set of
 * samples read by many queries (the ruler's recent writes, by every rule of an evaluation) is
 * indexed once.
 */
export class FreshSampleIndex {
  readonly samples: readonly FreshSample[];
  #byName: Map<string, FreshSample[]> | undefined;

  constructor(samples: readonly FreshSample[]) {
    this.samples = samples;
  }

  /** The samples a selector may accept: those of its metric name when it names one (nearly all do), else all. */
  candidates(selector: VectorSelector): readonly FreshSample[] {
    const name = selector.matchers.find((m) => m.name === METRIC_NAME && m.op === '=');
    if (!name) return this.samples;
    if (!this.#byName) {
      this.#byName = new Map();
      for (const s of this.samples) {
        const n = s.labels[METRIC_NAME] ?? '';
        const list = this.#byName.get(n);
        if (list) list.push(s);
        else this.#byName.set(n, [s]);
      }
    }
    return this.#byName.get(name.value) ?? [];
  }
}

/** Fresh samples in layers, later layers over earlier ones: plain lists are indexed per call of withFreshSamples. */
export type FreshLayers = ReadonlyArray<FreshSampleIndex | readonly FreshSample[]>;

/**
 * `source` with the fresh samples of `layers` laid over it: each fresh sample a selector's
 * matchers accept is added to the stored series with the same labels (replacing a stored sample
 * at the same time), or makes a series of its own; of samples at the same time the later (in
 * layer order, then in a layer's order) wins. A staleness marker (STALE_NAN) becomes a marked
 * sample.
 *
 * The ruler needs this because its results reach storage through the ingest path: acknowledged at
 * once but readable only after the writer's next commit. Prometheus commits each rule's results
 * before the next rule runs, so an alert on a recording rule sees this evaluation's value; reading
 * storage alone would see the previous one. The ruler passes its recent writes (indexed once per
 * evaluation), then what the group's earlier rules wrote at this evaluation.
 */
export function withFreshSamples(source: SeriesSource, layers: FreshLayers): SeriesSource {
  const indexes = layers.flatMap((l) => (l instanceof FreshSampleIndex ? (l.samples.length > 0 ? [l] : []) : l.length > 0 ? [new FreshSampleIndex(l)] : []));
  if (indexes.length === 0) return source;
  return (selector: VectorSelector) => {
    const stored = source(selector);
    const added = new Map<string, FreshSample[]>();
    for (const index of indexes) {
      for (const s of index.candidates(selector)) {
        if (!matchLabels(s.labels, selector.matchers)) continue;
        const key = labelsKey(s.labels);
        const list = added.get(key);
        if (list) list.push(s);
        else added.set(key, [s]);
      }
    }
    if (added.size === 0) return stored;
    const out: RawSeries[] = [];
    for (const series of stored) {
      const key = labelsKey(series.labels);
      const samples = added.get(key);
      if (!samples) {
        out.push(series);
        continue;
      }
      added.delete(key);
      out.push(merged(series, samples));
    }
    for (const samples of added.values()) out.push(merged({ labels: samples[0]!.labels, t: [], v: [] }, samples));
    return out;
  };
}

/** The series with the samples added in time order; a fresh sample wins over a stored one at its time. */
function merged(series: RawSeries, samples: readonly FreshSample[]): RawSeries {
  const byTime = new Map<number, { v: number; stale: boolean }>();
  for (let i = 0; i < series.t.length; i++) byTime.set(series.t[i]!, { v: series.v[i]!, stale: Boolean(series.stale?.[i]) });
  for (const s of samples) byTime.set(s.t, { v: s.v, stale: isStaleNaN(s.v) });
  const times = [...byTime.keys()].sort((a, b) => a - b);
  const t = new Float64Array(times.length);
  const v = new Float64Array(times.length);
  const stale = new Uint8Array(times.length);
  let anyStale = false;
  times.forEach((time, i) => {
    const p = byTime.get(time)!;
    t[i] = time;
    v[i] = p.v;
    stale[i] = p.stale ? 1 : 0;
    anyStale ||= p.stale;
  });
  return anyStale ? { labels: series.labels, t, v, stale } : { labels: series.labels, t, v };
}
