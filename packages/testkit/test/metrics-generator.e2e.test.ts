import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportTraceServiceRequestSchema, Span_SpanKind, Status_StatusCode, create, toBinary } from '@floe/proto';
import { startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * The metrics generator end to end, in both modes: spans of a frontend calling a backend, sent
 * over OTLP/HTTP protobuf in two requests, become Tempo's span metrics and service-graph series
 * in the same dataset's metrics, which the PromQL API answers as Grafana's Tempo data source asks
 * for them (sum by client and server of the request counters, span metrics by service and span
 * name, a latency quantile). Another tenant's metrics stay empty.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('metrics generator (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  const now = BigInt(Date.now()) * 1_000_000n;
  const trace = new Uint8Array(16).fill(9);
  const id = (n: number) => new Uint8Array(8).fill(n);

  const spans = (service: string, list: Array<{ id: number; parent?: number; name: string; kind: Span_SpanKind; ms: number; error?: boolean }>) =>
    toBinary(
      ExportTraceServiceRequestSchema,
      create(ExportTraceServiceRequestSchema, {
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: service } } }] },
            scopeSpans: [
              {
                spans: list.map((s) => ({
                  traceId: trace,
                  spanId: id(s.id),
                  parentSpanId: s.parent === undefined ? new Uint8Array(0) : id(s.parent),
                  name: s.name,
                  kind: s.kind,
                  startTimeUnixNano: now,
                  endTimeUnixNano: now + BigInt(s.ms) * 1_000_000n,
                  status: s.error ? { code: Status_StatusCode.ERROR } : undefined,
                })),
              },
            ],
          },
        ],
      }),
    );
  const post = async (body: Uint8Array, tenant = 'acme', k = key) => {
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body, headers: { authorization: `Bearer ${k}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf' } });
    expect(res.status).toBe(200);
  };
  const promql = async (query: string, tenant = 'acme', k = key) => {
    const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/query?${new URLSearchParams({ query })}`, { headers: { authorization: `Bearer ${k}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    return body.data.result.map((r) => ({ ...r.metric, value: Number(r.value[1]) })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  };

  beforeAll(async () => {
    floe = await startFloe({ mode, config: { metrics_generator: { enabled: true, collection_interval: '1s', service_graph_wait: '2s' } } });
    key = (await floe.bootstrap('acme')).api_key;
    otherKey = (await floe.bootstrap('globex')).api_key;
    await post(spans('frontend', [
      { id: 1, name: 'GET /checkout', kind: Span_SpanKind.SERVER, ms: 40 },
      { id: 2, parent: 1, name: 'POST /pay', kind: Span_SpanKind.CLIENT, ms: 30 },
    ]));
    await post(spans('backend', [{ id: 3, parent: 2, name: 'pay', kind: Span_SpanKind.SERVER, ms: 25, error: true }]));
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it("answers Grafana's service graph queries from the generated edges", async () => {
    const edges = await waitFor('the service graph series', async () => {
      const r = await promql('sum by (client, server, connection_type) (traces_service_graph_request_total)');
      return r.length === 2 ? r : undefined;
    }, 60_000, 500);
    expect(edges).toEqual([
      { client: 'frontend', server: 'backend', value: 1 },
      { client: 'user', server: 'frontend', connection_type: 'virtual_node', value: 1 },
    ]);
    expect(await promql('sum by (client, server) (traces_service_graph_request_failed_total) > 0')).toEqual([{ client: 'frontend', server: 'backend', value: 1 }]);
    // The backend's 25 ms lies in the (0.016, 0.032] bucket.
    const p50 = await promql('histogram_quantile(0.5, sum by (le) (traces_service_graph_request_server_seconds_bucket{client="frontend"}))');
    expect(p50).toHaveLength(1);
    expect(p50[0]!.value).toBeGreaterThan(0.016);
    expect(p50[0]!.value).toBeLessThanOrEqual(0.032);
  });

  it('answers span metrics by service, span name, kind and status', async () => {
    const calls = await waitFor('the span metrics', async () => {
      const r = await promql('sum by (service, span_name, span_kind, status_code) (traces_spanmetrics_calls_total)');
      return r.length === 3 ? r : undefined;
    }, 60_000, 500);
    expect(calls).toEqual([
      { service: 'backend', span_name: 'pay', span_kind: 'SPAN_KIND_SERVER', status_code: 'STATUS_CODE_ERROR', value: 1 },
      { service: 'frontend', span_name: 'POST /pay', span_kind: 'SPAN_KIND_CLIENT', status_code: 'STATUS_CODE_UNSET', value: 1 },
      { service: 'frontend', span_name: 'GET /checkout', span_kind: 'SPAN_KIND_SERVER', status_code: 'STATUS_CODE_UNSET', value: 1 },
    ]);
    expect(await promql('sum(traces_spanmetrics_latency_count)')).toEqual([{ value: 3 }]);
    // Written by the generator of the acceptor that stored the spans.
    const writers = await promql('count by (job, instance) (traces_spanmetrics_calls_total)');
    expect(writers).toEqual([{ job: 'floe-metrics-generator', instance: expect.any(String), value: 3 }]);
    // Another tenant has no such series.
    expect(await promql('traces_spanmetrics_calls_total', 'globex', otherKey)).toEqual([]);
  });

  it("derives only a tenant's own processors (settings.limits.metrics_generator_processors)", async () => {
    const created = await fetch(`${floe.routerUrl}/api/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'spans-only', settings: { limits: { metrics_generator_processors: ['span_metrics'] } } }),
    });
    expect(created.status).toBe(201);
    const k = (await floe.bootstrap('spans-only')).api_key;
    await post(spans('solo', [{ id: 1, name: 'GET /', kind: Span_SpanKind.SERVER, ms: 5 }]), 'spans-only', k);
    const calls = await waitFor('the span metrics of spans-only', async () => {
      const r = await promql('sum by (service) (traces_spanmetrics_calls_total)', 'spans-only', k);
      return r.length > 0 ? r : undefined;
    }, 60_000, 500);
    expect(calls).toEqual([{ service: 'solo', value: 1 }]);
    expect(await promql('traces_service_graph_request_total', 'spans-only', k)).toEqual([]);
  });
});
