import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLES, quoteIdent, timeColumn, tracesTable, withMaterializedLabels, type TableDef } from '@floe/schema';
import { ColumnBatchBuilder, batchSchema, batchSchemaInfo, readColumnBatch, readColumnBatchHead, renumberRefs, type ColumnBatchHead, type RowTemplate } from './column-batch.ts';
import { ParquetWriter, type WrittenFile } from './parquet-writer.ts';
import { sortedParquetPlan } from './sorted-batch-parquet.ts';
import { randomRawRows } from './testing/raw-rows.ts';
import { pagesOf } from './testing/parquet-pages.ts';
import { hashBytes, viewOf } from './byte-ranges.ts';

let dir: string;
let instance: DuckDBInstance;
let conn: DuckDBConnection;
let direct: ParquetWriter;
let duckdb: ParquetWriter;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-sorted-parquet-'));
  instance = await DuckDBInstance.create(':memory:');
  conn = await instance.connect();
  direct = new ParquetWriter(join(dir, 'direct'));
  duckdb = new ParquetWriter(join(dir, 'duckdb'), { encoder: 'duckdb' });
});
afterAll(async () => {
  direct.close();
  duckdb.close();
  conn.closeSync();
  instance.closeSync();
  await rm(dir, { recursive: true, force: true });
});

const rowsOf = async (sql: string) => (await conn.runAndReadAll(sql)).getRowsJson();

function batchesOf(table: TableDef, rows: Record<string, unknown>[], perBatch: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < rows.length; i += perBatch) {
    const b = ColumnBatchBuilder.forTable(table);
    for (const r of rows.slice(i, i + perBatch)) b.addRow(r);
    out.push(b.finish());
  }
  return out;
}

/**
 * Batches of rows in runs of 1 to 60 that share their resource and scope columns (and the
 * service name), those written once per run as a transcoder writes them (ColumnBatchBuilder.addRows).
 */
function runBatchesOf(table: TableDef, rows: Record<string, unknown>[], perBatch: number, seed: number): Uint8Array[] {
  const shared = new Set(batchSchema(table).map(([n]) => n).filter((n) => n === 'service_name' || n.startsWith('resource_') || n.startsWith('scope_')));
  let x = seed;
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  const out: Uint8Array[] = [];
  for (let i = 0; i < rows.length; i += perBatch) {
    const b = ColumnBatchBuilder.forTable(table);
    const batch = rows.slice(i, i + perBatch);
    for (let j = 0; j < batch.length; ) {
      const n = Math.min(batch.length - j, 1 + (next() % 60));
      const first = batch[j]!;
      const run = batch.slice(j, j + n).map((r) => ({ ...r, ...Object.fromEntries([...shared].map((c) => [c, first[c]])) }));
      b.addRows(run, shared);
      j += n;
    }
    out.push(b.finish());
  }
  return out;
}

/**
 * Random rows without -0.0: DuckDB's Parquet writer keeps one dictionary entry for 0.0 and -0.0
 * (they compare equal), and the repeats of runs make it write dictionaries of doubles, so the
 * reference file would differ from the rows in the sign of a zero.
 */
const rowsWithoutNegativeZero = (table: TableDef, n: number, seed: number) => randomRawRows(table, n, seed).map((r) => noNegativeZero(r) as Record<string, unknown>);
const noNegativeZero = (v: unknown): unknown =>
  Object.is(v, -0) ? 0 : v && typeof v === 'object' ? (Array.isArray(v) ? v.map(noNegativeZero) : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, noNegativeZero(x)]))) : v;

/** Who wrote a file (the footer's created_by): Floe's encoder or DuckDB. */
const writtenBy = async (path: string) => String((await rowsOf(`SELECT created_by FROM parquet_file_metadata('${path}')`))[0]![0]);

/** Both writers over the same payloads; the direct one must not have fallen back to DuckDB. */
async function writeBoth(table: TableDef, payloads: (Uint8Array | ColumnBatchHead)[]): Promise<{ js: WrittenFile; db: WrittenFile }> {
  const js = await direct.write(table, payloads, { attributeTypes: true });
  const db = await duckdb.write(table, payloads, { attributeTypes: true });
  expect(await writtenBy(js.path)).toBe('floe sorted column batches');
  expect(await writtenBy(db.path)).toMatch(/DuckDB/);
  expect(js.sizeBytes).toBe((await stat(js.path)).size);
  return { js, db };
}

/** The file as DuckDB reads it and as its footer says: columns, rows, key order, field ids, statistics. */
async function describeFile(table: TableDef, path: string) {
  const src = `read_parquet('${path}')`;
  const keys = table.sortOrder.map(quoteIdent).join(', ');
  const labels = table.columns.filter((c) => c.attributeKey !== undefined).map((c) => c.name);
  const statCols = [...table.sortOrder, table.partitionSource, timeColumn(table), ...labels].map((c) => `'${c}'`).join(', ');
  return {
    types: await rowsOf(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM ${src})`),
    // Every row, as DuckDB reads it, in a canonical order (ties on the sort keys may fall either way).
    rows: (await rowsOf(`SELECT to_json(t)::VARCHAR AS j FROM ${src} t ORDER BY j`)).map((r) => r[0]),
    // The sort keys in file order.
    keyOrder: await rowsOf(`SELECT ${keys} FROM ${src}`),
    // The schema's nodes below the root (whose name is the writer's own): names, types, nesting, field ids.
    schema: await rowsOf(
      `SELECT name, type, repetition_type, num_children, converted_type, logical_type, field_id FROM parquet_schema('${path}') WHERE name NOT IN ('schema', 'duckdb_schema') ORDER BY ALL`,
    ),
    rowGroups: await rowsOf(`SELECT row_group_id, row_group_num_rows FROM parquet_metadata('${path}') GROUP BY ALL ORDER BY ALL`),
    stats: await rowsOf(
      `SELECT row_group_id, path_in_schema, stats_min_value, stats_max_value, stats_null_count FROM parquet_metadata('${path}') WHERE path_in_schema IN (${statCols}) ORDER BY ALL`,
    ),
  };
}

const summary = (w: WrittenFile) => ({
  rowCount: w.rowCount,
  minStartNs: w.minStartNs,
  maxStartNs: w.maxStartNs,
  minTimestampUs: w.minTimestampUs,
  maxTimestampUs: w.maxTimestampUs,
  ids: [...w.ids].sort(),
  attributeTypes: w.attributeTypes?.map((a) => `${a.key}\u0000${a.type}\u0000${a.count}`).sort(),
});

/** Both writers' files of the same payloads, described alike, and their WrittenFile summaries equal; Floe's description. */
async function expectSameFile(table: TableDef, payloads: (Uint8Array | ColumnBatchHead)[]) {
  const { js, db } = await writeBoth(table, payloads);
  const [got, want] = await Promise.all([describeFile(table, js.path), describeFile(table, db.path)]);
  expect(got.types).toEqual(want.types);
  expect(got.rows).toEqual(want.rows);
  expect(got.keyOrder).toEqual(want.keyOrder);
  expect(got.schema).toEqual(want.schema);
  expect(got.rowGroups).toEqual(want.rowGroups);
  expect(got.stats).toEqual(want.stats);
  expect(summary(js)).toEqual(summary(db));
  return { file: js, described: got };
}

describe('column batches written sorted without DuckDB', () => {
  for (const [name, table] of Object.entries(TABLES) as [string, TableDef][]) {
    it(`store the same ${name} file DuckDB's COPY stores: columns, rows, order, field ids, statistics`, async () => {
      await expectSameFile(table, batchesOf(table, randomRawRows(table, 700, name.length * 7919), 37));
    });
  }

  for (const [name, table] of Object.entries(TABLES) as [string, TableDef][]) {
    it(`store the same ${name} file from batches whose resource and scope columns are runs, beside plain batches`, async () => {
      const rows = rowsWithoutNegativeZero(table, 3_000, name.length * 104_729);
      const payloads = [...runBatchesOf(table, rows.slice(0, 2_500), 500, name.length), ...batchesOf(table, rows.slice(2_500), 250)];
      expect(payloads.slice(0, 5).every((p) => readColumnBatch(p).leaves.some((l) => l.runs))).toBe(true);
      await expectSameFile(table, payloads);
      // Only run leaves, and runs across row groups.
      await expectSameFile(table, runBatchesOf(table, rowsWithoutNegativeZero(table, 40_000, name.length), 4_000, 7));
    });
  }

  it('splits many rows into the table’s row groups, each sorted and with its own bounds', async () => {
    const { described } = await expectSameFile(tracesTable, batchesOf(tracesTable, randomRawRows(tracesTable, 40_000, 42), 100));
    expect(described.rowGroups).toEqual([
      ['0', '16384'],
      ['1', '16384'],
      ['2', '7232'],
    ]);
  });

  it('dictionary-encodes strings that repeat (wide indices too) and writes unique ones PLAIN', async () => {
    const rows = randomRawRows(tracesTable, 10_000, 99).map((r, i) => ({
      ...r,
      span_id: i.toString(16).padStart(16, '0'),
      // 500 distinct names over 10,000 rows: 9-bit dictionary indices, mostly bit-packed.
      name: `op-${(i * 7919) % 500}`,
      service_name: `svc-${i % 3}`,
    }));
    const { file } = await expectSameFile(tracesTable, batchesOf(tracesTable, rows, 250));
    const encodings = async (path: string) =>
      Object.fromEntries(
        (await rowsOf(`SELECT path_in_schema, first(encodings) FROM parquet_metadata('${path}') WHERE path_in_schema IN ('span_id', 'name', 'service_name') GROUP BY ALL`)).map(
          ([col, enc]) => [String(col), String(enc)],
        ),
      );
    const got = await encodings(file.path);
    expect(got.span_id).not.toContain('RLE_DICTIONARY');
    expect(got.name).toContain('RLE_DICTIONARY');
    expect(got.service_name).toContain('RLE_DICTIONARY');
  });

  it.each(Object.keys(TABLES))('writes in every page header of a %s file the CRC-32 of the page as stored (PageHeader.crc)', async (name) => {
    const table = TABLES[name as keyof typeof TABLES];
    const file = await direct.write(table, batchesOf(table, randomRawRows(table, 300, 11), 100));
    expect(await writtenBy(file.path)).toBe('floe sorted column batches');
    const pages = await pagesOf(file.path);
    // Dictionary pages and data pages alike.
    expect(new Set(pages.map((p) => p.type))).toEqual(new Set([0, 2]));
    expect(pages.filter((p) => p.crc !== p.bytesCrc)).toEqual([]);
  });

  it('reads one batch as it is, and fills a column the batches lack with NULL', async () => {
    const rows = randomRawRows(tracesTable, 50, 7);
    await expectSameFile(tracesTable, batchesOf(tracesTable, rows, 50));

    const partial = new ColumnBatchBuilder(batchSchema(tracesTable).filter(([n]) => n !== 'links_json' && n !== 'span_attr_bool'));
    for (const r of rows) partial.addRow(r);
    const { file } = await expectSameFile(tracesTable, [partial.finish()]);
    expect(await rowsOf(`SELECT count(*) FROM read_parquet('${file.path}') WHERE links_json IS NULL AND span_attr_bool IS NULL`)).toEqual([['50']]);
  });

  it('writes flushes of a few rows (small pages, compressed once per content) byte for byte the same every time, each with its own rows', async () => {
    const few = (seed: number, n: number) => batchesOf(tracesTable, rowsWithoutNegativeZero(tracesTable, n, seed), n);
    const a = few(5, 3);
    const first = await expectSameFile(tracesTable, a);
    // Others' pages in between, some of them the same (the columns NULL in every row of three).
    for (const [seed, n] of [[6, 3], [7, 2], [8, 40]] as const) await expectSameFile(tracesTable, few(seed, n));
    const again = await expectSameFile(tracesTable, a);
    expect(Buffer.compare(await readFile(again.file.path), await readFile(first.file.path))).toBe(0);
  });

  it('writes columns NULL or empty in every row (a gauge sample’s histogram columns), in some batches or all', async () => {
    const table = TABLES.metrics;
    // In every row: NULL scalars, a NULL list, an empty list, a NULL map, an empty map.
    const everywhere = { count: null, sum: null, explicit_bounds: null, quantiles: [], point_attr_bool: null, point_attr_int: {} };
    const rows: Record<string, unknown>[] = rowsWithoutNegativeZero(table, 2_000, 5).map((r) => ({ ...r, ...everywhere }));
    // `min` NULL in the first 1,000 rows only, `max` in the last 1,000 only: NULL throughout some batches, not the flush.
    rows.forEach((r, i) => (i < 1_000 ? (r.min = null) : (r.max = null)));
    const present = (c: string) => String(rows.filter((r) => r[c] !== null && r[c] !== undefined).length);
    const { file } = await expectSameFile(table, [...batchesOf(table, rows.slice(0, 1_000), 250), ...runBatchesOf(table, rows.slice(1_000), 500, 3)]);
    expect(await rowsOf(`SELECT count(*) FROM read_parquet('${file.path}') WHERE count IS NULL AND explicit_bounds IS NULL AND len(quantiles) = 0 AND cardinality(point_attr_int) = 0`)).toEqual([['2000']]);
    expect(await rowsOf(`SELECT count(min), count(max) FROM read_parquet('${file.path}')`)).toEqual([[present('min'), present('max')]]);
  });

  it('writes maps whose entries repeat row after row (a series’ labels in each of its samples) as they were sent', async () => {
    const table = TABLES.metrics;
    // 60 series of 100 samples each, in plain batches and in batches with runs (the same maps and
    // lists in rows far apart), then a flush of mostly distinct maps.
    const series = rowsWithoutNegativeZero(table, 60, 11);
    const samples = rowsWithoutNegativeZero(table, 6_000, 12).map((r, i) => {
      const s = series[i % 60]!;
      return { ...r, metric_name: s.metric_name, series_id: s.series_id, point_attr_str: s.point_attr_str, point_attr_int: s.point_attr_int, explicit_bounds: s.explicit_bounds };
    });
    const { file } = await expectSameFile(table, [...batchesOf(table, samples.slice(0, 3_000), 500), ...runBatchesOf(table, samples.slice(3_000), 500, 5)]);
    const perSeries = await rowsOf(`SELECT count(DISTINCT point_attr_str::VARCHAR) FROM read_parquet('${file.path}')`);
    expect(Number(perSeries[0]![0])).toBeLessThanOrEqual(60);
    await expectSameFile(table, batchesOf(table, rowsWithoutNegativeZero(table, 6_000, 13), 500));
  });

  it('writes batches of series references with their segments’ definitions, beside plain batches and runs', async () => {
    const table = TABLES.metrics;
    const own = new Set(['start_unix_nano', 'time_unix_nano', 'value', 'flags']);
    // 80 series; each of two segments defines the series it saw, numbered in its own order, and
    // the second one also defines 20 series no row of this flush references (their labels and
    // keys must not show in the file's dictionaries, statistics or attribute counts).
    const series: Record<string, unknown>[] = withoutDoubleLabels(rowsWithoutNegativeZero(table, 80, 21)).map((r, i) => ({ ...r, point_attr_int: i >= 60 ? { only_unreferenced: 1 } : r.point_attr_int }));
    const maker = ColumnBatchBuilder.forTable(table);
    const templates = series.map((r) => maker.template(r, own));
    const values = rowsWithoutNegativeZero(table, 4_000, 22);
    let used = 0;
    const segment = (samples: number, firstSeries: number, unreferenced: RowTemplate[]): ColumnBatchHead[] => {
      const numbers = new Map<RowTemplate, number>();
      const payloads: Uint8Array[] = [];
      for (let from = 0; from < samples; from += 500) {
        const b = ColumnBatchBuilder.forTable(table);
        for (let k = from; k < Math.min(samples, from + 500); k++) {
          const s = firstSeries + ((k * 7) % 40);
          const v = values[used++]!;
          b.appendRef(templates[s]!);
          for (const c of own) {
            const col = b.column(c);
            if (col.kind !== 'primitive') throw new Error('primitive columns expected');
            if (v[c] === null || v[c] === undefined) col.leaf.nil(0);
            else if (c === 'value') col.leaf.f64(Number(v[c]));
            else col.leaf.long(Number(v[c]));
          }
          b.endRow();
        }
        for (const t of b.templates) if (!numbers.has(t)) numbers.set(t, numbers.size);
        const payload = b.finish();
        renumberRefs(payload, b.templates.map((t) => numbers.get(t)!));
        payloads.push(payload);
      }
      const defined = [...numbers.keys(), ...unreferenced];
      const defs = [defined.slice(0, 25), defined.slice(25)].map((ts) => readColumnBatchHead(ColumnBatchBuilder.seriesDefinitions(ts)));
      return payloads.map((p) => ({ ...readColumnBatchHead(p), defs }));
    };
    const first = segment(1_500, 0, []);
    const second = segment(1_500, 20, templates.slice(60));
    const plain = batchesOf(table, values.slice(3_000, 3_500).map((v, i) => ({ ...series[i % 60]!, ...Object.fromEntries([...own].map((c) => [c, v[c] ?? null])) })), 250);
    const runs = runBatchesOf(table, values.slice(3_500, 4_000), 250, 9);
    const { file } = await expectSameFile(table, [...first, ...plain, ...second, ...runs]);
    expect(file.rowCount).toBe(4_000);
    expect(file.attributeTypes?.some((a) => a.key === 'only_unreferenced')).toBe(false);
    // Materialized labels are looked up in the referenced maps as in any other.
    await expectSameFile(labelled(table), [...first, ...second]);
  });

  it('keeps ids and dictionaries right when values are made to collide in its hash tables (then PLAIN, and V8 strings)', async () => {
    // 80 trace ids whose hashBytes agree in their low 10 bits: one probe sequence longer than
    // the tables allow, in the id list's table and in the dictionary's.
    const ids: string[] = [];
    for (let i = 0; ids.length < 80; i++) {
      const id = i.toString(16).padStart(32, '0');
      const b = Buffer.from(id);
      if ((hashBytes(b, viewOf(b), 0, b.length) & 1023) === 7) ids.push(id);
    }
    const rows = randomRawRows(tracesTable, 800, 21).map((r, i) => ({ ...r, trace_id: ids[i % ids.length] }));
    const { file } = await expectSameFile(tracesTable, batchesOf(tracesTable, rows, 100));
    expect([...file.ids].sort()).toEqual([...ids].sort());
    const [[encodings]] = (await rowsOf(`SELECT first(encodings) FROM parquet_metadata('${file.path}') WHERE path_in_schema = 'trace_id'`)) as [[string]];
    expect(String(encodings)).not.toContain('RLE_DICTIONARY');
  });

  it('makes its work directory again after it was removed (one write fails, the next succeeds)', async () => {
    const work = join(dir, 'vanishing');
    const writer = new ParquetWriter(work);
    try {
      const payloads = batchesOf(tracesTable, randomRawRows(tracesTable, 20, 3), 10);
      expect((await writer.write(tracesTable, payloads)).rowCount).toBe(20);
      await rm(work, { recursive: true, force: true });
      await expect(writer.write(tracesTable, payloads)).rejects.toThrow();
      const out = await writer.write(tracesTable, payloads);
      expect(out.rowCount).toBe(20);
      expect((await stat(out.path)).size).toBe(out.sizeBytes);
    } finally {
      writer.close();
    }
  });

  /** Materialized labels on every table that has label scopes: a key in several typed maps, a non-ASCII one, the empty key, one no row has. */
  const LABELS = ['http.method', 'ü', '', 'absent.key'];
  const labelled = (table: TableDef) =>
    withMaterializedLabels(
      table,
      LABELS.map((key, i) => ({ key, column: `label_${i}`, id: 10_000 + i })),
    );
  /** The rows without a value of a label key in any double map (a double is DuckDB's to print). */
  const withoutDoubleLabels = (rows: Record<string, unknown>[]) =>
    rows.map((r) =>
      Object.fromEntries(
        Object.entries(r).map(([c, v]) => [c, c.endsWith('_attr_double') && v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).filter(([k]) => !LABELS.includes(k))) : v]),
      ),
    );

  for (const [name, table] of Object.entries(TABLES) as [string, TableDef][]) {
    if (!table.labelScopes) continue;
    it(`computes ${name}' materialized label columns as DuckDB does: text of the first typed map holding the key, integers and booleans printed`, async () => {
      const def = labelled(table);
      const rows = withoutDoubleLabels(rowsWithoutNegativeZero(table, 600, 17));
      const plain = batchesOf(table, rows.slice(0, 300), 70);
      const runs = runBatchesOf(table, rows.slice(300), 90, 5);
      const { file } = await expectSameFile(def, [...plain, ...runs]);
      // The labels were found (some rows have each present key's text, none the absent one), from integer and boolean maps too.
      const values = await rowsOf(
        `SELECT count(label_0), count(label_1), count(label_2), count(label_3), count(*) FILTER (WHERE label_0 IN ('true', 'false')), count(*) FILTER (WHERE regexp_full_match(label_0, '-?[0-9]+')) FROM read_parquet('${file.path}')`,
      );
      const [withMethod, withU, withEmpty, withAbsent, asBool, asInt] = values[0]!.map(Number);
      expect(withMethod).toBeGreaterThan(0);
      expect(withU).toBeGreaterThan(0);
      expect(withEmpty).toBeGreaterThan(0);
      expect(withAbsent).toBe(0);
      expect(asBool! + asInt!).toBeGreaterThan(0);
    });
  }

  it('gives a flush whose label value is a double to DuckDB, and batches of another column type too', async () => {
    const def = labelled(TABLES.metrics);
    const rows = randomRawRows(TABLES.metrics, 40, 3).map((r) => ({ ...r, point_attr_str: {}, point_attr_int: null, point_attr_double: { 'http.method': 2.5 } }));
    const payloads = batchesOf(TABLES.metrics, rows, 40);
    const info = readColumnBatch(payloads[0]!).schema;
    expect(sortedParquetPlan(def, info)).toBeDefined();
    const out = await direct.write(def, payloads);
    expect(await writtenBy(out.path)).toMatch(/DuckDB/);
    expect(out.rowCount).toBe(40);
    const methods = await rowsOf(`SELECT DISTINCT label_0 FROM read_parquet('${out.path}')`);
    expect(methods).toEqual([['2.5']]);
    const retyped = batchSchemaInfo(JSON.stringify(batchSchema(tracesTable).map(([n, t]) => [n, n === 'flags' ? 'int' : t])));
    expect(sortedParquetPlan(tracesTable, retyped)).toBeUndefined();
    expect(sortedParquetPlan(tracesTable, readColumnBatch(batchesOf(tracesTable, randomRawRows(tracesTable, 3, 1), 3)[0]!).schema)).toBeDefined();
  });
});
