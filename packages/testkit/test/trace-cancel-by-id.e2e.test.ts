import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { findTraceById, flightDoGet } from '@floe/flight';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * A trace-by-id whose caller goes away while it waits for a querier slot leaves the queue, as a
 * query or a trace search does: through the router of `floe all` (the querier called in process,
 * handed the HTTP request's signal) and over the querier's Tempo gRPC service (the call cancelled).
 * One slot, held by a query that runs until its caller cancels, so the lookup must wait.
 */
describe('trace by id cancelled by its caller (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  const SLOW = 'SELECT sum(a.range + b.range) AS s FROM range(1000000000000) a, range(1000000) b';

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { querier: { max_concurrent: 1, query_timeout: '300s' } } });
    key = (await floe.bootstrap('acme')).api_key;
  }, 60_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const metadata = () => ({ authorization: `Bearer ${key}`, 'x-tenant-id': 'acme' });
  const status = async () => ((await (await fetch(`${floe.querierAdminUrl}/status`)).json()) as { queries: { running: number; queued: number } }).queries;
  const outcome = (p: Promise<unknown>): Promise<{ code: number | undefined; name: string | undefined }> =>
    p.then(
      () => ({ code: grpc.status.OK, name: undefined }),
      (err: { code?: number; name?: string }) => ({ code: err.code, name: err.name }),
    );

  /** Runs `lookup` behind a query holding the only slot, aborts it once it waits, and checks it left the queue. */
  async function abandonWhileQueued(lookup: (signal: AbortSignal) => Promise<unknown>) {
    expect(await status()).toMatchObject({ running: 0, queued: 0 });
    const holder = new AbortController();
    const slow = outcome(flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(SLOW), metadata: metadata(), deadlineMs: 120_000, signal: holder.signal }));
    await waitFor('the slot taken', async () => ((await status()).running === 1 ? true : undefined), 20_000, 20);
    const caller = new AbortController();
    const pending = outcome(lookup(caller.signal));
    await waitFor('the lookup waiting', async () => ((await status()).queued === 1 ? true : undefined), 20_000, 20);
    caller.abort();
    const got = await pending;
    // Before, the lookup kept its place until the running query ended (here: never, before its caller cancels).
    await waitFor('the lookup gone from the queue', async () => {
      const s = await status();
      return s.running === 1 && s.queued === 0 ? true : undefined;
    }, 20_000, 20);
    holder.abort();
    expect((await slow).code).toBe(grpc.status.CANCELLED);
    await waitFor('nothing running or waiting', async () => {
      const s = await status();
      return s.running === 0 && s.queued === 0 ? true : undefined;
    }, 20_000, 50);
    return got;
  }

  it('drops a trace-by-id through the router when its HTTP client goes away', async () => {
    const id = randomBytes(16).toString('hex');
    const got = await abandonWhileQueued((signal) => fetch(`${floe.routerUrl}/tracequery/api/traces/${id}`, { headers: metadata(), signal }));
    expect(got.name).toBe('AbortError');
    // The querier still answers trace lookups afterwards (an unknown id: 404).
    expect((await fetch(`${floe.routerUrl}/tracequery/api/traces/${id}`, { headers: metadata() })).status).toBe(404);
  }, 120_000);

  it("drops a FindTraceByID over the querier's Tempo gRPC service when its call is cancelled", async () => {
    const got = await abandonWhileQueued((signal) => findTraceById({ url: floe.flightAddress, traceId: randomBytes(16), metadata: metadata(), deadlineMs: 120_000, signal }));
    expect(got.code).toBe(grpc.status.CANCELLED);
  }, 120_000);
});
