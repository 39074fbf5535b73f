import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protoTraceExporter, sendSampleTrace, startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * Starts an OTLP/JSON POST, declaring `length` bytes (or chunked, without a length), and sends only
 * its headers and first byte; `finish` sends the rest, `closed` is the whole answer once the
 * connection is closed (empty when the acceptor closed it unanswered).
 */
async function startUpload(
  url: string,
  key: string,
  tenant: string,
  open: Array<{ destroy(): void }>,
  o: { length: number } | { chunked: true },
): Promise<{ finish(): Promise<string>; closed: Promise<string> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  open.push(socket);
  let answer = '';
  socket.on('data', (c: Buffer) => (answer += c.toString()));
  socket.on('error', () => {});
  const closed = new Promise<string>((r) => socket.on('close', () => r(answer)));
  await new Promise<void>((r, reject) => socket.once('connect', r).once('error', reject));
  const framing = 'length' in o ? `Content-Length: ${o.length}` : 'Transfer-Encoding: chunked';
  socket.write(`POST /v1/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Tenant-ID: ${tenant}\r\nContent-Type: application/json\r\n${framing}\r\nConnection: close\r\n\r\n${'length' in o ? '{' : '1\r\n{\r\n'}`);
  // Until the acceptor has seen the headers, the upload holds nothing.
  await new Promise((r) => setTimeout(r, 200));
  return {
    closed,
    finish: () => {
      const rest = '"resourceSpans":[]}';
      socket.write('length' in o ? rest.padEnd(o.length - 1, ' ') : `${rest.length.toString(16)}\r\n${rest}\r\n0\r\n\r\n`);
      return closed;
    },
  };
}

/** One raw OTLP/gRPC TraceService/Export (an empty request) as `tenant`: its status code. */
function grpcExportCodeAt(address: string, key: string, tenant: string): Promise<number> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${key}`);
  metadata.set('x-tenant-id', tenant);
  return new Promise((resolve) => {
    client.makeUnaryRequest('/opentelemetry.proto.collector.trace.v1.TraceService/Export', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), metadata, (err) => {
      client.close();
      resolve(err ? err.code : 0);
    });
  });
}

/**
 * acceptor.max_inflight_requests and max_inflight_bytes: an upload still arriving holds its room
 * from its first byte (its declared length), so while the room is taken a further request, on
 * either port, is shed with 503 (UNAVAILABLE over gRPC) and Retry-After; the held uploads still
 * succeed once their bodies are in, and the room is free again afterwards.
 */
describe('acceptor in-flight limits (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'surge';
  const open: Array<{ destroy(): void }> = [];

  beforeAll(async () => {
    // One tenant may take the whole room here (the share has its own suite below).
    floe = await startFloe({ mode: 'embedded', config: { acceptor: { max_inflight_requests: 2, max_inflight_bytes: 64 * 1024, max_inflight_tenant_share: 1 } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    for (const s of open) s.destroy();
    await floe?.stop();
  });

  const slowUpload = (length: number) => startUpload(floe.otlpHttpUrl, key, tenant, open, { length });

  const post = (body: string) =>
    fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json' } });

  const grpcExportCode = () => grpcExportCodeAt(floe.otlpGrpcAddress, key, tenant);

  it('sheds requests on both ports while max_inflight_requests uploads are arriving, then takes them again', async () => {
    const held = [await slowUpload(200), await slowUpload(200)];
    const shed = await post('{"resourceSpans":[]}');
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await shed.json()).toMatchObject({ status: 'error', errorType: 'unavailable', error: expect.stringContaining('acceptor.max_inflight_requests') });
    expect(await grpcExportCode()).toBe(grpc.status.UNAVAILABLE);
    // The held uploads complete and are acknowledged; then there is room again.
    for (const h of held) expect(await h.finish()).toMatch(/^HTTP\/1\.1 200/);
    expect(await grpcExportCode()).toBe(grpc.status.OK);
    expect((await post('{"resourceSpans":[]}')).status).toBe(200);
    expect((await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), 'after')).spanIds).toHaveLength(3);
  });

  it('sheds a request whose body would pass max_inflight_bytes beside one in flight; a smaller one still fits', async () => {
    const held = await slowUpload(60_000);
    const shed = await post(JSON.stringify({ resourceSpans: [], pad: 'x'.repeat(10_000) }));
    expect(shed.status).toBe(503);
    expect(await shed.json()).toMatchObject({ error: expect.stringContaining('acceptor.max_inflight_bytes') });
    expect((await post('{"resourceSpans":[]}')).status).toBe(200);
    expect(await held.finish()).toMatch(/^HTTP\/1\.1 200/);
    // Alone, a body over max_inflight_bytes is taken: one request may always be max_body_bytes.
    expect((await post(JSON.stringify({ resourceSpans: [], pad: 'x'.repeat(100_000) }))).status).toBe(200);
  });

  it('counts what a gzip body inflates to: a small compressed body that inflates past the room beside one in flight is shed, and taken alone', async () => {
    // 40 KB of JSON in a few hundred bytes of gzip: as sent it fits beside the held upload, inflated it does not.
    const inflating = gzipSync(JSON.stringify({ resourceSpans: [], pad: 'x'.repeat(40_000) }));
    expect(inflating.length).toBeLessThan(1024);
    const postGzip = () =>
      fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: inflating, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    const held = await slowUpload(30_000);
    const shed = await postGzip();
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await shed.json()).toEqual({ status: 'error', errorType: 'unavailable', error: expect.stringMatching(/inflating to 40\d{3} bytes .*acceptor\.max_inflight_bytes/) });
    expect(await held.finish()).toMatch(/^HTTP\/1\.1 200/);
    // Alone it is taken, and what it inflated to is given back with the body: two fit in turn.
    expect((await postGzip()).status).toBe(200);
    expect((await postGzip()).status).toBe(200);
    expect((await post('{"resourceSpans":[]}')).status).toBe(200);
  });
});

/**
 * acceptor.max_inflight_tenant_share: once a request's key names its tenant (before its body is
 * read), the tenant may hold only its share of the room; past it that tenant is shed on both ports
 * while another tenant's requests are taken, and it is taken again once its uploads are in.
 */
describe('acceptor in-flight share per tenant (embedded)', () => {
  let floe: FloeUnderTest;
  const keys: Record<string, string> = {};
  const open: Array<{ destroy(): void }> = [];

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { acceptor: { max_inflight_requests: 4, max_inflight_bytes: 64 * 1024, max_inflight_tenant_share: 0.5 } } });
    for (const t of ['greedy', 'polite']) keys[t] = (await floe.bootstrap(t)).api_key;
  });
  afterAll(async () => {
    for (const s of open) s.destroy();
    await floe?.stop();
  });

  const post = (tenant: string) =>
    fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: '{"resourceSpans":[]}', headers: { authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant, 'content-type': 'application/json' } });

  const grpcExportCode = (tenant: string) => grpcExportCodeAt(floe.otlpGrpcAddress, keys[tenant]!, tenant);

  it("sheds a tenant holding its share of requests, on both ports, while another tenant's requests are taken", async () => {
    const held = [await startUpload(floe.otlpHttpUrl, keys.greedy!, 'greedy', open, { length: 200 }), await startUpload(floe.otlpHttpUrl, keys.greedy!, 'greedy', open, { length: 200 })];
    const shed = await post('greedy');
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await shed.json()).toEqual({ status: 'error', errorType: 'unavailable', error: expect.stringMatching(/^tenant greedy already has 2 requests in flight on this acceptor, its share of acceptor\.max_inflight_requests/) });
    expect(await grpcExportCode('greedy')).toBe(grpc.status.UNAVAILABLE);
    // Two of the four requests are free: the other tenant is not held up.
    expect((await post('polite')).status).toBe(200);
    expect(await grpcExportCode('polite')).toBe(grpc.status.OK);
    for (const h of held) expect(await h.finish()).toMatch(/^HTTP\/1\.1 200/);
    expect((await post('greedy')).status).toBe(200);
    expect(await grpcExportCode('greedy')).toBe(grpc.status.OK);
  });

  it('sheds a tenant past its share of bytes; its first request is always taken', async () => {
    // 40 KB declared: over the tenant's 32 KB share, but its first request in flight.
    const big = await startUpload(floe.otlpHttpUrl, keys.greedy!, 'greedy', open, { length: 40_000 });
    const shed = await post('greedy');
    expect(shed.status).toBe(503);
    expect(await shed.json()).toMatchObject({ error: expect.stringMatching(/tenant greedy already holds 40000 bytes .*share of acceptor\.max_inflight_bytes \(32768/) });
    expect((await post('polite')).status).toBe(200);
    expect(await big.finish()).toMatch(/^HTTP\/1\.1 200/);
    expect((await post('greedy')).status).toBe(200);
  });
});

/**
 * acceptor.read_timeout: an upload that stalls has its connection closed once the timeout passes,
 * which frees its room; a chunked upload (no declared length) holds max_body_bytes meanwhile.
 */
describe('acceptor read timeout and chunked uploads (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'stalls';
  const open: Array<{ destroy(): void }> = [];

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { acceptor: { max_inflight_requests: 2, max_inflight_bytes: 64 * 1024, max_body_bytes: 1024 * 1024, read_timeout: '3s', max_inflight_tenant_share: 1 } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    for (const s of open) s.destroy();
    await floe?.stop();
  });

  const post = (body: string) =>
    fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json' } });

  it('closes an upload that stalls past read_timeout, unanswered, and gives its room back', async () => {
    const stalled = await startUpload(floe.otlpHttpUrl, key, tenant, open, { length: 200 });
    const other = await startUpload(floe.otlpHttpUrl, key, tenant, open, { length: 200 });
    expect((await post('{"resourceSpans":[]}')).status).toBe(503);
    expect(await other.finish()).toMatch(/^HTTP\/1\.1 200/);
    expect(await stalled.closed).toBe('');
    expect((await post('{"resourceSpans":[]}')).status).toBe(200);
  });

  it('counts a chunked upload as max_body_bytes while it arrives', async () => {
    const chunked = await startUpload(floe.otlpHttpUrl, key, tenant, open, { chunked: true });
    const shed = await post('{"resourceSpans":[]}');
    expect(shed.status).toBe(503);
    expect(await shed.json()).toMatchObject({ error: expect.stringContaining('acceptor.max_inflight_bytes') });
    expect(await chunked.finish()).toMatch(/^HTTP\/1\.1 200/);
    expect((await post('{"resourceSpans":[]}')).status).toBe(200);
  });
});

/** At stop, an upload still arriving is cut (nothing of it was acknowledged) instead of being awaited for up to read_timeout. */
describe('acceptor stop with an upload still arriving (embedded)', () => {
  it('closes the upload unanswered and stops, with read_timeout far away', async () => {
    const floe = await startFloe({ mode: 'embedded', config: { acceptor: { read_timeout: '10m' } } });
    const tenant = 'stopping';
    const open: Array<{ destroy(): void }> = [];
    try {
      const key = (await floe.bootstrap(tenant)).api_key;
      const held = await startUpload(floe.otlpHttpUrl, key, tenant, open, { length: 500 });
      await floe.stop();
      expect(await held.closed).toBe('');
    } finally {
      for (const s of open) s.destroy();
    }
  });
});
