import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Zipkin's v2 span API end to end (embedded; the route is the acceptor's alone): spans as Envoy
 * and Brave post them, gzip too, come back from the Tempo trace-by-id API with their services,
 * parent, kind, tags, error status and annotations; malformed bodies, protobuf and a missing key
 * get the documented statuses.
 */
describe('Zipkin v2 spans (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const startUs = (Date.now() - 60_000) * 1000;
  const TRACE = '5b8aa5a2d2c872e8321cf37308d69df2';
  const spans = [
    { traceId: TRACE, id: '051581bf3cb55c13', name: 'get /checkout', kind: 'SERVER', timestamp: startUs, duration: 5000, localEndpoint: { serviceName: 'edge-proxy', ipv4: '10.1.0.7' }, tags: { 'http.status_code': '503', error: 'upstream reset' }, annotations: [{ timestamp: startUs + 100, value: 'upstream connect' }] },
    { traceId: TRACE, id: '5fb397be34d26b51', parentId: '051581bf3cb55c13', name: 'post /pay', kind: 'CLIENT', timestamp: startUs + 200, duration: 3000, localEndpoint: { serviceName: 'checkout' }, remoteEndpoint: { serviceName: 'payments', ipv4: '10.1.0.9', port: 8080 } },
  ];
  const post = (body: Uint8Array | string, headers: Record<string, string>, withKey = true) =>
    fetch(`${floe.otlpHttpUrl}/api/v2/spans`, { method: 'POST', body, headers: { 'x-tenant-id': 'acme', ...(withKey ? { authorization: `Bearer ${key}` } : {}), ...headers } });

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap('acme')).api_key;
    expect((await post(JSON.stringify(spans.slice(0, 1)), { 'content-type': 'application/json' })).status).toBe(202);
    expect((await post(gzipSync(JSON.stringify(spans.slice(1))), { 'content-type': 'application/json', 'content-encoding': 'gzip' })).status).toBe(202);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('come back whole from the trace-by-id API', async () => {
    type Trace = { batches: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }; scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }> };
    const trace = await waitFor('the Zipkin trace', async () => {
      const res = await fetch(`${floe.routerUrl}/tracequery/api/traces/${TRACE}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });
      if (res.status !== 200) return undefined;
      const body = (await res.json()) as Trace;
      return body.batches.flatMap((b) => b.scopeSpans.flatMap((s) => s.spans)).length === 2 ? body : undefined;
    }, 30_000, 200);
    const all = trace.batches.flatMap((b) => b.scopeSpans.flatMap((s) => s.spans));
    const edge = all.find((s) => s.name === 'get /checkout')!;
    const pay = all.find((s) => s.name === 'post /pay')!;
    expect(edge).toMatchObject({ spanID: '051581bf3cb55c13', kind: 'SPAN_KIND_SERVER', serviceName: 'edge-proxy', durationNanos: '5000000', status: { code: 'STATUS_CODE_ERROR', message: 'upstream reset' } });
    expect(edge.attributes).toEqual(expect.arrayContaining([{ key: 'http.status_code', value: { stringValue: '503' } }, { key: 'network.local.address', value: { stringValue: '10.1.0.7' } }]));
    expect((edge.events as Array<{ name: string }>).map((e) => e.name)).toEqual(['upstream connect']);
    expect(pay).toMatchObject({ parentSpanID: '051581bf3cb55c13', kind: 'SPAN_KIND_CLIENT', serviceName: 'checkout' });
    expect(pay.attributes).toEqual(expect.arrayContaining([{ key: 'peer.service', value: { stringValue: 'payments' } }, { key: 'network.peer.port', value: { intValue: '8080' } }]));
  });

  it('refuses malformed bodies, protobuf and missing credentials', async () => {
    for (const [body, headers, status, message] of [
      ['{"not":"an array"}', { 'content-type': 'application/json' }, 400, /JSON array of Zipkin v2 spans/],
      ['[{"traceId":"zz","id":"051581bf3cb55c13"}]', { 'content-type': 'application/json' }, 400, /spans\[0\]\.traceId/],
      ['x', { 'content-type': 'application/x-protobuf' }, 415, /application\/json/],
    ] as const) {
      const res = await post(body, headers);
      expect(res.status).toBe(status);
      expect(((await res.json()) as { error: string }).error).toMatch(message);
    }
    expect((await post('[]', { 'content-type': 'application/json' }, false)).status).toBe(401);
  });
});
