import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { QueryScheduler } from './query-scheduler.ts';

/** A query that runs until the test lets it finish. */
function held() {
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  return { finish, work: () => done };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('QueryScheduler', () => {
  it('runs at most maxConcurrent queries at once; the rest start as slots free', async () => {
    const s = new QueryScheduler({ maxConcurrent: 2, maxQueuedPerTenant: 10 });
    const started: number[] = [];
    const queries = [0, 1, 2, 3].map((i) => {
      const h = held();
      return { h, result: s.run('a', undefined, async () => (started.push(i), await h.work(), i)) };
    });
    await tick();
    expect(started).toEqual([0, 1]);
    expect([s.running, s.queued]).toEqual([2, 2]);
    queries[1]!.h.finish();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    for (const q of queries) q.h.finish();
    expect(await Promise.all(queries.map((q) => q.result))).toEqual([0, 1, 2, 3]);
    expect([s.running, s.queued]).toEqual([0, 0]);
  });

  it("gives waiting tenants turns, so one tenant's burst does not hold back another's query", async () => {
    const s = new QueryScheduler({ maxConcurrent: 1, maxQueuedPerTenant: 100 });
    const order: string[] = [];
    const first = held();
    const running = s.run('busy', undefined, first.work);
    const waiting = [
      ...[1, 2, 3, 4].map((i) => s.run('busy', undefined, async () => void order.push(`busy${i}`))),
      s.run('quiet', undefined, async () => void order.push('quiet1')),
      s.run('busy', undefined, async () => void order.push('busy5')),
      s.run('quiet', undefined, async () => void order.push('quiet2')),
    ];
    await tick();
    expect(s.queuedByTenant()).toEqual({ busy: 5, quiet: 2 });
    first.finish();
    await Promise.all([running, ...waiting]);
    expect(order).toEqual(['busy1', 'quiet1', 'busy2', 'quiet2', 'busy3', 'busy4', 'busy5']);
  });

  it('refuses a tenant with maxQueuedPerTenant waiting (429), others still queue', async () => {
    const s = new QueryScheduler({ maxConcurrent: 1, maxQueuedPerTenant: 2 });
    const first = held();
    const running = s.run('a', undefined, first.work);
    const queued = [s.run('a', undefined, async () => 1), s.run('a', undefined, async () => 2)];
    const refused = s.run('a', undefined, async () => 3);
    await expect(refused).rejects.toMatchObject({ kind: 'rate_limited', message: expect.stringContaining('too many outstanding requests') });
    const other = s.run('b', undefined, async () => 4);
    first.finish();
    expect(await Promise.all([running, ...queued, other])).toEqual([undefined, 1, 2, 4]);
  });

  it('fails a query still waiting at its deadline without running it, and hands the rest what is left of theirs', async () => {
    const waits: number[] = [];
    const s = new QueryScheduler({ maxConcurrent: 1, maxQueuedPerTenant: 10, onStart: (ms) => waits.push(ms) });
    const first = held();
    const running = s.run('a', undefined, first.work);
    let ran = false;
    const late = s.run('a', 50, async () => void (ran = true));
    let given: number | undefined;
    const patient = s.run('a', 10_000, async (remaining) => void (given = remaining));
    const err = await late.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FloeError);
    expect(err).toMatchObject({ kind: 'timeout' });
    expect(s.queued).toBe(1);
    first.finish();
    await Promise.all([running, patient]);
    expect(ran).toBe(false);
    expect(given).toBeGreaterThan(9_000);
    expect(given).toBeLessThan(10_000 - 40);
    expect(waits).toHaveLength(2);
  });

  it('frees the slot of a query that fails', async () => {
    const s = new QueryScheduler({ maxConcurrent: 1, maxQueuedPerTenant: 10 });
    await expect(s.run('a', undefined, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await s.run('a', undefined, async () => 'next')).toBe('next');
    expect(s.running).toBe(0);
  });

  it('drops a waiting query whose caller cancelled: it never runs and frees its place in the tenant queue', async () => {
    const s = new QueryScheduler({ maxConcurrent: 1, maxQueuedPerTenant: 2 });
    const first = held();
    const running = s.run('a', undefined, first.work);
    let ran = 0;
    const callers = [new AbortController(), new AbortController()];
    const gone = callers.map((c) => s.run('a', undefined, async () => void ran++, c.signal));
    await tick();
    expect(s.queuedByTenant()).toEqual({ a: 2 });
    for (const c of callers) c.abort();
    for (const g of gone) await expect(g).rejects.toMatchObject({ kind: 'canceled' });
    expect([s.running, s.queued]).toEqual([1, 0]);
    // Their places are free again: two more queue rather than being refused.
    const next = [s.run('a', undefined, async () => 'x'), s.run('a', undefined, async () => 'y')];
    // A caller already gone never queues.
    const aborted = new AbortController();
    aborted.abort();
    await expect(s.run('a', undefined, async () => void ran++, aborted.signal)).rejects.toMatchObject({ kind: 'canceled' });
    first.finish();
    expect(await Promise.all([running, ...next])).toEqual([undefined, 'x', 'y']);
    expect(ran).toBe(0);
    expect([s.running, s.queued]).toEqual([0, 0]);
  });
});
