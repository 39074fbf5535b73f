import { gzipSync } from 'node:zlib';
import { compress } from 'snappyjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { create, LokiPushRequestSchema, toBinary } from '@floe/proto';
import { startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Loki's push API end to end, in both modes: a snappy protobuf body as Promtail and Alloy's
 * loki.write send it, and a gzip JSON body as Fluent Bit and curl do, come back through LogQL
 * under their labels, with service_name, level, structured metadata and trace ids where Loki users
 * look for them, and in SQL; bad bodies get the documented statuses; another tenant sees nothing.
 */
describe.each<FloeMode>(['embedded', 'cluster'])('Loki push API (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

  const push = (body: Uint8Array, headers: Record<string, string>, as = { key: '', tenant: 'acme' }) =>
    fetch(`${floe.otlpHttpUrl}/loki/api/v1/push`, { method: 'POST', body, headers: { authorization: `Bearer ${as.key || key}`, 'x-tenant-id': as.tenant, ...headers } });
  const logql = async (query: string, tenant = 'acme', k = key) => {
    const params = new URLSearchParams({ query, start: String(nowNs - 3_600_000_000_000n), end: String(nowNs + 60_000_000_000n), limit: '100' });
    const res = await fetch(`${floe.routerUrl}/logquery/loki/api/v1/query_range?${params}`, { headers: { authorization: `Bearer ${k}`, 'x-tenant-id': tenant } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: { result: Array<{ stream: Record<string, string>; values: Array<[string, string]> }> } }).data.result;
  };

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap('acme')).api_key;
    otherKey = (await floe.bootstrap('globex')).api_key;
    const pb = toBinary(
      LokiPushRequestSchema,
      create(LokiPushRequestSchema, {
        streams: [
          {
            labels: '{app="api", env="prod", level="error"}',
            entries: [
              { timestamp: { seconds: nowNs / 1_000_000_000n - 60n, nanos: 1 }, line: 'payment failed for order 7', structuredMetadata: [{ name: 'trace_id', value: TRACE }, { name: 'user', value: 'ann' }] },
              { timestamp: { seconds: nowNs / 1_000_000_000n - 59n, nanos: 2 }, line: 'payment failed for order 8', structuredMetadata: [] },
            ],
          },
        ],
      }),
    );
    expect((await push(compress(pb), { 'content-type': 'application/x-protobuf' })).status).toBe(204);
    const body = { streams: [{ stream: { job: 'batch', host: 'h1' }, values: [[String(nowNs - 30_000_000_000n), 'job done', { duration: '3s' }]] }] };
    const gz = gzipSync(JSON.stringify(body));
    expect((await push(gz, { 'content-type': 'application/json', 'content-encoding': 'gzip' })).status).toBe(204);
    await waitFor('the pushed lines to be queryable', async () => ((await logql('{env="prod"}')).flatMap((s) => s.values).length === 2 && (await logql('{host="h1"}')).length === 1 ? true : undefined), 30_000, 200);
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('answers LogQL under the pushed labels, with service_name and level as Loki 3 derives them', async () => {
    const api = await logql('{app="api"} |= "payment"');
    expect(api.flatMap((s) => s.values.map((v) => v[1])).sort()).toEqual(['payment failed for order 7', 'payment failed for order 8']);
    for (const s of api) expect(s.stream).toMatchObject({ service_name: 'api', level: 'error' });
    // Structured metadata: the user, and the trace id where Grafana's derived fields look for it.
    const withUser = api.find((s) => s.stream.user === 'ann')!;
    expect(withUser.stream.trace_id).toBe(TRACE);
    expect((await logql('{service_name="batch"}'))[0]!.values.map((v) => v[1])).toEqual(['job done']);
    const table = await flightDoGet({
      url: floe.flightAddress,
      ticket: Buffer.from(`SELECT service_name, severity_text, trace_id, resource_attr_str['env'] AS env FROM acme.default.logs WHERE service_name = 'api' ORDER BY time_unix_nano`),
      metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' },
      deadlineMs: 20_000,
    });
    expect(table.toArray().map((r) => ({ ...r.toJSON() }))).toEqual([
      { service_name: 'api', severity_text: 'error', trace_id: TRACE, env: 'prod' },
      { service_name: 'api', severity_text: 'error', trace_id: null, env: 'prod' },
    ]);
  });

  it('stores the entries inside the accepted times and answers 400 naming the ones outside', async () => {
    const old = String(nowNs - 30n * 86_400_000_000_000n);
    const body = { streams: [{ stream: { app: 'late-sender' }, values: [[old, 'a month ago'], [String(nowNs - 5_000_000_000n), 'just now']] }] };
    const res = await push(new TextEncoder().encode(JSON.stringify(body)), { 'content-type': 'application/json' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^1 entries were refused \(the rest was stored\); first: .*ingest_max_age/);
    await waitFor('the accepted entry', async () => ((await logql('{app="late-sender"}')).flatMap((s) => s.values.map((v) => v[1])).join() === 'just now' ? true : undefined), 30_000, 200);
  });

  it('takes OTLP logs under /otlp too, where Loki has its OTLP endpoint', async () => {
    const otlp = { resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'otlp-at-loki-path' } }] }, scopeLogs: [{ logRecords: [{ timeUnixNano: String(nowNs - 10_000_000_000n), body: { stringValue: 'via /otlp' } }] }] }] };
    const res = await fetch(`${floe.otlpHttpUrl}/otlp/v1/logs`, { method: 'POST', body: JSON.stringify(otlp), headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme', 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    await waitFor('the OTLP line', async () => ((await logql('{service_name="otlp-at-loki-path"}')).flatMap((s) => s.values.map((v) => v[1])).join() === 'via /otlp' ? true : undefined), 30_000, 200);
  });

  it('refuses bad bodies with the documented statuses, and keeps tenants apart', async () => {
    const cases: Array<[Uint8Array, Record<string, string>, number, RegExp]> = [
      [new TextEncoder().encode('{"streams":[{"stream":{},"values":[]}]}'), { 'content-type': 'application/json' }, 400, /has no labels/],
      [new TextEncoder().encode('not json'), { 'content-type': 'application/json' }, 400, /not valid JSON/],
      [new Uint8Array([1, 2, 3]), { 'content-type': 'application/x-protobuf' }, 400, /snappy|PushRequest/],
      [compress(toBinary(LokiPushRequestSchema, create(LokiPushRequestSchema, { streams: [{ labels: 'app=x', entries: [] }] }))), { 'content-type': 'application/x-protobuf' }, 400, /invalid stream labels/],
      [new TextEncoder().encode('x'), { 'content-type': 'text/plain' }, 415, /unsupported Content-Type/],
    ];
    for (const [body, headers, status, message] of cases) {
      const res = await push(body, headers);
      const out = (await res.json()) as { status: string; error: string };
      expect({ status: res.status, envelope: out.status }).toEqual({ status, envelope: 'error' });
      expect(out.error).toMatch(message);
    }
    expect((await fetch(`${floe.otlpHttpUrl}/loki/api/v1/push`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': 'acme' }, body: '{}' })).status).toBe(401);
    // globex's key cannot push as acme, and globex sees none of acme's lines.
    expect((await push(new TextEncoder().encode('{"streams":[]}'), { 'content-type': 'application/json' }, { key: otherKey, tenant: 'acme' })).status).toBe(403);
    expect(await logql('{app="api"}', 'globex', otherKey)).toEqual([]);
  });
});
