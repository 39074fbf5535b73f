import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { utimes } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@floe/config';
import { silentLogger } from '@floe/telemetry';
import { start, type CompactorStatus } from './start.ts';
import { appendSpanFile, createTracesTable, openFixture, type Fixture } from './test-support.ts';

const HOUR_MS = 3_600_000;

describe('start', () => {
  let f: Fixture;
  let orphanKey: (n: string) => Promise<string>;

  beforeAll(async () => {
    f = await openFixture('pglite');
    let handle = await createTracesTable(f.catalog, 'acme', 'default');
    handle = (await appendSpanFile(f, handle, Math.floor(Date.now() / HOUR_MS) - 3, 5, 1)).handle;
    const loc = f.store.keyFromUri(handle.metadata.location);
    // An upload two hours old that no snapshot references: the first pass must remove it.
    orphanKey = async (n) => {
      const key = `${loc}/data/timestamp_hour=1/${n}-${randomUUID()}.parquet`;
      await f.store.put(key, new Uint8Array([1]));
      const t = new Date(Date.now() - 2 * HOUR_MS);
      await utimes(f.store.localPath(key)!, t, t);
      return key;
    };
  });
  afterAll(async () => {
    await f?.close();
  });

  const config = (enabled: boolean) =>
    loadConfig({
      env: {},
      overrides: { log: { level: 'silent' }, compactor: { host: '127.0.0.1', admin_port: 0, enabled, interval: '100ms', work_dir: join(f.dir, 'compactor') } },
    });

  it('runs passes on its interval, answers /ready, and stops', async () => {
    const orphan = await orphanKey('a');
    const svc = await start(config(true), { log: silentLogger(), db: f.db, store: f.store });
    try {
      expect(svc.name).toBe('compactor');
      const ready = await fetch(`http://127.0.0.1:${svc.ports.admin}/ready`);
      expect(ready.status).toBe(200);
      // One bound for all the waits below (a loaded CI machine runs passes late, never wrongly).
      const deadline = Date.now() + 30_000;
      while ((await f.store.head(orphan)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(await f.store.head(orphan)).toBeUndefined();
      // And again on the next interval.
      const second = await orphanKey('b');
      while ((await f.store.head(second)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(await f.store.head(second)).toBeUndefined();
      // GET /status: the passes so far and what the last one did. The pass that sweeps a third
      // orphan (the only one left) says so until the next pass, 100 ms later, replaces it.
      const status = async () => (await (await fetch(`http://127.0.0.1:${svc.ports.admin}/status`)).json()) as CompactorStatus;
      const third = await orphanKey('d');
      const made = Date.now();
      let seen: CompactorStatus;
      do seen = await status();
      while (!(seen.lastPass && Date.parse(seen.lastPass.finishedAt) >= made && seen.lastPass.orphanDataFiles === 1) && Date.now() < deadline);
      expect(await f.store.head(third)).toBeUndefined();
      expect(seen).toMatchObject({ enabled: true, intervalMs: 100 });
      // Alone: the only compactor dividing the tables.
      expect(seen.compactors).toEqual([seen.compactorId]);
      expect(seen.passes).toBeGreaterThanOrEqual(3);
      expect(seen.lastPass).toMatchObject({ failed: false, tables: 1, failedTables: 0, partitionsCompacted: 0, orphanDataFiles: 1 });
      expect(Date.parse(seen.lastPass!.finishedAt)).toBeGreaterThanOrEqual(Date.parse(seen.lastPass!.startedAt));
      // And the pass after it found nothing more to sweep.
      const passes = seen.passes;
      do seen = await status();
      while (seen.passes === passes && Date.now() < deadline);
      expect(seen.lastPass).toMatchObject({ failed: false, orphanDataFiles: 0 });
    } finally {
      await svc.stop();
    }
    expect(svc.isReady()).toBe(false);
    await expect(fetch(`http://127.0.0.1:${svc.ports.admin}/ready`)).rejects.toThrow();
  });

  it('does no work when disabled but still answers /ready', async () => {
    const orphan = await orphanKey('c');
    const svc = await start(config(false), { log: silentLogger(), db: f.db, store: f.store });
    try {
      expect((await fetch(`http://127.0.0.1:${svc.ports.admin}/ready`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 400));
      expect(await f.store.head(orphan)).toBeDefined();
      expect(await (await fetch(`http://127.0.0.1:${svc.ports.admin}/status`)).json()).toEqual({
        enabled: false,
        intervalMs: 100,
        passes: 0,
        runningSince: null,
        lastPass: null,
        requests: [],
        openHours: { intervalMs: 15_000, passes: 0, failedPasses: 0, filesMerged: 0, lastFinishedAt: null, last: null },
      });
      // Nor on demand: the switch holds for operators too.
      const asked = await fetch(`http://127.0.0.1:${svc.ports.admin}/compact`, { method: 'POST', body: '{}' });
      expect([asked.status, ((await asked.json()) as { errorType: string }).errorType]).toEqual([409, 'conflict']);
    } finally {
      await svc.stop();
    }
  });
});
