import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flightDoGet } from '@floe/flight';
import { startFloe, type FloeUnderTest } from '../src/index.ts';

/**
 * The querier's admission (querier.max_concurrent, max_queued_per_tenant): with one slot and room
 * for one waiting query per tenant, a tenant's burst of queries runs one, queues one and has the
 * rest refused with RESOURCE_EXHAUSTED "too many outstanding requests" (429 with Retry-After
 * through the router),
 * while another tenant's query, queued on its own, still runs; /status shows the slots.
 */
describe('querier admission (embedded)', () => {
  let floe: FloeUnderTest;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', config: { querier: { max_concurrent: 1, max_queued_per_tenant: 1 } } });
    for (const t of ['burst', 'calm']) keys[t] = (await floe.bootstrap(t)).api_key;
  });
  afterAll(async () => {
    await floe?.stop();
  });

  const sql = (tenant: string, text: string) =>
    flightDoGet({ url: floe.flightAddress, ticket: Buffer.from(text), metadata: { authorization: `Bearer ${keys[tenant]}`, 'x-tenant-id': tenant }, deadlineMs: 60_000 });
  // Long enough (hundreds of ms) that every call of the burst arrives while it runs.
  const SLOW = 'SELECT sum(i * i) AS s FROM range(100000000) t(i)';

  it("runs one query, queues one per tenant and refuses the rest of a tenant's burst", async () => {
    // Keys verified once, so every call of the burst reaches the scheduler at once.
    for (const t of ['burst', 'calm']) expect((await sql(t, 'SELECT 1 AS one')).numRows).toBe(1);
    const burst = Array.from({ length: 6 }, () => sql('burst', SLOW).then(() => 'ok' as const, (err: unknown) => err));
    await new Promise((r) => setTimeout(r, 100));
    const status = (await (await fetch(`${floe.querierAdminUrl}/status`)).json()) as { queries: { running: number; queued: number; queued_by_tenant: Record<string, number>; max_concurrent: number } };
    expect(status.queries).toMatchObject({ running: 1, queued: 1, queued_by_tenant: { burst: 1 }, max_concurrent: 1 });
    // Through the router the refusal is 429 with Retry-After, in the shared error envelope.
    const viaRouter = await fetch(`${floe.routerUrl}/tracequery/api/search?q=${encodeURIComponent('{}')}`, { headers: { authorization: `Bearer ${keys.burst}`, 'x-tenant-id': 'burst' } });
    expect(viaRouter.status).toBe(429);
    expect(viaRouter.headers.get('retry-after')).toBe('1');
    expect(await viaRouter.json()).toMatchObject({ status: 'error', errorType: 'rate_limited', error: expect.stringContaining('too many outstanding requests') });
    const calm = sql('calm', 'SELECT 42 AS answer');
    const outcomes = await Promise.all(burst);
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(2);
    const refused = outcomes.filter((o) => o !== 'ok') as Array<{ code: number; details: string }>;
    expect(refused).toHaveLength(4);
    for (const err of refused) {
      expect(err.code).toBe(8); // RESOURCE_EXHAUSTED
      expect(err.details).toContain('too many outstanding requests');
    }
    expect(Number((await calm).getChildAt(0)!.get(0))).toBe(42);
    const after = (await (await fetch(`${floe.querierAdminUrl}/status`)).json()) as { queries: { running: number; queued: number } };
    expect(after.queries).toMatchObject({ running: 0, queued: 0 });
  });
});
