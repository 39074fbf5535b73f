import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { DEFAULT_WAL_PREFIX, FsObjectStore, formatSegmentKey } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { WalBacklogGate } from './wal-backlog.ts';

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

  it('refuses while the sealed segments are over the limit, and opens once the writer has taken them', async () => {
    const root = mkdtempSync(join(tmpdir(), 'floe-backlog-'));
    dirs.push(root);
    const store = new FsObjectStore(root);
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
      gate.check();
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(FloeError);
    expect(refused).toMatchObject({ kind: 'unavailable', code: 'FLOE_ERR_WAL_BACKLOG' });
    expect((refused as FloeError).message).toContain('backlog of 1200 bytes in 3 segments is over acceptor.max_wal_backlog (1000)');
    // The writer consumed two: the next listing (about a second later) opens the gate.
    await store.deleteMany(keys.slice(0, 2));
    await until('the next listing', () => gate.backlog.segments === 1);
    expect(() => gate.check()).not.toThrow();
  });

  it('without a limit never lists, and never refuses', async () => {
    const root = mkdtempSync(join(tmpdir(), 'floe-backlog-'));
    dirs.push(root);
    const store = new FsObjectStore(root);
    await store.put(formatSegmentKey(DEFAULT_WAL_PREFIX, { timestampMs: Date.now(), instanceId: 'acc-test', seq: 1 }), new Uint8Array(4000));
    const unlimited = new WalBacklogGate(store, 0, silentLogger());
    gates.push(unlimited);
    unlimited.start();
    await new Promise((r) => setTimeout(r, 200));
    expect(unlimited.backlog).toEqual({ bytes: 0, segments: 0 });
    expect(() => unlimited.check()).not.toThrow();
  });

});
