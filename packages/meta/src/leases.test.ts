import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLease, liveLeaseHolders, releaseLease, runExclusive, type Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase, type TestDatabase } from './test-databases.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(BACKENDS)('leases on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('gives a lease to one holder at a time until it expires or is released', async () => {
    expect(await acquireLease(db, 'ruler', 'r1', 60_000)).toBe(true);
    expect(await acquireLease(db, 'ruler', 'r2', 60_000)).toBe(false);
    expect(await acquireLease(db, 'ruler', 'r1', 60_000)).toBe(true);
    await releaseLease(db, 'ruler', 'r2');
    expect(await acquireLease(db, 'ruler', 'r2', 60_000)).toBe(false);
    await releaseLease(db, 'ruler', 'r1');
    expect(await acquireLease(db, 'ruler', 'r2', 1)).toBe(true);
    await pause(20);
    expect(await acquireLease(db, 'ruler', 'r1', 60_000)).toBe(true);
  });

  it('lists the live holders of a prefix, sorted, and forgets the expired and released ones', async () => {
    expect(await liveLeaseHolders(db, 'writer:')).toEqual([]);
    for (const id of ['w-b', 'w-a', 'w-c']) expect(await acquireLease(db, `writer:${id}`, id, id === 'w-c' ? 1 : 60_000)).toBe(true);
    // Other names, and names that only contain the prefix, are not members.
    await acquireLease(db, 'writers', 'x', 60_000);
    await acquireLease(db, 'a-writer:y', 'y', 60_000);
    await pause(20);
    expect(await liveLeaseHolders(db, 'writer:')).toEqual(['w-a', 'w-b']);
    // The expired lease's row is gone, not just left out.
    expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM leases WHERE name = 'writer:w-c'`)).rows[0]!.n).toBe(0);
    await releaseLease(db, 'writer:w-a', 'w-a');
    expect(await liveLeaseHolders(db, 'writer:')).toEqual(['w-b']);
  });

  it('runs tasks under one lease one after another, gives it up after each, whatever their outcome', async () => {
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const opts = { ttlMs: 60_000, pollMs: 10 };
    const first = runExclusive(db, 'delete:x', async () => {
      events.push('first start');
      await gate;
      events.push('first end');
      throw new Error('purge failed');
    }, opts);
    // The first holds the lease before the second asks.
    while (events.length === 0) await pause(5);
    const second = runExclusive(db, 'delete:x', async () => {
      events.push('second');
      return 'done';
    }, opts);
    // Another name is not held up.
    expect(await runExclusive(db, 'delete:y', async () => 'other', opts)).toBe('other');
    await pause(50);
    expect(events).toEqual(['first start']);
    release();
    await expect(first).rejects.toThrow('purge failed');
    expect(await second).toBe('done');
    expect(events).toEqual(['first start', 'first end', 'second']);
    expect((await db.query(`SELECT name FROM leases WHERE name LIKE 'delete:%'`)).rows).toEqual([]);
  });

  it('waits out the lease of a holder that died, and renews its own while a task outlives the ttl', async () => {
    // A holder that took it and never came back.
    expect(await acquireLease(db, 'delete:dead', 'crashed-router', 1_200)).toBe(true);
    let stolen: boolean | undefined;
    const ran = await runExclusive(db, 'delete:dead', async () => {
      await pause(3_000);
      // Two and a half ttls later: still this task's, renewed, so no one else can take it.
      stolen = await acquireLease(db, 'delete:dead', 'another-router', 60_000);
      return 'ran';
    }, { ttlMs: 1_200, pollMs: 20 });
    expect(ran).toBe('ran');
    expect(stolen).toBe(false);
    expect(await acquireLease(db, 'delete:dead', 'another-router', 60_000)).toBe(true);
  });

  it('matches a prefix as it is: LIKE wildcards in it are plain characters', async () => {
    await acquireLease(db, 'p%_:1', 'one', 60_000);
    await acquireLease(db, 'pXY:2', 'two', 60_000);
    expect(await liveLeaseHolders(db, 'p%_:')).toEqual(['one']);
    await expect(liveLeaseHolders(db, '')).rejects.toThrow(/prefix/);
  });
});
