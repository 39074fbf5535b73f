import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@floe/config';
import { createDataset, createTenant, openDb } from '@floe/meta';
import { listSegments } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { Committer } from './committer.ts';
import { start } from './start.ts';
import { eventually, openWriterFixture, recordingTelemetry, sealSegment, type CapturedLog, type WriterFixture } from './test-support.ts';

/**
 * The writer service as start() composes it: the startup reconcile pass under
 * writer.table_reconcile_interval 0s, and the commit loop's transient failures (spec 2, Events
 * and Limits), with a real meta database, store and OpenTelemetry SDK meter.
 */
describe('writer start', () => {
  let f: WriterFixture;
  let captured: CapturedLog;

  beforeAll(async () => {
    f = await openWriterFixture('writer-start');
    captured = f.capture('info');
  });
  afterAll(() => f?.close());

  const config = () =>
    loadConfig({
      env: {},
      overrides: {
        log: { level: 'silent' },
        // A custom table declaration: listed by the schema endpoints, never provisioned.
        schema: { default_schemas: { metrics_enabled: false, profiles_enabled: false, custom_schemas: [{ name: 'checkout_events', columns: [{ name: 'order_id', type: 'string' }] }] } },
        writer: { host: '127.0.0.1', admin_port: 0, poll_interval: '10ms', flush_interval: '10ms', table_reconcile_interval: '0s', work_dir: join(f.dir, 'writer-work') },
      },
    });

  it('writer.table_reconcile_interval is 5m by default; 0s reads as 0, the startup pass only', () => {
    expect(loadConfig({ env: {} }).writer.table_reconcile_interval).toBe(300_000);
    expect(config().writer.table_reconcile_interval).toBe(0);
    expect(loadConfig({ env: { FLOE__WRITER__TABLE_RECONCILE_INTERVAL: '0s' } }).writer.table_reconcile_interval).toBe(0);
  });

  it('with 0s the startup pass still provisions every dataset, logs its counts at info and counts tables_provisioned', async () => {
    await createTenant(f.db, { id: 'acme' });
    await createDataset(f.db, { tenantId: 'acme', id: 'staging' });
    const m = recordingTelemetry();
    const svc = await start(config(), { log: captured.log, db: f.db, store: f.store, telemetry: m.telemetry });
    try {
      const line = await eventually('the startup reconcile pass line', async () => (await captured.lines()).find((l) => l.msg === 'table reconcile pass'));
      expect(line).toMatchObject({ level: 'info', component: 'writer', datasets_checked: 2, datasets_skipped: 0, tables_created: 4, tables_failed: 0 });
    } finally {
      await svc.stop();
    }
    expect(await m.points('tables_provisioned')).toEqual(
      expect.arrayContaining([
        { attributes: { 'tenant.id': 'acme', 'dataset.id': 'default' }, value: 2 },
        { attributes: { 'tenant.id': 'acme', 'dataset.id': 'staging' }, value: 2 },
      ]),
    );
    expect((await f.catalog.listTables('acme')).map((t) => `${t.namespace}.${t.name}`)).toEqual(['acme.default.logs', 'acme.default.traces', 'acme.staging.logs', 'acme.staging.traces']);
  });

  it('a commit round failing on an unreachable meta database counts commit_failures kind transient, logs at error, and keeps the segment for a retry', async () => {
    const hour = 490_888;
    await sealSegment(f.store, { tenant: 'acme', table: 'logs', hour }, [{ time_unix_nano: (BigInt(hour) * 3_600_000_000_000n).toString(), service_name: 'svc', body: 'kept' }]);
    // A real PostgreSQL pool, closed: the catalog's queries fail as when the database is down.
    // Nothing else makes a round fail without damaging its data (which is the permanent kind).
    const gone = await openDb({ kind: 'pg', url: 'postgres://postgres@127.0.0.1:5432/postgres' });
    await gone.close();
    const m = recordingTelemetry();
    const svc = await start(config(), { log: captured.log, db: gone, store: f.store, telemetry: m.telemetry });
    try {
      await eventually('a transient commit failure', async () => ((await m.points('commit_failures')).length > 0 ? true : undefined));
    } finally {
      await svc.stop();
    }
    const failures = await m.points('commit_failures');
    expect(failures.map((p) => p.attributes)).toEqual([{ kind: 'transient' }]);
    expect(failures[0]!.value).toBeGreaterThanOrEqual(1);
    const errors = (await captured.lines()).filter((l) => l.msg === 'commit round failed; retrying');
    expect(errors[0]).toMatchObject({ level: 'error', component: 'writer', failures: 1, err: { message: 'Cannot use a pool after calling end on the pool' } });
    expect(errors).toHaveLength(failures[0]!.value as number);
    // Transient: nothing set aside; a writer whose database answers commits the row.
    expect(await listSegments(f.store)).toHaveLength(1);
    expect(await f.store.list('wal-quarantine/')).toEqual([]);
    const retry = new Committer({ store: f.store, catalog: f.catalog, writer: f.writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100 });
    expect(await retry.round()).toMatchObject({ segments: 1, rows: 1, commits: 1 });
  });
});
