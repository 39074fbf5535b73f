import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@floe/config';
import { currentSnapshot, tenantStoredBytes, type TableHandle } from '@floe/iceberg';
import { TABLES } from '@floe/schema';
import { silentLogger } from '@floe/telemetry';
import { Compactor } from './compactor.ts';
import { lastExpiredHour, RETENTION_SUMMARY_KEY } from './retention.ts';
import { appendSpanFile, createTracesTable, openFixture, type Fixture } from './test-support.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const TARGET = 128 * 1024 * 1024;

describe('limits.retention_by_table', () => {
  it('has a key for every table a dataset holds (the config lists them by hand: it cannot import @floe/schema)', () => {
    const all = Object.fromEntries(Object.keys(TABLES).map((t, i) => [t, `${i + 1}d`]));
    expect(loadConfig({ env: {}, overrides: { limits: { retention_by_table: all } } }).limits.retention_by_table).toEqual(
      Object.fromEntries(Object.keys(TABLES).map((t, i) => [t, (i + 1) * DAY_MS])),
    );
  });
});

describe('lastExpiredHour', () => {
  it('is the newest hour that ends at or before now − retention', () => {
    const hour = 500_000;
    // 10 minutes into hour `hour` with a 2 h retention: the cutoff falls 10 minutes into hour − 2,
    // so hour − 3 is the newest one wholly before it.
    expect(lastExpiredHour(hour * HOUR_MS + 600_000, 2 * HOUR_MS)).toBe(hour - 3);
    // On an hour boundary the hour that just ended is wholly before the cutoff.
    expect(lastExpiredHour(hour * HOUR_MS, 2 * HOUR_MS)).toBe(hour - 3);
    expect(lastExpiredHour(hour * HOUR_MS + 1, 2 * HOUR_MS)).toBe(hour - 3);
    expect(lastExpiredHour((hour + 1) * HOUR_MS, 2 * HOUR_MS)).toBe(hour - 2);
  });
});

/**
 * Retention in a compaction pass, on a real catalog and file store: the hours wholly past the
 * tenant's retention leave the table in one `delete` snapshot (queries stop seeing them, the
 * quota's stored bytes fall), their files leave storage once that snapshot's parents expire, and
 * a tenant or table kept forever loses nothing.
 */
describe('retention in a compaction pass (pglite catalog, fs store)', () => {
  let f: Fixture;
  const log = silentLogger();
  // Ten minutes into an hour, so that the retention's cutoff falls inside an hour partition.
  const nowHour = Math.floor(Date.now() / HOUR_MS);
  const now = nowHour * HOUR_MS + 600_000;

  beforeAll(async () => {
    f = await openFixture('pglite');
  });
  afterAll(async () => {
    await f?.close();
  });

  async function table(tenant: string, hoursAgo: number[]): Promise<{ handle: TableHandle; keys: Map<number, string> }> {
    let handle = await createTracesTable(f.catalog, tenant, 'default');
    const keys = new Map<number, string>();
    for (const [i, ago] of hoursAgo.entries()) {
      const r = await appendSpanFile(f, handle, nowHour - ago, 10 + i, 400 + i);
      handle = r.handle;
      keys.set(ago, r.key);
    }
    return { handle, keys };
  }

  it('deletes the hours wholly past retention in one delete snapshot, then their files when it ages out', async () => {
    const { keys } = await table('short', [72, 50, 49, 48, 47, 1]);
    const { keys: keptKeys } = await table('forever', [72, 50]);
    const asked: Array<[string, string]> = [];
    const retentionMs = async (tenant: string, tbl: string) => {
      asked.push([tenant, tbl]);
      return tenant === 'short' ? 2 * DAY_MS : 0;
    };
    const storedBefore = await tenantStoredBytes(f.catalog, 'short');

    const compactor = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, retentionMs, now: () => now });
    const pass = await compactor.pass();
    expect(asked.sort()).toEqual([
      ['forever', 'traces'],
      ['short', 'traces'],
    ]);
    // 48 h before now is 10 minutes into the hour 48 hours back: that hour and the later ones
    // still hold rows inside the retention and stay whole.
    expect(pass.retention).toEqual({ partitions: 3, files: 3, rows: 10 + 11 + 12, bytes: expect.any(Number), streamFiles: 0 });

    const handle = (await f.catalog.loadTable('short.default', 'traces'))!;
    const snapshot = currentSnapshot(handle.metadata)!;
    // The pass's other steps (compaction, expiry) had nothing to do here, so the delete is current.
    expect(snapshot.summary).toMatchObject({ operation: 'delete', [RETENTION_SUMMARY_KEY]: String(2 * DAY_MS), 'deleted-data-files': '3', 'deleted-records': '33' });
    const live = (await f.catalog.planFiles(handle)).map((p) => p.key).sort();
    expect(live).toEqual([keys.get(48)!, keys.get(47)!, keys.get(1)!].sort());
    expect(await tenantStoredBytes(f.catalog, 'short')).toBe(storedBefore - pass.retention.bytes);
    // Still on storage: the snapshots before the delete reference them until they expire.
    for (const ago of [72, 50, 49]) expect(existsSync(f.store.localPath(keys.get(ago)!)!)).toBe(true);

    // The tenant kept forever lost nothing.
    const kept = (await f.catalog.planFiles((await f.catalog.loadTable('forever.default', 'traces'))!)).map((p) => p.key).sort();
    expect(kept).toEqual([...keptKeys.values()].sort());

    // Two hours on, the old snapshots are past compactor.snapshot_retention: expiry deletes the files.
    const later = new Compactor({ ...f, log, targetFileBytes: TARGET, snapshotRetentionMs: HOUR_MS, retentionMs, now: () => now + 2 * HOUR_MS });
    const second = await later.pass();
    // The cutoff moved two hours: hours 48 and 47 are now wholly past it, hour 1 is not.
    expect(second.retention).toMatchObject({ partitions: 2, files: 2 });
    expect(second.expiry.dataFiles).toBeGreaterThanOrEqual(3);
    for (const ago of [72, 50, 49]) expect(existsSync(f.store.localPath(keys.get(ago)!)!)).toBe(false);
    expect((await f.catalog.planFiles((await f.catalog.loadTable('short.default', 'traces'))!)).map((p) => p.key)).toEqual([keys.get(1)!]);
  });
});
