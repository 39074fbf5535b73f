import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { protoLogExporter, protoTraceExporter, sendSampleLogs, sendSampleTrace, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * deploy/grafana's data sources against a running Floe, read as Grafana reads the file (its
 * environment interpolated) and called as Grafana's data sources call: each one's "Save & test"
 * check with its URL and headers, and the links between them (trace → logs with the provisioned
 * query, log line → trace by its trace_id metadata, the profile type of trace → profiles).
 */
interface DataSource {
  name: string;
  type: string;
  uid: string;
  url: string;
  jsonData: Record<string, any>;
  secureJsonData: Record<string, string>;
}

const FILE = join(import.meta.dirname, '../../../deploy/grafana/provisioning/datasources/floe.yaml');

/** Grafana's provisioning interpolation: $VAR and ${VAR} from the environment, $$ a literal $. */
const interpolate = (text: string, env: Record<string, string>) => text.replace(/\$\$|\$\{(\w+)\}|\$(\w+)/g, (m, a?: string, b?: string) => (m === '$$' ? '$' : (env[(a ?? b)!] ?? '')));

/** The HTTP headers a data source sends: httpHeaderNameN with httpHeaderValueN. */
function headersOf(ds: DataSource): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, name] of Object.entries(ds.jsonData)) {
    const n = /^httpHeaderName(\d+)$/.exec(k)?.[1];
    if (n) out[String(name)] = ds.secureJsonData[`httpHeaderValue${n}`]!;
  }
  return out;
}

describe('Grafana provisioning (deploy/grafana)', () => {
  let floe: FloeUnderTest;
  let sources: Map<string, DataSource>;
  const tenant = 'grafana-team';
  const byType = (type: string) => [...sources.values()].find((d) => d.type === type)!;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    const key = (await floe.bootstrap(tenant)).api_key;
    const env = { FLOE_URL: floe.routerUrl, FLOE_TENANT: tenant, FLOE_API_KEY: key };
    const file = parse(interpolate(readFileSync(FILE, 'utf8'), env)) as { apiVersion: number; datasources: DataSource[] };
    expect(file.apiVersion).toBe(1);
    sources = new Map(file.datasources.map((d) => [d.uid, d]));
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('provisions the four data sources, each linked only to the others', () => {
    expect([...sources.values()].map((d) => d.type).sort()).toEqual(['grafana-pyroscope-datasource', 'loki', 'prometheus', 'tempo']);
    const tempo = byType('tempo').jsonData;
    const links: Array<[string, string]> = [
      [tempo.serviceMap.datasourceUid, 'prometheus'],
      [tempo.tracesToLogsV2.datasourceUid, 'loki'],
      [tempo.tracesToProfiles.datasourceUid, 'grafana-pyroscope-datasource'],
      ...(byType('loki').jsonData.derivedFields as Array<{ datasourceUid: string }>).map((f): [string, string] => [f.datasourceUid, 'tempo']),
      ...(byType('prometheus').jsonData.exemplarTraceIdDestinations as Array<{ datasourceUid: string }>).map((f): [string, string] => [f.datasourceUid, 'tempo']),
    ];
    for (const [uid, type] of links) expect(sources.get(uid)?.type, uid).toBe(type);
    for (const d of sources.values()) expect(headersOf(d)).toEqual({ Authorization: expect.stringMatching(/^Bearer floe_/), 'X-Tenant-ID': tenant });
  });

  it("answers each data source's Save & test as Grafana asks it", async () => {
    const tempo = byType('tempo');
    const echo = await fetch(`${tempo.url}/api/echo`, { headers: headersOf(tempo) });
    expect([echo.status, await echo.text()]).toEqual([200, 'echo']);

    const loki = byType('loki');
    const vector = await fetch(`${loki.url}/loki/api/v1/query?${new URLSearchParams({ query: 'vector(1)+vector(1)' })}`, { headers: headersOf(loki) });
    expect(vector.status).toBe(200);
    expect(await vector.json()).toMatchObject({ status: 'success', data: { resultType: 'vector', result: [{ value: [expect.any(Number), '2'] }] } });

    // Prometheus's check is `1+1` (POST, as provisioned); as Mimir, Grafana also reads buildinfo for the ruler.
    const prom = byType('prometheus');
    expect(prom.jsonData.httpMethod).toBe('POST');
    const scalar = await fetch(`${prom.url}/api/v1/query`, { method: 'POST', headers: { ...headersOf(prom), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ query: '1+1', time: String(Date.now() / 1000) }) });
    expect(scalar.status).toBe(200);
    expect(await scalar.json()).toMatchObject({ status: 'success', data: { resultType: 'scalar', result: [expect.any(Number), '2'] } });
    const build = await fetch(`${prom.url}/api/v1/status/buildinfo`, { headers: headersOf(prom) });
    expect(await build.json()).toMatchObject({ status: 'success', data: { features: { ruler_config_api: 'true' } } });

    const pyro = byType('grafana-pyroscope-datasource');
    const types = await fetch(`${pyro.url}/querier.v1.QuerierService/ProfileTypes`, {
      method: 'POST',
      headers: { ...headersOf(pyro), 'content-type': 'application/json', 'connect-protocol-version': '1' },
      body: JSON.stringify({ start: String(Date.now() - 3_600_000), end: String(Date.now()) }),
    });
    expect(types.status).toBe(200);
    expect(await types.json()).toEqual({});

    // With another key the same data sources are refused, not answered.
    const wrong = await fetch(`${loki.url}/loki/api/v1/query?${new URLSearchParams({ query: 'vector(1)+vector(1)' })}`, { headers: { ...headersOf(loki), Authorization: 'Bearer floe_not-a-key' } });
    expect(wrong.status).toBe(401);
  });

  it("follows the links: a trace's logs by the provisioned query, a log line's trace by its trace_id", async () => {
    const tempo = byType('tempo');
    const loki = byType('loki');
    const headers = headersOf(tempo);
    const creds = { apiKey: headers.Authorization!.slice('Bearer '.length), tenant };
    const service = 'grafana-shop';
    const logs = await sendSampleLogs(protoLogExporter(floe.otlpHttpUrl, creds), service);
    const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, creds), service);
    const inSpan = logs.records.filter((r) => r.traceId !== null);
    expect(inSpan.length).toBeGreaterThan(0);

    // Trace → logs: Grafana fills the provisioned query with the span's tags and trace id.
    const link = tempo.jsonData.tracesToLogsV2;
    const tags = (link.tags as Array<{ key: string; value: string }>).map((t) => `${t.value}="${service}"`).join(', ');
    const query = String(link.query).replace('${__tags}', tags).replace('${__trace.traceId}', inSpan[0]!.traceId!);
    // Unix nanoseconds, as Grafana sends them.
    const range = { start: `${BigInt(Date.now() - 600_000) * 1_000_000n}`, end: `${BigInt(Date.now() + 60_000) * 1_000_000n}` };
    const found = await waitFor('the span\'s logs', async () => {
      const res = await fetch(`${loki.url}/loki/api/v1/query_range?${new URLSearchParams({ query, ...range, limit: '100' })}`, { headers: { ...headersOf(loki), 'x-loki-response-encoding-flags': 'categorize-labels' } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { result: Array<{ values: Array<[string, string, { structuredMetadata?: Record<string, string> }]> }> } };
      const lines = body.data.result.flatMap((s) => s.values);
      return lines.length === inSpan.length ? lines : undefined;
    }, 30_000, 250);
    expect(found.map(([, line]) => line).sort()).toEqual(inSpan.map((r) => r.body).sort());

    // Log line → trace: the derived field reads the line's trace_id metadata and opens it in Tempo.
    const field = (loki.jsonData.derivedFields as Array<{ matcherType: string; matcherRegex: string; url: string }>)[0]!;
    expect([field.matcherType, field.url]).toEqual(['label', '${__value.raw}']);
    for (const [, , meta] of found) expect(meta.structuredMetadata?.[field.matcherRegex]).toBe(inSpan[0]!.traceId);
    const trace = await waitFor('the trace through the provisioned Tempo URL', async () => {
      const res = await fetch(`${tempo.url}/api/v2/traces/${sent.traceId}`, { headers });
      return res.status === 200 ? ((await res.json()) as { trace: { resourceSpans: unknown[] } }) : undefined;
    }, 30_000, 250);
    expect(trace.trace.resourceSpans.length).toBeGreaterThan(0);
  });
});
