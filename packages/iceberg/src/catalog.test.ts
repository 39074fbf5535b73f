// End-to-end: real Parquet files written by DuckDB with field ids, committed through the SQL
// catalog on PGlite, planned back, and read by an independent Iceberg reader (icebird) over a
// loopback HTTP server.

import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import avro from 'avsc';
import { icebergRead } from 'icebird';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deserializeValue, serializeValue } from './bounds.ts';
import { SqlCatalog } from './catalog.ts';
import { decodeManifest, decodeManifestList } from './manifest-avro.ts';
import { parseTableMetadata } from './metadata.ts';
import { FsBlobStore, pgliteClient, startStaticServer } from './test-support.ts';
import type { BlobStore, SqlClient } from './ports.ts';
import type { DataFileInput, PartitionSpec, Schema, TableHandle } from './types.ts';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'timestamp', required: true, type: 'timestamptz' },
    { id: 3, name: 'service', required: false, type: 'string' },
    { id: 4, name: 'duration', required: false, type: 'double' },
    { id: 5, name: 'ok', required: false, type: 'boolean' },
    { id: 6, name: 'attrs', required: false, type: { type: 'map', 'key-id': 7, key: 'string', 'value-id': 8, value: 'string', 'value-required': false } },
  ],
};
const spec: PartitionSpec = { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'timestamp_hour', transform: 'hour' }] };
const FIELD_IDS = `{id: 1, "timestamp": 2, service: 3, duration: 4, ok: 5, attrs: {__duckdb_field_id: 6, key: 7, value: 8}}`;
const BASE_S = Date.UTC(2026, 4, 1, 10) / 1000; // 2026-05-01T10:00Z
const HOUR0 = BASE_S / 3600;

let dir: string;
let server: { url: string; close(): Promise<void> };
let blobs: FsBlobStore;
let pg: Awaited<ReturnType<typeof pgliteClient>>;
let sql: SqlClient;
let duck: DuckDBInstance;
let con: DuckDBConnection;
let catalog: SqlCatalog;

async function rows(query: string): Promise<Array<Record<string, unknown>>> {
  return (await con.runAndReadAll(query)).getRowObjectsJS() as Array<Record<string, unknown>>;
}

/** Writes `ids` [from, to) as a Parquet file in hour HOUR0 + hourOffset and describes it. */
async function writeParquet(key: string, from: number, to: number, hourOffset: number): Promise<DataFileInput> {
  const path = blobs.path(key);
  await rows(`SELECT 1`); // connection warm
  const { mkdir } = await import('node:fs/promises');
  await mkdir(join(path, '..'), { recursive: true });
  await con.run(`COPY (
      SELECT i::BIGINT AS id,
             to_timestamp(${BASE_S + hourOffset * 3600} + (i - ${from}) % 3600) AS "timestamp",
             'svc' || (i % 3)::VARCHAR AS service,
             i * 1.5 AS duration,
             i % 2 = 0 AS ok,
             MAP {'k': 'v' || i::VARCHAR} AS attrs
        FROM range(${from}, ${to}) t(i) ORDER BY i)
    TO '${path}' (FORMAT parquet, COMPRESSION zstd, FIELD_IDS ${FIELD_IDS})`);
  return describeParquet(key);
}

/** Size, count, partition and id/timestamp bounds of a Parquet file (as a writer would report). */
async function describeParquet(key: string): Promise<DataFileInput> {
  const path = blobs.path(key);
  const [s] = await rows(`SELECT count(*)::BIGINT AS n, min(id) AS lo, max(id) AS hi,
      min(epoch_us("timestamp")) AS tlo, max(epoch_us("timestamp")) AS thi FROM read_parquet('${path}')`);
  const tlo = BigInt(s!.tlo as bigint);
  const thi = BigInt(s!.thi as bigint);
  const hour = Number(tlo / 3_600_000_000n);
  expect(Number(thi / 3_600_000_000n)).toBe(hour);
  return {
    key,
    fileSizeBytes: (await stat(path)).size,
    recordCount: Number(s!.n),
    partition: { timestamp_hour: hour },
    valueCounts: { 1: Number(s!.n) },
    nullValueCounts: { 1: 0 },
    lowerBounds: { 1: serializeValue('long', s!.lo as bigint), 2: serializeValue('timestamptz', tlo) },
    upperBounds: { 1: serializeValue('long', s!.hi as bigint), 2: serializeValue('timestamptz', thi) },
  };
}

async function avscHeaderSchema(bytes: Uint8Array): Promise<{ schema: { fields: Array<Record<string, unknown>> }; count: number }> {
  const decoder = new avro.streams.BlockDecoder();
  let schemaText = '';
  let count = 0;
  decoder.on('metadata', (_t: unknown, _c: string, h: { meta: Record<string, Buffer> }) => {
    schemaText = h.meta['avro.schema']!.toString('utf8');
  });
  decoder.on('data', () => count++);
  await new Promise<void>((ok, fail) => {
    decoder.on('end', ok).on('error', fail);
    Readable.from([Buffer.from(bytes)]).pipe(decoder);
  });
  return { schema: JSON.parse(schemaText), count };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-iceberg-'));
  server = await startStaticServer(dir);
  blobs = new FsBlobStore(dir, server.url);
  pg = await pgliteClient();
  sql = pg.sql;
  duck = await DuckDBInstance.create(':memory:');
  con = await duck.connect();
  catalog = new SqlCatalog(sql, blobs, { catalogName: 'floe', warehouseKeyPrefix: 'warehouse' });
});

afterAll(async () => {
  con?.closeSync();
  duck?.closeSync();
  await pg?.close();
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('SqlCatalog over PGlite with DuckDB-written Parquet', () => {
  let table: TableHandle;
  const files: DataFileInput[] = [];

  it('creates a v2 table with the JDBC catalog rows', async () => {
    table = await catalog.createTable('acme.default', 'spans', { schema, partitionSpec: spec, properties: { 'write.format.default': 'parquet' } });
    expect(table.metadataLocation).toMatch(new RegExp(`^${server.url}warehouse/acme/default/spans/metadata/00000-[0-9a-f-]{36}\\.metadata\\.json$`));
    const row = await sql.query<Record<string, string | null>>(`SELECT * FROM iceberg_tables`);
    expect(row.rows).toEqual([
      { catalog_name: 'floe', table_namespace: 'acme.default', table_name: 'spans', metadata_location: table.metadataLocation, previous_metadata_location: null, iceberg_type: 'TABLE' },
    ]);
    const ns = await sql.query(`SELECT namespace, property_key, property_value FROM iceberg_namespace_properties`);
    expect(ns.rows).toEqual([{ namespace: 'acme.default', property_key: 'exists', property_value: 'true' }]);

    const raw = JSON.parse((await import('node:fs')).readFileSync(blobs.path(blobs.keyFromUri(table.metadataLocation)), 'utf8'));
    expect(raw).toMatchObject({
      'format-version': 2,
      location: `${server.url}warehouse/acme/default/spans`,
      'last-sequence-number': 0,
      'last-column-id': 8,
      'current-schema-id': 0,
      'default-spec-id': 0,
      'last-partition-id': 1000,
      'default-sort-order-id': 0,
      'sort-orders': [{ 'order-id': 0, fields: [] }],
      'current-snapshot-id': -1,
      refs: {},
      snapshots: [],
      'snapshot-log': [],
      'metadata-log': [],
      properties: { 'write.format.default': 'parquet' },
    });
    expect(raw['table-uuid']).toMatch(/^[0-9a-f-]{36}$/);
    expect(raw['partition-specs']).toEqual([spec]);

    // Idempotent, also when two catalogs race to create the same table.
    const again = await catalog.createTable('acme.default', 'spans', { schema, partitionSpec: spec });
    expect(again.metadataLocation).toBe(table.metadataLocation);
    const other = new SqlCatalog(sql, blobs, { catalogName: 'floe', warehouseKeyPrefix: 'warehouse' });
    const [a, b] = await Promise.all([
      catalog.createTable('acme.default', 'logs', { schema, partitionSpec: spec }),
      other.createTable('acme.default', 'logs', { schema, partitionSpec: spec }),
    ]);
    expect(a.metadataLocation).toBe(b.metadataLocation);
    expect(await catalog.listTables('acme')).toEqual([
      { namespace: 'acme.default', name: 'logs' },
      { namespace: 'acme.default', name: 'spans' },
    ]);
    expect(await catalog.listTables('acm')).toEqual([]);
    expect(await catalog.listNamespaces()).toEqual(['acme.default']);
    expect(await catalog.dropTable('acme.default', 'logs')).toEqual({ metadataLocation: a.metadataLocation });
    expect(await catalog.loadTable('acme.default', 'logs')).toBeUndefined();
  });

  it('appends two files, then a third', async () => {
    files.push(await writeParquet('warehouse/acme/default/spans/data/f1.parquet', 0, 1000, 0));
    files.push(await writeParquet('warehouse/acme/default/spans/data/f2.parquet', 1000, 2000, 1));
    const first = await catalog.appendFiles(table, files.slice(0, 2), { summary: { 'floe.wal-segments': 'seg-1,seg-2' } });
    expect(first.attempts).toBe(1);
    files.push(await writeParquet('warehouse/acme/default/spans/data/f3.parquet', 2000, 2500, 2));
    const second = await catalog.appendFiles(first.handle, files.slice(2), { summary: { 'floe.wal-segments': 'seg-3' } });
    table = (await catalog.loadTable('acme.default', 'spans'))!;
    expect(table.metadataLocation).toBe(second.metadataLocation);
    expect(table.metadataLocation).toMatch(/\/metadata\/00002-[0-9a-f-]{36}\.metadata\.json$/);
    const prev = await sql.query<{ previous_metadata_location: string }>(`SELECT previous_metadata_location FROM iceberg_tables WHERE table_name = 'spans'`);
    expect(prev.rows[0]!.previous_metadata_location).toBe(first.metadataLocation);

    const m = table.metadata;
    expect(m['current-snapshot-id']).toBe(second.snapshotId);
    expect(m['last-sequence-number']).toBe(2);
    expect(m.refs).toEqual({ main: { 'snapshot-id': second.snapshotId, type: 'branch' } });
    expect(m.snapshots.map((s) => s['sequence-number'])).toEqual([1, 2]);
    expect(m.snapshots[1]!['parent-snapshot-id']).toBe(first.snapshotId);
    expect(m['snapshot-log'].map((l) => l['snapshot-id'])).toEqual([first.snapshotId, second.snapshotId]);
    expect(m['metadata-log'].map((l) => l['metadata-file'])).toHaveLength(2);

    const summaries = catalog.snapshotSummaries(table);
    expect(summaries.map((s) => s.snapshotId)).toEqual([first.snapshotId, second.snapshotId]);
    expect(summaries[0]!.summary).toMatchObject({ operation: 'append', 'floe.wal-segments': 'seg-1,seg-2', 'added-data-files': '2', 'added-records': '2000', 'total-records': '2000', 'total-data-files': '2', 'changed-partition-count': '2' });
    expect(summaries[1]!.summary).toMatchObject({ operation: 'append', 'floe.wal-segments': 'seg-3', 'added-data-files': '1', 'added-records': '500', 'total-records': '2500', 'total-data-files': '3' });
    const totalSize = files.reduce((a, f) => a + f.fileSizeBytes, 0);
    expect(summaries[1]!.summary['total-files-size']).toBe(String(totalSize));
  });

  it('plans all three files with their partitions and prunes', async () => {
    const planned = await catalog.planFiles(table);
    expect(planned.map((f) => f.key).sort()).toEqual(files.map((f) => f.key).sort());
    for (const f of files) {
      const p = planned.find((x) => x.key === f.key)!;
      expect(p.uri).toBe(blobs.uri(f.key));
      expect(p.partition).toEqual(f.partition);
      expect(p.recordCount).toBe(f.recordCount);
      expect(p.fileSizeBytes).toBe(f.fileSizeBytes);
      expect(p.lowerBounds[1]).toEqual(f.lowerBounds![1]);
    }
    expect(planned.map((f) => f.partition.timestamp_hour).sort()).toEqual([HOUR0, HOUR0 + 1, HOUR0 + 2]);

    const byPartition = await catalog.planFiles(table, { partitionFilter: (p) => p.timestamp_hour === HOUR0 + 1 });
    expect(byPartition.map((f) => f.key)).toEqual([files[1]!.key]);

    const id = 2100n; // only in f3
    const byBounds = await catalog.planFiles(table, {
      boundsFilter: (lo, hi) => (deserializeValue('long', lo[1]!) as bigint) <= id && id <= (deserializeValue('long', hi[1]!) as bigint),
    });
    expect(byBounds.map((f) => f.key)).toEqual([files[2]!.key]);

    // Manifest-level pruning from the manifest list's partition summaries.
    const seen: Array<[unknown, unknown]> = [];
    const byManifest = await catalog.planFiles(table, {
      manifestFilter: (r) => {
        seen.push([r.timestamp_hour!.lower, r.timestamp_hour!.upper]);
        return (r.timestamp_hour!.upper as number) <= HOUR0 + 1;
      },
    });
    expect(seen.sort()).toEqual([[HOUR0, HOUR0 + 1], [HOUR0 + 2, HOUR0 + 2]].sort());
    expect(byManifest.map((f) => f.key).sort()).toEqual([files[0]!.key, files[1]!.key]);
  });

  it('icebird reads the same rows as DuckDB over the files', async () => {
    const list = files.map((f) => `'${blobs.path(f.key)}'`).join(', ');
    const [expected] = await rows(`SELECT count(*)::BIGINT AS n, sum(id)::BIGINT AS ids, sum(duration) AS dur, count(*) FILTER (WHERE ok) AS oks FROM read_parquet([${list}])`);
    const data = await icebergRead({ tableUrl: table.metadata.location, metadataFileName: basename(table.metadataLocation) });
    expect(data.length).toBe(Number(expected!.n));
    expect(data.length).toBe(2500);
    expect(data.reduce((a, r) => a + BigInt(r.id as bigint), 0n)).toBe(BigInt(expected!.ids as bigint));
    expect(data.reduce((a, r) => a + (r.duration as number), 0)).toBeCloseTo(expected!.dur as number, 6);
    expect(data.filter((r) => r.ok === true).length).toBe(Number(expected!.oks));
    // Row by row: the same (id, timestamp, service, duration, ok, attrs) as DuckDB reads from the files.
    const duckRows = await rows(`SELECT id, epoch_ms("timestamp") AS ts, service, duration, ok, attrs['k'] AS k FROM read_parquet([${list}]) ORDER BY id`);
    const tsMs = (v: unknown): number => (v instanceof Date ? v.getTime() : Number(v) / 1000);
    const iceRows = data
      .map((r) => [Number(r.id), tsMs(r.timestamp), r.service, r.duration, r.ok, (r.attrs as Record<string, string>).k])
      .sort((x, y) => (x[0] as number) - (y[0] as number));
    expect(iceRows).toEqual(duckRows.map((r) => [Number(r.id), Number(r.ts), r.service, r.duration, r.ok, r.k]));
    const r7 = data.find((r) => BigInt(r.id as bigint) === 7n)!;
    expect(r7.service).toBe('svc1');
    expect(r7.attrs).toEqual({ k: 'v7' });
    const ts = r7.timestamp instanceof Date ? r7.timestamp.getTime() : Number(r7.timestamp) / 1000;
    expect(ts).toBe((BASE_S + 7) * 1000);

    // The Parquet files carry the table's field ids.
    const ids = await rows(`SELECT name, field_id FROM parquet_schema('${blobs.path(files[0]!.key)}') WHERE field_id IS NOT NULL ORDER BY field_id`);
    expect(ids.map((r) => [r.name, Number(r.field_id)])).toEqual([['id', 1], ['timestamp', 2], ['service', 3], ['duration', 4], ['ok', 5], ['attrs', 6], ['key', 7], ['value', 8]]);
  });

  it('writes manifests that avsc reads with the spec field ids', async () => {
    const snap = table.metadata.snapshots.at(-1)!;
    const listBytes = (await blobs.get(blobs.keyFromUri(snap['manifest-list'])))!;
    const list = await avscHeaderSchema(listBytes);
    expect(list.count).toBe(2);
    const listIds = Object.fromEntries(list.schema.fields.map((f) => [f.name, f['field-id']]));
    expect(listIds).toMatchObject({ manifest_path: 500, manifest_length: 501, partition_spec_id: 502, added_snapshot_id: 503, added_files_count: 504, partitions: 507, sequence_number: 515, min_sequence_number: 516, content: 517 });
    const manifests = decodeManifestList(listBytes);
    expect(manifests.map((mf) => [mf.sequenceNumber, mf.minSequenceNumber, mf.addedFilesCount, mf.addedRowsCount, mf.content])).toEqual([
      [2, 2, 1, 500, 0],
      [1, 1, 2, 2000, 0],
    ]);
    for (const mf of manifests) {
      const bytes = (await blobs.get(blobs.keyFromUri(mf.manifestPath)))!;
      expect(mf.manifestLength).toBe(bytes.byteLength);
      const { schema: s, count } = await avscHeaderSchema(bytes);
      expect(count).toBe(mf.addedFilesCount);
      const top = Object.fromEntries(s.fields.map((f) => [f.name, f['field-id']]));
      expect(top).toEqual({ status: 0, snapshot_id: 1, sequence_number: 3, file_sequence_number: 4, data_file: 2 });
      const df = (s.fields.find((f) => f.name === 'data_file')!.type as { fields: Array<Record<string, unknown>> }).fields;
      expect(df.find((f) => f.name === 'file_path')!['field-id']).toBe(100);
      const part = (df.find((f) => f.name === 'partition')!.type as { fields: Array<Record<string, unknown>> }).fields;
      expect(part).toEqual([{ name: 'timestamp_hour', type: ['null', 'int'], default: null, 'field-id': 1000 }]);
      const decoded = decodeManifest(bytes, spec);
      expect(decoded.metadata).toMatchObject({ 'format-version': '2', content: 'data', 'partition-spec-id': '0' });
      for (const e of decoded.entries) {
        expect(e.status).toBe(1);
        expect(e.sequenceNumber).toBeNull(); // inherited
        expect(e.snapshotId).toBe(mf.addedSnapshotId);
      }
    }
  });

  it('compacts with replaceFiles; icebird still reads every row; expiry returns the old files', async () => {
    // Merge f1 and f2 into one file (rows of two hours in one file would break the hour
    // partition, so compact f1 alone with an equal copy: the point is the manifest rewrite).
    const merged = 'warehouse/acme/default/spans/data/f1-compacted.parquet';
    await con.run(`COPY (SELECT * FROM read_parquet('${blobs.path(files[0]!.key)}') ORDER BY id) TO '${blobs.path(merged)}' (FORMAT parquet, FIELD_IDS ${FIELD_IDS})`);
    const mergedFile = await describeParquet(merged);
    const before = table;
    const replaced = await catalog.replaceFiles(table, { remove: [files[0]!.key], add: [mergedFile], summary: { 'floe.compaction': 'hour' } });
    table = replaced.handle;
    const planned = await catalog.planFiles(table);
    expect(planned.map((f) => f.key).sort()).toEqual([merged, files[1]!.key, files[2]!.key].sort());
    const [summary] = catalog.snapshotSummaries(table).slice(-1);
    expect(summary!.summary).toMatchObject({ operation: 'replace', 'floe.compaction': 'hour', 'added-data-files': '1', 'deleted-data-files': '1', 'total-records': '2500', 'total-data-files': '3' });

    // The rewritten manifest keeps f2 as EXISTING and marks f1 DELETED, with explicit sequence numbers.
    const list = decodeManifestList((await blobs.get(blobs.keyFromUri(table.metadata.snapshots.at(-1)!['manifest-list'])))!);
    expect(list.map((mf) => [mf.addedFilesCount, mf.existingFilesCount, mf.deletedFilesCount, mf.sequenceNumber, mf.minSequenceNumber])).toEqual([
      [1, 0, 0, 3, 3], // the compacted file
      [1, 0, 0, 2, 2], // f3's manifest, carried over unchanged
      [0, 1, 1, 3, 1], // f1+f2's manifest rewritten: f2 EXISTING (seq 1), f1 DELETED
    ]);
    const rewritten = decodeManifest((await blobs.get(blobs.keyFromUri(list[2]!.manifestPath)))!, spec);
    expect(rewritten.entries.map((e) => [basename(e.dataFile.filePath), e.status, e.sequenceNumber, e.fileSequenceNumber, e.snapshotId])).toEqual([
      ['f1.parquet', 2, 1, 1, replaced.snapshotId],
      ['f2.parquet', 0, 1, 1, before.metadata.snapshots[0]!['snapshot-id']],
    ]);

    const data = await icebergRead({ tableUrl: table.metadata.location, metadataFileName: basename(table.metadataLocation) });
    expect(data.length).toBe(2500);
    expect(new Set(data.map((r) => Number(r.id))).size).toBe(2500);

    // A file that is no longer live can't be removed again.
    await expect(catalog.replaceFiles(table, { remove: [files[0]!.key], add: [] })).rejects.toMatchObject({ code: 'commit_conflict', retryable: false });

    const expired = await catalog.expireSnapshots(table, { olderThanMs: Date.now() + 1000, retainLast: 1 });
    expect(expired.expiredSnapshotIds).toEqual(before.metadata.snapshots.map((s) => s['snapshot-id']));
    expect(expired.dataFiles).toEqual([files[0]!.key]);
    expect(expired.manifestLists.sort()).toEqual(before.metadata.snapshots.map((s) => blobs.keyFromUri(s['manifest-list'])).sort());
    expect(expired.manifests).toHaveLength(1); // the manifest that added f1 and f2, now rewritten
    table = expired.handle;
    expect(table.metadata.snapshots).toHaveLength(1);
    expect(table.metadata['snapshot-log']).toHaveLength(1);
    expect((await catalog.planFiles(table)).map((f) => f.key).sort()).toEqual([merged, files[1]!.key, files[2]!.key].sort());
    const reread = parseTableMetadata((await import('node:fs')).readFileSync(blobs.path(blobs.keyFromUri(expired.metadataLocation)), 'utf8'));
    expect(reread.snapshots.map((s) => s['snapshot-id'])).toEqual([replaced.snapshotId]);
    expect((await icebergRead({ tableUrl: table.metadata.location, metadataFileName: basename(table.metadataLocation) })).length).toBe(2500);
  });
});

describe('optimistic commits (file:// blob store, second catalog name)', () => {
  let fileBlobs: FsBlobStore;
  let a: SqlCatalog;
  let b: SqlCatalog;
  const fake = (i: number, hour = HOUR0 + (i % 3)): DataFileInput => ({
    key: `wh/beta/default/metrics/data/f${i}.parquet`,
    fileSizeBytes: 100 + i,
    recordCount: 10 * (i + 1),
    partition: { timestamp_hour: hour },
  });

  beforeAll(() => {
    fileBlobs = new FsBlobStore(join(dir, 'fs'));
    const options = { catalogName: 'other', warehouseKeyPrefix: 'wh', commitMinBackoffMs: 1, commitMaxBackoffMs: 20 };
    a = new SqlCatalog(sql, fileBlobs, options);
    b = new SqlCatalog(sql, fileBlobs, options);
  });

  it('concurrent appends from two catalog instances all land', async () => {
    const ha = await a.createTable('beta.default', 'metrics', { schema, partitionSpec: spec });
    expect(ha.metadataLocation.startsWith(`file://${fileBlobs.root}/wh/beta/default/metrics/metadata/`)).toBe(true);
    const hb = (await b.loadTable('beta.default', 'metrics'))!;
    // Every call starts from the same (soon stale) base, so all but one must lose the swap and retry.
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? b : a).appendFiles(i % 2 ? hb : ha, [fake(i)], { summary: { 'floe.wal-segments': `seg-${i}` } })),
    );
    expect(results.some((r) => r.attempts > 1)).toBe(true);

    const t = (await a.loadTable('beta.default', 'metrics'))!;
    expect(t.metadata.snapshots).toHaveLength(8);
    expect(t.metadata.snapshots.map((s) => s['sequence-number']).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(new Set(results.map((r) => r.snapshotId))).toEqual(new Set(t.metadata.snapshots.map((s) => s['snapshot-id'])));
    // Linear history: each snapshot's parent is the one before it.
    const bySeq = [...t.metadata.snapshots].sort((x, y) => x['sequence-number'] - y['sequence-number']);
    for (let i = 1; i < bySeq.length; i++) expect(bySeq[i]!['parent-snapshot-id']).toBe(bySeq[i - 1]!['snapshot-id']);

    const planned = await b.planFiles(t);
    expect(planned.map((f) => f.key).sort()).toEqual(Array.from({ length: 8 }, (_, i) => fake(i).key).sort());
    const list = decodeManifestList((await fileBlobs.get(fileBlobs.keyFromUri(bySeq.at(-1)!['manifest-list'])))!);
    expect(list).toHaveLength(8); // no manifest lost
    expect(list.map((mf) => mf.sequenceNumber)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);

    const summaries = a.snapshotSummaries(t);
    const total = Array.from({ length: 8 }, (_, i) => fake(i).recordCount).reduce((x, y) => x + y, 0);
    expect(summaries.at(-1)!.summary['total-records']).toBe(String(total));
    expect(summaries.at(-1)!.summary['total-data-files']).toBe('8');
    expect(summaries.map((s) => s.summary['floe.wal-segments']).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `seg-${i}`).sort());

    // Catalog names isolate: the other catalog doesn't see 'floe' tables and vice versa.
    expect(await a.listTables()).toEqual([{ namespace: 'beta.default', name: 'metrics' }]);
    expect((await catalog.listTables()).map((x) => x.name)).toEqual(['spans']);
  });

  it('a compaction racing an append lands on the new base; removing a dead file conflicts', async () => {
    const stale = (await a.loadTable('beta.default', 'metrics'))!;
    const [appended, replaced] = await Promise.all([
      b.appendFiles(stale, [fake(8)], { summary: { 'floe.wal-segments': 'seg-8' } }),
      a.replaceFiles(stale, { remove: [fake(0).key, fake(3).key], add: [{ ...fake(100, HOUR0), recordCount: 50 }] }),
    ]);
    expect(appended.attempts + replaced.attempts).toBeGreaterThan(2);
    const t = (await a.loadTable('beta.default', 'metrics'))!;
    const keys = (await a.planFiles(t)).map((f) => f.key).sort();
    expect(keys).toEqual([1, 2, 4, 5, 6, 7, 8, 100].map((i) => fake(i).key).sort());
    const last = a.snapshotSummaries(t).at(-1)!.summary;
    const expectedTotal = [1, 2, 4, 5, 6, 7, 8].reduce((x, i) => x + fake(i).recordCount, 0) + 50;
    expect(last['total-records']).toBe(String(expectedTotal));

    await expect(b.replaceFiles(t, { remove: [fake(3).key], add: [] })).rejects.toMatchObject({ code: 'commit_conflict', retryable: false });
    await expect(b.replaceFiles(t, { remove: ['wh/nope.parquet'], add: [] })).rejects.toMatchObject({ code: 'commit_conflict' });

    // Expire everything but the current snapshot: the removed files (and only they) come back.
    const expired = await b.expireSnapshots(t, { olderThanMs: Date.now() + 1000, retainLast: 1 });
    expect(expired.dataFiles.sort()).toEqual([fake(0).key, fake(3).key].sort());
    expect(expired.expiredSnapshotIds).toHaveLength(t.metadata.snapshots.length - 1);
    expect(expired.manifestLists).toHaveLength(t.metadata.snapshots.length - 1);
    expect((await b.planFiles(expired.handle)).map((f) => f.key).sort()).toEqual(keys);
    // Nothing older than the threshold left: a second expiry is a no-op.
    const again = await b.expireSnapshots(expired.handle, { olderThanMs: Date.now() + 1000, retainLast: 1 });
    expect(again.expiredSnapshotIds).toEqual([]);
    expect(again.metadataLocation).toBe(expired.metadataLocation);
  });

  it('keeps recent snapshots and the newest retainLast on expiry', async () => {
    let t = (await a.loadTable('beta.default', 'metrics'))!;
    for (let i = 9; i < 12; i++) t = (await a.appendFiles(t, [fake(i)])).handle;
    expect(t.metadata.snapshots).toHaveLength(4);
    const r = await a.expireSnapshots(t, { olderThanMs: 0, retainLast: 2 });
    expect(r.expiredSnapshotIds).toEqual([]);
    const r2 = await a.expireSnapshots(t, { olderThanMs: Date.now() + 1000, retainLast: 2 });
    expect(r2.expiredSnapshotIds).toEqual(t.metadata.snapshots.slice(0, 2).map((s) => s['snapshot-id']));
    expect(r2.dataFiles).toEqual([]); // appends only: every file is still live
    expect(r2.handle.metadata.snapshots).toHaveLength(2);
  });

  it('gives up after the configured retries with a retryable conflict', async () => {
    const impatient = new SqlCatalog(sql, fileBlobs, { catalogName: 'other', warehouseKeyPrefix: 'wh', commitRetries: 0 });
    const stale = (await impatient.loadTable('beta.default', 'metrics'))!;
    await a.appendFiles(stale, [fake(20)]);
    await expect(impatient.appendFiles(stale, [fake(21)])).rejects.toMatchObject({ code: 'commit_conflict', retryable: true });
  });

  it('evolves the schema and properties with metadata-only commits', async () => {
    const t = (await a.loadTable('beta.default', 'metrics'))!;
    const evolved = await a.updateSchema(t, { type: 'struct', fields: [...schema.fields, { id: 9, name: 'region', required: false, type: 'string' }] });
    expect(evolved.metadata['current-schema-id']).toBe(1);
    expect(evolved.metadata['last-column-id']).toBe(9);
    expect(evolved.metadata['current-snapshot-id']).toBe(t.metadata['current-snapshot-id']);
    const same = await a.updateSchema(evolved, { type: 'struct', fields: [...schema.fields, { id: 9, name: 'region', required: false, type: 'string' }] });
    expect(same.metadataLocation).toBe(evolved.metadataLocation);
    const withProps = await a.setProperties(same, { 'commit.retry.num-retries': '8' });
    expect(withProps.metadata.properties['commit.retry.num-retries']).toBe('8');
    const appended = await a.appendFiles(withProps, [fake(30)]);
    expect(appended.handle.metadata.snapshots.at(-1)!['schema-id']).toBe(1);
    expect((await a.planFiles(appended.handle)).some((f) => f.key === fake(30).key)).toBe(true);
  });
});

describe('metadata pointers under a write generation (one writing process)', () => {
  const fake = (i: number): DataFileInput => ({ key: `wg/gamma/default/logs/data/f${i}.parquet`, fileSizeBytes: 100 + i, recordCount: 10, partition: { timestamp_hour: HOUR0 } });

  it('reads a table pointer once while nothing writes, and again after any write', async () => {
    // The rule of @floe/meta's PGlite adapter: a statement other than SELECT moves the generation
    // when it starts and when it ends.
    let generation = 0;
    let pointerReads = 0;
    const client: SqlClient = {
      async query<R>(text: string, params?: unknown[]) {
        if (/^\s*SELECT\b/i.test(text)) {
          if (text.includes('SELECT metadata_location FROM iceberg_tables')) pointerReads++;
          return sql.query<R>(text, params);
        }
        generation++;
        try {
          return await sql.query<R>(text, params);
        } finally {
          generation++;
        }
      },
      writeGeneration: () => generation,
    };
    const blobsFs = new FsBlobStore(join(dir, 'wg'));
    const options = { catalogName: 'gen', warehouseKeyPrefix: 'wg', commitMinBackoffMs: 1, commitMaxBackoffMs: 20 };
    const writer = new SqlCatalog(client, blobsFs, options);
    const reader = new SqlCatalog(client, blobsFs, options);
    expect(await reader.loadTable('gamma.default', 'logs')).toBeUndefined();
    const created = await writer.createTable('gamma.default', 'logs', { schema, partitionSpec: spec });
    // The table that did not exist is seen at once: the create wrote.
    const first = (await reader.loadTable('gamma.default', 'logs'))!;
    expect(first.metadataLocation).toBe(created.metadataLocation);
    const before = pointerReads;
    for (let i = 0; i < 5; i++) expect((await reader.loadTable('gamma.default', 'logs'))!.metadataLocation).toBe(created.metadataLocation);
    expect(pointerReads).toBe(before);
    // Concurrent appends from both instances (stale bases, retries) all land, and the reader sees the last.
    await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? reader : writer).appendFiles(created, [fake(i)])));
    const now = (await reader.loadTable('gamma.default', 'logs'))!;
    expect(now.metadata.snapshots).toHaveLength(6);
    expect((await reader.planFiles(now)).map((f) => f.key).sort()).toEqual(Array.from({ length: 6 }, (_, i) => fake(i).key).sort());
    expect(pointerReads).toBeGreaterThan(before);
  });
});

describe('commits to a table one after another', () => {
  it('read back none of the files they wrote, and a fresh reader plans every file from them', async () => {
    const fs = new FsBlobStore(join(dir, 'wr'));
    const reads: string[] = [];
    const counting: BlobStore = {
      put: (key, body) => fs.put(key, body),
      get: (key) => {
        reads.push(key);
        return fs.get(key);
      },
      uri: (key) => fs.uri(key),
      keyFromUri: (uri) => fs.keyFromUri(uri),
    };
    const options = { catalogName: 'wr', warehouseKeyPrefix: 'wr' };
    const writer = new SqlCatalog(sql, counting, options);
    const file = (i: number): DataFileInput => ({ key: `wr/delta/default/spans/data/f${i}.parquet`, fileSizeBytes: 100 + i, recordCount: 10 + i, partition: { timestamp_hour: HOUR0 + (i % 2) } });
    let handle = await writer.createTable('delta.default', 'spans', { schema, partitionSpec: spec });
    reads.length = 0;
    for (let i = 0; i < 4; i++) handle = (await writer.appendFiles(handle, [file(i)])).handle;
    // Each commit builds on the manifest list and the metadata the one before it wrote.
    expect(reads).toEqual([]);
    handle = (await writer.replaceFiles(handle, { remove: [file(0).key, file(1).key], add: [file(4)] })).handle;
    handle = (await writer.appendFiles(handle, [file(5)])).handle;
    const fresh = new SqlCatalog(sql, fs, options);
    const current = (await fresh.loadTable('delta.default', 'spans'))!;
    expect(current.metadataLocation).toBe(handle.metadataLocation);
    const planned = await fresh.planFiles(current);
    expect(planned.map((f) => [f.key, f.recordCount, f.partition]).sort()).toEqual([2, 3, 4, 5].map((i) => [file(i).key, file(i).recordCount, file(i).partition]).sort());
    expect(current.metadata.snapshots.at(-1)!.summary['total-records']).toBe(String([2, 3, 4, 5].reduce((n, i) => n + file(i).recordCount, 0)));
  });
});

describe('a catalog that keeps as many tables in memory as are committed to', () => {
  it('reads no table metadata back while it commits to each in turn (a version takes its table’s place)', async () => {
    const fs = new FsBlobStore(join(dir, 'kept'));
    const reads: string[] = [];
    const counting: BlobStore = {
      put: (key, body) => fs.put(key, body),
      get: (key) => {
        reads.push(key);
        return fs.get(key);
      },
      uri: (key) => fs.uri(key),
      keyFromUri: (uri) => fs.keyFromUri(uri),
    };
    const tables = ['a', 'b', 'c'];
    const cat = new SqlCatalog(sql, counting, { catalogName: 'kept', warehouseKeyPrefix: 'kept', metadataCacheSize: tables.length });
    for (const t of tables) await cat.createTable('eps.default', t, { schema, partitionSpec: spec });
    const file = (t: string, i: number): DataFileInput => ({ key: `kept/eps/default/${t}/data/f${i}.parquet`, fileSizeBytes: 100, recordCount: 10, partition: { timestamp_hour: HOUR0 } });
    for (const t of tables) await cat.loadTable('eps.default', t);
    reads.length = 0;
    // As the writer commits: the table loaded (its pointer read), then appended to.
    for (let round = 0; round < 4; round++) {
      for (const t of tables) await cat.appendFiles((await cat.loadTable('eps.default', t))!, [file(t, round)]);
    }
    expect(reads.filter((k) => k.endsWith('.metadata.json'))).toEqual([]);
    for (const t of tables) expect((await new SqlCatalog(sql, fs, { catalogName: 'kept', warehouseKeyPrefix: 'kept' }).loadTable('eps.default', t))!.metadata.snapshots).toHaveLength(4);
  });
});

describe('every table pointer in one query', () => {
  it('lists tables with their current metadata location, under a namespace prefix, without views, as another process commits', async () => {
    let queries = 0;
    const client: SqlClient = {
      query: (text, params) => {
        queries++;
        return sql.query(text, params);
      },
    };
    const fs = new FsBlobStore(join(dir, 'ptrs'));
    const options = { catalogName: 'ptrs', warehouseKeyPrefix: 'ptrs' };
    const cat = new SqlCatalog(client, fs, options);
    const other = new SqlCatalog(sql, fs, options);
    const a = await cat.createTable('acme.default', 'spans', { schema, partitionSpec: spec });
    const b = await cat.createTable('acme.staging', 'logs', { schema, partitionSpec: spec });
    const c = await cat.createTable('acmex.default', 'spans', { schema, partitionSpec: spec });
    // A view of another engine shares the table and has no metadata of a table.
    await sql.query(`INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, iceberg_type) VALUES ('ptrs', 'acme.default', 'v', 'file:///x', 'VIEW')`);

    queries = 0;
    expect(await cat.listTablePointers()).toEqual([
      { namespace: 'acme.default', name: 'spans', metadataLocation: a.metadataLocation },
      { namespace: 'acme.staging', name: 'logs', metadataLocation: b.metadataLocation },
      { namespace: 'acmex.default', name: 'spans', metadataLocation: c.metadataLocation },
    ]);
    expect(queries).toBe(1);
    expect((await cat.listTablePointers('acme')).map((p) => `${p.namespace}.${p.name}`)).toEqual(['acme.default.spans', 'acme.staging.logs']);

    // A commit through another catalog instance (another process) shows at once.
    const appended = await other.appendFiles(b, [{ key: 'ptrs/acme/staging/logs/data/f.parquet', fileSizeBytes: 100, recordCount: 10, partition: { timestamp_hour: HOUR0 } }]);
    expect(appended.metadataLocation).not.toBe(b.metadataLocation);
    expect((await cat.listTablePointers('acme.staging')).map((p) => p.metadataLocation)).toEqual([appended.metadataLocation]);
  });
});
