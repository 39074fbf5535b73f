import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { flightDoGet } from '@floe/flight';
import { ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';
import { freePorts, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Redis (the cluster's shared rate limits, resend dedup and active series) going away and coming
 * back, through a TCP relay the test closes (cluster), for a tenant under ingest and query rate
 * limits: ingest and queries go on (the limits held per process meanwhile) instead of failing
 * with a 500, every acknowledged span is stored once, and the shared store is used again when
 * it is back.
 */
describe('Redis outage (cluster)', () => {
  let floe: FloeUnderTest;
  let key: string;
  let relay: { close(): Promise<void> } | undefined;
  let relayPort: number;
  const tenant = 'redisdown';

  /** Relays 127.0.0.1:relayPort to Redis until closed (listener and open connections). */
  async function openRelay(): Promise<{ close(): Promise<void> }> {
    const sockets = new Set<Socket>();
    const server: Server = createServer((client) => {
      const upstream = connect(6379, '127.0.0.1');
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => s.destroy());
        s.on('close', () => sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(relayPort, '127.0.0.1', resolve));
    return {
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const s of sockets) s.destroy();
        }),
    };
  }

  /** A trace of three spans of `service`, as OTLP protobuf. */
  const body = (service: string) => {
    const traceId = randomBytes(16);
    const now = BigInt(Date.now()) * 1_000_000n;
    const spans = [0, 1, 2].map(() => ({ traceId, spanId: randomBytes(8), name: 'op', startTimeUnixNano: now, endTimeUnixNano: now + 1000n }));
    const req = create(ExportTraceServiceRequestSchema, { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: service } } }] }, scopeSpans: [{ spans }] }] });
    return Buffer.from(toBinary(ExportTraceServiceRequestSchema, req));
  };
  const post = async (bytes: Buffer) => {
    const res = await fetch(`${floe.otlpHttpUrl}/v1/traces`, {
      method: 'POST',
      body: bytes,
      headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/x-protobuf' },
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: res.status === 200 ? undefined : ((await res.json()) as { status: string; errorType: string; error: string }) };
  };
  const exportGrpc = (bytes: Buffer) =>
    new Promise<number>((resolve) => {
      const client = new grpc.Client(floe.otlpGrpcAddress, grpc.credentials.createInsecure());
      const md = new grpc.Metadata();
      md.set('authorization', `Bearer ${key}`);
      md.set('x-tenant-id', tenant);
      client.makeUnaryRequest('/opentelemetry.proto.collector.trace.v1.TraceService/Export', (b: Buffer) => b, (b: Buffer) => b, bytes, md, { deadline: Date.now() + 20_000 }, (err) => {
        client.close();
        resolve(err ? err.code : 0);
      });
    });
  /** The rate-limit buckets of the tenant in Redis (the testkit's key prefix is in the config). */
  const redisKeys = async () => {
    const { Redis } = await import('ioredis');
    const r = new Redis('redis://127.0.0.1:6379');
    try {
      await r.del(...((await r.keys(`*bucket:${tenant}:*`)) as string[]).concat(['-none-']));
      await post(body('probe'));
      return (await r.keys(`*bucket:${tenant}:*`)) as string[];
    } finally {
      r.disconnect();
    }
  };
  const spans = async (service: string) => {
    const t = await flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(`SELECT count(*) AS n FROM traces WHERE service_name = '${service}'`), metadata: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    return Number(t.toArray()[0]!.n);
  };

  beforeAll(async () => {
    relayPort = (await freePorts(1))[0]!;
    relay = await openRelay();
    floe = await startFloe({ mode: 'cluster', config: { limits: { redis_url: `redis://127.0.0.1:${relayPort}`, ingest_requests_per_sec: 1000, max_query_requests_per_sec: 1000 } } });
    key = (await floe.bootstrap(tenant)).api_key;
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
    await relay?.close();
  });

  it('ingest and queries go on while Redis is away, and nothing acknowledged is lost', async () => {
    expect((await post(body('before'))).status).toBe(200);
    await relay!.close();
    relay = undefined;

    for (let i = 0; i < 3; i++) expect(await post(body('during'))).toEqual({ status: 200, retryAfter: null, body: undefined });
    expect(await exportGrpc(body('during'))).toBe(grpc.status.OK);
    const search = await fetch(`${floe.routerUrl}/tracequery/api/search?limit=1`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(search.status).toBe(200);

    relay = await openRelay();
    await waitFor('the acknowledged traces stored', async () => ((await spans('before')) === 3 && (await spans('during')) === 12 ? true : undefined), 60_000, 500);
    // Back to the shared store (within the pause after its last failure), ingest as before.
    await waitFor('a tenant key in Redis again', async () => ((await post(body('after'))).status === 200 && (await redisKeys()).length > 0 ? true : undefined), 30_000, 500);
  });
});
