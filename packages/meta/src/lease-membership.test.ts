import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@floe/telemetry';
import { LeaseMembership, migrate, openDb, ownerOf, type Db, type MembershipOptions } from './index.ts';

const log = createLogger({ level: 'silent' });
/** Keys as the writers' WAL segments have them: 4 acceptors, a segment every ~2 s each. */
const keys = Array.from({ length: 12_000 }, (_, i) => `wal/${String(1_765_000_000_000 + i * 500).padStart(15, '0')}-acc-${i % 4}-7f3a-${String(Math.floor(i / 4) + 1).padStart(10, '0')}.wal`);
const member = (opts: Omit<MembershipOptions, 'group' | 'log'>) => new LeaseMembership({ group: 'writer', log, ...opts });
const share = (members: string[]) => {
  const counts = new Map(members.map((m) => [m, 0]));
  for (const k of keys) counts.set(ownerOf(k, members)!, counts.get(ownerOf(k, members)!)! + 1);
  return [...counts.values()];
};

describe('lease membership: rendezvous ownership', () => {
  it('gives every segment to one member, about evenly', () => {
    expect(ownerOf(keys[0]!, [])).toBeUndefined();
    expect(keys.every((k) => ownerOf(k, ['only']) === 'only')).toBe(true);
    for (const members of [['w-a', 'w-b'], ['w-a', 'w-b', 'w-c'], ['writer-0', 'writer-1', 'writer-2', 'writer-3']]) {
      const fair = keys.length / members.length;
      for (const n of share(members)) expect(Math.abs(n - fair) / fair).toBeLessThan(0.1);
    }
  });

  it('moves only the leaving member’s segments when one leaves, and only to the new one when one joins', () => {
    const before = ['w-a', 'w-b', 'w-c'];
    const after = ['w-a', 'w-c'];
    for (const k of keys) {
      const was = ownerOf(k, before)!;
      const is = ownerOf(k, after)!;
      if (was !== 'w-b') expect(is).toBe(was);
    }
    const joined = ['w-a', 'w-b', 'w-c', 'w-d'];
    let moved = 0;
    for (const k of keys) {
      const was = ownerOf(k, before)!;
      const is = ownerOf(k, joined)!;
      if (is !== was) {
        expect(is).toBe('w-d');
        moved++;
      }
    }
    expect(moved / keys.length).toBeGreaterThan(0.2);
    expect(moved / keys.length).toBeLessThan(0.3);
  });
});

describe('lease membership in the metadata DB', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
  });
  afterAll(async () => {
    await db.close();
  });

  it('divides the segments between the live writers and hands a leaving writer’s share over', async () => {
    const a = member({ db, id: 'writer-a', ttlMs: 60_000 });
    const b = member({ db, id: 'writer-b', ttlMs: 60_000 });
    // Before it has asked, a writer is alone and owns everything.
    expect(a.members).toEqual(['writer-a']);
    expect(keys.every((k) => a.owns(k))).toBe(true);
    // Started together, each sees the other after the second read, 50 ms after the first.
    await Promise.all([a.join(50), b.join(50)]);
    expect(await a.current()).toEqual(['writer-a', 'writer-b']);
    expect(await b.current()).toEqual(['writer-a', 'writer-b']);
    expect(a.members).toEqual(['writer-a', 'writer-b']);
    expect(b.members).toEqual(['writer-a', 'writer-b']);
    // A fresh view is not read again; an old one is.
    const c = member({ db, id: 'writer-c', ttlMs: 60_000 });
    await c.refresh();
    expect(await a.current(60_000)).toEqual(['writer-a', 'writer-b']);
    expect(await a.current(0)).toEqual(['writer-a', 'writer-b', 'writer-c']);
    await c.leave();
    expect(await a.refresh()).toEqual(['writer-a', 'writer-b']);
    const ofA = keys.filter((k) => a.owns(k));
    expect(keys.every((k) => a.owns(k) !== b.owns(k))).toBe(true);
    expect(ofA.length).toBeGreaterThan(keys.length * 0.4);
    expect(ofA.length).toBeLessThan(keys.length * 0.6);
    await b.leave();
    expect(await a.refresh()).toEqual(['writer-a']);
    expect(keys.every((k) => a.owns(k))).toBe(true);
    await a.leave();
  });

  it('drops a writer that stopped renewing once its lease expires', async () => {
    const live = member({ db, id: 'writer-live', ttlMs: 60_000 });
    // A writer that renews once and then dies (kill -9): no timer, no leave().
    const dead = member({ db, id: 'writer-dead', ttlMs: 300 });
    await dead.refresh();
    expect(await live.refresh()).toEqual(['writer-dead', 'writer-live']);
    expect(keys.some((k) => !live.owns(k))).toBe(true);
    await new Promise((r) => setTimeout(r, 400));
    expect(await live.refresh()).toEqual(['writer-live']);
    expect(keys.every((k) => live.owns(k))).toBe(true);
    await live.leave();
  });

  it('counts only the members of its own group', async () => {
    const w = member({ db, id: 'same-host-1', ttlMs: 60_000 });
    const c = new LeaseMembership({ db, group: 'compactor', id: 'same-host-2', ttlMs: 60_000, log });
    await c.refresh();
    expect(await w.refresh()).toEqual(['same-host-1']);
    expect(c.members).toEqual(['same-host-2']);
    await w.leave();
    await c.leave();
  });

  it('keeps its last view when the database cannot be reached', async () => {
    const other = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(other);
    const a = member({ db: other, id: 'writer-a', ttlMs: 60_000 });
    const b = member({ db: other, id: 'writer-b', ttlMs: 60_000 });
    await b.refresh();
    expect(await a.refresh()).toEqual(['writer-a', 'writer-b']);
    await other.close();
    expect(await a.refresh()).toEqual(['writer-a', 'writer-b']);
    expect(keys.filter((k) => a.owns(k)).length).toBeLessThan(keys.length);
  });
});

describe('lease membership: a member restarted under its name', () => {
  it('renews its predecessor’s lease and takes its share back at once', async () => {
    const db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    try {
      const a = member({ db, id: 'writer-0', ttlMs: 60_000 });
      const b = member({ db, id: 'writer-1', ttlMs: 60_000 });
      await a.refresh();
      await b.refresh();
      // writer-1 dies (no leave) and comes back under the same name before its lease expires.
      const again = member({ db, id: 'writer-1', ttlMs: 60_000 });
      expect(await again.refresh()).toEqual(['writer-0', 'writer-1']);
      expect(keys.filter((k) => again.owns(k))).toEqual(keys.filter((k) => b.owns(k)));
      expect(keys.some((k) => again.owns(k))).toBe(true);
    } finally {
      await db.close();
    }
  });
});
