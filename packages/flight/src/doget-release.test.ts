import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeFlightClients, flightDoGet, startFlightServer, type FlightServerHandle } from './index.ts';
import { sampleTable } from './test-tables.ts';

/** A DoGet result's `release` (what a querier holds for the call) is called once, however the call ends. */
describe('DoGet release', () => {
  let server: FlightServerHandle;
  const released: string[] = [];

  beforeAll(async () => {
    server = await startFlightServer({
      handlers: {
        async doGet(ticket) {
          const name = new TextDecoder().decode(ticket);
          const table = sampleTable();
          async function* endless(): AsyncGenerator<RecordBatch> {
            for (;;) {
              yield* table.batches;
              await sleep(5);
            }
          }
          return { schema: table.schema, batches: name === 'endless' ? endless() : table.batches, release: () => released.push(name) };
        },
      },
    });
  });
  afterAll(async () => {
    closeFlightClients();
    await server?.stop(100);
  });

  const url = () => `127.0.0.1:${server.port}`;
  const settled = async (name: string) => {
    for (let i = 0; i < 200 && !released.includes(name); i++) await sleep(10);
    return released.filter((n) => n === name).length;
  };

  it('is called once the result was sent', async () => {
    const table = await flightDoGet({ url: url(), ticket: Buffer.from('whole') });
    expect(table.numRows).toBe(3);
    expect(await settled('whole')).toBe(1);
  });

  it('is called once when the client cancels while rows still stream', async () => {
    const caller = new AbortController();
    const call = flightDoGet({ url: url(), ticket: Buffer.from('endless'), signal: caller.signal }).then(
      () => 0,
      (err: { code: number }) => err.code,
    );
    await sleep(100);
    caller.abort();
    expect(await call).toBe(1); // CANCELLED
    expect(await settled('endless')).toBe(1);
  });
});
