import * as grpc from '@grpc/grpc-js';
import { flightDoGet } from '@floe/flight';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stallingRelay, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * Results held for Flight clients that do not read them (querier.max_held_result_mb): a client
 * that stops reading mid-answer keeps its result charged to its tenant while the server waits
 * (write backpressure, not the result pushed whole into grpc-js's buffers); the tenant's next
 * result that does not fit its half of the budget is refused with RESOURCE_EXHAUSTED; another
 * tenant's queries still answer; at querier.query_timeout after the result was ready the stalled
 * call is cut off and its bytes are free again.
 * 96 MB in all, 48 MB per tenant (and per result); a result of 32 MB, far more than the socket buffers between
 * the querier and a client that stopped reading take.
 */
describe('results held for stalled Flight readers (embedded)', () => {
  let floe: FloeUnderTest;
  const keys: Record<string, string> = {};
  const BIG = 'SELECT i, i + 1 AS j, i + 2 AS k, i + 3 AS l FROM range(1000000) t(i)';
  const FLIGHT = '/arrow.flight.protocol.FlightService/';

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { querier: { max_held_result_mb: 96, max_result_mb: 48, query_timeout: '5s' } } });
    for (const t of ['stalled', 'calm']) keys[t] = (await floe.bootstrap(t)).api_key;
  }, 60_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const metadata = (tenant: string) => ({ authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant });
  const sql = (tenant: string, text: string) => flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: metadata(tenant), deadlineMs: 30_000 });
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => ({ code: grpc.status.OK, details: '' }),
      (err: grpc.ServiceError) => ({ code: err.code, details: err.details }),
    );
  type Queries = { running: number; queued: number; held_result_bytes: number; held_result_bytes_by_tenant: Record<string, number>; max_held_result_bytes: number };
  const status = async () => ((await (await fetch(`${floe.querierAdminUrl}/status`)).json()) as { queries: Queries }).queries;

  /** A raw DoGet without a deadline: how the call ended, once it has. */
  function rawDoGet(client: grpc.Client, tenant: string, text: string): Promise<{ code: number; details: string }> {
    const ticket = Buffer.from(text);
    const request = Buffer.concat([Buffer.from([0x0a, ticket.length]), ticket]);
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(metadata(tenant))) md.set(k, v);
    const stream = client.makeServerStreamRequest(`${FLIGHT}DoGet`, (x: Buffer) => x, (x: Buffer) => x, request, md, {});
    return new Promise((resolve) => {
      stream.on('data', () => undefined);
      stream.on('error', (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
      stream.on('end', () => resolve({ code: grpc.status.OK, details: '' }));
    });
  }

  it("holds a stalled reader's result against its tenant's share, refuses the tenant's next one, answers other tenants, and cuts the reader off at the query timeout", async () => {
    const relay = await stallingRelay(floe.flightAddress, 256 * 1024);
    // A channel of its own (grpc-js shares connections between clients of one address otherwise).
    const client = new grpc.Client(relay.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    try {
      const stalled = rawDoGet(client, 'stalled', BIG);
      // Before, nothing counted it: the querier showed nothing held, and would hold any number of them.
      const held = await waitFor('the stalled result held', async () => {
        const s = await status();
        return s.held_result_bytes > 0 ? s : undefined;
      }, 20_000, 20);
      expect(held).toMatchObject({ running: 0, queued: 0, max_held_result_bytes: 96 * 1024 * 1024 });
      expect(held.held_result_bytes).toBe(32_000_000); // 4 × 1,000,000 BIGINTs
      expect(held.held_result_bytes_by_tenant).toEqual({ stalled: held.held_result_bytes });

      // The same tenant's next result does not fit its half: refused at once, to be retried.
      const refused = await failure(sql('stalled', BIG));
      expect(refused.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(refused.details).toContain('too many unread results');
      expect(refused.details).toContain('tenant stalled already holds 31 MB');
      // Small results of that tenant still fit; another tenant's queries answer, big ones too.
      expect((await sql('stalled', 'SELECT 1 AS one')).toArray()[0]?.one).toBe(1);
      expect((await sql('calm', BIG)).numRows).toBe(1_000_000);
      expect((await sql('calm', 'SELECT 42 AS answer')).toArray()[0]?.answer).toBe(42);
      const search = await fetch(`${floe.routerUrl}/tracequery/api/search?limit=1`, { headers: metadata('calm') });
      expect(search.status).toBe(200);
      // Still held while its client does not read (it set no deadline of its own).
      expect((await status()).held_result_bytes_by_tenant).toEqual({ stalled: held.held_result_bytes });

      // querier.query_timeout after its result was ready, the call is cut off and its bytes freed;
      // the client learns it (CANCELLED) once it reads again.
      await waitFor('nothing held', async () => ((await status()).held_result_bytes === 0 ? true : undefined), 20_000, 50);
      relay.resume();
      expect(await stalled).toMatchObject({ code: grpc.status.CANCELLED });
      expect((await sql('stalled', BIG)).numRows).toBe(1_000_000);
      expect(await status()).toMatchObject({ held_result_bytes: 0, held_result_bytes_by_tenant: {} });
    } finally {
      client.close();
      relay.close();
    }
  }, 120_000);
});
