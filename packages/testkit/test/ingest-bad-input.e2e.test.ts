import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { protoTraceExporter, sendSampleTrace, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Hostile and broken ingest requests get the documented status and a clear message, never a
 * 500 or a crash, and requests around them still land.
 */
describe('ingest bad input', () => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { acceptor: { max_body_bytes: 64 * 1024, max_decompressed_bytes: 256 * 1024 } } });
    key = (await floe.bootstrap('acme')).api_key;
    otherKey = (await floe.bootstrap('globex')).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const validBody = () =>
    Buffer.from(
      toBinary(
        ExportTraceServiceRequestSchema,
        create(ExportTraceServiceRequestSchema, {
          resourceSpans: [
            {
              resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: 'bad-input' } } }] },
              scopeSpans: [{ spans: [{ traceId: new Uint8Array(16).fill(7), spanId: new Uint8Array(8).fill(1), name: 'ok', startTimeUnixNano: BigInt(Date.now()) * 1_000_000n, endTimeUnixNano: BigInt(Date.now()) * 1_000_000n + 5n }] }],
            },
          ],
        }),
      ),
    );

  const post = (body: Uint8Array | string, headers: Record<string, string>) =>
    fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme', 'content-type': 'application/x-protobuf', ...headers } });

  it.each([
    ['garbage protobuf', Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x99, 0x01]), {}, 400, 'bad_data', /not a valid .*protobuf/],
    ['invalid JSON', '{"resourceSpans": [', { 'content-type': 'application/json' }, 400, 'bad_data', /not a valid OTLP JSON/],
    ['broken gzip', Buffer.from('definitely not gzip'), { 'content-encoding': 'gzip' }, 400, 'bad_data', /not valid gzip/],
    ['gzip bomb beyond the inflate cap', gzipSync(Buffer.alloc(2 * 1024 * 1024)), { 'content-encoding': 'gzip' }, 413, 'too_large', /inflates beyond/],
    ['oversized body', Buffer.alloc(100 * 1024, 1), {}, 413, 'too_large', /too large/],
    ['wrong content type', 'hello', { 'content-type': 'text/plain' }, 415, 'unsupported_media_type', /Content-Type/],
    ['unknown content encoding', Buffer.from('x'), { 'content-encoding': 'br' }, 415, 'unsupported_media_type', /Content-Encoding/],
    ['missing key', Buffer.alloc(0), { authorization: '' }, 401, 'unauthorized', /Authorization/],
    ['invalid key', Buffer.alloc(0), { authorization: 'Bearer floe_0000000000000000_nope' }, 401, 'unauthorized', /invalid or revoked/],
    ['missing tenant', Buffer.alloc(0), { 'x-tenant-id': '' }, 401, 'unauthorized', /X-Tenant-ID/],
  ] as const)('%s → %i %s', async (_name, body, headers, status, kind, message) => {
    const res = await post(body, headers as Record<string, string>);
    expect(res.status).toBe(status);
    // Every 401 names the scheme it wants (RFC 9110 §11.6.1).
    expect(res.headers.get('www-authenticate')).toBe(status === 401 ? 'Bearer realm="floe"' : null);
    const json = (await res.json()) as { status: string; errorType: string; error: string };
    expect(json.status).toBe('error');
    expect(json.errorType).toBe(kind);
    expect(json.error).toMatch(message);
  });

  it("a key of another tenant is 403, another dataset 403", async () => {
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: validBody(), headers: { authorization: `Bearer ${otherKey}`, 'x-tenant-id': 'acme', 'content-type': 'application/x-protobuf' } });
    expect(res.status).toBe(403);
    const ds = await post(validBody(), { 'x-dataset-id': 'nosuch' });
    expect(ds.status).toBe(403);
  });

  it('gRPC: garbage is INVALID_ARGUMENT, no key UNAUTHENTICATED, wrong tenant PERMISSION_DENIED, too big RESOURCE_EXHAUSTED', async () => {
    const client = new grpc.Client(floe.otlpGrpcAddress, grpc.credentials.createInsecure());
    const call = (body: Buffer, md: Record<string, string>) =>
      new Promise<{ code: number; details: string }>((resolve) => {
        const m = new grpc.Metadata();
        for (const [k, v] of Object.entries(md)) m.set(k, v);
        client.makeUnaryRequest('/opentelemetry.proto.collector.trace.v1.TraceService/Export', (b: Buffer) => b, (b: Buffer) => b, body, m, (err) =>
          resolve(err ? { code: err.code, details: err.details } : { code: 0, details: '' }),
        );
      });
    const auth = { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' };
    expect(await call(Buffer.from([0xff, 0xff, 0xff]), auth)).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect(await call(validBody(), { 'x-tenant-id': 'acme' })).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    expect(await call(validBody(), { authorization: `Bearer ${otherKey}`, 'x-tenant-id': 'acme' })).toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    expect((await call(Buffer.alloc(100 * 1024, 0), auth)).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(await call(validBody(), auth)).toEqual({ code: 0, details: '' });
    // X-Scope-OrgID names the tenant as X-Tenant-ID does; the key must still be that tenant's.
    expect(await call(validBody(), { authorization: `Bearer ${key}`, 'x-scope-orgid': 'acme' })).toEqual({ code: 0, details: '' });
    expect(await call(validBody(), { authorization: `Bearer ${otherKey}`, 'x-scope-orgid': 'acme' })).toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    client.close();
  });

  it('requests refused before any route (a garbage request line, a bad percent-escape, headers too large) are answered in the envelope', async () => {
    const raw = (text: string) =>
      new Promise<string>((resolve) => {
        const { hostname, port } = new URL(floe.otlpHttpUrl);
        const socket = connect(Number(port), hostname, () => socket.write(text));
        let answer = '';
        socket.on('data', (c: Buffer) => (answer += c.toString()));
        socket.on('close', () => resolve(answer));
        // A reset after the answer (headers still unread when the server closed) keeps what came.
        socket.on('error', () => resolve(answer));
      });
    const garbage = await raw('NOT A REQUEST\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4))).toEqual({ status: 'error', errorType: 'bad_data', error: 'malformed HTTP request' });
    const badUrl = await raw(`POST /v1/traces%ff HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    expect(badUrl).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(badUrl.slice(badUrl.indexOf('\r\n\r\n') + 4))).toEqual({ status: 'error', errorType: 'bad_data', error: "'/v1/traces%ff' is not a valid url component" });
    const huge = await raw(`POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4))).toEqual({ status: 'error', errorType: 'bad_data', error: 'request headers too large' });
  });

  it('rejects invalid spans as OTLP partial success and keeps the valid ones', async () => {
    const body = toBinary(
      ExportTraceServiceRequestSchema,
      create(ExportTraceServiceRequestSchema, {
        resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: new Uint8Array(3), spanId: new Uint8Array(8).fill(1), name: 'bad', startTimeUnixNano: 1n }] }] }],
      }),
    );
    const res = await post(Buffer.from(body), { 'content-type': 'application/x-protobuf' });
    expect(res.status).toBe(200);
    const json = await post(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'abcd', spanId: '0101010101010101', name: 'bad' }] }] }] }), { 'content-type': 'application/json' });
    expect(json.status).toBe(200);
    expect(await json.json()).toMatchObject({ partialSuccess: { rejectedSpans: '1' } });
    // Hex cut short (33 digits) is a bad id of its span, not a bad request.
    const odd = await post(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'a'.repeat(33), spanId: '0101010101010101', name: 'bad' }] }] }] }), { 'content-type': 'application/json' });
    expect(odd.status).toBe(200);
    expect(await odd.json()).toMatchObject({ partialSuccess: { rejectedSpans: '1' } });
  });

  it('the requests around the bad ones still land', async () => {
    await Promise.all([post(Buffer.from([1, 2, 3]), {}), post('{', { 'content-type': 'application/json' })]);
    const sent = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, { apiKey: key, tenant: 'acme' }), 'after-bad');
    await waitFor('trace after bad input', async () => {
      const res = await fetch(`${floe.routerUrl}/tracequery/api/traces/${sent.traceId}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' } });
      return res.status === 200 || undefined;
    });
  });
});
