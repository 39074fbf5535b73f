import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLES, type TableDef } from '@floe/schema';
import { ColumnBatchBuilder } from './column-batch.ts';
import { concatParquet, ParquetConcatError, readParquetFooter } from './parquet-concat.ts';
import { ParquetWriter, writtenLocalFiles, type WrittenFile } from './parquet-writer.ts';
import { encodeThriftStruct } from './thrift-compact.ts';
import { randomRawRows } from './testing/raw-rows.ts';

let dir: string;
let instance: DuckDBInstance;
let conn: DuckDBConnection;
let direct: ParquetWriter;
let duckdb: ParquetWriter;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-parquet-concat-'));
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

const lit = (p: string) => `'${p.replaceAll("'", "''")}'`;

/** Every row of the files as JSON text, sorted: the multiset of rows, whatever the file order. */
async function rowsOf(paths: readonly string[]): Promise<string[]> {
  const rows = (await conn.runAndReadAll(`SELECT * FROM read_parquet([${paths.map(lit).join(', ')}])`)).getRowsJson();
  return rows.map((r) => JSON.stringify(r)).sort();
}

/** Files of `rows` rows each, written by the writer's own encoder (or DuckDB's), seeded apart. */
async function filesOf(writer: ParquetWriter, table: TableDef, count: number, rows: number, seed: number): Promise<WrittenFile[]> {
  const out: WrittenFile[] = [];
  for (let i = 0; i < count; i++) {
    const b = ColumnBatchBuilder.forTable(table);
    for (const r of randomRawRows(table, rows, seed + i)) b.addRow(r);
    out.push(await writer.write(table, [b.finish()]));
  }
  return out;
}

describe('concatParquet', () => {
  it.each(Object.keys(TABLES))('copies the row groups of %s flush files into one file that reads back as the same rows', async (name) => {
    const table = TABLES[name as keyof typeof TABLES];
    const files = await filesOf(direct, table, 3, 40, 100);
    const footers = await Promise.all(files.map((f) => readParquetFooter(f.path)));
    expect(new Set(footers.map((f) => f.schemaKey)).size).toBe(1);
    const out = join(dir, `${name}-concat.parquet`);
    const made = await concatParquet(footers, out);

    expect(made.rows).toBe(120);
    expect(made.sizeBytes).toBe((await stat(out)).size);
    expect(made.rowGroupOffsets).toHaveLength(footers.reduce((n, f) => n + f.rowGroups, 0));
    // Each offset is where DuckDB finds a row group's first page.
    const starts = (await conn.runAndReadAll(`SELECT row_group_id, min(coalesce(dictionary_page_offset, data_page_offset)) FROM parquet_metadata(${lit(out)}) GROUP BY ALL ORDER BY 1`)).getRows().map((r) => Number(r[1]));
    expect(made.rowGroupOffsets).toEqual(starts);
    expect(await rowsOf([out])).toEqual(await rowsOf(files.map((f) => f.path)));
    // Row group statistics survive: DuckDB's view of each group's time bounds matches the inputs'.
    const stats = async (paths: string[]) =>
      (await conn.runAndReadAll(`SELECT row_group_num_rows, stats_min_value, stats_max_value, path_in_schema FROM parquet_metadata([${paths.map(lit).join(', ')}]) ORDER BY ALL`)).getRowsJson();
    expect(await stats([out])).toEqual(await stats(files.map((f) => f.path)));
    for (const f of files) await Promise.all(writtenLocalFiles(f).map((p) => rm(p, { force: true })));
    await rm(out);
  });

  it('concatenates DuckDB-written files (and an output again) the same way', async () => {
    const table = TABLES.traces;
    const files = await filesOf(duckdb, table, 2, 30, 7);
    const once = join(dir, 'duckdb-once.parquet');
    await concatParquet(await Promise.all(files.map((f) => readParquetFooter(f.path))), once);
    const more = await filesOf(duckdb, table, 1, 30, 9);
    const twice = join(dir, 'duckdb-twice.parquet');
    await concatParquet([await readParquetFooter(once), await readParquetFooter(more[0]!.path)], twice);
    expect(await rowsOf([twice])).toEqual(await rowsOf([...files, ...more].map((f) => f.path)));
  });

  it('reads a footer into a tree that encodes back to the same bytes', async () => {
    const [own] = await filesOf(direct, TABLES.logs, 1, 25, 3);
    const [theirs] = await filesOf(duckdb, TABLES.logs, 1, 25, 3);
    for (const f of [own!, theirs!]) {
      const bytes = await readFile(f.path);
      const footer = await readParquetFooter(f.path);
      expect(Buffer.from(encodeThriftStruct(footer.metadata)).equals(bytes.subarray(footer.bodyEnd, bytes.length - 8))).toBe(true);
    }
  });

  it('refuses files of different schemas, and leaves no output behind', async () => {
    const [logs] = await filesOf(direct, TABLES.logs, 1, 10, 1);
    const [traces] = await filesOf(direct, TABLES.traces, 1, 10, 1);
    const out = join(dir, 'mixed.parquet');
    await expect(concatParquet([await readParquetFooter(logs!.path), await readParquetFooter(traces!.path)], out)).rejects.toThrow(ParquetConcatError);
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses what is not Parquet or is damaged, naming the file', async () => {
    const [good] = await filesOf(direct, TABLES.logs, 1, 10, 2);
    const bytes = await readFile(good!.path);
    const cases: Record<string, Uint8Array> = {
      text: Buffer.from('not parquet at all, just some text'),
      truncated: bytes.subarray(0, bytes.length - 100),
      // The footer length says more than the file holds.
      'long footer': Buffer.concat([bytes.subarray(0, bytes.length - 8), Buffer.from([0xff, 0xff, 0xff, 0x00]), Buffer.from('PAR1')]),
      // The footer's bytes garbled: an unknown Thrift type where a field header should be.
      'garbled footer': (() => {
        const b = Buffer.from(bytes);
        const len = b.readUInt32LE(b.length - 8);
        b.fill(0x0e, b.length - 8 - len, b.length - 8);
        return b;
      })(),
    };
    for (const [name, body] of Object.entries(cases)) {
      const path = join(dir, `bad-${name.replace(' ', '-')}.parquet`);
      await writeFile(path, body);
      const err = await readParquetFooter(path).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, name).toBeInstanceOf(ParquetConcatError);
      expect((err as Error).message, name).toContain(path);
    }
  });
});

describe('ParquetWriter.concatenate', () => {
  it('describes the concatenated file as a written file: bounds, ids, rows, and unsorted', async () => {
    const table = TABLES.traces;
    const files = await filesOf(direct, table, 3, 50, 40);
    const written = await direct.concatenate(table, await Promise.all(files.map((f) => readParquetFooter(f.path))));
    expect(written.unsorted).toBe(true);
    expect(written.rowCount).toBe(150);
    expect(written.idBlocksPath).toBeUndefined();
    expect(written.minTimestampUs).toBe(files.map((f) => f.minTimestampUs).reduce((a, b) => (a < b ? a : b)));
    expect(written.maxStartNs).toBe(files.map((f) => f.maxStartNs).reduce((a, b) => (a > b ? a : b)));
    expect([...written.ids].sort()).toEqual([...new Set(files.flatMap((f) => f.ids))].sort());
    expect(await rowsOf([written.path])).toEqual(await rowsOf(files.map((f) => f.path)));
  });
});
