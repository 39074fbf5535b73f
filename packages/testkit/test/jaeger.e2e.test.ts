import { createRequire } from 'node:module';
import jaeger from 'jaeger-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloe, waitFor, type FloeMode, type FloeUnderTest } from '../src/index.ts';

/**
 * Jaeger's thrift_http API end to end, in both modes, with the real Jaeger client for Node
 * (jaeger-client: its HTTPSender posts Thrift binary batches to /api/traces, Basic auth from its
 * username/password): a server span with tags of every type jaeger-client sends, an error and a
 * log, a CHILD_OF child and a FOLLOWS_FROM span, and through the same sender a hand-made span with
 * a LONG tag (jaeger-client sends every number as a DOUBLE) — all come back from the Tempo
 * trace-by-id API with their service, names, parents, kinds, typed tags, status and event. A body
 * that is not a Batch, another content type and a missing key get the documented statuses.
 */

type Attr = { key: string; value: Record<string, unknown> };
type TempoSpan = { spanID: string; parentSpanID?: string; name: string; kind: string; serviceName: string; status?: { code?: string; message?: string }; attributes?: Attr[]; events?: Array<{ name: string; attributes?: Attr[] }>; links?: Array<{ traceId: string; spanId: string; attributes?: Attr[] }> };
type TempoTrace = { batches: Array<{ resource: { attributes: Attr[] }; scopeSpans: Array<{ spans: TempoSpan[] }> }> };

/** jaeger-client's HTTP sender (not in its index, nor its types): what its RemoteReporter uses. */
interface HttpSender {
  setProcess(process: { serviceName: string; tags: unknown[] }): void;
  append(span: unknown, callback?: (n: number, err?: string) => void): void;
  flush(callback: (n: number, err?: string) => void): void;
  close(): void;
}
const HTTPSender = (createRequire(import.meta.url)('jaeger-client/dist/src/reporters/http_sender.js') as { default: new (o: { endpoint: string; username: string; password: string }) => HttpSender }).default;

const i64 = (v: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(v);
  return b;
};

describe.each<FloeMode>(['embedded', 'cluster'])('Jaeger thrift_http ingest (%s)', (mode) => {
  let floe: FloeUnderTest;
  let key: string;
  let traceId: string;
  const ids: Record<string, string> = {};
  const LONG_TRACE = 0x6e0c63257de34c92n;

  const post = (body: Uint8Array | string, headers: Record<string, string>, withKey = true) =>
    fetch(`${floe.otlpHttpUrl}/api/traces`, { method: 'POST', body, headers: { 'x-tenant-id': 'acme', ...(withKey ? { authorization: `Bearer ${key}` } : {}), ...headers } });
  const traceById = async (id: string, spans: number) =>
    waitFor(`the Jaeger trace ${id}`, async () => {
      const res = await fetch(`${floe.routerUrl}/tracequery/api/traces/${id}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });
      if (res.status !== 200) return undefined;
      const body = (await res.json()) as TempoTrace;
      return body.batches.flatMap((b) => b.scopeSpans.flatMap((s) => s.spans)).length === spans ? body : undefined;
    }, 60_000, 250);

  beforeAll(async () => {
    floe = await startFloe({ mode });
    key = (await floe.bootstrap('acme')).api_key;

    // The tracer as an application sets it up, reporting straight to the collector endpoint.
    const errors: string[] = [];
    const tracer = jaeger.initTracer(
      { serviceName: 'jaeger-shop', sampler: { type: 'const', param: 1 }, reporter: { collectorEndpoint: `${floe.otlpHttpUrl}/api/traces`, username: 'acme', password: key } },
      { logger: { info: () => {}, error: (m) => errors.push(m) }, tags: { 'deployment.environment': 'e2e' }, traceId128bit: true },
    );
    const root = tracer.startSpan('GET /checkout', { tags: { 'span.kind': 'server', 'http.method': 'GET', 'cart.total': 42.5, 'cart.cached': false, 'cart.token': Buffer.from([1, 2, 255]) } });
    root.log({ event: 'cache miss', 'cache.key': 'cart:7' });
    root.setTag('error', true);
    root.setTag('http.status_message', 'Service Unavailable');
    const child = tracer.startSpan('SELECT carts', { childOf: root, tags: { 'span.kind': 'client', 'db.system': 'postgresql' } });
    child.finish();
    const later = tracer.startSpan('send receipt', { references: [jaeger.opentracing.followsFrom(root.context())] });
    later.finish();
    root.finish();
    const ctx = (s: typeof root) => s.context() as unknown as { toTraceId(): string; toSpanId(): string };
    traceId = ctx(root).toTraceId().padStart(32, '0');
    expect(traceId.startsWith('0000000000000000')).toBe(false);
    ids.root = ctx(root).toSpanId().padStart(16, '0');
    ids.child = ctx(child).toSpanId().padStart(16, '0');
    ids.later = ctx(later).toSpanId().padStart(16, '0');
    await new Promise<void>((resolve) => tracer.close(resolve));
    expect(errors).toEqual([]);

    // A LONG tag and a 64-bit trace id, through the same HTTP sender and Thrift encoder.
    const sender = new HTTPSender({ endpoint: `${floe.otlpHttpUrl}/api/traces`, username: 'acme', password: key });
    sender.setProcess({ serviceName: 'jaeger-batch', tags: [{ key: 'hostname', vType: 'STRING', vStr: 'worker-3' }] });
    const nowUs = BigInt(Date.now()) * 1000n;
    sender.append({
      traceIdLow: i64(LONG_TRACE),
      traceIdHigh: i64(0n),
      spanId: i64(0x1an),
      parentSpanId: i64(0n),
      operationName: 'nightly job',
      references: [],
      flags: 1,
      startTime: i64(nowUs),
      duration: i64(2500n),
      tags: [
        { key: 'job.items', vType: 'LONG', vLong: i64(-9_007_199_254_740_993n) },
        { key: 'otel.status_code', vType: 'STRING', vStr: 'OK' },
      ],
      logs: [],
    });
    const sent = await new Promise<string | undefined>((resolve) => sender.flush((_n, err) => resolve(err)));
    sender.close();
    expect(sent).toBeUndefined();
  }, 180_000);
  afterAll(async () => {
    await floe?.stop();
  });

  it('come back from the Tempo API with service, names, parents, typed tags, error status and log event', async () => {
    const trace = await traceById(traceId, 3);
    const resource = Object.fromEntries(trace.batches[0]!.resource.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    expect(resource).toMatchObject({ 'service.name': 'jaeger-shop', 'deployment.environment': 'e2e', 'opencensus.exporterversion': 'Jaeger-Node-3.19.0' });
    expect(resource['host.name']).toEqual(expect.any(String));
    const spans = trace.batches.flatMap((b) => b.scopeSpans.flatMap((s) => s.spans));
    const by = (name: string) => spans.find((s) => s.name === name)!;
    const root = by('GET /checkout');
    const child = by('SELECT carts');
    const later = by('send receipt');
    expect(spans.every((s) => s.serviceName === 'jaeger-shop')).toBe(true);

    expect(root).toMatchObject({ spanID: ids.root, kind: 'SPAN_KIND_SERVER', status: { code: 'STATUS_CODE_ERROR', message: 'Service Unavailable' } });
    expect(root.parentSpanID ?? '').toBe('');
    expect(root.attributes).toEqual(
      expect.arrayContaining([
        { key: 'http.method', value: { stringValue: 'GET' } },
        { key: 'cart.total', value: { doubleValue: 42.5 } },
        { key: 'cart.cached', value: { boolValue: false } },
        // Bytes are kept as base64 text (the tables have no bytes map).
        { key: 'cart.token', value: { stringValue: 'AQL/' } },
      ]),
    );
    expect(root.attributes!.map((a) => a.key)).not.toContain('error');
    expect(root.attributes!.map((a) => a.key)).not.toContain('span.kind');
    expect(root.events).toEqual([expect.objectContaining({ name: 'cache miss', attributes: [{ key: 'cache.key', value: { stringValue: 'cart:7' } }] })]);

    expect(child).toMatchObject({ spanID: ids.child, parentSpanID: ids.root, kind: 'SPAN_KIND_CLIENT' });
    expect(child.attributes).toEqual(expect.arrayContaining([{ key: 'db.system', value: { stringValue: 'postgresql' } }]));
    // FOLLOWS_FROM: the referenced span is the parent and the reference stays a link.
    expect(later).toMatchObject({ spanID: ids.later, parentSpanID: ids.root });
    const b64hex = (v: unknown) => Buffer.from(String(v), 'base64').toString('hex');
    expect(later.links!.map((l) => [b64hex(l.traceId), b64hex(l.spanId), l.attributes])).toEqual([[traceId, ids.root, [{ key: 'opentracing.ref_type', value: { stringValue: 'follows_from' } }]]]);
    expect(later.status?.code ?? 'STATUS_CODE_UNSET').toBe('STATUS_CODE_UNSET');
  });

  it('keep LONG tags and 64-bit trace ids', async () => {
    const id = LONG_TRACE.toString(16).padStart(32, '0');
    const trace = await traceById(id, 1);
    const span = trace.batches[0]!.scopeSpans[0]!.spans[0]!;
    expect(span).toMatchObject({ spanID: '000000000000001a', name: 'nightly job', serviceName: 'jaeger-batch', status: { code: 'STATUS_CODE_OK' } });
    expect(span.attributes).toEqual([{ key: 'job.items', value: { intValue: '-9007199254740993' } }]);
    expect(trace.batches[0]!.resource.attributes).toEqual(expect.arrayContaining([{ key: 'host.name', value: { stringValue: 'worker-3' } }]));
  });

  it('refuses bodies that are not a Batch, other content types and missing credentials', async () => {
    for (const [body, headers, status, message] of [
      [Uint8Array.from([15, 0, 2, 12, 0x7f, 0xff, 0xff, 0xff]), { 'content-type': 'application/x-thrift' }, 400, /not valid Thrift binary protocol: list of 2147483647/],
      [Uint8Array.from([12, 0, 1, 0, 0]), { 'content-type': 'application/vnd.apache.thrift.binary' }, 400, /process\.serviceName is required/],
      ['[]', { 'content-type': 'application/json' }, 415, /application\/x-thrift/],
    ] as const) {
      const res = await post(body, headers);
      expect(res.status).toBe(status);
      expect(((await res.json()) as { error: string }).error).toMatch(message);
    }
    expect((await post(Uint8Array.from([0]), { 'content-type': 'application/x-thrift' }, false)).status).toBe(401);
  });
});
