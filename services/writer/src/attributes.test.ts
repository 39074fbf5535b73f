import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFloeTable, floeTableDef, openFloeCatalog, type FloeCatalog, type TableHandle } from '@floe/iceberg';
import { createDataset, createTenant, listAttributeTypeMismatches, listAttributeTypePins, migrate, openDb, type Db } from '@floe/meta';
import { icebergSchema, logsTable } from '@floe/schema';
import { ParquetWriter, WalAppender, createObjectStore, newRecordId, type ObjectStore } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { AttributeTypePins } from './attribute-types.ts';
import { Committer } from './committer.ts';

/**
 * Issue 4 through the writer's real path (WAL → DuckDB → Parquet → Iceberg commit, PGlite for
 * the catalog and the metadata DB): materialized label columns computed from the typed maps and
 * carrying their Iceberg field ids, tables created before the configuration left alone, label
 * columns kept by compaction's rewrite, and attribute type pins with both kinds of mismatch.
 */
const HOUR = 3_600_000_000_000n;
const H = 490_321;
const t = (offset: number) => (BigInt(H) * HOUR + BigInt(offset)).toString();
const KEYS = ['k8s.pod.name', 'K8S_POD_NAME', 'user.id'];

describe('attributes through the writer', () => {
  let dir: string;
  let db: Db;
  let store: ObjectStore;
  let catalog: FloeCatalog;
  let writer: ParquetWriter;
  let duck: DuckDBConnection;
  let pins: AttributeTypePins;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'floe-attributes-'));
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    await createTenant(db, { id: 'acme', displayName: 'Acme' });
    for (const id of ['old', 'pins']) await createDataset(db, { tenantId: 'acme', id });
    store = createObjectStore({ kind: 'fs', root: join(dir, 'store') });
    catalog = openFloeCatalog(db, store, { materializedLabels: KEYS });
    writer = new ParquetWriter(join(dir, 'work'));
    duck = await (await DuckDBInstance.create(':memory:')).connect();
    pins = new AttributeTypePins({ db, log: silentLogger() });
  });
  afterAll(async () => {
    duck?.closeSync();
    writer?.close();
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const committer = () => new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100, pins });

  /** One WAL record per call, committed by one round. */
  async function commit(batches: Array<{ dataset?: string; table: string; rows: Array<Record<string, unknown>> }>) {
    const wal = new WalAppender(store, { instanceId: `acc-attr-${newRecordId()}` });
    for (const b of batches) {
      await wal.append([
        { header: { tenant: 'acme', dataset: b.dataset ?? 'default', table: b.table, hour: H, rows: b.rows.length, id: newRecordId() }, payload: Buffer.from(b.rows.map((r) => JSON.stringify(r)).join('\n') + '\n') },
      ]);
    }
    await wal.close();
    const stats = await committer().round();
    expect(stats.commits).toBe(batches.length);
    return stats;
  }

  async function files(dataset: string, table: string) {
    const handle = (await catalog.loadTable(`acme.${dataset}`, table))!;
    const planned = await catalog.planFiles(handle);
    return { handle, paths: planned.map((f) => store.localPath(f.key)!) };
  }

  async function read(dataset: string, table: string, select: string, order: string) {
    const { paths } = await files(dataset, table);
    const r = await duck.runAndReadAll(`SELECT ${select} FROM read_parquet([${paths.map((p) => `'${p}'`).join(',')}], union_by_name = true) ORDER BY ${order}`);
    return r.getRowObjectsJson();
  }

  const fieldIdsOf = async (path: string) =>
    (await duck.runAndReadAll(`SELECT name, field_id FROM parquet_schema('${path}') WHERE field_id IS NOT NULL`)).getRowObjectsJson().map((r) => `${String(r.name)}:${String(r.field_id)}`);
  const currentFields = (h: TableHandle) => h.metadata.schemas.find((s) => s['schema-id'] === h.metadata['current-schema-id'])!.fields;

  describe('materialized labels', () => {
    let oldTable: TableHandle;

    beforeAll(async () => {
      // Created before the configuration: a catalog without labels made it.
      oldTable = await createFloeTable(catalog, 'acme', 'old', 'logs', { materializedLabels: [] });
      await commit([
        {
          table: 'logs',
          rows: [
            // The record's own attribute wins over the resource's; any type becomes text.
            { time_unix_nano: t(1), service_name: 'shop', body: 'own', log_attr_str: { 'k8s.pod.name': 'pod-a' }, resource_attr_str: { 'k8s.pod.name': 'pod-res' }, resource_attr_int: { K8S_POD_NAME: 42 }, log_attr_int: { 'user.id': '9007199254740993' } },
            // Only the resource has it.
            { time_unix_nano: t(2), service_name: 'shop', body: 'resource', resource_attr_str: { 'k8s.pod.name': 'pod-res' }, log_attr_double: { K8S_POD_NAME: 1.5 }, resource_attr_bool: { 'user.id': false } },
            // Scope attributes are not a label source; no key at all is NULL.
            { time_unix_nano: t(3), service_name: 'shop', body: 'none', scope_attr_str: { 'k8s.pod.name': 'scope' } },
          ],
        },
        { table: 'traces', rows: [{ trace_id: '0'.repeat(31) + '1', span_id: '0'.repeat(15) + '1', name: 'GET', service_name: 'shop', start_time_unix_nano: t(4), span_attr_str: { 'user.id': 'u-1' }, resource_attr_str: { 'k8s.pod.name': 'pod-t', 'user.id': 'u-res' } }] },
        { table: 'metrics', rows: [{ metric_name: 'm', metric_type: 'gauge', series_id: '00000000000000aa', time_unix_nano: t(5), value: 1, point_attr_bool: { K8S_POD_NAME: true } }] },
        { dataset: 'old', table: 'logs', rows: [{ time_unix_nano: t(6), service_name: 'shop', body: 'old table', log_attr_str: { 'k8s.pod.name': 'pod-old' } }] },
      ]);
    });

    it('fill label_<key> columns from the typed maps, in the same SELECT that writes the file', async () => {
      expect(await read('default', 'logs', 'body, label_k8s_pod_name AS a, label_k8s_pod_name_2 AS b, label_user_id AS u', 'time_unix_nano')).toEqual([
        { body: 'own', a: 'pod-a', b: '42', u: '9007199254740993' },
        { body: 'resource', a: 'pod-res', b: '1.5', u: 'false' },
        { body: 'none', a: null, b: null, u: null },
      ]);
      expect(await read('default', 'traces', 'label_k8s_pod_name AS a, label_k8s_pod_name_2 AS b, label_user_id AS u', 'trace_id')).toEqual([{ a: 'pod-t', b: null, u: 'u-1' }]);
      expect(await read('default', 'metrics', 'label_k8s_pod_name AS a, label_k8s_pod_name_2 AS b, label_user_id AS u', 'metric_name')).toEqual([{ a: null, b: 'true', u: null }]);
      // The attributes stay in their maps.
      expect(await read('default', 'logs', `log_attr_str['k8s.pod.name'] AS m`, 'time_unix_nano')).toEqual([{ m: 'pod-a' }, { m: null }, { m: null }]);
    });

    it.each(['logs', 'traces', 'metrics'])('%s: Parquet field ids of every column, labels included, are the table schema', async (table) => {
      const { handle, paths } = await files('default', table);
      const fields = currentFields(handle);
      expect(fields.filter((f) => f.name.startsWith('label_')).map((f) => `${f.name}:${f.id}`)).toEqual(['label_k8s_pod_name:10001', 'label_k8s_pod_name_2:10002', 'label_user_id:10003']);
      expect(icebergSchema(floeTableDef(handle)).fields).toEqual(fields);
      const leaves = await fieldIdsOf(paths[0]!);
      expect(leaves).toEqual(expect.arrayContaining(['label_k8s_pod_name:10001', 'label_k8s_pod_name_2:10002', 'label_user_id:10003']));
      const top = fields.map((f) => `${f.name}:${f.id}`);
      expect(top.every((f) => leaves.includes(f))).toBe(true);
    });

    it('a table created before the configuration is written without label columns', async () => {
      const { handle, paths } = await files('old', 'logs');
      expect(handle.metadata.properties?.['floe.materialized-labels']).toBeUndefined();
      expect(currentFields(handle).map((f) => f.name)).toEqual(icebergSchema(logsTable).fields.map((f) => f.name));
      expect(handle.metadataLocation).not.toBe(oldTable.metadataLocation); // it was committed to
      const columns = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${paths[0]}', hive_partitioning = false)`)).getRowObjectsJson().map((r) => String(r.column_name));
      expect(columns).toEqual(logsTable.columns.map((c) => c.name));
      expect(await read('old', 'logs', `body, log_attr_str['k8s.pod.name'] AS m`, 'time_unix_nano')).toEqual([{ body: 'old table', m: 'pod-old' }]);
    });

    it("compaction's rewrite keeps the label columns, their values and field ids; inputs lacking them get them computed", async () => {
      await commit([{ table: 'logs', rows: [{ time_unix_nano: t(7), service_name: 'shop', body: 'second file', resource_attr_str: { 'user.id': 'u-2' } }] }]);
      const { handle, paths } = await files('default', 'logs');
      expect(paths.length).toBe(2);
      // A file of the same table written without the label columns (e.g. by a writer from before the feature).
      const bare = await writer.write(logsTable, [Buffer.from(JSON.stringify({ time_unix_nano: t(8), service_name: 'shop', body: 'bare', log_attr_str: { 'k8s.pod.name': 'pod-bare' } }) + '\n')]);
      const def = floeTableDef(handle); // what compact.ts rewrites with
      const out = await writer.rewrite(def, [...paths, bare.path]);
      try {
        expect(out.rowCount).toBe(5);
        const rows = (await duck.runAndReadAll(`SELECT body, label_k8s_pod_name AS a, label_k8s_pod_name_2 AS b, label_user_id AS u FROM read_parquet('${out.path}') ORDER BY time_unix_nano`)).getRowObjectsJson();
        expect(rows).toEqual([
          { body: 'own', a: 'pod-a', b: '42', u: '9007199254740993' },
          { body: 'resource', a: 'pod-res', b: '1.5', u: 'false' },
          { body: 'none', a: null, b: null, u: null },
          { body: 'second file', a: null, b: null, u: 'u-2' },
          { body: 'bare', a: 'pod-bare', b: null, u: null },
        ]);
        expect(await fieldIdsOf(out.path)).toEqual(expect.arrayContaining(['label_k8s_pod_name:10001', 'label_k8s_pod_name_2:10002', 'label_user_id:10003']));
      } finally {
        rmSync(out.path, { force: true });
        rmSync(bare.path, { force: true });
      }
    });
  });

  describe('attribute type pins', () => {
    const log = (offset: number, attrs: Record<string, Record<string, unknown>>) => ({ time_unix_nano: t(offset), service_name: 'pins', body: `r${offset}`, ...attrs });

    it('pins a key to its first type and counts later values of another type as off_type, storing them', async () => {
      await commit([{ dataset: 'pins', table: 'logs', rows: [log(10, { log_attr_int: { 'retry.count': 3 } }), log(11, { resource_attr_int: { 'retry.count': 4 } })] }]);
      expect((await listAttributeTypePins(db, 'acme', 'pins', ['retry.count'])).map((p) => p.type)).toEqual(['int']);
      expect(await listAttributeTypeMismatches(db, 'acme', 'pins')).toEqual([]);

      await commit([{ dataset: 'pins', table: 'logs', rows: [log(12, { log_attr_str: { 'retry.count': 'three' } })] }]);
      expect((await listAttributeTypePins(db, 'acme', 'pins', ['retry.count'])).map((p) => p.type)).toEqual(['int']);
      expect((await listAttributeTypeMismatches(db, 'acme', 'pins', { key: 'retry.count' })).map(({ table, reason, count }) => ({ table, reason, count }))).toEqual([
        { table: 'logs', reason: 'off_type', count: 1 },
      ]);
      // Nothing dropped: each value is in the map of its own type.
      expect(await read('pins', 'logs', `body, log_attr_int['retry.count'] AS i, resource_attr_int['retry.count'] AS ri, log_attr_str['retry.count'] AS s`, 'time_unix_nano')).toEqual([
        { body: 'r10', i: '3', ri: null, s: null },
        { body: 'r11', i: null, ri: '4', s: null },
        { body: 'r12', i: null, ri: null, s: 'three' },
      ]);
    });

    it('pins per dataset across tables and scopes; mismatches are counted per table', async () => {
      await commit([{ dataset: 'pins', table: 'traces', rows: [{ trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16), name: 'x', service_name: 'pins', start_time_unix_nano: t(13), span_attr_double: { 'retry.count': 2.5 }, resource_attr_str: { 'retry.count': 'r' } }] }]);
      expect((await listAttributeTypeMismatches(db, 'acme', 'pins', { key: 'retry.count' })).map(({ table, reason, count }) => ({ table, reason, count }))).toEqual([
        { table: 'logs', reason: 'off_type', count: 1 },
        { table: 'traces', reason: 'off_type', count: 2 },
      ]);
    });

    it('a new key a batch brings in two types is pinned to the type with most values; the others are pin_conflict', async () => {
      await commit([
        {
          dataset: 'pins',
          table: 'logs',
          rows: [log(20, { log_attr_str: { mixed: 'a' } }), log(21, { log_attr_bool: { mixed: true } }), log(22, { log_attr_bool: { mixed: false }, scope_attr_bool: { mixed: true } })],
        },
      ]);
      expect((await listAttributeTypePins(db, 'acme', 'pins', ['mixed'])).map((p) => p.type)).toEqual(['bool']);
      expect((await listAttributeTypeMismatches(db, 'acme', 'pins', { key: 'mixed' })).map(({ reason, count }) => ({ reason, count }))).toEqual([{ reason: 'pin_conflict', count: 1 }]);
      expect(await read('pins', 'logs', `log_attr_str['mixed'] AS s, log_attr_bool['mixed'] AS b`, 'time_unix_nano')).toEqual(
        expect.arrayContaining([
          { s: 'a', b: null },
          { s: null, b: true },
          { s: null, b: false },
        ]),
      );
    });

    it('another writer process (empty cache) sees the pin as existing: off_type, never a second pin', async () => {
      const other = new AttributeTypePins({ db, log: silentLogger() });
      expect(await other.check('acme', 'pins', 'logs', [{ key: 'mixed', type: 'str', count: 2 }, { key: 'fresh.key', type: 'double', count: 1 }])).toEqual({ keys: 2, pinned: 1, off_type: 2, pin_conflict: 0 });
      expect((await listAttributeTypePins(db, 'acme', 'pins', ['fresh.key', 'mixed'])).map((p) => [p.key, p.type])).toEqual([
        ['fresh.key', 'double'],
        ['mixed', 'bool'],
      ]);
      // Known keys of their pinned type: nothing to record.
      expect(await other.check('acme', 'pins', 'logs', [{ key: 'fresh.key', type: 'double', count: 5 }])).toEqual({ keys: 1, pinned: 0, off_type: 0, pin_conflict: 0 });
      // Ties go to str, int, double, bool in that order.
      expect(await other.check('acme', 'pins', 'logs', [{ key: 'tie', type: 'bool', count: 1 }, { key: 'tie', type: 'int', count: 1 }])).toEqual({ keys: 1, pinned: 1, off_type: 0, pin_conflict: 1 });
      expect((await listAttributeTypePins(db, 'acme', 'pins', ['tie'])).map((p) => p.type)).toEqual(['int']);
    });

    it('keys Postgres cannot hold are left unpinned; a dataset that is gone pins nothing; failures are not thrown', async () => {
      const other = new AttributeTypePins({ db, log: silentLogger() });
      expect(await other.check('acme', 'pins', 'logs', [{ key: 'nul\u0000key', type: 'str', count: 1 }, { key: 'x'.repeat(2000), type: 'str', count: 1 }])).toEqual({ keys: 0, pinned: 0, off_type: 0, pin_conflict: 0 });
      expect(await other.check('acme', 'no-such-dataset', 'logs', [{ key: 'k', type: 'str', count: 1 }])).toEqual({ keys: 1, pinned: 0, off_type: 0, pin_conflict: 0 });
      const closed = await openDb({ kind: 'pglite', dataDir: 'memory://' });
      await closed.close();
      expect(await new AttributeTypePins({ db: closed, log: silentLogger() }).check('acme', 'pins', 'logs', [{ key: 'k', type: 'str', count: 1 }])).toBeUndefined();
    });
  });
});
