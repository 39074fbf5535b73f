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

/** A Prometheus label matcher as the reads push it down (Prometheus semantics: absent = ""). */
export interface MetricLabelMatch {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}

/**
 * Prometheus labels that a histogram's or summary's series take from the row's columns, never
 * from its attributes: the name (`_bucket`, `_count`, `_sum` added), the bucket bound `le` and
 * the `quantile`. A remote-written native histogram has them only once it is read
 * (promql/series.ts), so a filter on its stored attributes must leave them out.
 */
export const DERIVED_LABELS: ReadonlySet<string> = new Set(['__name__', 'le', 'quantile']);

/** Stored types whose remote-written rows keep every Prometheus label but the name as an attribute. */
export const VERBATIM_LABEL_TYPES: ReadonlySet<string> = new Set(['gauge', 'sum']);

/**
 * What one PromQL selector reads: its stored metric names, and its label matchers, which the
 * planner applies to remote-written rows only (their labels are `point_attr_str` verbatim, job
 * also `service_name`), and on a read that may include histograms or summaries only those on
 * labels outside DERIVED_LABELS; OpenTelemetry rows are read whole, their labels only exist after
 * name translation. The filter is a pre-filter: the evaluator still matches every translated series.
 */
export interface MetricSelect {
  metricNames: string[];
  matchers: MetricLabelMatch[];
}

/** One row per stored series of the named stored metrics: its labels and bucket layout. */
export interface MetricSeriesList {
  kind: 'metric_series';
  window: MetricWindow;
  /** Stored metric names (`metric_name` as ingested, not Prometheus names). Empty: nothing. */
  metricNames: string[];
  /** When given, rows must match one of them (the names above still apply). */
  selects?: MetricSelect[];
  /** Only these metric types (default: all). */
  metricTypes?: string[];
}

/** Every data point of the named stored metrics in the window, by series and time. */
export interface MetricPoints {
  kind: 'metric_points';
  window: MetricWindow;
  metricNames: string[];
  /** Read the histogram and summary columns too (only when such a metric is selected). */
  distributions: boolean;
  selects?: MetricSelect[];
  metricTypes?: string[];
}

/**
 * One row per stored series of plain (gauge and sum) metrics with its labels and its points in
 * time order: times (ms), values, and the times of staleness markers. One row per series keeps
 * the transfer free of a series key per point and the row count to the series count.
 */
export interface MetricSeriesPoints {
  kind: 'metric_series_points';
  window: MetricWindow;
  selects: MetricSelect[];
  metricTypes: string[];
  /** Read the OpenTelemetry label maps (int, double, bool attributes; resource attributes). */
  otelLabels: boolean;
  /** Only these series (their ids); the selects' names and matchers still apply. */
  seriesIds?: string[];
  /** false: only the series id (`series_hi`, `series_lo`, `series_text`: sql/metrics.ts seriesIdFromHalves) and the point lists, no identity or labels (default true). */
  labels?: boolean;
}

/** The distinct series of the named stored metrics of the given types in the window. */
export interface MetricSeriesIds {
  kind: 'metric_series_ids';
  window: MetricWindow;
  metricNames: string[];
  metricTypes: string[];
}

/**
 * One row per series of the named stored metrics in the window: its identity and label maps (no
 * points), optionally only of the given series. Labels are the same on every point of a series,
 * so any window where it has a point gives them.
 */
export interface MetricSeriesLabels {
  kind: 'metric_series_labels';
  window: MetricWindow;
  metricNames: string[];
  metricTypes: string[];
  /** Read the OpenTelemetry label maps (int, double, bool attributes; resource attributes). */
  otelLabels: boolean;
  seriesIds?: string[];
}

/**
 * The resources of OpenTelemetry metrics in the window (remote-written rows have none of their
 * own): one row per distinct resource, its attribute maps and the distinct times (ms) at which it
 * has points, for Prometheus's `target_info` series.
 */
export interface MetricTargetInfo {
  kind: 'metric_target_info';
  window: MetricWindow;
}

/** Exemplars of the named stored metrics in the window. */
export interface MetricExemplars {
  kind: 'metric_exemplars';
  window: MetricWindow;
  metricNames: string[];
}

export type MetricIR = MetricCatalog | MetricSeriesList | MetricPoints | MetricSeriesPoints | MetricSeriesIds | MetricSeriesLabels | MetricTargetInfo | MetricExemplars;
