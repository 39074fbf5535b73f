import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { icebergSchema, partitionSpec, TABLES, tracesTable, type TableName } from '@floe/schema';
import type { SqlCatalog } from './catalog.ts';
import { floeNamespace, openFloeCatalog } from './floe-catalog.ts';
import { enabledTables, listTenantTables, provisionDataset } from './provision.ts';
import { FsBlobStore, pgliteClient } from './test-support.ts';
import type { NestedField, TableHandle } from './types.ts';

let dir: string;
let closeDb: () => Promise<void>;
let catalog: SqlCatalog;
let brokenCatalog: SqlCatalog;

/** A store whose writes fail, like a full disk or a refused bucket. */
class FailingBlobs extends FsBlobStore {
  override async put(): Promise<void> {
    throw new Error('no space left on device');
  }
}
const warnings: Array<Record<string, unknown>> = [];
const log = { warn: (obj: object) => void warnings.push(obj as Record<string, unknown>) };
const ALL = Object.keys(TABLES) as TableName[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-provision-'));
  const pg = await pgliteClient();
  closeDb = pg.close;
  catalog = openFloeCatalog(pg.sql, new FsBlobStore(dir));
  brokenCatalog = openFloeCatalog(pg.sql, new FailingBlobs(dir));
});
afterAll(async () => {
  await closeDb?.();
  await rm(dir, { recursive: true, force: true });
});

const fieldsOf = (h: TableHandle): NestedField[] => h.metadata.schemas.find((s) => s['schema-id'] === h.metadata['current-schema-id'])!.fields;
const outcomes = (r: Awaited<ReturnType<typeof provisionDataset>>) => Object.fromEntries(r.tables.map((t) => [t.table, t.outcome]));

describe('table provisioning', () => {
  it('creates every enabled table once, then finds them existing', async () => {
    const first = await provisionDataset(catalog, 'acme', 'prod', ALL, log);
    expect(outcomes(first)).toEqual(Object.fromEntries(ALL.map((t) => [t, 'created'])));
    const handle = (await catalog.loadTable('acme.prod', 'traces'))!;
    expect(fieldsOf(handle).map((f) => f.id)).toEqual(icebergSchema(tracesTable).fields.map((f) => f.id));
    expect(handle.metadata['partition-specs'][0]!.fields).toEqual(partitionSpec(tracesTable).fields);
    expect(handle.metadata.properties).toMatchObject({ 'write.parquet.compression-codec': 'zstd', 'floe.schema-version': String(tracesTable.version) });
    // No target-file-size property at creation (the compactor reconciles it).
    expect(Object.keys(handle.metadata.properties ?? {}).some((k) => k.includes('target-file-size'))).toBe(false);
    const again = await provisionDataset(catalog, 'acme', 'prod', ALL, log);
    expect(outcomes(again)).toEqual(Object.fromEntries(ALL.map((t) => [t, 'existing'])));
  });

  it('adds the columns a table lacks (nullable) and backfills its properties', async () => {
    const old = icebergSchema(tracesTable);
    const kept = old.fields.filter((f) => f.name !== 'dropped_counts' && f.name !== 'links_json');
    await catalog.createTable(floeNamespace('acme', 'old'), 'traces', { schema: { ...old, fields: kept } as never, partitionSpec: partitionSpec(tracesTable) as never, properties: {} });
    const r = await provisionDataset(catalog, 'acme', 'old', ['traces'], log);
    expect(outcomes(r)).toEqual({ traces: 'evolved' });
    const h = (await catalog.loadTable('acme.old', 'traces'))!;
    const added = fieldsOf(h).filter((f) => f.name === 'dropped_counts' || f.name === 'links_json');
    expect(added.map((f) => [f.name, f.required])).toEqual([['links_json', false], ['dropped_counts', false]]);
    expect(h.metadata.schemas).toHaveLength(2); // history kept
    expect(h.metadata.properties).toMatchObject({ 'floe.schema-version': String(tracesTable.version) });
    expect(outcomes(await provisionDataset(catalog, 'acme', 'old', ['traces'], log))).toEqual({ traces: 'existing' });
  });

  it('recreates a table in the legacy single-map layout and drops legacy metric tables', async () => {
    const ns = floeNamespace('acme', 'legacy');
    const legacy = {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'timestamp', required: true, type: 'timestamptz' },
        { id: 2, name: 'trace_id', required: true, type: 'string' },
        { id: 3, name: 'attributes', required: false, type: { type: 'map', 'key-id': 4, key: 'string', 'value-id': 5, value: 'string', 'value-required': false } },
      ],
    };
    await catalog.createTable(ns, 'traces', { schema: legacy as never });
    await catalog.createTable(ns, 'metrics_gauge', { schema: legacy as never });
    await catalog.createTable(ns, 'metrics_summary', { schema: legacy as never });
    const r = await provisionDataset(catalog, 'acme', 'legacy', ['traces'], log);
    expect(outcomes(r)).toEqual({ traces: 'recreated', metrics_gauge: 'dropped', metrics_summary: 'dropped' });
    const h = (await catalog.loadTable(ns, 'traces'))!;
    expect(fieldsOf(h).some((f) => f.name === 'span_attr_str')).toBe(true);
    expect(fieldsOf(h).some((f) => f.name === 'attributes')).toBe(false);
    expect(await catalog.loadTable(ns, 'metrics_gauge')).toBeUndefined();
  });

  it('reports a failing table and goes on with the others', async () => {
    warnings.length = 0;
    const tables = ALL.filter((t) => t !== 'traces');
    const r = await provisionDataset(brokenCatalog, 'acme', 'broken', ['traces', ...tables], log);
    expect(r.tables.map((t) => t.outcome)).toEqual(r.tables.map(() => 'failed'));
    expect(r.tables).toHaveLength(1 + tables.length);
    expect(r.tables[0]!.error).toMatch(/no space left/);
    expect(warnings[0]).toMatchObject({ tenant: 'acme', dataset: 'broken', table: 'traces' });
    // Tables that exist are still checked through a failing store (reads work).
    expect(outcomes(await provisionDataset(brokenCatalog, 'acme', 'prod', ['traces'], log))).toEqual({ traces: 'existing' });
  });

  it('lists what exists, every dataset included', async () => {
    const listing = await listTenantTables(catalog, 'acme', ['prod', 'empty']);
    expect(listing.datasets.map((d) => [d.dataset, d.tables.map((t) => t.name)])).toEqual([
      ['prod', [...ALL].sort()],
      ['empty', []],
    ]);
    expect(listing.tables.every((t) => t.dataset === 'prod' && t.full_name === `acme.prod.${t.name}` && t.type === t.name)).toBe(true);
    // A table Floe does not define (here a legacy metric table not yet dropped) is listed without a type.
    await catalog.createTable(floeNamespace('acme', 'stale'), 'metrics_gauge', { schema: icebergSchema(tracesTable) as never });
    expect((await listTenantTables(catalog, 'acme', ['stale'])).tables).toEqual([{ name: 'metrics_gauge', dataset: 'stale', full_name: 'acme.stale.metrics_gauge', type: null }]);
    // Another tenant whose id starts the same way is not listed.
    await provisionDataset(catalog, 'acme2', 'prod', ['traces'], log);
    expect((await listTenantTables(catalog, 'acme', ['prod'])).tables).toHaveLength(ALL.length);
  });

  it('enables signals by the defaults, narrowed by the tenant', () => {
    const all = { traces_enabled: true, logs_enabled: true, metrics_enabled: true, profiles_enabled: true };
    expect(enabledTables(all)).toEqual(ALL.filter((t) => ['traces', 'logs', 'metrics', 'metric_exemplars', 'profiles'].includes(t)));
    expect(enabledTables({ ...all, traces_enabled: false })).not.toContain('traces');
    expect(enabledTables(all, { schema: { traces_enabled: false } })).not.toContain('traces');
    // A tenant can narrow, never widen.
    expect(enabledTables({ ...all, traces_enabled: false }, { schema: { traces_enabled: true } })).not.toContain('traces');
  });
});

describe('stored bytes per tenant', () => {
  it('sums the current snapshots of the tenant’s tables, not another tenant’s', async () => {
    const { tenantStoredBytes } = await import('./usage.ts');
    const before = await tenantStoredBytes(catalog, 'acme');
    const h = (await catalog.loadTable('acme.prod', 'traces'))!;
    const file = { key: 'warehouse/acme/prod/traces/data/timestamp_hour=1/x.parquet', fileSizeBytes: 12345, recordCount: 3, partition: { timestamp_hour: 1 }, lowerBounds: {}, upperBounds: {} };
    await catalog.appendFiles(h, [file as never]);
    expect(await tenantStoredBytes(catalog, 'acme')).toBe(before + 12345);
    expect(await tenantStoredBytes(catalog, 'acm')).toBe(0);
    expect(await tenantStoredBytes(catalog, 'nobody')).toBe(0);
  });
});
