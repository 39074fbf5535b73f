import { describe, expect, it } from 'vitest';
import { startSelfMonitoring, type SelfMonitoring } from './self-monitoring.ts';
import { silentLogger } from './logger.ts';
import { recordRuntimeMetrics } from './runtime-metrics.ts';

/**
 * `GET /metrics`'s text, from instruments made on the meter a service gets: every kind the
 * services use, named as Floe's PromQL names OTLP metrics, label values escaped, and the bearer
 * token when one is set. The e2e (packages/testkit/test/metrics-endpoint.e2e.test.ts) has
 * promtool and a real Prometheus read what the services serve.
 */

const start = (bearerToken = '') =>
  startSelfMonitoring({ serviceName: 'writer', serviceVersion: '1.2.3', instanceId: 'w-1', environment: 'test', metricsEndpoint: { bearerToken }, log: silentLogger() });

/** The lines of a text that are samples (not comments), without the runtime metrics every process has. */
const samples = (text: string) => text.split('\n').filter((l) => l !== '' && !l.startsWith('#') && !/^(process|v8js|nodejs)_/.test(l));

describe('the metrics endpoint', () => {
  let sm: SelfMonitoring | undefined;
  const stop = async () => {
    await sm?.shutdown();
    sm = undefined;
  };

  it('serves counters, gauges, up-down counters and histograms with Prometheus names, types, help and escaped labels', async () => {
    sm = await start();
    const m = sm.meter;
    m.createCounter('items_accepted', { description: 'Items made durable' }).add(3, { 'tenant.id': 'acme', signal: 'traces' });
    m.createCounter('payload.received', { unit: 'By' }).add(10);
    m.createUpDownCounter('queue.depth', { unit: '{request}' }).add(-2);
    m.createObservableGauge('loop.utilization', { unit: '1' }).addCallback((r) => r.observe(0.25));
    m.createObservableGauge('wal_oldest_segment_age', { unit: 's' }).addCallback((r) => r.observe(1.5, { path: 'a"b\\c\nd' }));
    const h = m.createHistogram('commit_duration', { description: 'One commit\nof a group', unit: 's', advice: { explicitBucketBoundaries: [0.1, 1] } });
    h.record(0.05, { table: 'traces' });
    h.record(0.5, { table: 'traces' });
    h.record(3, { table: 'traces' });

    const answer = await sm.metricsEndpoint!.respond(undefined);
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = answer.body;
    expect(text).toContain('# HELP items_accepted_total Items made durable\n# TYPE items_accepted_total counter\n');
    expect(text).toContain('# HELP commit_duration_seconds One commit\\nof a group\n# TYPE commit_duration_seconds histogram\n');
    expect(text).toContain('# TYPE queue_depth gauge\n');
    expect(samples(text)).toEqual([
      'target_info{deployment_environment_name="test",service_instance_id="w-1",service_name="writer",service_namespace="floe",service_version="1.2.3"} 1',
      'items_accepted_total{signal="traces",tenant_id="acme"} 3',
      'payload_received_bytes_total 10',
      'queue_depth -2',
      'loop_utilization_ratio 0.25',
      'wal_oldest_segment_age_seconds{path="a\\"b\\\\c\\nd"} 1.5',
      'commit_duration_seconds_bucket{table="traces",le="0.1"} 1',
      'commit_duration_seconds_bucket{table="traces",le="1"} 2',
      'commit_duration_seconds_bucket{table="traces",le="+Inf"} 3',
      'commit_duration_seconds_sum{table="traces"} 3.55',
      'commit_duration_seconds_count{table="traces"} 3',
    ]);
    await stop();
  });

  it('serves the runtime metrics of the process', async () => {
    sm = await start();
    const text = (await sm.metricsEndpoint!.respond(undefined)).body;
    for (const family of ['process_cpu_time_seconds_total counter', 'process_memory_usage_bytes gauge', 'process_uptime_seconds gauge', 'v8js_memory_heap_used_bytes gauge', 'nodejs_memory_external_bytes gauge', 'nodejs_eventloop_delay_p99_seconds gauge', 'nodejs_eventloop_utilization_ratio gauge']) {
      expect(text).toContain(`# TYPE ${family}\n`);
    }
    const cpu = /^process_cpu_time_seconds_total\{cpu_mode="user"\} (\S+)$/m.exec(text);
    expect(Number(cpu?.[1])).toBeGreaterThan(0);
    const rss = /^process_memory_usage_bytes (\S+)$/m.exec(text);
    expect(Number(rss?.[1])).toBeGreaterThan(1024 * 1024);
    // A Buffer held now counts in the array buffers outside the V8 heap.
    const held = Buffer.alloc(64 * 1024 * 1024, 1);
    const after = (await sm.metricsEndpoint!.respond(undefined)).body;
    const buffers = /^nodejs_memory_external_bytes\{nodejs_memory_type="array_buffers"\} (\S+)$/m.exec(after);
    expect(Number(buffers?.[1])).toBeGreaterThanOrEqual(held.length);
    expect(after).toMatch(/^nodejs_memory_external_bytes\{nodejs_memory_type="other"\} \d+$/m);
    await stop();
  });

  it('with a bearer token, answers only the request that carries it (401 in the error envelope otherwise)', async () => {
    sm = await start('s3cret-token');
    const ep = sm.metricsEndpoint!;
    for (const auth of [undefined, '', 'Bearer wrong', 'Basic s3cret-token', 'Bearer s3cret-token-and-more', 's3cret-token']) {
      const answer = await ep.respond(auth);
      expect(answer.status, String(auth)).toBe(401);
      expect(answer.contentType).toBe('application/json');
      expect(JSON.parse(answer.body)).toMatchObject({ status: 'error', errorType: 'unauthorized' });
    }
    const ok = await ep.respond('Bearer s3cret-token');
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('# TYPE process_uptime_seconds gauge');
    expect((await ep.respond('bearer  s3cret-token ')).status).toBe(200);
    await stop();
  });

  it('answers 503 once the process has stopped its telemetry', async () => {
    sm = await start();
    const ep = sm.metricsEndpoint!;
    await stop();
    const answer = await ep.respond(undefined);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'error', errorType: 'unavailable' });
  });
});

describe('runtime metrics', () => {
  it('report the event loop delay and busy share of the last window: a 150 ms block shows as its max delay', async () => {
    const { MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics');
    class PullReader extends MetricReader {
      protected override async onForceFlush(): Promise<void> {}
      protected override async onShutdown(): Promise<void> {}
    }
    const reader = new PullReader();
    const provider = new MeterProvider({ readers: [reader] });
    const started = Date.now();
    const runtime = recordRuntimeMetrics(provider.getMeter('t'), 600);
    try {
      // The delay histogram measures from its first tick on.
      await new Promise((r) => setTimeout(r, 30));
      const blockedUntil = Date.now() + 150;
      while (Date.now() < blockedUntil) {
        // the event loop is blocked
      }
      // The window that saw the block closes at 600 ms; read well before the next one (1,200 ms) replaces it.
      await new Promise((r) => setTimeout(r, 750 - (Date.now() - started)));
      const points = new Map<string, number>();
      for (const m of (await reader.collect()).resourceMetrics.scopeMetrics[0]!.metrics) points.set(m.descriptor.name, m.dataPoints[0]!.value as number);
      expect(points.get('nodejs.eventloop.delay.max')).toBeGreaterThanOrEqual(0.1);
      expect(points.get('nodejs.eventloop.delay.max')).toBeLessThan(1);
      expect(points.get('nodejs.eventloop.utilization')).toBeGreaterThan(0.2);
      expect(points.get('nodejs.eventloop.utilization')).toBeLessThanOrEqual(1);
    } finally {
      runtime.stop();
      await provider.shutdown();
    }
  });
});
