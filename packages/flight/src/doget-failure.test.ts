import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { Table, vectorFromArray } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stallingRelay, startFlightServer, type FlightServerHandle } from './index.ts';

/** A DoGet whose batches fail half-way ends with an error status, and its release runs, though its client reads nothing. */
describe('DoGet failing half-way to a stalled client', () => {
  let server: FlightServerHandle;
  const events: string[] = [];
  // 4 MB: far more than the HTTP/2 window of a client that reads nothing.
  const table = new Table({ n: vectorFromArray(Int32Array.from({ length: 1_000_000 }, (_, i) => i)) });

  beforeAll(async () => {
    server = await startFlightServer({
      handlers: {
        async doGet(_ticket, _metadata, call) {
          call.on('cancelled', () => events.push('ended'));
          async function* failing() {
            yield table.batches[0]!;
            throw new Error('the source failed');
          }
          return { schema: table.schema, batches: failing(), release: () => events.push('released') };
        },
      },
    });
  });
  afterAll(async () => {
    await server?.stop(100);
  });

  it('resets the call (INTERNAL) and releases the result at once', async () => {
    const relay = await stallingRelay(`127.0.0.1:${server.port}`, 32 * 1024);
    const client = new grpc.Client(relay.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    try {
      const ticket = Buffer.from('t');
      const stream = client.makeServerStreamRequest('/arrow.flight.protocol.FlightService/DoGet', (x: Buffer) => x, (x: Buffer) => x, Buffer.concat([Buffer.from([0x0a, 1]), ticket]), new grpc.Metadata(), {});
      const ended = new Promise<number>((resolve) => {
        stream.on('data', () => undefined);
        stream.on('error', (err: grpc.ServiceError) => resolve(err.code));
        stream.on('end', () => resolve(grpc.status.OK));
      });
      await relay.stalled;
      // Before, the status waited behind the unsent batch: the call stayed open as long as the connection.
      for (let i = 0; i < 500 && !events.includes('ended'); i++) await sleep(10);
      expect(events).toEqual(['released', 'ended']);
      relay.resume();
      expect(await ended).toBe(grpc.status.INTERNAL);
    } finally {
      client.close();
      relay.close();
    }
  });
});
