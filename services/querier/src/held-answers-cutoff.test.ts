import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { create, grpcServiceDefinition, Querier, TempoTraceByIDRequestSchema, TempoTraceByIDResponseSchema, toBinary } from '@floe/proto';
import { stallingRelay } from '@floe/flight';
import { createLogger } from '@floe/telemetry';
import { expect, it } from 'vitest';
import { HeldResults } from './held-results.ts';
import { encodedAnswers, serveHeld } from './held-answers.ts';

/** A client whose TCP stops taking bytes after the first 32 KB of the answer, as a stalled reader's does. */
it('cuts off a unary answer its client stopped reading at the cutoff, and releases its bytes', async () => {
  const held = new HeldResults(64 * 1024 * 1024);
  // ~2 MB: far more than HTTP/2's window for a client that reads nothing.
  const big = create(TempoTraceByIDResponseSchema, { trace: { resourceSpans: [{ scopeSpans: [{ spans: Array.from({ length: 200 }, (_, i) => ({ name: `${i}`.padEnd(10_000, 'x') })) }] }] } });
  const server = new grpc.Server();
  const ended: string[] = [];
  server.addService(encodedAnswers(grpcServiceDefinition(Querier), ['FindTraceByID']), {
    FindTraceByID: (call: grpc.ServerUnaryCall<unknown, Uint8Array>, callback: grpc.sendUnaryData<Uint8Array>) => {
      call.once('cancelled', () => ended.push('ended'));
      serveHeld({ held, schema: TempoTraceByIDResponseSchema, timeoutMs: 1_000, log: createLogger({ level: 'silent' }), what: 'FindTraceByID failed' }, call, callback, Promise.resolve({ tenant: 't', answer: big }));
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  const relay = await stallingRelay(`127.0.0.1:${port}`, 32 * 1024);
  const client = new grpc.Client(relay.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  try {
    const request = Buffer.from(toBinary(TempoTraceByIDRequestSchema, create(TempoTraceByIDRequestSchema, { traceID: new Uint8Array(16) })));
    client.makeUnaryRequest('/tempopb.Querier/FindTraceByID', (x: Buffer) => x, (x: Buffer) => x, request, new grpc.Metadata(), {}, () => undefined);
    await relay.stalled;
    for (let i = 0; i < 100 && held.held === 0; i++) await sleep(10);
    // Held while the client reads nothing...
    expect(held.held).toBeGreaterThan(1_000_000);
    expect(ended).toEqual([]);
    // ...until the cutoff resets the call, which ends it and gives the bytes back.
    for (let i = 0; i < 500 && held.held > 0; i++) await sleep(10);
    expect(ended).toEqual(['ended']);
    expect(held.held).toBe(0);
  } finally {
    client.close();
    relay.close();
    server.forceShutdown();
  }
});
