import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { MONITORING_DATASET_ID, SYSTEM_TENANT_ID, createApiKey, createDataset, createTenant, ensureTenant, migrate, openDb } from '@floe/meta';
import { WaitAborted, freePorts, grpcTraceExporter, plain, protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Self-monitoring end to end (spec 2 Events, spec 1 Self-profiling), embedded: Floe started with
 * self_monitoring on exports its own router spans, writer metrics and CPU profiles to its own
 * acceptor as tenant _system, dataset _monitoring, where the break-glass key reads them back over
 * SQL (Flight), and with heap_profiles_enabled a live-heap profile per window as well. Router
 * responses carry Server-Timing and traceresponse for tenants, not for _system, and not at all
 * when self-monitoring is off. With the external profiling section on as well, the CPU profiles go
 * to its endpoint instead of _system.
 */

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/;
const SEARCH = '/tracequery/api/search?limit=5';

describe('self-monitoring (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';

  beforeAll(async () => {
    floe = await startFloe({
      mode: 'embedded',
      config: {
        self_monitoring: {
          enabled: true,
          environment: 'e2e',
          export_interval: '300ms',
          profiles_enabled: true,
          // Dense sampling so short windows still see Floe's own functions.
          profile_sample_rate_hz: 1000,
          profile_interval: '1s',
          heap_profiles_enabled: true,
        },
      },
    });
    key = (await floe.bootstrap(tenant)).api_key;
    await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'checkout');
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const asTenant = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const asSystem = () => ({ authorization: `Bearer ${floe.adminApiKey}`, 'x-tenant-id': '_system', 'x-dataset-id': '_monitoring' });
  const sql = async (text: string) => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: asSystem(), deadlineMs: 20_000 });
    return table.toArray().map((r) => plain(r) as Record<string, unknown>);
  };
  const rowsOf = (what: string, query: string) =>
    waitFor(
      what,
      async () => {
        const rows = await sql(query);
        return rows.length > 0 ? rows : undefined;
      },
      60_000,
      500,
    );

  it('answers a tenant request with Server-Timing (traceparent, total, querier) and traceresponse', async () => {
    const res = await fetch(`${floe.routerUrl}${SEARCH}`, { headers: asTenant() });
    expect(res.status).toBe(200);
    const timing = res.headers.get('server-timing') ?? '';
    const traceresponse = res.headers.get('traceresponse') ?? '';
    expect(traceresponse).toMatch(TRACEPARENT);
    expect(timing).toContain(`traceparent;desc="${traceresponse}"`);
    expect(timing).toMatch(/total;dur=\d+(\.\d+)?/);
    expect(timing).toMatch(/querier;dur=\d+(\.\d+)?/);
  });

  it("continues a caller's trace from its traceparent header", async () => {
    const parent = `00-${'4bf92f3577b34da6a3ce929d0e0e4736'}-${'00f067aa0ba902b7'}-01`;
    const res = await fetch(`${floe.routerUrl}${SEARCH}`, { headers: { ...asTenant(), traceparent: parent } });
    expect(res.status).toBe(200);
    const traceresponse = res.headers.get('traceresponse') ?? '';
    expect(traceresponse).toMatch(TRACEPARENT);
    expect(traceresponse.split('-')[1]).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(traceresponse.split('-')[2]).not.toBe('00f067aa0ba902b7');
    // A malformed header starts a new trace.
    const fresh = await fetch(`${floe.routerUrl}${SEARCH}`, { headers: { ...asTenant(), traceparent: 'garbage' } });
    expect((fresh.headers.get('traceresponse') ?? '').split('-')[1]).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('answers an OTLP/HTTP export with Server-Timing and traceresponse too, but not a _system one', async () => {
    const empty = new Uint8Array(0); // an empty export request: valid, stores nothing
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, {
      method: 'POST',
      body: empty,
      headers: { ...asTenant(), 'content-type': 'application/x-protobuf', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    });
    expect(res.status).toBe(200);
    const traceresponse = res.headers.get('traceresponse')!;
    expect(traceresponse).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
    expect(res.headers.get('server-timing')).toMatch(new RegExp(`^traceparent;desc="${traceresponse}", total;dur=[0-9.]+$`));
    const system = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: empty, headers: { ...asSystem(), 'content-type': 'application/x-protobuf' } });
    expect(system.status).toBe(200);
    expect(system.headers.get('server-timing')).toBeNull();
    expect(system.headers.get('traceresponse')).toBeNull();
  });

  it('answers a _system request without either header', async () => {
    const res = await fetch(`${floe.routerUrl}${SEARCH}`, { headers: asSystem() });
    expect(res.status).toBe(200);
    expect(res.headers.get('server-timing')).toBeNull();
    expect(res.headers.get('traceresponse')).toBeNull();
  });

  it('stores router spans named {method} {route} with the resource attributes in _system', async () => {
    // Prometheus scrapes first: they make no span (the request after them does).
    for (const url of [floe.routerUrl, floe.otlpHttpUrl]) expect((await fetch(`${url}/metrics`)).status).toBe(200);
    const res = await fetch(`${floe.routerUrl}${SEARCH}`, { headers: asTenant() });
    const traceId = res.headers.get('traceresponse')!.split('-')[1]!;
    const rows = await rowsOf(
      'the request span in _system._monitoring.traces',
      `SELECT name, kind, service_name, resource_attr_str, span_attr_str, span_attr_int FROM _system._monitoring.traces WHERE trace_id = '${traceId}'`,
    );
    expect(rows).toHaveLength(1);
    const span = rows[0]!;
    expect(span).toMatchObject({ name: 'GET /tracequery/api/search', kind: 'server', service_name: 'floe' });
    expect(span.resource_attr_str).toMatchObject({
      'service.namespace': 'floe',
      'service.name': 'floe',
      'deployment.environment.name': 'e2e',
    });
    expect(Object.keys(span.resource_attr_str as object)).toEqual(expect.arrayContaining(['service.version', 'service.instance.id']));
    expect(span.span_attr_str).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/tracequery/api/search', 'floe.tenant.id': tenant });
    expect(span.span_attr_int).toMatchObject({ 'http.response.status_code': 200n });
    // The _system requests above made no span (no feedback loop), nor did the scrapes.
    const system = await sql(`SELECT count(*) AS n FROM _system._monitoring.traces WHERE span_attr_str['floe.tenant.id'] = '_system'`);
    expect(Number(system[0]!.n)).toBe(0);
    const scrapes = await sql(`SELECT count(*) AS n FROM _system._monitoring.traces WHERE name = 'GET /metrics'`);
    expect(Number(scrapes[0]!.n)).toBe(0);
  });

  it('stores spans of the acceptor (HTTP and gRPC) and of Flight calls, named as spec 2 says, continuing a caller\'s trace', async () => {
    await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'http-sender');
    await sendSampleTrace(grpcTraceExporter(floe.otlpGrpcAddress, { apiKey: key, tenant }), 'grpc-sender');
    const parentTrace = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    await flightDoGet({
      url: floe.flightAddress,
      ticket: Buffer.from('SELECT count(*) FROM traces'),
      metadata: { ...asTenant(), traceparent: `00-${parentTrace}-1122334455667788-01` },
      deadlineMs: 20_000,
    });
    const names = ['POST /v1/traces', 'opentelemetry.proto.collector.trace.v1.TraceService/Export', 'arrow.flight.protocol.FlightService/DoGet'];
    const rows = await waitFor(
      'acceptor and Flight spans in _system',
      async () => {
        const found = await sql(
          `SELECT name, trace_id, span_attr_str, span_attr_int FROM _system._monitoring.traces WHERE name IN (${names.map((n) => `'${n}'`).join(', ')})`,
        );
        return names.every((n) => found.some((r) => r.name === n)) ? found : undefined;
      },
      60_000,
      500,
    );
    const byName = (n: string) => rows.find((r) => r.name === n)!;
    expect(byName('POST /v1/traces')).toMatchObject({ span_attr_str: { 'http.route': '/v1/traces', 'floe.tenant.id': tenant }, span_attr_int: { 'http.response.status_code': 200n } });
    expect(byName('opentelemetry.proto.collector.trace.v1.TraceService/Export')).toMatchObject({
      span_attr_str: { 'rpc.system': 'grpc', 'rpc.service': 'opentelemetry.proto.collector.trace.v1.TraceService', 'rpc.method': 'Export' },
      span_attr_int: { 'rpc.grpc.status_code': 0n },
    });
    const doGet = rows.filter((r) => r.name === 'arrow.flight.protocol.FlightService/DoGet');
    expect(doGet.some((r) => r.trace_id === parentTrace)).toBe(true);
    // The self-monitoring export itself (tenant _system, over OTLP/HTTP) made no acceptor span.
    const system = await sql(`SELECT count(*) AS n FROM _system._monitoring.traces WHERE name = 'POST /v1/traces' AND span_attr_str['floe.tenant.id'] = '_system'`);
    expect(Number(system[0]!.n)).toBe(0);
  });

  it('stores the writer\'s commit_duration in _system\'s metrics table', async () => {
    const rows = await rowsOf(
      'commit_duration in _system._monitoring.metrics',
      `SELECT metric_name, metric_type, unit, service_name, count FROM _system._monitoring.metrics WHERE metric_name = 'commit_duration' AND count > 0 LIMIT 1`,
    );
    expect(rows[0]).toMatchObject({ metric_name: 'commit_duration', metric_type: 'histogram', unit: 's', service_name: 'floe' });
  });

  it('gives its metrics in _system the names GET /metrics gives them, so the operations dashboard reads either', async () => {
    const promql = async (query: string) => {
      const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/query?${new URLSearchParams({ query })}`, { headers: asSystem() });
      return (await res.json()) as { status: string; error?: string; data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    };
    // Families of the scrape that every process has from its start, read back from _system by PromQL.
    const families = ['process_cpu_time_seconds_total', 'process_memory_usage_bytes', 'nodejs_eventloop_utilization_ratio', 'http_server_request_duration_seconds', 'items_accepted_total', 'wal_oldest_segment_age_seconds', 'commit_duration_seconds', 'compaction_pass_duration_seconds'];
    await waitFor(
      'the families in the scrape (a commit and a compaction pass done)',
      async () => {
        const scrape = await (await fetch(`${floe.otlpHttpUrl}/metrics`)).text();
        return families.every((f) => new RegExp(`^# TYPE ${f} `, 'm').test(scrape)) ? true : undefined;
      },
      60_000,
      500,
    );
    const stored = await waitFor(
      'the families in _system',
      async () => {
        const res = await fetch(`${floe.routerUrl}/metricquery/api/v1/label/__name__/values`, { headers: asSystem() });
        const names = new Set(((await res.json()) as { data: string[] }).data);
        const want = families.map((f) => (f.endsWith('_seconds') && !f.startsWith('wal_') ? `${f}_bucket` : f));
        return want.every((n) => names.has(n)) ? names : undefined;
      },
      60_000,
      500,
    );
    expect(stored.has('http_server_request_duration_seconds_count')).toBe(true);
    const accepted = await waitFor('acme\'s spans counted', async () => {
      const r = await promql(`sum by (tenant_id, signal) (items_accepted_total{tenant_id="${tenant}"})`);
      return r.data?.result.length ? r.data.result : undefined;
    }, 60_000, 500);
    expect(accepted.map((x) => x.metric)).toEqual([{ tenant_id: tenant, signal: 'traces' }]);
    // Every query of deploy/grafana/dashboards/floe-operations.json runs on Floe's own PromQL too.
    const dashboard = JSON.parse(readFileSync(join(import.meta.dirname, '../../../deploy/grafana/dashboards/floe-operations.json'), 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr.replaceAll('$job', '.*').replaceAll('$__rate_interval', '1m').replaceAll('$__range', '5m') })));
    expect(exprs.length).toBeGreaterThan(20);
    for (const q of exprs) {
      const r = await promql(q.expr);
      expect({ panel: q.title, status: r.status, error: r.error ?? '' }).toEqual({ panel: q.title, status: 'success', error: '' });
    }
  });

  it('stores the acceptor\'s wal_backlog_bytes and wal_backlog_segments gauges in _system\'s metrics table', async () => {
    const query = `SELECT metric_name, any_value(metric_type) AS metric_type, any_value(unit) AS unit, min(value) AS least FROM _system._monitoring.metrics WHERE metric_name IN ('wal_backlog_bytes', 'wal_backlog_segments') GROUP BY metric_name ORDER BY metric_name`;
    const rows = await waitFor('wal_backlog_* in _system._monitoring.metrics', async () => {
      const found = await sql(query);
      return found.length === 2 ? found : undefined;
    }, 60_000, 500);
    expect(rows.map((r) => r.metric_name)).toEqual(['wal_backlog_bytes', 'wal_backlog_segments']);
    expect(rows[0]).toMatchObject({ metric_type: 'gauge', unit: 'By' });
    expect(rows[1]).toMatchObject({ metric_type: 'gauge' });
    for (const r of rows) expect(Number(r.least)).toBeGreaterThanOrEqual(0);
  });

  it('counts a byte-identical resend in the acceptor\'s resends_dropped, by signal', async () => {
    // The same bytes twice: the second is acknowledged without being stored, and counted.
    const body = new Uint8Array(0);
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', body, headers: { ...asTenant(), 'content-type': 'application/x-protobuf' } });
      expect(res.status).toBe(200);
    }
    const rows = await rowsOf(
      'resends_dropped in _system._monitoring.metrics',
      `SELECT metric_type, is_monotonic, value, point_attr_str['signal'] AS signal FROM _system._monitoring.metrics WHERE metric_name = 'resends_dropped' AND point_attr_str['signal'] = 'logs' AND value >= 1 LIMIT 1`,
    );
    expect(rows[0]).toMatchObject({ metric_type: 'sum', is_monotonic: true, signal: 'logs' });
  });

  it('counts the items an acknowledged request left out in items_refused, by tenant, signal and reason', async () => {
    const now = BigInt(Date.now()) * 1_000_000n;
    const DAY = 86_400_000_000_000n;
    const logs = {
      resourceLogs: [{ scopeLogs: [{ logRecords: [
        { timeUnixNano: String(now - 8n * DAY), body: { stringValue: 'eight days old' } },
        { timeUnixNano: String(now - 9n * DAY), body: { stringValue: 'nine days old' } },
        { timeUnixNano: String(now + DAY), body: { stringValue: 'a day ahead' } },
        { timeUnixNano: String(now), body: { stringValue: 'now' } },
      ] }] }],
    };
    const res = await fetch(`${floe.otlpHttpUrl}/v1/logs`, { method: 'POST', body: JSON.stringify(logs), headers: { ...asTenant(), 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { partialSuccess: { rejectedLogRecords: string } }).partialSuccess.rejectedLogRecords).toBe('3');
    const rows = await waitFor(
      'items_refused in _system._monitoring.metrics',
      async () => {
        const r = await sql(
          `SELECT point_attr_str['reason'] AS reason, max(value) AS n, any_value(metric_type) AS type FROM _system._monitoring.metrics WHERE metric_name = 'items_refused' AND point_attr_str['tenant.id'] = '${tenant}' AND point_attr_str['signal'] = 'logs' GROUP BY ALL ORDER BY reason`,
        );
        return r.length === 2 ? r : undefined;
      },
      60_000,
      500,
    );
    expect(rows).toEqual([
      { reason: 'too_new', n: 1, type: 'sum' },
      { reason: 'too_old', n: 2, type: 'sum' },
    ]);
  });

  it('reports a limited tenant\'s active series and its limit (active_series, active_series_limit)', async () => {
    const created = await fetch(`${floe.routerUrl}/api/v1/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${floe.adminApiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'capped', settings: { limits: { max_active_series: 10 } } }),
    });
    expect(created.status).toBe(201);
    const cappedKey = (await floe.bootstrap('capped')).api_key;
    const points = ['a', 'b'].map((v) => ({ timeUnixNano: String(BigInt(Date.now()) * 1_000_000n), asDouble: 1, attributes: [{ key: 'k', value: { stringValue: v } }] }));
    const body = JSON.stringify({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'g', gauge: { dataPoints: points } }] }] }] });
    const res = await fetch(`${floe.otlpHttpUrl}/v1/metrics`, { method: 'POST', body, headers: { authorization: `Bearer ${cappedKey}`, 'x-tenant-id': 'capped', 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    const rows = await waitFor(
      'active_series in _system._monitoring.metrics',
      async () => {
        const r = await sql(
          `SELECT metric_name AS name, arg_max(value, time_unix_nano) AS v FROM _system._monitoring.metrics WHERE metric_name IN ('active_series', 'active_series_limit') AND point_attr_str['tenant.id'] = 'capped' GROUP BY ALL ORDER BY name`,
        );
        return r.length === 2 && r[0]!.v === 2 ? r : undefined;
      },
      60_000,
      500,
    );
    expect(rows).toEqual([
      { name: 'active_series', v: 2 },
      { name: 'active_series_limit', v: 10 },
    ]);
  });

  it('counts an authenticated request answered with an error in requests_refused, by signal and reason', async () => {
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: new Uint8Array([0x0a, 0xff, 0xff]), headers: { ...asTenant(), 'content-type': 'application/x-protobuf' } });
    expect(res.status).toBe(400);
    const rows = await rowsOf(
      'requests_refused in _system._monitoring.metrics',
      `SELECT metric_type, max(value) AS n FROM _system._monitoring.metrics WHERE metric_name = 'requests_refused' AND point_attr_str['tenant.id'] = '${tenant}' AND point_attr_str['signal'] = 'traces' AND point_attr_str['reason'] = 'bad_data' GROUP BY ALL`,
    );
    expect(rows).toEqual([{ metric_type: 'sum', n: 1 }]);
  });

  it('stores CPU profiles of the process with Floe\'s own functions in _system\'s profiles table', async () => {
    // Functions of Floe's ingest, commit and query paths, some of which a busy window samples.
    const floeFunctions = ['authenticate', 'spansToPayloadsFromWire', 'hourPayloads', 'addCpuProfile', 'exportWindow', 'buildApp', 'chunkByRows', 'withinBudget', 'flightDoGet'];
    const seen = await waitFor(
      'a CPU profile with Floe functions',
      async () => {
        // Keep the process busy in Floe code while the profiler samples.
        await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'checkout');
        await fetch(`${floe.routerUrl}${SEARCH}`, { headers: asTenant() });
        const rows = await sql(
          `SELECT service_name, sample_type, sample_unit, period, duration_nano, total_value, resource_attr_str, stacktraces_json FROM _system._monitoring.profiles WHERE sample_type = 'cpu'`,
        );
        const names = new Set(rows.flatMap((r) => (JSON.parse(r.stacktraces_json as string) as string[][]).flat()));
        const found = floeFunctions.filter((f) => names.has(f));
        return found.length > 0 ? { rows, found } : undefined;
      },
      90_000,
      1_000,
    );
    const row = seen.rows[0]!;
    expect(row).toMatchObject({ service_name: 'floe', sample_type: 'cpu', sample_unit: 'nanoseconds', period: 1_000_000n });
    expect(row.resource_attr_str).toMatchObject({ 'service.name': 'floe', 'deployment.environment': 'self-monitoring' });
    // Values are samples x period: every stack's value is a whole number of periods.
    expect((row.total_value as bigint) % 1_000_000n).toBe(0n);
    expect(seen.found.length).toBeGreaterThan(0);
  });

  it('stores live-heap (inuse_space) profiles of the process in _system\'s profiles table', async () => {
    const rows = await rowsOf(
      'an inuse_space profile with live bytes',
      `SELECT service_name, sample_type, sample_unit, period_type, period_unit, period, duration_nano, total_value, profile_type, resource_attr_str, stacktraces_json FROM _system._monitoring.profiles WHERE sample_type = 'inuse_space' AND total_value > 0`,
    );
    const row = rows[0]!;
    expect(row).toMatchObject({
      service_name: 'floe',
      sample_type: 'inuse_space',
      sample_unit: 'bytes',
      period_type: 'space',
      period_unit: 'bytes',
      period: 524_288n, // HEAP_SAMPLING_INTERVAL_BYTES
      duration_nano: 0n, // a snapshot
      profile_type: 'memory:inuse_space:bytes:space:bytes',
    });
    expect(row.total_value as bigint).toBeGreaterThan(0n);
    expect(row.resource_attr_str).toMatchObject({ 'service.name': 'floe', 'deployment.environment': 'self-monitoring' });
    // Allocation sites are resolved to function names.
    const frames = (JSON.parse(row.stacktraces_json as string) as string[][]).flat();
    expect(frames.some((f) => f !== '' && f !== 'unknown' && !f.startsWith('0x'))).toBe(true);
  });
});

describe('external profiling wins over self-profiling (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  // The "external backend" is this Floe's own acceptor, written to as an ordinary tenant: the
  // profiler is configured before start, so the port, the tenant and its key must exist by then.
  const tenant = 'pyro';
  const metaDir = mkdtempSync(join(tmpdir(), 'floe-profiling-meta-'));

  beforeAll(async () => {
    const [httpPort] = await freePorts(1);
    const db = await openDb({ kind: 'pglite', dataDir: metaDir });
    await migrate(db);
    await createTenant(db, { id: tenant });
    key = (await createApiKey(db, { tenantId: tenant, name: 'profiling', scopes: ['ingest', 'query'], createdBy: 'admin' })).secret;
    // _system and _monitoring exist from the start, so a self-profiler started by mistake would
    // have its profiles stored rather than refused, and the check below could not pass by accident.
    await ensureTenant(db, { id: SYSTEM_TENANT_ID });
    await createDataset(db, { tenantId: SYSTEM_TENANT_ID, id: MONITORING_DATASET_ID });
    await db.close();
    floe = await startFloe({
      mode: 'embedded',
      config: {
        meta: { data_dir: metaDir },
        acceptor: { http_port: httpPort },
        self_monitoring: { profiles_enabled: true, profile_sample_rate_hz: 1000, profile_interval: '1s' },
        profiling: {
          enabled: true,
          endpoint: `http://127.0.0.1:${httpPort}/`,
          headers: { Authorization: `Bearer ${key}`, 'X-Tenant-ID': tenant },
          sample_rate_hz: 1000,
          interval: '1s',
        },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    rmSync(metaDir, { recursive: true, force: true });
  });

  const sql = async (text: string, metadata: Record<string, string>) => {
    const table = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata, deadlineMs: 20_000 });
    return table.toArray().map((r) => plain(r) as Record<string, unknown>);
  };
  const systemProfiles = async () =>
    Number(
      (await sql('SELECT count(*) AS n FROM _system._monitoring.profiles', { authorization: `Bearer ${floe.adminApiKey}`, 'x-tenant-id': SYSTEM_TENANT_ID, 'x-dataset-id': MONITORING_DATASET_ID }))[0]!.n,
    );

  it('sends CPU profiles to profiling.endpoint with profiling.headers, and none to _system', async () => {
    const rows = await waitFor(
      `CPU profiles in tenant ${tenant}`,
      async () => {
        if ((await systemProfiles()) > 0) throw new WaitAborted('a CPU profile reached _system._monitoring.profiles');
        const found = await sql(`SELECT service_name, sample_type, sample_unit, period, resource_attr_str FROM profiles WHERE sample_type = 'cpu'`, {
          authorization: `Bearer ${key}`,
          'x-tenant-id': tenant,
        });
        // Two windows: by then a self-profiler on the same 1s interval would have exported too.
        return found.length >= 2 ? found : undefined;
      },
      60_000,
      500,
    );
    expect(rows[0]).toMatchObject({ service_name: 'floe', sample_type: 'cpu', sample_unit: 'nanoseconds', period: 1_000_000n });
    expect(rows[0]!.resource_attr_str).toMatchObject({ 'service.name': 'floe' });
    expect(Object.keys(rows[0]!.resource_attr_str as object)).toEqual(expect.arrayContaining(['service.version', 'service.instance.id']));
    expect(await systemProfiles()).toBe(0);
    // The warning naming both keys goes to the process log, which the testkit does not expose.
  });
});

describe('self-monitoring off (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap('acme')).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('answers without Server-Timing or traceresponse', async () => {
    const res = await fetch(`${floe.routerUrl}${SEARCH}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('server-timing')).toBeNull();
    expect(res.headers.get('traceresponse')).toBeNull();
    const exported = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: new Uint8Array(0), headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme', 'content-type': 'application/x-protobuf' } });
    expect(exported.status).toBe(200);
    expect(exported.headers.get('server-timing')).toBeNull();
    expect(exported.headers.get('traceresponse')).toBeNull();
  });
});
