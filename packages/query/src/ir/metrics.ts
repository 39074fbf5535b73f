/**
 * Floe's Query IR for metric reads (PromQL, issue 6): storage-neutral requests the planner
 * (sql/metrics.ts) prints as SQL over the `metrics` / `metric_exemplars` views. PromQL semantics
 * (selection by Prometheus name and labels, lookback, functions) are the evaluator's
 * (promql/eval.ts); the IR only says which stored metrics and which time window to read.
 * Times are unix nanoseconds as bigint; a window is (startNs, endNs], left-open as Prometheus 3's
 * range selectors.
 */

export interface MetricWindow {
  startNs: bigint;
  endNs: bigint;
}

/** Which stored metrics exist in a window: name, kind, unit, description (the name catalog). */
export interface MetricCatalog {
  kind: 'metric_catalog';
  window: MetricWindow;
}

/** One row per stored series of the named stored metrics: its labels and bucket layout. */
export interface MetricSeriesList {
  kind: 'metric_series';
  window: MetricWindow;
  /** Stored metric names (`metric_name` as ingested, not Prometheus names). Empty: nothing. */
  metricNames: string[];
}

/** Every data point of the named stored metrics in the window, by series and time. */
export interface MetricPoints {
  kind: 'metric_points';
  window: MetricWindow;
  metricNames: string[];
  /** Read the histogram and summary columns too (only when such a metric is selected). */
  distributions: boolean;
}

/** Exemplars of the named stored metrics in the window. */
export interface MetricExemplars {
  kind: 'metric_exemplars';
  window: MetricWindow;
  metricNames: string[];
}

export type MetricIR = MetricCatalog | MetricSeriesList | MetricPoints | MetricExemplars;
