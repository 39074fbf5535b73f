import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protoTraceExporter, sendSampleTrace, startFloe, type FloeUnderTest } from '../src/index.ts';

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
    floe = await startFloe({ mode: 'embedded', config: { acceptor: { max_inflight_requests: 2, max_inflight_bytes: 64 * 1024 } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    for (const s of open) s.destroy();
    await floe?.stop();
  });

  /** Starts an OTLP/JSON POST declaring `length` bytes and sends only its headers and first byte. */
  async function slowUpload(length: number): Promise<{ finish(): Promise<string> }> {
    const { hostname, port } = new URL(floe.otlpHttpUrl);
    const socket = connect(Number(port), hostname);
    open.push(socket);
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    const closed = new Promise<string>((r) => socket.on('close', () => r(answer)));
    await new Promise<void>((r, reject) => socket.once('connect', r).once('error', reject));
    socket.write(`POST /v1/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Tenant-ID: ${tenant}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n{`);
    // Until the acceptor has seen the headers, the upload holds nothing.
    await new Promise((r) => setTimeout(r, 200));
    return {
      finish: () => {
        socket.write('"resourceSpans":[]}'.padEnd(length - 1, ' '));
        return closed;
      },
    };
  }

  const post = (body: string) =>
    fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json' } });

  /** One raw OTLP/gRPC TraceService/Export (an empty request): its status code. */
  function grpcExportCode(): Promise<number> {
    const client = new grpc.Client(floe.otlpGrpcAddress, grpc.credentials.createInsecure());
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
});
