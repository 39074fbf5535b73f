import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLES, icebergSchema, logsTable, tracesTable, type TableName } from '@floe/schema';
import type { SqlCatalog } from './catalog.ts';
import { createFloeTable, ensureFloeTable, floeNamespace, openFloeCatalog } from './floe-catalog.ts';
import { MATERIALIZED_LABELS_PROPERTY, floeTableDef, recordedMaterializedLabels, withRecordedLabels } from './materialized-labels.ts';
import { provisionDataset } from './provision.ts';
import { FsBlobStore, pgliteClient } from './test-support.ts';
import type { NestedField, TableHandle } from './types.ts';

/**
 * Materialized labels at table creation (spec 2, provisioning rule 7): the configured keys become
 * label columns of tables created from then on, recorded in the table's properties; tables that
 * exist keep their columns; every later reader rebuilds the same definition from the record.
 */
let dir: string;
let closeDb: () => Promise<void>;
let plain: SqlCatalog;
let labelled: SqlCatalog;
const KEYS = ['k8s.pod.name', 'K8S_POD_NAME', 'user.id'];
const log = { warn: () => undefined };
const fieldsOf = (h: TableHandle): NestedField[] => h.metadata.schemas.find((s) => s['schema-id'] === h.metadata['current-schema-id'])!.fields;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-labels-'));
  const pg = await pgliteClient();
  closeDb = pg.close;
  plain = openFloeCatalog(pg.sql, new FsBlobStore(dir));
  labelled = openFloeCatalog(pg.sql, new FsBlobStore(dir), { materializedLabels: KEYS });
});
afterAll(async () => {
  await closeDb?.();
  await rm(dir, { recursive: true, force: true });
});

describe('materialized labels at table creation', () => {
  it('every table a labelled catalog creates gets the label columns, recorded in its properties', async () => {
    const r = await provisionDataset(labelled, 'acme', 'new', Object.keys(TABLES) as TableName[], log);
    expect(r.tables.every((t) => t.outcome === 'created')).toBe(true);
    for (const name of Object.keys(TABLES) as TableName[]) {
      const h = (await labelled.loadTable('acme.new', name))!;
      const base = icebergSchema(TABLES[name]).fields;
      const fields = fieldsOf(h);
      expect(fields.slice(0, base.length)).toEqual(base);
      expect(fields.slice(base.length).map((f) => [f.name, f.id, f.type, f.required])).toEqual([
        ['label_k8s_pod_name', 10_001, 'string', false],
        ['label_k8s_pod_name_2', 10_002, 'string', false],
        ['label_user_id', 10_003, 'string', false],
      ]);
      expect(h.metadata['last-column-id']).toBe(10_003);
      expect(JSON.parse(h.metadata.properties![MATERIALIZED_LABELS_PROPERTY]!)).toEqual([
        { key: 'k8s.pod.name', column: 'label_k8s_pod_name', id: 10_001 },
        { key: 'K8S_POD_NAME', column: 'label_k8s_pod_name_2', id: 10_002 },
        { key: 'user.id', column: 'label_user_id', id: 10_003 },
      ]);
      // The table's own definition describes exactly its schema.
      expect(icebergSchema(floeTableDef(h)).fields).toEqual(fields);
    }
  });

  it('a table created before the configuration keeps its columns (no property, no labels)', async () => {
    const before = await createFloeTable(plain, 'acme', 'old', 'logs');
    expect(before.metadata.properties?.[MATERIALIZED_LABELS_PROPERTY]).toBeUndefined();
    // Loading, ensuring and provisioning through the labelled catalog change nothing.
    const ensured = await ensureFloeTable(labelled, 'acme', 'old', 'logs');
    expect(ensured.metadataLocation).toBe(before.metadataLocation);
    expect((await provisionDataset(labelled, 'acme', 'old', ['logs'], log)).tables).toEqual([{ table: 'logs', outcome: 'existing' }]);
    const after = (await labelled.loadTable('acme.old', 'logs'))!;
    expect(fieldsOf(after).some((f) => f.name.startsWith('label_'))).toBe(false);
    expect(floeTableDef(after)).toBe(logsTable);
  });

  it('an explicit list wins over the catalog configuration', async () => {
    const h = await createFloeTable(labelled, 'acme', 'explicit', 'traces', { materializedLabels: ['http.route'] });
    expect(recordedMaterializedLabels(h)).toEqual([{ key: 'http.route', column: 'label_http_route', id: 10_001 }]);
    const none = await createFloeTable(labelled, 'acme', 'explicit', 'logs', { materializedLabels: [] });
    expect(recordedMaterializedLabels(none)).toEqual([]);
  });

  it('schema evolution of a labelled table keeps the label columns', async () => {
    const ns = floeNamespace('acme', 'evolve');
    const h = await createFloeTable(labelled, 'acme', 'evolve', 'traces');
    // An older traces definition: drop two signal columns, then let provisioning evolve it back.
    const kept = fieldsOf(h).filter((f) => f.name !== 'dropped_counts' && f.name !== 'links_json');
    await labelled.updateSchema(h, { type: 'struct', fields: kept } as never);
    expect((await provisionDataset(labelled, 'acme', 'evolve', ['traces'], log)).tables).toEqual([{ table: 'traces', outcome: 'evolved' }]);
    const evolved = (await labelled.loadTable(ns, 'traces'))!;
    expect(fieldsOf(evolved).map((f) => f.name)).toEqual(expect.arrayContaining(['dropped_counts', 'links_json', 'label_k8s_pod_name', 'label_k8s_pod_name_2', 'label_user_id']));
    expect(recordedMaterializedLabels(evolved).map((l) => l.column)).toEqual(['label_k8s_pod_name', 'label_k8s_pod_name_2', 'label_user_id']);
  });

  it('the record is trusted only where the schema agrees: unparsable, dropped or retyped labels are left out', async () => {
    const h = await createFloeTable(labelled, 'acme', 'tampered', 'traces');
    const withProps = (value: string): TableHandle => ({ ...h, metadata: { ...h.metadata, properties: { ...h.metadata.properties, [MATERIALIZED_LABELS_PROPERTY]: value } } });
    expect(recordedMaterializedLabels(withProps('not json'))).toEqual([]);
    expect(recordedMaterializedLabels(withProps('{"key":"a"}'))).toEqual([]);
    expect(
      recordedMaterializedLabels(
        withProps(JSON.stringify([{ key: 'user.id', column: 'label_user_id', id: 10_003 }, { key: 'gone', column: 'label_gone', id: 10_009 }, { key: 'x', column: 'name', id: 6 }, { key: 'bad' }])),
      ),
    ).toEqual([{ key: 'user.id', column: 'label_user_id', id: 10_003 }]);
    expect(withRecordedLabels(tracesTable, h).columns.at(-1)).toMatchObject({ name: 'label_user_id', attributeKey: 'user.id', expr: expect.stringContaining(`"span_attr_str"['user.id']`) });
  });
});
