import type { Span } from './ast.ts';
import { positionOf } from '../logql/errors.ts';
import type { Labels } from '../labels.ts';
import { METRIC_NAME } from './labels.ts';
import { goQuote } from './go-strconv.ts';

/**
 * Query annotations as Prometheus 3 returns them beside a result: warnings (the answer may be
 * wrong: a quantile outside [0, 1], a bucket without a usable `le`) and infos (the answer may
 * not be what was meant: rate over a name that is not a counter's, buckets forced monotonic).
 * The texts are Prometheus's, since Grafana shows them as they are and users search for them;
 * each ends with the position of the expression it is about, `(line:column)`.
 *
 * Prometheus keeps one annotation per text (without its position); so does this.
 */
export interface AnnotationSnapshot {
  warnings: Array<[text: string, offset: number]>;
  infos: Array<[text: string, offset: number]>;
}

export class Annotations {
  readonly #warnings = new Map<string, number>();
  readonly #infos = new Map<string, number>();
  /** Metric names rate/increase inputs were already checked for (a check per series and step otherwise). */
  readonly #counterNames = new Set<string>();

  /** Warns when the quantile parameter of quantile, quantile_over_time or histogram_quantile is outside [0, 1] or NaN. */
  quantileParam(q: number, at: Span): void {
    if (q >= 0 && q <= 1) return;
    add(this.#warnings, `PromQL warning: quantile value should be between 0 and 1, got ${formatG(q)}`, at);
  }

  /** limit_ratio's ratio is outside [-1, 1] (it is capped to `to`). */
  invalidRatio(r: number, to: number, at: Span): void {
    add(this.#warnings, `PromQL warning: ratio value should be between -1 and 1, got ${formatG(r)}, capping to ${formatG(to)}`, at);
  }

  /** histogram_quantile met a sample whose `le` is missing or not a number; `le` is '' when missing. */
  badBucketLabel(metricName: string, le: string, at: Span): void {
    add(this.#warnings, `PromQL warning: bucket label "le" is missing or has a malformed value of ${goQuote(le)}${forMetric(metricName)}`, at);
  }

  /** Notes a rate or increase input whose name has none of a counter's suffixes (Prometheus's PossibleNonCounterInfo). */
  counterInput(labels: Labels, at: Span): void {
    const name = labels[METRIC_NAME];
    if (name === undefined || name === '' || this.#counterNames.has(name)) return;
    this.#counterNames.add(name);
    if (/_(total|sum|count|bucket)$/.test(name)) return;
    add(this.#infos, `PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: ${goQuote(name)}`, at);
  }

  /** histogram_quantile had to raise a bucket count to its predecessor's. */
  forcedMonotonicity(metricName: string, at: Span): void {
    add(
      this.#infos,
      `PromQL info: input to histogram_quantile needed to be fixed for monotonicity (see https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile)${forMetric(metricName)}`,
      at,
    );
  }

  /** What was collected, as plain data (texts with their offsets), to carry across a thread. */
  snapshot(): AnnotationSnapshot {
    return { warnings: [...this.#warnings], infos: [...this.#infos] };
  }

  /** Adds what another evaluation of the same query collected (its snapshot()). */
  absorb(s: AnnotationSnapshot): void {
    for (const [text, offset] of s.warnings) if (!this.#warnings.has(text)) this.#warnings.set(text, offset);
    for (const [text, offset] of s.infos) if (!this.#infos.has(text)) this.#infos.set(text, offset);
  }

  /**
   * The API's `warnings` and `infos`: positions resolved against the query text, sorted (the
   * order is Prometheus's map order, i.e. none), at most `max` of each, then a count of the rest
   * in Prometheus's words.
   */
  asStrings(query: string, max = 10): { warnings: string[]; infos: string[] } {
    const render = (m: Map<string, number>, kind: string): string[] => {
      const all = [...m].map(([text, offset]) => {
        const p = positionOf(query, offset);
        return `${text} (${p.line}:${p.column})`;
      });
      all.sort();
      if (all.length <= max) return all;
      return [...all.slice(0, max), `${all.length - max} more ${kind} annotations omitted`];
    };
    return { warnings: render(this.#warnings, 'warning'), infos: render(this.#infos, 'info') };
  }
}

function add(into: Map<string, number>, text: string, at: Span): void {
  if (!into.has(text)) into.set(text, at.from);
}

const forMetric = (name: string) => (name === '' ? '' : ` for metric name ${goQuote(name)}`);

/** A number as Go's `%g` prints it (shortest digits; exponent form below 1e-4 and from 1e6). */
export function formatG(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return '+Inf';
  if (x === -Infinity) return '-Inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [mantissa, exp] = x.toExponential().split('e') as [string, string];
  const e = Number(exp);
  if (e < -4 || e >= 6) return `${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return String(x);
}

export { goQuote };
