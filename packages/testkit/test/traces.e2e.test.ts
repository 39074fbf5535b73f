import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TempoTraceByIDResponseSchema, TempoTraceSchema, fromBinary } from '@floe/proto';
import { findTraceById, flightDoGet, flightGetFlightInfo } from '@floe/flight';
import {
  grpcTraceExporter,
  protoTraceExporter,
  runFloeCli,
  sendSampleTrace,
  startFloe,
  traceSpanCount,
  waitFor,
  type FloeMode,
  type FloeUnderTest,
} from '../src/index.ts';

/**
 * The first end-to-end path, in both modes: real OTLP exporters → acceptor → WAL → writer →
 * Iceberg → querier (Flight) → router's Tempo API, protobuf and JSON.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('traces end to end (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'acme';

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const auth = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
  const getTrace = (path: string, accept = 'application/json') => fetch(`${floe.routerUrl}/tracequery${path}`, { headers: { ...auth(), accept } });

  /** The exporter sends each span as it ends, so a trace becomes whole once all spans are committed. */
  async function waitForTrace(traceId: string, spans = 3): Promise<Response> {
    return waitFor(`trace ${traceId}`, async () => {
      const res = await getTrace(`/api/traces/${traceId}`);
      if (res.status !== 200) return undefined;
      return traceSpanCount((await res.clone().json()) as Parameters<typeof traceSpanCount>[0]) === spans ? res : undefined;
    }, 30_000, 200);
  }

  it.each([
    ['otlp-grpc', () => grpcTraceExporter(floe.otlpGrpcAddress, { apiKey: key, tenant })],
    ['otlp-proto', () => protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant })],
  ])('a trace exported with %s comes back whole', async (_name, makeExporter) => {
    const sent = await sendSampleTrace(makeExporter(), 'checkout');
    const res = await waitForTrace(sent.traceId);
    const body = (await res.json()) as { batches: Array<{ resource: { attributes: Array<{ key: string; value: Record<string, unknown> }> }; scopeSpans: Array<{ scope: { name: string; version: string }; spans: Array<Record<string, unknown>> }> }> };
    expect(body.batches).toHaveLength(1);
    const batch = body.batches[0]!;
    expect(batch.resource.attributes).toEqual(
      expect.arrayContaining([
        { key: 'service.name', value: { stringValue: 'checkout' } },
        { key: 'host.cpus', value: { intValue: '4' } },
      ]),
    );
    expect(batch.scopeSpans[0]!.scope).toMatchObject({ name: 'floe-e2e', version: '1.2.3' });
    const spans = batch.scopeSpans.flatMap((s) => s.spans);
    expect(spans.map((s) => s.spanID).sort()).toEqual([...sent.spanIds].sort());
    const root = spans.find((s) => s.name === 'GET /checkout')!;
    expect(root.kind).toBe('SPAN_KIND_SERVER');
    expect(root.parentSpanID).toBeUndefined();
    expect(root.serviceName).toBe('checkout');
    expect(Number(root.durationNanos)).toBeGreaterThanOrEqual(0);
    expect(root.attributes).toEqual(
      expect.arrayContaining([
        { key: 'http.method', value: { stringValue: 'GET' } },
        { key: 'http.status_code', value: { intValue: '500' } },
        { key: 'ratio', value: { doubleValue: 0.25 } },
        { key: 'cache.hit', value: { boolValue: false } },
      ]),
    );
    const leaf = spans.find((s) => s.name === 'SELECT carts')!;
    expect(leaf.parentSpanID).toBe(sent.spanIds[1]);
    expect(leaf.status).toEqual({ code: 'STATUS_CODE_ERROR', message: 'db failed' });
    const events = leaf.events as Array<{ name: string; attributes: Array<{ key: string; value: { stringValue?: string } }> }>;
    expect(events[0]!.name).toBe('exception');
    expect(events[0]!.attributes.find((a) => a.key === 'exception.message')?.value.stringValue).toBe('connection reset');
    expect(events[0]!.attributes.some((a) => a.key === 'exception.type')).toBe(true);
    expect(events[0]!.attributes.some((a) => a.key === 'exception.stacktrace')).toBe(true);

    // Grafana's Tempo data source: v2 with Accept: application/protobuf → TraceByIDResponse.
    const v2 = await getTrace(`/api/v2/traces/${sent.traceId}`, 'application/protobuf');
    expect(v2.status).toBe(200);
    expect(v2.headers.get('content-type')).toContain('application/protobuf');
    const decoded = fromBinary(TempoTraceByIDResponseSchema, new Uint8Array(await v2.arrayBuffer()));
    const protoSpans = decoded.trace!.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
    expect(protoSpans).toHaveLength(3);
    expect(Buffer.from(protoSpans[0]!.traceId).toString('hex')).toBe(sent.traceId);

    const v1proto = await getTrace(`/api/traces/${sent.traceId}`, 'application/protobuf');
    expect(fromBinary(TempoTraceSchema, new Uint8Array(await v1proto.arrayBuffer())).resourceSpans).toHaveLength(1);

    const v2json = (await (await getTrace(`/api/v2/traces/${sent.traceId}`)).json()) as { trace: { resourceSpans: unknown[] } };
    expect(v2json.trace.resourceSpans).toHaveLength(1);
  });

  it('start and end (unix seconds) bound the hours searched: a window around the trace finds it, one hours earlier does not; a bad range is 400', async () => {
    const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'windowed');
    await waitForTrace(sent.traceId);
    const nowS = Math.floor(Date.now() / 1000);
    for (const version of ['', '/v2']) {
      const around = await getTrace(`/api${version}/traces/${sent.traceId}?start=${nowS - 600}&end=${nowS + 60}`);
      expect(around.status).toBe(200);
      const spans = version === '' ? traceSpanCount((await around.json()) as Parameters<typeof traceSpanCount>[0]) : ((await around.json()) as { trace: { resourceSpans: unknown[] } }).trace.resourceSpans.length;
      expect(spans).toBeGreaterThan(0);
      // Only the hours the window names are read: the trace, written now, is not in them.
      const before = await getTrace(`/api${version}/traces/${sent.traceId}?start=${nowS - 4 * 3600}&end=${nowS - 3 * 3600}`);
      expect(before.status).toBe(404);
      expect(await before.json()).toEqual({ status: 'error', errorType: 'not_found', error: 'trace not found' });
    }
    for (const query of [`start=${nowS}&end=${nowS - 60}`, 'start=yesterday', `end=${'9'.repeat(30)}`]) {
      const bad = await getTrace(`/api/traces/${sent.traceId}?${query}`);
      expect(bad.status, query).toBe(400);
      const body = (await bad.json()) as { status: string; errorType: string; error: string };
      expect(body, query).toMatchObject({ status: 'error', errorType: 'bad_data' });
    }
    expect(((await (await getTrace(`/api/traces/${sent.traceId}?start=${nowS}&end=${nowS - 60}`)).json()) as { error: string }).error).toBe('invalid range: end is before start');
  });

  it('answers 404 in the envelope for an unknown trace, 400 for a bad id, echo with auth', async () => {
    const missing = await getTrace('/api/traces/0123456789abcdef0123456789abcdef');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ status: 'error', errorType: 'not_found', error: 'trace not found' });
    const bad = await getTrace('/api/traces/not-hex');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { errorType: string }).errorType).toBe('bad_data');
    const echo = await getTrace('/api/echo');
    expect(await echo.text()).toBe('echo');
    // Tempo's build info, as tools read it to pick features.
    const info = await getTrace('/api/status/buildinfo');
    expect(info.status).toBe(200);
    expect(await info.json()).toMatchObject({ version: '2.8.0', revision: 'floe', branch: 'floe' });
    // Spec 1, Authentication rule 3: no credentials at all is 401; credentials naming no tenant is a malformed request.
    const noAuth = await fetch(`${floe.routerUrl}/tracequery/api/echo`);
    expect(noAuth.status).toBe(401);
    const noTenant = await fetch(`${floe.routerUrl}/tracequery/api/echo`, { headers: { authorization: `Bearer ${key}` } });
    expect(noTenant.status).toBe(400);
    expect(((await noTenant.json()) as { errorType: string }).errorType).toBe('bad_data');
  });

  it('answers trace by id per the trace query API auth rule: 400 for missing or bad headers, 401 unauthenticated, 403 another tenant', async () => {
    const id = '0123456789abcdef0123456789abcdef';
    const ask = (headers: Record<string, string>) => fetch(`${floe.routerUrl}/tracequery/api/v2/traces/${id}`, { headers: { accept: 'application/json', ...headers } });
    const envelope = async (res: Response) => ({ status: res.status, body: (await res.json()) as { status: string; errorType: string; error: string } });

    const noTenant = await envelope(await ask({ authorization: `Bearer ${key}` }));
    expect(noTenant).toEqual({ status: 400, body: { status: 'error', errorType: 'bad_data', error: expect.stringContaining('X-Tenant-ID') } });
    const blankTenant = await envelope(await ask({ authorization: `Bearer ${key}`, 'x-tenant-id': ' ' }));
    expect(blankTenant).toMatchObject({ status: 400, body: { errorType: 'bad_data' } });
    const badTenant = await envelope(await ask({ authorization: `Bearer ${key}`, 'x-tenant-id': 'ac/../me' }));
    expect(badTenant).toEqual({ status: 400, body: { status: 'error', errorType: 'bad_data', error: expect.stringContaining('X-Tenant-ID') } });
    const badDataset = await envelope(await ask({ ...auth(), 'x-dataset-id': 'Not A Name' }));
    expect(badDataset).toEqual({ status: 400, body: { status: 'error', errorType: 'bad_data', error: expect.stringContaining('X-Dataset-ID') } });

    expect(await envelope(await ask({ 'x-tenant-id': tenant }))).toMatchObject({ status: 401, body: { status: 'error', errorType: 'unauthorized' } });
    expect(await envelope(await ask({}))).toMatchObject({ status: 401, body: { errorType: 'unauthorized' } });
    expect(await envelope(await ask({ authorization: 'Bearer not-a-key', 'x-tenant-id': tenant }))).toMatchObject({ status: 401, body: { errorType: 'unauthorized' } });
    // This tenant's key presented for another tenant.
    expect(await envelope(await ask({ authorization: `Bearer ${key}`, 'x-tenant-id': 'someone-else' }))).toMatchObject({ status: 403, body: { status: 'error', errorType: 'forbidden' } });
    // Basic auth names the tenant as its user: nothing is missing.
    const basic = `Basic ${Buffer.from(`${tenant}:${key}`).toString('base64')}`;
    expect((await ask({ authorization: basic })).status).toBe(404);
  });

  it('keeps 401 for a missing X-Tenant-ID on the other query APIs', async () => {
    const res = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/labels`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(401);
  });

  it('serves the stored spans over SQL (Flight), pinned to the caller', async () => {
    const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'sql-check');
    await waitForTrace(sent.traceId);
    const meta = { authorization: `Bearer ${key}`, 'x-tenant-id': tenant };
    const table = await flightDoGet({
      url: floe.flightAddress,
      ticket: Buffer.from(`SELECT count(*) AS n FROM acme.default.traces WHERE trace_id = '${sent.traceId}'`),
      metadata: meta,
      deadlineMs: 20_000,
    });
    expect(Number(table.getChildAt(0)!.get(0))).toBe(3);
    const pinned = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT name FROM sql_traces WHERE trace_id = '${sent.traceId}' ORDER BY name`), metadata: meta, deadlineMs: 20_000 });
    expect(pinned.toArray().map((r) => r!.name)).toEqual(['GET /checkout', 'SELECT carts', 'compute-cart']);

    // The usual Flight client flow: GetFlightInfo on a command, then DoGet on its endpoint.
    const info = await flightGetFlightInfo({ url: floe.flightAddress, descriptor: { type: 2, cmd: Buffer.from('SELECT span_id FROM traces WHERE trace_id = $1'.replace('$1', `'${sent.traceId}'`)) }, metadata: meta, deadlineMs: 20_000 });
    expect(info.totalRecords).toBe(3n);
    expect(info.endpoint).toHaveLength(1);
    const viaInfo = await flightDoGet({ url: floe.flightAddress, ticket: info.endpoint[0]!.ticket!.ticket, metadata: meta, deadlineMs: 20_000 });
    expect(viaInfo.numRows).toBe(3);

    // `floe sql` is the same call from the command line.
    const cli = await runFloeCli(['sql', '--json', '--url', floe.flightAddress, `SELECT name, kind FROM traces WHERE trace_id = '${sent.traceId}' ORDER BY name`], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(cli.stderr).toBe('');
    expect(JSON.parse(cli.stdout)).toEqual([
      { name: 'GET /checkout', kind: 'server' },
      { name: 'SELECT carts', kind: 'client' },
      { name: 'compute-cart', kind: 'internal' },
    ]);
    // Values for $1, $2 are bound by the querier: a quote in one is only a character.
    const bound = await runFloeCli(['sql', '--json', '--url', floe.flightAddress, '--param', sent.traceId, '--param', 'server', 'SELECT name FROM traces WHERE trace_id = $1 AND kind = $2'], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(bound.stderr).toBe('');
    expect(JSON.parse(bound.stdout)).toEqual([{ name: 'GET /checkout' }]);
    const quoted = await runFloeCli(['sql', '--json', '--url', floe.flightAddress, '--param', "x' OR '1'='1", 'SELECT count(*) AS n FROM traces WHERE name = $1'], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(JSON.parse(quoted.stdout)).toEqual([{ n: 0 }]);
    // JSON numbers and booleans are bound as such, anything else (or a JSON string) as text.
    const typed = await runFloeCli(['sql', '--json', '--url', floe.flightAddress, '--param', '0', '--param', 'true', '--param', '"007"', '--param', 'x', 'SELECT typeof($1) AS a, typeof($2) AS b, typeof($3) AS c, $3 AS c_value, typeof($4) AS d'], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(typed.stderr).toBe('');
    expect(JSON.parse(typed.stdout)).toEqual([{ a: 'BIGINT', b: 'BOOLEAN', c: 'VARCHAR', c_value: '007', d: 'VARCHAR' }]);
    const human = await runFloeCli(['sql', '--url', floe.flightAddress, 'SELECT count(*) AS n FROM traces'], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(human.stdout).toMatch(/^n\s*\n-+\n\d+\s*\n\(1 row\)/);
    const refused = await runFloeCli(['sql', '--url', floe.flightAddress, "SELECT * FROM read_csv('/etc/passwd')"], { FLOE_API_KEY: key, FLOE_TENANT: tenant });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/not allowed \(gRPC code 7\)/);
  });

  it("answers Tempo's FindTraceByID on the querier port, authenticated and inside the caller's tenant", async () => {
    const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'tempo-rpc');
    await waitForTrace(sent.traceId);
    const traceId = Buffer.from(sent.traceId, 'hex');
    const call = (metadata: Record<string, string>) => findTraceById({ url: floe.flightAddress, traceId, metadata, deadlineMs: 20_000 });
    const mine = await call({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
    const spans = mine.trace!.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
    expect(spans.map((s) => Buffer.from(s.spanId).toString('hex')).sort()).toEqual([...sent.spanIds].sort());
    await expect(call({ authorization: 'Bearer floe_nope', 'x-tenant-id': tenant })).rejects.toMatchObject({ code: 16 });
    await expect(call({ 'x-tenant-id': tenant })).rejects.toMatchObject({ code: 16 });
    const otherKey = (await floe.bootstrap('tempo-other')).api_key;
    await expect(call({ authorization: `Bearer ${otherKey}`, 'x-tenant-id': tenant })).rejects.toMatchObject({ code: 7 });
    const theirs = await call({ authorization: `Bearer ${otherKey}`, 'x-tenant-id': 'tempo-other' });
    expect(theirs.trace!.resourceSpans).toEqual([]);
    await expect(call({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'x-floe-start-ns': 'soon' })).rejects.toMatchObject({ code: 3 });
  });
});
