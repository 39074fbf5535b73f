import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { icebergSchema, logsTable, partitionSpec, sortOrderJson, TABLES, tracesTable, type TableName } from '@floe/schema';
import type { SqlCatalog } from './catalog.ts';
import { ensureFloeTable, floeNamespace, openFloeCatalog } from './floe-catalog.ts';
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
const defaultSortOrder = (h: TableHandle) => h.metadata['sort-orders'].find((o) => o['order-id'] === h.metadata['default-sort-order-id'])!.fields;
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
    // Metadata pruning, and the id filter Floe really writes (a sidecar), not a Parquet bloom filter.
    expect(handle.metadata.properties).toMatchObject({
      'write.metadata.delete-after-commit.enabled': 'true',
      'write.metadata.previous-versions-max': '20',
      'floe.id-filter.column': 'trace_id',
    });
    expect(Object.keys(handle.metadata.properties ?? {}).some((k) => k.startsWith('write.parquet.bloom-filter'))).toBe(false);
    expect(defaultSortOrder(handle)).toEqual(sortOrderJson(tracesTable).fields);
    // A table ingest creates first has the very same properties and sort order.
    const ingested = await ensureFloeTable(catalog, 'acme', 'ingested', 'traces');
    expect(ingested.metadata.properties).toEqual(handle.metadata.properties);
    expect(defaultSortOrder(ingested)).toEqual(defaultSortOrder(handle));
    // A table without an id column declares no id filter.
    const logs = (await catalog.loadTable('acme.prod', 'logs'))!;
    expect(logs.metadata.properties['floe.id-filter.column']).toBeUndefined();
    expect(logs.metadata.properties['write.metadata.previous-versions-max']).toBe('20');
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

  it('backfills metadata pruning and the canonical sort order on a table made without them, once', async () => {
    const ns = floeNamespace('acme', 'bare');
    // As an older build (or another engine) made them: current columns, no Floe properties, unsorted.
    await catalog.createTable(ns, 'traces', { schema: icebergSchema(tracesTable) as never, partitionSpec: partitionSpec(tracesTable) as never, properties: {} });
    // Someone tuned this one's metadata log: that choice stands.
    await catalog.createTable(ns, 'logs', { schema: icebergSchema(logsTable) as never, partitionSpec: partitionSpec(logsTable) as never, properties: { 'write.metadata.previous-versions-max': '5' } });
    const bare = (await catalog.loadTable(ns, 'traces'))!;
    expect(defaultSortOrder(bare)).toEqual([]);

    expect(outcomes(await provisionDataset(catalog, 'acme', 'bare', ['traces', 'logs'], log))).toEqual({ traces: 'evolved', logs: 'evolved' });
    const traces = (await catalog.loadTable(ns, 'traces'))!;
    expect(traces.metadata.properties).toMatchObject({
      'write.metadata.delete-after-commit.enabled': 'true',
      'write.metadata.previous-versions-max': '20',
      'write.parquet.compression-codec': 'zstd',
      'floe.id-filter.column': 'trace_id',
    });
    // Order id 1, the one the files Floe writes name.
    expect(traces.metadata['default-sort-order-id']).toBe(1);
    expect(defaultSortOrder(traces)).toEqual(sortOrderJson(tracesTable).fields);
    expect(traces.metadata['sort-orders'].map((o) => o['order-id'])).toEqual([0, 1]);
    const logs = (await catalog.loadTable(ns, 'logs'))!;
    expect(logs.metadata.properties).toMatchObject({ 'write.metadata.delete-after-commit.enabled': 'true', 'write.metadata.previous-versions-max': '5' });
    expect(defaultSortOrder(logs)).toEqual(sortOrderJson(logsTable).fields);

    // Converged: the next load commits nothing.
    expect(outcomes(await provisionDataset(catalog, 'acme', 'bare', ['traces', 'logs'], log))).toEqual({ traces: 'existing', logs: 'existing' });
    expect((await catalog.loadTable(ns, 'traces'))!.metadataLocation).toBe(traces.metadataLocation);
  });

  it('keeps a sort order a table already declares', async () => {
    const ns = floeNamespace('acme', 'sorted');
    const own = { 'order-id': 1, fields: [{ transform: 'identity', 'source-id': 1, direction: 'desc', 'null-order': 'nulls-last' }] };
    await catalog.createTable(ns, 'traces', { schema: icebergSchema(tracesTable) as never, partitionSpec: partitionSpec(tracesTable) as never, sortOrder: own as never });
    await provisionDataset(catalog, 'acme', 'sorted', ['traces'], log);
    expect(defaultSortOrder((await catalog.loadTable(ns, 'traces'))!)).toEqual(own.fields);
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

  it('never provisions the custom tables declared in default_schemas.custom_schemas', async () => {
    // default_schemas as configured: every signal on, and custom table declarations (free-form objects) beside them.
    const defaults = {
      traces_enabled: true,
      logs_enabled: true,
      metrics_enabled: true,
      profiles_enabled: true,
      custom_schemas: [
        { name: 'checkout_events', signal: 'logs', columns: [{ name: 'order_id', type: 'string' }] },
        { name: 'audit', table: 'audit', fields: { actor: 'string' } },
      ],
    };
    const tables = enabledTables(defaults);
    expect([...tables].sort()).toEqual([...ALL].sort());
    const r = await provisionDataset(catalog, 'custom', 'default', tables, log);
    expect(r.tables.every((t) => t.outcome === 'created')).toBe(true);
    const listed = await listTenantTables(catalog, 'custom', ['default']);
    expect(listed.tables.map((t) => t.name)).toEqual([...ALL].sort());
    expect(listed.tables.every((t) => t.type !== null)).toBe(true);
    // Nowhere in the catalog, under any tenant or dataset.
    const everywhere = (await catalog.listTables()).map((t) => t.name);
    expect(everywhere.filter((name) => name === 'checkout_events' || name === 'audit')).toEqual([]);
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
