import type { Attributes } from '@opentelemetry/api';
import { DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { otelLabelName, otelPromName } from '@floe/proto';

/**
 * The Prometheus text exposition format (0.0.4) of collected OpenTelemetry metrics, named as
 * Floe's PromQL names stored OTLP metrics (@floe/proto's otelPromName: unit suffixes, `_total`
 * on monotonic sums, `_ratio` on unit-1 gauges), so one dashboard reads a scrape of the services
 * and the self-monitoring tenant alike. Written here rather than with
 * @opentelemetry/exporter-prometheus because that serializer adds no unit suffixes
 * (`process_cpu_time_total` where Prometheus's own OTLP translation says
 * `process_cpu_time_seconds_total`).
 *
 * The resource is `target_info`, as in that translation; the scrape's job and instance labels
 * come from the scraping Prometheus. Exponential histograms (no Floe instrument makes one) are
 * left out.
 */
export function prometheusText(collected: ResourceMetrics): string {
  const lines: string[] = [];
  const resource = collected.resource.attributes;
  if (Object.keys(resource).length > 0) {
    lines.push('# HELP target_info Target metadata', '# TYPE target_info gauge', `target_info${labelSet(resource)} 1`);
  }
  // One family per name: the first metric of a name decides its type; a later one of another
  // type (two instruments translating to one name) would make the exposition invalid, so it is dropped.
  const families = new Map<string, { type: string; lines: string[] }>();
  for (const scope of collected.scopeMetrics) {
    for (const metric of scope.metrics) {
      const family = familyOf(metric);
      if (!family) continue;
      const existing = families.get(family.name);
      if (existing && existing.type !== family.type) continue;
      const out = existing ?? { type: family.type, lines: [`# HELP ${family.name} ${escapeHelp(metric.descriptor.description)}`, `# TYPE ${family.name} ${family.type}`] };
      families.set(family.name, out);
      samples(metric, family.name, out.lines);
    }
  }
  for (const f of families.values()) for (const l of f.lines) lines.push(l);
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

function familyOf(metric: MetricData): { name: string; type: string } | undefined {
  const { name, unit } = metric.descriptor;
  switch (metric.dataPointType) {
    case DataPointType.GAUGE:
      return { name: otelPromName(name, unit, 'gauge', false), type: 'gauge' };
    case DataPointType.SUM:
      return { name: otelPromName(name, unit, 'sum', metric.isMonotonic), type: metric.isMonotonic ? 'counter' : 'gauge' };
    case DataPointType.HISTOGRAM:
      return { name: otelPromName(name, unit, 'histogram', false), type: 'histogram' };
    default:
      return undefined;
  }
}

function samples(metric: MetricData, name: string, out: string[]): void {
  if (metric.dataPointType === DataPointType.HISTOGRAM) {
    for (const p of metric.dataPoints) {
      const { boundaries, counts } = p.value.buckets;
      let cumulative = 0;
      for (let i = 0; i < boundaries.length; i++) {
        cumulative += counts[i] ?? 0;
        out.push(`${name}_bucket${labelSet(p.attributes, ['le', formatValue(boundaries[i]!)])} ${cumulative}`);
      }
      out.push(`${name}_bucket${labelSet(p.attributes, ['le', '+Inf'])} ${p.value.count}`);
      out.push(`${name}_sum${labelSet(p.attributes)} ${formatValue(p.value.sum ?? 0)}`);
      out.push(`${name}_count${labelSet(p.attributes)} ${p.value.count}`);
    }
    return;
  }
  if (metric.dataPointType === DataPointType.GAUGE || metric.dataPointType === DataPointType.SUM) {
    for (const p of metric.dataPoints) out.push(`${name}${labelSet(p.attributes)} ${formatValue(p.value)}`);
  }
}

/**
 * `{name="value",…}` of the attributes (names translated; keys that translate to one name have
 * their values joined with `;` in sorted key order), then `extra`.
 */
function labelSet(attributes: Attributes, extra?: readonly [string, string]): string {
  const labels = new Map<string, string>();
  for (const key of Object.keys(attributes).sort()) {
    const v = attributes[key];
    if (v === undefined || v === null) continue;
    const name = otelLabelName(key);
    const text = Array.isArray(v) ? JSON.stringify(v) : String(v);
    const prior = labels.get(name);
    labels.set(name, prior === undefined ? text : `${prior};${text}`);
  }
  if (extra) labels.set(extra[0], extra[1]);
  if (labels.size === 0) return '';
  return `{${[...labels].map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
}

const escapeLabelValue = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
