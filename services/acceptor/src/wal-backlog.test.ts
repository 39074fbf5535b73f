import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { DEFAULT_WAL_PREFIX, FsObjectStore, encodeWalHeld, formatSegmentKey, walHeldKey, type HeldTable } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { backlogShares, WalBacklogGate } from './wal-backlog.ts';

const until = async (what: string, ok: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('WAL backlog gate', () => {
  const dirs: string[] = [];
  const gates: WalBacklogGate[] = [];
  afterEach(() => {
    for (const g of gates.splice(0)) g.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  /** A store in a directory of its own, removed after the test. */
  const tempStore = () => {
    const root = mkdtempSync(join(tmpdir(), 'floe-backlog-'));
    dirs.push(root);
    return new FsObjectStore(root);
  };

  it('refuses while the sealed segments are over the limit, and opens once the writer has taken them', async () => {
    const store = tempStore();
    const keys = [1, 2, 3].map((seq) => formatSegmentKey(DEFAULT_WAL_PREFIX, { timestampMs: Date.now(), instanceId: 'acc-test', seq }));
    for (const k of keys) await store.put(k, new Uint8Array(400));
    // Not a segment: not counted.
    await store.put(`${DEFAULT_WAL_PREFIX}notes.txt`, new Uint8Array(5000));
    const gate = new WalBacklogGate(store, 1000, silentLogger());
    gates.push(gate);
    gate.start();
    await until('the first listing', () => gate.backlog.segments === 3);
    expect(gate.backlog).toEqual({ bytes: 1200, segments: 3 });
    let refused: unknown;
    try {
      gate.check('any', 'default');
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(FloeError);
    expect(refused).toMatchObject({ kind: 'unavailable', code: 'FLOE_ERR_WAL_BACKLOG' });
    expect((refused as FloeError).message).toContain('backlog of 1200 bytes in 3 segments is over acceptor.max_wal_backlog (1000)');
    // The writer consumed two: the next listing (about a second later) opens the gate.
    await store.deleteMany(keys.slice(0, 2));
    await until('the next listing', () => gate.backlog.segments === 1);
    expect(() => gate.check('any', 'default')).not.toThrow();
  });

  it('without a limit never lists, and never refuses', async () => {
    const store = tempStore();
    await store.put(formatSegmentKey(DEFAULT_WAL_PREFIX, { timestampMs: Date.now(), instanceId: 'acc-test', seq: 1 }), new Uint8Array(4000));
    const unlimited = new WalBacklogGate(store, 0, silentLogger());
    gates.push(unlimited);
    unlimited.start();
    await new Promise((r) => setTimeout(r, 200));
    expect(unlimited.backlog).toEqual({ bytes: 0, segments: 0 });
    expect(() => unlimited.check('any', 'default')).not.toThrow();
  });


  const refusal = (f: () => void): unknown => {
    try {
      f();
    } catch (err) {
      return err;
    }
    return undefined;
  };

  it("segments the writer holds for a tenant's failing table count for that dataset alone: it is refused past the limit, every other tenant is accepted", async () => {
    const store = tempStore();
    const keys = [1, 2, 3, 4].map((seq) => formatSegmentKey(DEFAULT_WAL_PREFIX, { timestampMs: Date.now(), instanceId: 'acc-held', seq }));
    for (const k of keys) await store.put(k, new Uint8Array(400));
    const logs: HeldTable = { tenant: 'acme', dataset: 'default', table: 'logs' };
    const spans: HeldTable = { tenant: 'acme', dataset: 'default', table: 'traces' };
    // Held for acme's tables: 1200 bytes, over the limit, which counts only the fourth segment.
    await store.put(walHeldKey('writer-a'), encodeWalHeld('writer-a', Date.now(), new Map([[keys[0]!, [logs]], [keys[1]!, [logs, spans]]])));
    await store.put(walHeldKey('writer-b'), encodeWalHeld('writer-b', Date.now(), new Map([[keys[2]!, [spans]]])));
    // A stopped writer's object, not rewritten for long: not believed.
    await store.put(walHeldKey('writer-gone'), encodeWalHeld('writer-gone', Date.now() - 3_600_000, new Map([[keys[3]!, [{ tenant: 'other', dataset: 'default', table: 'logs' }]]])));
    const gate = new WalBacklogGate(store, 1000, silentLogger());
    gates.push(gate);
    gate.start();
    await until('the first listing', () => gate.held.segments === 3);
    expect(gate.backlog).toEqual({ bytes: 400, segments: 1 });
    expect(gate.held).toEqual({ bytes: 1200, segments: 3 });
    expect(refusal(() => gate.check('any', 'default'))).toBeUndefined();
    expect(refusal(() => gate.check('other', 'default'))).toBeUndefined();
    // Its other datasets are not held back.
    expect(refusal(() => gate.check('acme', 'staging'))).toBeUndefined();
    const refused = refusal(() => gate.check('acme', 'default'));
    expect(refused).toBeInstanceOf(FloeError);
    expect(refused).toMatchObject({ kind: 'unavailable', code: 'FLOE_ERR_WAL_TABLE_HELD', headers: { 'Retry-After': '5' } });
    expect((refused as FloeError).message).toBe(
      'tables logs, traces of dataset default cannot be committed (the writer retries them): the 1200 bytes in 3 write-ahead log segments kept for them are over acceptor.max_wal_backlog (1000); retry later',
    );
    // The table committed: the writer took the segments, the dataset is accepted again.
    await store.deleteMany(keys.slice(0, 3));
    await until('the next listing', () => gate.held.segments === 0);
    expect(refusal(() => gate.check('acme', 'default'))).toBeUndefined();
  });

  it('held segments of several datasets, each under the limit, refuse every dataset holding any once together they pass it; others are accepted', async () => {
    const store = tempStore();
    const keys = [1, 2, 3].map((seq) => formatSegmentKey(DEFAULT_WAL_PREFIX, { timestampMs: Date.now(), instanceId: 'acc-many', seq }));
    for (const k of keys) await store.put(k, new Uint8Array(400));
    // Three broken datasets of 400 bytes each: each alone under the limit of 1000, together 1200.
    const held = new Map(keys.map((k, i) => [k, [{ tenant: `t${i}`, dataset: 'default', table: 'logs' }]]));
    await store.put(walHeldKey('writer-a'), encodeWalHeld('writer-a', Date.now(), held));
    const gate = new WalBacklogGate(store, 1000, silentLogger());
    gates.push(gate);
    gate.start();
    await until('the first listing', () => gate.held.segments === 3);
    expect(gate.backlog).toEqual({ bytes: 0, segments: 0 });
    expect(refusal(() => gate.check('healthy', 'default'))).toBeUndefined();
    expect(refusal(() => gate.check('t0', 'staging'))).toBeUndefined();
    for (const t of ['t0', 't1', 't2']) {
      expect(refusal(() => gate.check(t, 'default'))).toMatchObject({
        kind: 'unavailable',
        code: 'FLOE_ERR_WAL_TABLE_HELD',
        message:
          "table logs of dataset default cannot be committed (the writer retries it): the 400 bytes in 1 write-ahead log segments kept for it, with those kept for other datasets' failing tables (1200 bytes in all), are over acceptor.max_wal_backlog (1000); retry later",
      });
    }
    // One of them commits: 800 bytes held in all, under the limit, so the other two are accepted again.
    await store.deleteMany([keys[0]!]);
    await until('the next listing', () => gate.held.segments === 2);
    for (const t of ['t0', 't1', 't2']) expect(refusal(() => gate.check(t, 'default'))).toBeUndefined();
  });

  it('a segment held for two datasets counts whole for each; the rest counts for everyone', () => {
    const seg = (seq: number, size: number) => ({ key: formatSegmentKey(DEFAULT_WAL_PREFIX, { timestampMs: 1_700_000_000_000 + seq, instanceId: 'acc-x', seq }), size });
    const [a, b, c] = [seg(1, 100), seg(2, 30), seg(3, 7)];
    const shares = backlogShares([a, b, c], new Map([[a.key, [{ tenant: 't1', dataset: 'd', table: 'logs' }, { tenant: 't2', dataset: 'd', table: 'logs' }]], [b.key, [{ tenant: 't1', dataset: 'd', table: 'traces' }]], ['wal/gone.wal', [{ tenant: 't3', dataset: 'd', table: 'logs' }]]]));
    expect(shares.backlog).toEqual({ bytes: 7, segments: 1, oldestMs: 1_700_000_000_003 });
    expect(shares.held).toEqual({ bytes: 130, segments: 2 });
    expect(Object.fromEntries(shares.byDataset)).toEqual({
      't1\u0000d': { tenant: 't1', dataset: 'd', tables: ['logs', 'traces'], segments: 2, bytes: 130 },
      't2\u0000d': { tenant: 't2', dataset: 'd', tables: ['logs'], segments: 1, bytes: 100 },
    });
  });
});
