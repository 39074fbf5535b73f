import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentSnapshot, ensureFloeTable, type TableHandle } from '@floe/iceberg';
import { createDeleteRequest, createTenant, dueDeleteRequests, finishDeleteRequest, listDeleteRequests, startDeleteRequest } from '@floe/meta';
import { silentLogger } from '@floe/telemetry';
import { Compactor } from './compactor.ts';
import { DELETE_REQUEST_SUMMARY_KEY } from './deletes.ts';
import { allRows, appendRowsFile, openFixture, type Fixture } from './test-support.ts';

const HOUR_MS = 3_600_000;
const NS_PER_MS = 1_000_000n;

/**
 * Delete requests in a compaction pass, on a real catalog, metadata DB and file store: a file
 * holding some of the request's lines is rewritten without them, a file holding only such lines
 * leaves the table, a file outside the window and the other service's lines stay, all in one
 * `overwrite` snapshot naming the request, which is then marked processed with its row count.
 */
describe('delete requests in a compaction pass (pglite catalog, fs store)', () => {
  let f: Fixture;
  const hour = Math.floor(Date.now() / HOUR_MS) - 3;
  const atMinute = (h: number, m: number) => (BigInt(h) * BigInt(HOUR_MS) + BigInt(m) * 60_000n) * NS_PER_MS;

  beforeAll(async () => {
    f = await openFixture('pglite');
    await createTenant(f.db, { id: 'acme' });
  });
  afterAll(async () => {
    await f?.close();
  });

  const logLines = (rows: Array<{ service: string; body: string; at: bigint }>) =>
    new TextEncoder().encode(
      rows
        .map((r) =>
          JSON.stringify({
            time_unix_nano: r.at.toString(),
            service_name: r.service,
            severity_text: 'INFO',
            severity_number: 9,
            body: r.body,
            body_type: 'string',
            log_attr_str: { user: 'u1' },
            resource_attr_str: { 'service.name': r.service },
          }),
        )
        .join('\n') + '\n',
    );

  const append = (handle: TableHandle, h: number, rows: Array<{ service: string; body: string; at: bigint }>) => appendRowsFile(f, handle, 'logs', h, logLines(rows));

  it('rewrites or drops the files holding the lines and marks the request processed', async () => {
    let handle = await ensureFloeTable(f.catalog, 'acme', 'default', 'logs');
    const mixed = await append(handle, hour, [
      { service: 'checkout', body: 'card=4111 paid', at: atMinute(hour, 1) },
      { service: 'checkout', body: 'paid', at: atMinute(hour, 2) },
      { service: 'cart', body: 'card=4111 in cart', at: atMinute(hour, 3) },
      { service: 'checkout', body: 'card=4111 refunded', at: atMinute(hour, 4) },
    ]);
    handle = mixed.handle;
    const only = await append(handle, hour, [{ service: 'checkout', body: 'card=4111 again', at: atMinute(hour, 5) }]);
    handle = only.handle;
    const before = await append(handle, hour - 2, [{ service: 'checkout', body: 'card=4111 earlier', at: atMinute(hour - 2, 5) }]);
    handle = before.handle;

    const req = await createDeleteRequest(f.db, {
      tenantId: 'acme',
      datasetId: 'default',
      table: 'logs',
      query: '{service_name="checkout"} |= "card="',
      startMs: hour * HOUR_MS,
      endMs: hour * HOUR_MS + 30 * 60_000,
    });
    const compactor = new Compactor({
      ...f,
      log: silentLogger(),
      targetFileBytes: 128 * 1024 * 1024,
      snapshotRetentionMs: HOUR_MS,
      // Files this young are never merged, so the pass's only change is the delete.
      minFileAgeMs: HOUR_MS,
      deleteRequests: {
        due: (nowMs) => dueDeleteRequests(f.db, new Date(nowMs)),
        start: (id) => startDeleteRequest(f.db, id),
        finish: (id, rows) => finishDeleteRequest(f.db, id, rows),
      },
    });
    const pass = await compactor.pass();
    expect(pass.deletes).toEqual({ requests: 1, files: 2, rows: 3 });
    expect(pass.failedTables).toBe(0);

    const now = (await f.catalog.loadTable('acme.default', 'logs'))!;
    expect(currentSnapshot(now.metadata)!.summary).toMatchObject({ operation: 'overwrite', [DELETE_REQUEST_SUMMARY_KEY]: req.id, 'deleted-data-files': '2', 'added-data-files': '1', 'deleted-records': '5', 'added-records': '2' });
    const live = await f.catalog.planFiles(now);
    const keys = live.map((p) => p.key);
    expect(keys).toContain(before.key);
    expect(keys).not.toContain(mixed.key);
    expect(keys).not.toContain(only.key);
    expect(live).toHaveLength(2);
    const bodies = (await allRows(live.map((p) => f.store.localPath(p.key)!))).map((j) => (JSON.parse(j) as { body: string }).body).sort();
    expect(bodies).toEqual(['card=4111 earlier', 'card=4111 in cart', 'paid']);

    const [done] = await listDeleteRequests(f.db, 'acme', 'default', 'logs');
    expect(done).toMatchObject({ id: req.id, deletedRows: 3 });
    expect(done!.processedAt).toBeInstanceOf(Date);
    // Processed requests are not taken up again.
    expect((await compactor.pass()).deletes).toEqual({ requests: 0, files: 0, rows: 0 });
  });

  it('is done with nothing deleted when the table does not exist', async () => {
    await createTenant(f.db, { id: 'empty' });
    const req = await createDeleteRequest(f.db, { tenantId: 'empty', datasetId: 'default', table: 'logs', query: '{service_name="x"}', startMs: 0, endMs: 1 });
    const compactor = new Compactor({
      ...f,
      log: silentLogger(),
      targetFileBytes: 128 * 1024 * 1024,
      snapshotRetentionMs: HOUR_MS,
      deleteRequests: { due: (nowMs) => dueDeleteRequests(f.db, new Date(nowMs)), start: (id) => startDeleteRequest(f.db, id), finish: (id, rows) => finishDeleteRequest(f.db, id, rows) },
    });
    expect((await compactor.pass(undefined, { tenant: 'empty' })).deletes).toEqual({ requests: 1, files: 0, rows: 0 });
    expect((await listDeleteRequests(f.db, 'empty', 'default', 'logs'))[0]).toMatchObject({ id: req.id, deletedRows: 0 });
  });
});
