import {
  AggregationTemporality,
  type Exemplar,
  type ExponentialHistogramDataPoint,
  type ExportMetricsServiceRequest,
  type HistogramDataPoint,
  type KeyValue,
  type Metric,
  type NumberDataPoint,
  type SummaryDataPoint,
} from '@floe/proto';
import { emptyTyped, entryCount, serviceName, splitAttributes, type TypedAttributes } from './attributes.ts';
import { MAX_INT64, RowCollector, hex, isZero, type ConvertedRows, RESOURCE_ENTRIES_BUDGET } from './rows.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { seriesId, seriesPrefix, seriesResource, type SeriesPrefix, type SeriesResource } from './series-id.ts';
import type { SeriesGate } from './series-limit.ts';

/**
 * Converts an OTLP metrics export into rows of the `metrics` table (one per data point, every
 * kind: @floe/schema metrics.ts says which columns each kind fills) and of `metric_exemplars`
 * (one per exemplar of an accepted point), each grouped by the hour of its time. Nothing a PromQL
 * engine needs later is dropped: start time, temporality and monotonicity, the full bucket layout
 * of both histogram kinds, quantiles, the flags (bit 0, no recorded value, is a staleness marker;
 * the value of such a point is stored as sent and must be ignored), integer values exactly
 * (`value_int`) beside their double.
 *
 * A data point is rejected (OTLP partial success, `rejected_data_points`) when it has no time,
 * a time, count or bucket count beyond the int64 range the table stores, histogram bucket
 * counts that do not fit its bounds, or an exemplar with a malformed trace or span id; its
 * exemplars go with it. Points of a metric without a name are rejected too. The rest of the
 * request is stored.
 */

export interface ConvertedMetrics {
  /** Rows of `metrics`; its counts are the request's data points (the partial-success counts). */
  points: ConvertedRows;
  /** Rows of `metric_exemplars` (counted separately; never part of partial success). */
  exemplars: ConvertedRows;
}

/** JSON cannot carry NaN/±Infinity or int64 beyond 2^53: those go as strings DuckDB casts back. */
export const jsonFloat = (v: number): number | string => (Number.isFinite(v) ? v : String(v));
export const jsonInt64 = (v: bigint): number | string => (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString());

/** OTLP DataPointFlags.FLAG_NO_RECORDED_VALUE: the point only says the series has no value now (stale). */
export const FLAG_NO_RECORDED_VALUE = 1;

export const TIME_RANGE = 'data point has a time beyond the int64 range of unix nanoseconds';
export const COUNT_RANGE = 'data point has a count beyond the int64 range';

const TEMPORALITY: Record<number, string> = {
  [AggregationTemporality.UNSPECIFIED]: 'unspecified',
  [AggregationTemporality.DELTA]: 'delta',
  [AggregationTemporality.CUMULATIVE]: 'cumulative',
};
const temporalityName = (t: AggregationTemporality) => TEMPORALITY[t] ?? 'unspecified';

/** What a row of either table shares with the other rows of its metric. */
interface MetricContext {
  name: string;
  type: string;
  prefix: SeriesPrefix;
  service: string;
  resource: TypedAttributes;
  /** Columns every point row of the metric carries. */
  common: Record<string, unknown>;
}

type AnyPoint = NumberDataPoint | HistogramDataPoint | ExponentialHistogramDataPoint | SummaryDataPoint;

const badId = (b: Uint8Array, len: number) => b.length !== 0 && b.length !== len;
/** Hex of an id, or null when there is none (empty or all zeros, which OTLP calls invalid). */
const idHex = (b: Uint8Array): string | null => (b.length === 0 || isZero(b) ? null : hex(b));

function commonInvalid(p: AnyPoint): string | undefined {
  if (p.timeUnixNano === 0n) return 'data point has no time_unix_nano';
  if (p.timeUnixNano > MAX_INT64 || p.startTimeUnixNano > MAX_INT64) return TIME_RANGE;
  const exemplars = 'exemplars' in p ? p.exemplars : [];
  for (const e of exemplars) {
    if (badId(e.traceId, 16)) return 'data point has an exemplar with an invalid trace_id (must be empty or 16 bytes)';
    if (badId(e.spanId, 8)) return 'data point has an exemplar with an invalid span_id (must be empty or 8 bytes)';
    if (e.timeUnixNano > MAX_INT64) return TIME_RANGE;
  }
  return undefined;
}

function kindInvalid(m: Metric, p: AnyPoint): string | undefined {
  switch (m.data.case) {
    case 'histogram': {
      const h = p as HistogramDataPoint;
      if (h.count > MAX_INT64 || h.bucketCounts.some((c) => c > MAX_INT64)) return COUNT_RANGE;
      if (h.bucketCounts.length !== 0 && h.bucketCounts.length !== h.explicitBounds.length + 1) {
        return 'histogram data point has bucket_counts that do not fit explicit_bounds (need one more count than bounds)';
      }
      return undefined;
    }
    case 'exponentialHistogram': {
      const h = p as ExponentialHistogramDataPoint;
      const over = (b: ExponentialHistogramDataPoint['positive']) => b?.bucketCounts.some((c) => c > MAX_INT64) ?? false;
      if (h.count > MAX_INT64 || h.zeroCount > MAX_INT64 || over(h.positive) || over(h.negative)) return COUNT_RANGE;
      return undefined;
    }
    case 'summary':
      return (p as SummaryDataPoint).count > MAX_INT64 ? COUNT_RANGE : undefined;
    default:
      return undefined;
  }
}

function exemplarValue(e: Exemplar): { value: number | string | null; value_int: number | string | null } {
  switch (e.value.case) {
    case 'asDouble':
      return { value: jsonFloat(e.value.value), value_int: null };
    case 'asInt':
      return { value: jsonFloat(Number(e.value.value)), value_int: jsonInt64(e.value.value) };
    default:
      return { value: null, value_int: null };
  }
}

/** Columns of a data point by kind (the ones @floe/schema metrics.ts lists for it). */
function kindColumns(m: Metric, p: AnyPoint): Record<string, unknown> {
  switch (m.data.case) {
    case 'gauge':
    case 'sum': {
      const n = p as NumberDataPoint;
      if (n.value.case === 'asDouble') return { value: jsonFloat(n.value.value), value_int: null };
      if (n.value.case === 'asInt') return { value: jsonFloat(Number(n.value.value)), value_int: jsonInt64(n.value.value) };
      return { value: null, value_int: null };
    }
    case 'histogram': {
      const h = p as HistogramDataPoint;
      return {
        count: jsonInt64(h.count),
        sum: h.sum === undefined ? null : jsonFloat(h.sum),
        min: h.min === undefined ? null : jsonFloat(h.min),
        max: h.max === undefined ? null : jsonFloat(h.max),
        explicit_bounds: h.explicitBounds.map(jsonFloat),
        bucket_counts: h.bucketCounts.map(jsonInt64),
      };
    }
    case 'exponentialHistogram': {
      const h = p as ExponentialHistogramDataPoint;
      return {
        count: jsonInt64(h.count),
        sum: h.sum === undefined ? null : jsonFloat(h.sum),
        min: h.min === undefined ? null : jsonFloat(h.min),
        max: h.max === undefined ? null : jsonFloat(h.max),
        exp_scale: h.scale,
        exp_zero_count: jsonInt64(h.zeroCount),
        exp_zero_threshold: jsonFloat(h.zeroThreshold),
        exp_positive_offset: h.positive?.offset ?? 0,
        exp_positive_bucket_counts: (h.positive?.bucketCounts ?? []).map(jsonInt64),
        exp_negative_offset: h.negative?.offset ?? 0,
        exp_negative_bucket_counts: (h.negative?.bucketCounts ?? []).map(jsonInt64),
      };
    }
    case 'summary': {
      const s = p as SummaryDataPoint;
      return {
        count: jsonInt64(s.count),
        sum: jsonFloat(s.sum),
        quantiles: s.quantileValues.map((q) => ({ quantile: jsonFloat(q.quantile), value: jsonFloat(q.value) })),
      };
    }
    default:
      return {};
  }
}

function metricContext(m: Metric, ids: SeriesResource, service: string, resource: TypedAttributes, scope: ScopeInfo): MetricContext | undefined {
  let type: string;
  let temporality: string | null = null;
  let isMonotonic: boolean | null = null;
  switch (m.data.case) {
    case 'gauge':
      type = 'gauge';
      break;
    case 'sum':
      type = 'sum';
      temporality = temporalityName(m.data.value.aggregationTemporality);
      isMonotonic = m.data.value.isMonotonic;
      break;
    case 'histogram':
      type = 'histogram';
      temporality = temporalityName(m.data.value.aggregationTemporality);
      break;
    case 'exponentialHistogram':
      type = 'exponential_histogram';
      temporality = temporalityName(m.data.value.aggregationTemporality);
      break;
    case 'summary':
      type = 'summary';
      break;
    default:
      // A metric without data (OTLP: invalid, but nothing to store or count).
      return undefined;
  }
  return {
    name: m.name,
    type,
    prefix: seriesPrefix(m.name, ids, scope.name, scope.version),
    service,
    resource,
    common: {
      metric_name: m.name,
      metric_type: type,
      description: m.description,
      unit: m.unit,
      temporality,
      is_monotonic: isMonotonic,
      service_name: service,
      scope_name: scope.name,
      scope_version: scope.version,
    },
  };
}

interface ScopeInfo {
  name: string;
  version: string;
  attrs: TypedAttributes;
}

function pointsOf(m: Metric): readonly AnyPoint[] {
  return m.data.case === undefined ? [] : m.data.value.dataPoints;
}

export const METRIC_SHARED_ATTRS_OVER_BUDGET = `data point's resource and scope attributes, once per point, pass the request's ${RESOURCE_ENTRIES_BUDGET} entries; send fewer points per resource or fewer resource attributes`;

/** `series`: the series the request may write points of (limits.max_active_series); absent: all. */
export function metricsToRows(req: ExportMetricsServiceRequest, times: AcceptedTimes = AcceptedTimes.ANY, series?: SeriesGate): ConvertedMetrics {
  const points = new RowCollector({ times });
  const exemplars = new RowCollector({ times });
  // Each point's row holds its resource's and scope's maps, an exemplar's its resource's: copied
  // per row as the rows are built (rows.ts RESOURCE_ENTRIES_BUDGET).
  let entriesLeft = RESOURCE_ENTRIES_BUDGET;
  for (const rm of req.resourceMetrics) {
    const resourceKvs: readonly KeyValue[] = rm.resource?.attributes ?? [];
    const resource = splitAttributes(resourceKvs);
    const resourceEntries = entryCount(resource);
    const ids = seriesResource(resource);
    const service = serviceName(resourceKvs);
    for (const sm of rm.scopeMetrics) {
      const scope: ScopeInfo = { name: sm.scope?.name ?? '', version: sm.scope?.version ?? '', attrs: splitAttributes(sm.scope?.attributes ?? []) };
      const pointEntries = resourceEntries + entryCount(scope.attrs);
      for (const m of sm.metrics) {
        const ctx = metricContext(m, ids, service, resource, scope);
        if (!ctx) continue;
        for (const p of pointsOf(m)) {
          const reason = m.name === '' ? 'metric has no name' : (commonInvalid(p) ?? kindInvalid(m, p));
          if (reason) {
            points.reject(reason);
            continue;
          }
          if (!points.admits(p.timeUnixNano, 'data point time')) continue;
          if (pointEntries > entriesLeft) {
            points.reject(METRIC_SHARED_ATTRS_OVER_BUDGET);
            continue;
          }
          entriesLeft -= pointEntries;
          const attrs = splitAttributes(p.attributes);
          const sid = seriesId(ctx.prefix, attrs);
          if (series !== undefined && !series.admits(sid)) {
            points.reject(series.refusal, 'series_limit');
            continue;
          }
          points.add(p.timeUnixNano, {
            ...ctx.common,
            series_id: sid,
            start_unix_nano: p.startTimeUnixNano > 0n ? p.startTimeUnixNano.toString() : null,
            time_unix_nano: p.timeUnixNano.toString(),
            ...kindColumns(m, p),
            flags: p.flags,
            point_attr_str: attrs.str,
            point_attr_int: attrs.int,
            point_attr_double: attrs.double,
            point_attr_bool: attrs.bool,
            resource_attr_str: resource.str,
            resource_attr_int: resource.int,
            resource_attr_double: resource.double,
            resource_attr_bool: resource.bool,
            scope_attr_str: scope.attrs.str,
            scope_attr_int: scope.attrs.int,
            scope_attr_double: scope.attrs.double,
            scope_attr_bool: scope.attrs.bool,
          });
          if ('exemplars' in p) {
            for (const e of p.exemplars) {
              // Past the budget an exemplar is dropped, as one outside the accepted times is.
              if (resourceEntries > entriesLeft) break;
              entriesLeft -= resourceEntries;
              addExemplar(exemplars, ctx, sid, attrs, p.timeUnixNano, e);
            }
          }
        }
      }
    }
  }
  return { points: points.result(), exemplars: exemplars.result() };
}

function addExemplar(out: RowCollector, ctx: MetricContext, sid: string, point: TypedAttributes, pointTime: bigint, e: Exemplar): void {
  // OTLP requires an exemplar's time; one without is placed at its data point's time.
  const time = e.timeUnixNano > 0n ? e.timeUnixNano : pointTime;
  // Outside the accepted times its point is not: dropped (exemplars are not counted as rejected points).
  if (!out.admits(time, 'exemplar time')) return;
  const filtered = e.filteredAttributes.length ? splitAttributes(e.filteredAttributes) : emptyTyped();
  out.add(time, {
    metric_name: ctx.name,
    metric_type: ctx.type,
    series_id: sid,
    service_name: ctx.service,
    time_unix_nano: time.toString(),
    ...exemplarValue(e),
    trace_id: idHex(e.traceId),
    span_id: idHex(e.spanId),
    filtered_attr_str: filtered.str,
    filtered_attr_int: filtered.int,
    filtered_attr_double: filtered.double,
    filtered_attr_bool: filtered.bool,
    point_attr_str: point.str,
    point_attr_int: point.int,
    point_attr_double: point.double,
    point_attr_bool: point.bool,
    resource_attr_str: ctx.resource.str,
    resource_attr_int: ctx.resource.int,
    resource_attr_double: ctx.resource.double,
    resource_attr_bool: ctx.resource.bool,
  });
}
