import { randomBytes } from 'node:crypto';
import { connect, type ClientHttp2Session } from 'node:http2';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportTraceServiceRequestSchema, ExportTraceServiceResponseSchema, create, fromBinary, toBinary } from '@floe/proto';
import { startFloe, tenantSql, type FloeUnderTest } from '../src/index.ts';

/** One HTTP/2 request on `session`: its status, headers and body. */
function h2Post(session: ClientHttp2Session, path: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', ':path': path, ...headers });
    const chunks: Buffer[] = [];
    let status = 0;
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve({ status, body: Buffer.concat(chunks) }));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * acceptor.http2: the OTLP/HTTP port also speaks HTTP/2 (prior knowledge in cleartext; ALPN with
 * TLS is in tls.e2e), so a client sends many exports over one connection at once, with the same
 * answers, limits and stored rows as over HTTP/1.1.
 */
describe('OTLP/HTTP over HTTP/2 (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'h2-co';
  const { sql, rowsOf } = tenantSql(
    () => floe.flightAddress,
    () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': tenant }),
  );

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { acceptor: { max_body_bytes: 256 * 1024, read_timeout: '2s', max_inflight_requests: 22, max_inflight_tenant_share: 1 } } });
    key = (await floe.bootstrap(tenant)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const exportOf = (service: string, spans: number): Buffer => {
    const now = BigInt(Date.now()) * 1_000_000n;
    const traceId = randomBytes(16);
    const req = create(ExportTraceServiceRequestSchema, {
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: service } } }] },
          scopeSpans: [{ spans: Array.from({ length: spans }, (_, i) => ({ traceId, spanId: randomBytes(8), name: `op-${i}`, startTimeUnixNano: now, endTimeUnixNano: now + 1000n })) }],
        },
      ],
    });
    return Buffer.from(toBinary(ExportTraceServiceRequestSchema, req));
  };

  it('takes concurrent exports on one connection, stores each once, and answers errors as over HTTP/1.1', async () => {
    const session = connect(floe.otlpHttpUrl);
    try {
      const headers = { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf' };
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => h2Post(session, '/v1/traces', i % 2 ? { ...headers, 'content-encoding': 'gzip' } : headers, i % 2 ? gzipSync(exportOf('h2-svc', 5)) : exportOf('h2-svc', 5))));
      for (const a of answers) {
        expect(a.status).toBe(200);
        expect(fromBinary(ExportTraceServiceResponseSchema, a.body).partialSuccess).toBeUndefined();
      }
      expect(await rowsOf('the spans sent over HTTP/2', `SELECT count(*) AS n FROM traces WHERE service_name = 'h2-svc' HAVING count(*) >= 100`)).toEqual([{ n: 100n }]);

      const json = (b: Buffer) => JSON.parse(b.toString()) as unknown;
      const unauthorized = await h2Post(session, '/v1/traces', { ...headers, authorization: 'Bearer wrong' }, exportOf('h2-svc', 1));
      expect([unauthorized.status, json(unauthorized.body)]).toEqual([401, { status: 'error', errorType: 'unauthorized', error: expect.any(String) }]);
      const garbage = await h2Post(session, '/v1/traces', headers, Buffer.from('not protobuf at all'));
      expect([garbage.status, json(garbage.body)]).toMatchObject([400, { errorType: 'bad_data' }]);
      const tooLarge = await h2Post(session, '/v1/traces', headers, Buffer.alloc(300 * 1024, 1));
      expect([tooLarge.status, json(tooLarge.body)]).toMatchObject([413, { errorType: 'too_large' }]);
      // The session still serves after its refused streams.
      expect((await h2Post(session, '/v1/traces', headers, exportOf('h2-after', 1))).status).toBe(200);
      expect(await rowsOf('the span after the refusals', `SELECT count(*) AS n FROM traces WHERE service_name = 'h2-after' HAVING count(*) >= 1`)).toEqual([{ n: 1n }]);
      expect(await sql(`SELECT count(*) AS n FROM traces WHERE service_name = 'h2-svc'`)).toEqual([{ n: 100n }]);
    } finally {
      session.close();
    }
  });

  it('resets an HTTP/2 upload that stalls past read_timeout and gives its room back, the session serving on', async () => {
    const session = connect(floe.otlpHttpUrl);
    session.on('error', () => {});
    try {
      const headers = { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf' };
      // 22 uploads that declare 1000 bytes and send 10: every room of max_inflight_requests taken.
      const stalled = Array.from({ length: 22 }, () => {
        const req = session.request({ ':method': 'POST', ':path': '/v1/traces', ...headers, 'content-length': '1000' });
        req.on('error', () => {});
        req.write(Buffer.alloc(10));
        return new Promise<number | string>((resolve) => {
          req.on('response', (h) => resolve(Number(h[':status'])));
          req.on('close', () => resolve(`reset ${req.rstCode}`));
        });
      });
      await new Promise((r) => setTimeout(r, 300));
      expect((await h2Post(session, '/v1/traces', headers, exportOf('h2-shed', 1))).status).toBe(503);
      // read_timeout (2 s) cuts them unanswered; their rooms are free again.
      expect(new Set(await Promise.all(stalled))).toEqual(new Set([expect.stringMatching(/^reset/)]));
      expect((await h2Post(session, '/v1/traces', headers, exportOf('h2-after-stall', 1))).status).toBe(200);
    } finally {
      session.close();
    }
  });

  it('still serves HTTP/1.1 on the same port', async () => {
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, { method: 'POST', body: exportOf('h1-svc', 2), headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf' } });
    expect(res.status).toBe(200);
  });
});
