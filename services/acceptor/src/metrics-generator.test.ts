import { describe, expect, it } from 'vitest';
import type { TenantContext } from '@floe/auth';
import { loadConfig } from '@floe/config';
import { ExportTraceServiceRequestSchema, Span_SpanKind, Status_StatusCode, create, type ExportMetricsServiceRequest } from '@floe/proto';
import { createLogger } from '@floe/telemetry';
import { AcceptedTimes } from './accepted-times.ts';
import { MetricsGenerator } from './metrics-generator.ts';
import { tenantLimits } from '@floe/limits';

const log = createLogger({ level: 'silent' });
const ctx: TenantContext = { tenant: 'acme', dataset: 'default', principal: 'k', scopes: ['ingest'], isAdmin: false };
const T = BigInt(Date.now()) * 1_000_000n;
const MS = 1_000_000n;
const TRACE = new Uint8Array(16).fill(7);
const id = (n: number) => new Uint8Array(8).fill(n);

type SpanInit = { id: number; parent?: number; name: string; kind: Span_SpanKind; ms: number; error?: boolean; attrs?: Record<string, string> };
const request = (service: string, spans: SpanInit[]) =>
  create(ExportTraceServiceRequestSchema, {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: service } } }] },
        scopeSpans: [
          {
            spans: spans.map((s) => ({
              traceId: TRACE,
              spanId: id(s.id),
              parentSpanId: s.parent === undefined ? new Uint8Array(0) : id(s.parent),
              name: s.name,
              kind: s.kind,
              startTimeUnixNano: T,
              endTimeUnixNano: T + BigInt(s.ms) * MS,
              status: s.error ? { code: Status_StatusCode.ERROR } : undefined,
              attributes: Object.entries(s.attrs ?? {}).map(([key, v]) => ({ key, value: { value: { case: 'stringValue' as const, value: v } } })),
            })),
          },
        ],
      },
    ],
  });

/** A generator whose tenants derive `processors`. */
function generator({ processors = ['span_metrics', 'service_graphs'], ...overrides }: { processors?: string[] } & Record<string, unknown> = {}) {
  const config = loadConfig({ env: {}, overrides: { metrics_generator: { enabled: true, service_graph_wait: '50ms', histogram_buckets: [0.01, 0.1, 1], ...overrides }, limits: { metrics_generator_processors: processors } } });
  return new MetricsGenerator(config.metrics_generator, 'acc-1', log, async () => tenantLimits(config.limits));
}

/** One collection: each written metric's points as { labels, value } (histograms: count and buckets). */
async function collect(g: MetricsGenerator): Promise<Record<string, Array<Record<string, unknown>>>> {
  const written: ExportMetricsServiceRequest[] = [];
  await g.collect(async (c, req) => {
    expect(c).toMatchObject({ tenant: 'acme', dataset: 'default' });
    written.push(req);
  });
  const out: Record<string, Array<Record<string, unknown>>> = {};
  for (const req of written) {
    const rm = req.resourceMetrics[0]!;
    expect(rm.resource!.attributes.map((a) => [a.key, a.value?.value.value])).toEqual([
      ['service.name', 'floe-metrics-generator'],
      ['service.instance.id', 'acc-1'],
    ]);
    for (const m of rm.scopeMetrics[0]!.metrics) {
      out[m.name] = (m.data.case === 'sum' || m.data.case === 'histogram' ? m.data.value.dataPoints : []).map((p) => {
        const labels = Object.fromEntries(p.attributes.map((a) => [a.key, a.value?.value.value]));
        if ('bucketCounts' in p) return { labels, count: Number(p.count), buckets: p.bucketCounts.map(Number) };
        return { labels, value: Number(p.value.value) };
      });
      if (m.data.case === 'sum') expect([m.data.value.isMonotonic, m.data.value.aggregationTemporality]).toEqual([true, 2]);
    }
  }
  return out;
}

describe('metrics generator', () => {
  it('span metrics: calls and latency by service, span name, kind and status, plus configured dimensions', async () => {
    const g = generator({ processors: ['span_metrics'], dimensions: ['http.route'] });
    await g.observe(ctx, () => request('api', [
      { id: 1, name: 'GET /a', kind: Span_SpanKind.SERVER, ms: 5, attrs: { 'http.route': '/a' } },
      { id: 2, name: 'GET /a', kind: Span_SpanKind.SERVER, ms: 50, attrs: { 'http.route': '/a' } },
      { id: 3, name: 'GET /a', kind: Span_SpanKind.SERVER, ms: 2000, error: true, attrs: { 'http.route': '/a' } },
    ]), AcceptedTimes.ANY);
    const m = await collect(g);
    const ok = { service: 'api', span_name: 'GET /a', span_kind: 'SPAN_KIND_SERVER', status_code: 'STATUS_CODE_UNSET', http_route: '/a' };
    expect(m.traces_spanmetrics_calls).toEqual([
      { labels: ok, value: 2 },
      { labels: { ...ok, status_code: 'STATUS_CODE_ERROR' }, value: 1 },
    ]);
    expect(m.traces_spanmetrics_latency).toEqual([
      { labels: ok, count: 2, buckets: [1, 1, 0, 0] },
      { labels: { ...ok, status_code: 'STATUS_CODE_ERROR' }, count: 1, buckets: [0, 0, 0, 1] },
    ]);
    expect(m.traces_service_graph_request).toBeUndefined();
  });

  it('service graphs: client and server halves pair across requests; a root server span is called by user', async () => {
    const g = generator({ processors: ['service_graphs'] });
    await g.observe(ctx, () => request('frontend', [
      { id: 1, name: 'GET /', kind: Span_SpanKind.SERVER, ms: 30 },
      { id: 2, parent: 1, name: 'call backend', kind: Span_SpanKind.CLIENT, ms: 20 },
    ]), AcceptedTimes.ANY);
    await g.observe(ctx, () => request('backend', [{ id: 3, parent: 2, name: 'handle', kind: Span_SpanKind.SERVER, ms: 15, error: true }]), AcceptedTimes.ANY);
    const m = await collect(g);
    expect(m.traces_service_graph_request).toEqual([
      { labels: { client: 'user', server: 'frontend', connection_type: 'virtual_node' }, value: 1 },
      { labels: { client: 'frontend', server: 'backend' }, value: 1 },
    ]);
    expect(m.traces_service_graph_request_failed).toEqual([
      { labels: { client: 'user', server: 'frontend', connection_type: 'virtual_node' }, value: 0 },
      { labels: { client: 'frontend', server: 'backend' }, value: 1 },
    ]);
    // 20 ms on the client side, 15 ms on the server's; the user edge has only its server side.
    expect(m.traces_service_graph_request_client_seconds).toEqual([{ labels: { client: 'frontend', server: 'backend' }, count: 1, buckets: [0, 1, 0, 0] }]);
    expect(m.traces_service_graph_request_server_seconds).toEqual([
      { labels: { client: 'user', server: 'frontend', connection_type: 'virtual_node' }, count: 1, buckets: [0, 1, 0, 0] },
      { labels: { client: 'frontend', server: 'backend' }, count: 1, buckets: [0, 1, 0, 0] },
    ]);
  });

  it('a client half left alone calls its named peer (a database) once its wait is over; one naming none is unpaired', async () => {
    const g = generator({ processors: ['service_graphs'] });
    await g.observe(ctx, () => request('api', [
      { id: 1, parent: 9, name: 'SELECT', kind: Span_SpanKind.CLIENT, ms: 3, attrs: { 'db.system': 'postgresql', 'db.name': 'orders' } },
      { id: 2, parent: 9, name: 'POST', kind: Span_SpanKind.CLIENT, ms: 3 },
      { id: 3, parent: 9, name: 'publish', kind: Span_SpanKind.PRODUCER, ms: 1 },
    ]), AcceptedTimes.ANY);
    await g.observe(ctx, () => request('worker', [{ id: 4, parent: 3, name: 'consume', kind: Span_SpanKind.CONSUMER, ms: 2 }]), AcceptedTimes.ANY);
    await new Promise((r) => setTimeout(r, 80));
    const m = await collect(g);
    expect(m.traces_service_graph_request).toEqual([
      { labels: { client: 'api', server: 'worker', connection_type: 'messaging_system' }, value: 1 },
      { labels: { client: 'api', server: 'orders', connection_type: 'database' }, value: 1 },
    ]);
    expect(m.traces_service_graph_unpaired_spans).toEqual([{ labels: {}, value: 1 }]);
  });

  it('a tenant whose processors are none derives nothing, and its spans are not even read', async () => {
    const g = generator({ processors: [] });
    await g.observe(ctx, () => {
      throw new Error('read');
    }, AcceptedTimes.ANY);
    expect(await collect(g)).toEqual({});
  });

  it('counters are cumulative across collections; spans outside the accepted times and series past the cap are not counted', async () => {
    const g = generator({ processors: ['span_metrics'], max_series: 1 });
    const span = (name: string) => request('api', [{ id: 1, name, kind: Span_SpanKind.INTERNAL, ms: 1 }]);
    await g.observe(ctx, () => span('a'), AcceptedTimes.ANY);
    expect((await collect(g)).traces_spanmetrics_calls).toEqual([{ labels: expect.objectContaining({ span_name: 'a' }), value: 1 }]);
    await g.observe(ctx, () => span('a'), AcceptedTimes.ANY);
    await g.observe(ctx, () => span('b'), AcceptedTimes.ANY);
    // A tenant whose window ends an hour ago: the span is not counted.
    await g.observe(ctx, () => span('a'), new AcceptedTimes(Date.now() - 7_200_000, 3_600_000, 1));
    const m = await collect(g);
    expect(m.traces_spanmetrics_calls).toEqual([{ labels: expect.objectContaining({ span_name: 'a' }), value: 2 }]);
    expect(m.traces_spanmetrics_dropped_spans).toEqual([{ labels: {}, value: 1 }]);
  });
});
