import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlCatalog } from '@floe/iceberg';
import { migrate, openDb, type Db } from '@floe/meta';
import { TABLES, emptyColumnsDdl, icebergSchema, type TableName } from '@floe/schema';
import { ParquetWriter, WalAppender, createObjectStore, newRecordId, type ObjectStore } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { Committer } from './committer.ts';
import { CATALOG_NAME, WAREHOUSE_PREFIX } from './tables.ts';

/**
 * Every signal table goes through the writer's real path (WAL → read_json with the table's
 * columns → sorted Parquet with field ids → Iceberg commit), and what lands matches the table
 * definition in every form: the catalog schema, the Parquet field ids of every leaf (map keys and
 * values, list elements, struct fields), the partition hour and the values.
 */
const HOUR = 3_600_000_000_000n;
const H = 490_123;
const t = (offset: bigint) => (BigInt(H) * HOUR + offset).toString();

const ROWS: Record<Exclude<TableName, 'traces'>, Array<Record<string, unknown>>> = {
  logs: [
    {
      time_unix_nano: t(5n),
      observed_time_unix_nano: t(6n),
      service_name: 'shop',
      severity_text: 'ERROR',
      severity_number: 17,
      body: '{"k":"v"}',
      body_type: 'kvlist',
      trace_id: '0102030405060708090a0b0c0d0e0f10',
      span_id: 'a0a1a2a3a4a5a6a7',
      flags: 1,
      event_name: 'e',
      scope_name: 's',
      scope_version: '1',
      dropped_attributes_count: 0,
      log_attr_str: { a: 'x' },
      log_attr_int: { big: '9007199254740993' },
      log_attr_double: { d: 'NaN' },
      log_attr_bool: { b: true },
      resource_attr_str: { 'service.name': 'shop' },
      scope_attr_int: { n: 1 },
    },
    { time_unix_nano: t(1n), service_name: 'shop', severity_text: 'INFO', body: 'earlier', body_type: 'string', trace_id: null },
  ],
  metrics: [
    {
      metric_name: 'http.server.duration',
      metric_type: 'histogram',
      temporality: 'cumulative',
      series_id: '00000000000000aa',
      start_unix_nano: t(0n),
      time_unix_nano: t(10n),
      count: 6,
      sum: 12.5,
      min: 0.5,
      max: 7,
      explicit_bounds: [1, 5],
      bucket_counts: [1, '9007199254740993', 2],
      flags: 0,
      point_attr_str: { route: '/a' },
    },
    {
      metric_name: 'latency',
      metric_type: 'exponential_histogram',
      temporality: 'delta',
      series_id: '00000000000000bb',
      time_unix_nano: t(11n),
      count: 4,
      exp_scale: -2,
      exp_zero_count: 1,
      exp_zero_threshold: 0.001,
      exp_positive_offset: -3,
      exp_positive_bucket_counts: [1, 2],
      exp_negative_offset: 0,
      exp_negative_bucket_counts: [],
      flags: 1,
    },
    {
      metric_name: 'rpc.duration',
      metric_type: 'summary',
      series_id: '00000000000000cc',
      time_unix_nano: t(12n),
      count: 3,
      sum: 1.5,
      quantiles: [
        { quantile: 0.5, value: 0.4 },
        { quantile: 0.99, value: 'Infinity' },
      ],
    },
    { metric_name: 'queue.size', metric_type: 'gauge', series_id: '00000000000000dd', time_unix_nano: t(13n), value: 9007199254740992, value_int: '9007199254740993' },
  ],
  metric_exemplars: [
    {
      metric_name: 'http.server.duration',
      metric_type: 'histogram',
      series_id: '00000000000000aa',
      service_name: 'shop',
      time_unix_nano: t(10n),
      value: 0.7,
      trace_id: '0102030405060708090a0b0c0d0e0f10',
      span_id: 'a0a1a2a3a4a5a6a7',
      filtered_attr_str: { user: 'u1' },
      point_attr_str: { route: '/a' },
    },
  ],
  profiles: [
    {
      time_unix_nano: t(20n),
      service_name: 'shop',
      profile_id: '0f0e0d0c0b0a09080706050403020100',
      profile_type: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
      sample_type: 'cpu',
      sample_unit: 'nanoseconds',
      period_type: 'cpu',
      period_unit: 'nanoseconds',
      period: 10_000_000,
      duration_nano: 10_000_000_000,
      trace_id: '0102030405060708090a0b0c0d0e0f10',
      span_id: 'a0a1a2a3a4a5a6a7',
      total_value: 30_000_000,
      samples_json: '[{"stack":0,"values":[30000000]}]',
      stacktraces_json: '[["leaf","main"]]',
      profile_attr_str: { thread: 'main' },
      resource_attr_str: { 'service.name': 'shop' },
    },
  ],
};

/** (leaf name, field id) pairs of an Iceberg type, as DuckDB's parquet_schema lists them. */
function expectedLeaves(fields: ReturnType<typeof icebergSchema>['fields']): string[] {
  const out: string[] = [];
  const visit = (name: string, id: number, type: unknown) => {
    out.push(`${name}:${id}`);
    if (typeof type !== 'object' || type === null) return;
    const t = type as Record<string, unknown>;
    if (t.type === 'map') {
      visit('key', t['key-id'] as number, t.key);
      visit('value', t['value-id'] as number, t.value);
    } else if (t.type === 'list') {
      visit('element', t['element-id'] as number, t.element);
    } else if (t.type === 'struct') {
      for (const f of t.fields as Array<{ name: string; id: number; type: unknown }>) visit(f.name, f.id, f.type);
    }
  };
  for (const f of fields) visit(f.name, f.id, f.type);
  return out.sort();
}

describe('signal tables through the writer', () => {
  let dir: string;
  let db: Db;
  let store: ObjectStore;
  let catalog: SqlCatalog;
  let writer: ParquetWriter;
  let duck: DuckDBConnection;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'floe-signal-tables-'));
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    store = createObjectStore({ kind: 'fs', root: join(dir, 'store') });
    catalog = new SqlCatalog(db, store, { catalogName: CATALOG_NAME, warehouseKeyPrefix: WAREHOUSE_PREFIX });
    writer = new ParquetWriter(join(dir, 'work'));
    duck = await (await DuckDBInstance.create(':memory:')).connect();
    const wal = new WalAppender(store, { instanceId: 'acc-signals' });
    for (const [table, rows] of Object.entries(ROWS)) {
      await wal.append([{ header: { tenant: 'acme', dataset: 'default', table, hour: H, rows: rows.length, id: newRecordId() }, payload: Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n') + '\n') }]);
    }
    await wal.close();
    const stats = await new Committer({ store, catalog, writer, log: silentLogger(), maxRowsPerFile: 1000, maxSegmentsPerRound: 100 }).round();
    expect(stats).toMatchObject({ commits: 4, rows: Object.values(ROWS).flat().length, skippedRecords: 0 });
  });
  afterAll(async () => {
    duck?.closeSync();
    writer?.close();
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function files(table: string) {
    const handle = (await catalog.loadTable('acme.default', table))!;
    const planned = await catalog.planFiles(handle);
    return { handle, planned, paths: planned.map((f) => store.localPath(f.key)!) };
  }

  async function read(table: string, sql: string) {
    const { paths } = await files(table);
    const r = await duck.runAndReadAll(sql.replace('$FILES', `read_parquet([${paths.map((p) => `'${p}'`).join(',')}])`));
    return r.getRowObjectsJson();
  }

  it.each(Object.keys(ROWS))('%s: catalog schema, partition, and Parquet field ids of every leaf match the definition', async (table) => {
    const def = TABLES[table as TableName];
    const { handle, planned, paths } = await files(table);
    const schema = handle.metadata.schemas.find((s) => s['schema-id'] === handle.metadata['current-schema-id'])!;
    expect(schema.fields).toEqual(icebergSchema(def).fields);
    expect(planned.map((f) => f.partition.timestamp_hour)).toEqual([H]);
    expect(planned[0]!.recordCount).toBe(ROWS[table as keyof typeof ROWS].length);
    const leaves = (await duck.runAndReadAll(`SELECT name, field_id FROM parquet_schema('${paths[0]}') WHERE field_id IS NOT NULL`)).getRowObjectsJson().map((r) => `${String(r.name)}:${String(r.field_id)}`);
    expect(leaves.sort()).toEqual(expectedLeaves(icebergSchema(def).fields));
    // A table without data is read as an empty relation of emptyColumnsDdl (the querier's form):
    // same columns, same types as a written file.
    const describe = async (from: string) => (await duck.runAndReadAll(`DESCRIBE SELECT * FROM ${from}`)).getRowObjectsJson().map((r) => `${String(r.column_name)} ${String(r.column_type)}`);
    const empty = await describe(`(SELECT __floe_empty.* FROM (SELECT NULL::STRUCT(${emptyColumnsDdl(def)}) AS __floe_empty) WHERE false)`);
    expect(empty).toEqual(await describe(`read_parquet('${paths[0]}', hive_partitioning = false)`));
  });

  it('logs: rows in canonical order (service, severity, time) with every typed map', async () => {
    const rows = await read('logs', `SELECT body, severity_text, trace_id, log_attr_int['big'] AS big, isnan(log_attr_double['d']) AS nan, epoch_ns("timestamp") AS ts_ns FROM $FILES`);
    expect(rows).toEqual([
      { body: '{"k":"v"}', severity_text: 'ERROR', trace_id: '0102030405060708090a0b0c0d0e0f10', big: '9007199254740993', nan: true, ts_ns: t(5n).slice(0, -3) + '000' },
      { body: 'earlier', severity_text: 'INFO', trace_id: null, big: null, nan: null, ts_ns: t(1n).slice(0, -3) + '000' },
    ]);
  });

  it('metrics: lists and quantiles keep every value, 64-bit counts exact', async () => {
    const rows = await read(
      'metrics',
      `SELECT metric_type, explicit_bounds, bucket_counts::VARCHAR[] AS bucket_counts, exp_positive_offset, exp_positive_bucket_counts::VARCHAR[] AS pos, exp_negative_bucket_counts AS neg, quantiles::VARCHAR AS q, value_int::VARCHAR AS vi, flags FROM $FILES ORDER BY metric_type`,
    );
    expect(rows).toEqual([
      { metric_type: 'exponential_histogram', explicit_bounds: null, bucket_counts: null, exp_positive_offset: -3, pos: ['1', '2'], neg: [], q: null, vi: null, flags: '1' },
      { metric_type: 'gauge', explicit_bounds: null, bucket_counts: null, exp_positive_offset: null, pos: null, neg: null, q: null, vi: '9007199254740993', flags: null },
      { metric_type: 'histogram', explicit_bounds: [1, 5], bucket_counts: ['1', '9007199254740993', '2'], exp_positive_offset: null, pos: null, neg: null, q: null, vi: null, flags: '0' },
      { metric_type: 'summary', explicit_bounds: null, bucket_counts: null, exp_positive_offset: null, pos: null, neg: null, q: "[{'quantile': 0.5, 'value': 0.4}, {'quantile': 0.99, 'value': inf}]", vi: null, flags: null },
    ]);
  });

  it('metric_exemplars and profiles: values as written', async () => {
    expect(await read('metric_exemplars', `SELECT trace_id, value, filtered_attr_str['user'] AS u FROM $FILES`)).toEqual([{ trace_id: '0102030405060708090a0b0c0d0e0f10', value: 0.7, u: 'u1' }]);
    expect(await read('profiles', `SELECT profile_type, total_value::VARCHAR AS total, json_extract_string(stacktraces_json, '$[0][0]') AS leaf FROM $FILES`)).toEqual([
      { profile_type: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', total: '30000000', leaf: 'leaf' },
    ]);
  });
});
