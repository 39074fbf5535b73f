import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { TempoSearchRequestSchema, TempoSearchResponseSchema, TempoStreamingQuerier, create, grpcServiceDefinition } from '@floe/proto';
import { sharePortWithGrpc } from './tempo-streaming.ts';

/** One port, two protocols: HTTP/1.1 requests reach the HTTP server, HTTP/2 gRPC calls the gRPC one, an idle connection is closed. */
describe('sharePortWithGrpc', () => {
  let http: Server;
  let port: number;
  let shared: { stop(): void };

  beforeAll(async () => {
    http = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => res.end(`http ${req.method} ${req.url} ${body.length}`));
    });
    http.headersTimeout = 300;
    http.requestTimeout = 1000;
    const server = new grpc.Server();
    server.addService(grpcServiceDefinition(TempoStreamingQuerier), {
      Search: (call: grpc.ServerWritableStream<{ Query: string }, unknown>) => {
        call.write(create(TempoSearchResponseSchema, { traces: [{ traceID: call.request.Query }] }));
        call.end();
      },
    });
    shared = sharePortWithGrpc(http, server);
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    port = (http.address() as { port: number }).port;
  });
  afterAll(async () => {
    shared.stop();
    await new Promise((r) => http.close(r));
  });

  it('serves HTTP/1.1, keep-alive and bodies included', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/a?b=1`, { method: 'POST', body: 'x'.repeat(100_000) });
    expect(await res.text()).toBe('http POST /a?b=1 100000');
    expect(await (await fetch(`http://127.0.0.1:${port}/again`)).text()).toBe('http GET /again 0');
  });

  it('serves gRPC over cleartext HTTP/2 on the same port', async () => {
    const client = new (grpc.makeGenericClientConstructor(grpcServiceDefinition(TempoStreamingQuerier), 'S'))(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as grpc.Client &
      Record<string, (req: unknown) => grpc.ClientReadableStream<{ traces: Array<{ traceID: string }> }>>;
    try {
      const got = await new Promise<string[]>((resolve, reject) => {
        const out: string[] = [];
        const call = client.Search!(create(TempoSearchRequestSchema, { Query: 'hello' }));
        call.on('data', (m) => out.push(m.traces[0]!.traceID));
        call.on('error', reject);
        call.on('end', () => resolve(out));
      });
      expect(got).toEqual(['hello']);
    } finally {
      client.close();
    }
  });

  it('answers a request that only starts like the HTTP/2 preface as HTTP, and closes a connection that never decides', async () => {
    const raw = (data: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(data));
        let got = '';
        socket.on('data', (c) => (got += c.toString()));
        socket.on('close', () => resolve(got));
        socket.on('error', () => resolve(got));
      });
    expect(await raw('PRX / HTTP/1.1\r\nHost: x\r\n\r\n')).toMatch(/^HTTP\/1\.1 400/);
    // Three bytes of the preface, then silence: closed by the server at its headers timeout, with no answer.
    expect(await raw('PRI')).toBe('');
  });
});
