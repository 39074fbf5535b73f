import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLES, type TableDef } from '@floe/schema';
import { ColumnBatchBuilder } from './column-batch.ts';
import { concatParquet, PageWalk, ParquetConcatError, readParquetFooter, type ParquetFooter } from './parquet-concat.ts';
import { ParquetWriter, writtenLocalFiles, type WrittenFile } from './parquet-writer.ts';
import { encodeThriftStruct } from './thrift-compact.ts';
import { randomRawRows } from './testing/raw-rows.ts';
import { pagesOf, type PageAt } from './testing/parquet-pages.ts';

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

  it('concatenates DuckDB-written files, whose pages carry no crc (and an output again), the same way', async () => {
    const table = TABLES.traces;
    const files = await filesOf(duckdb, table, 2, 30, 7);
    const pages = await pagesOf(files[0]!.path);
    expect(pages.length).toBeGreaterThan(0);
    expect(pages.filter((p) => p.crc !== undefined)).toEqual([]);
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

/** A copy of the file at `path` with `damage` done to its bytes. */
async function damaged(path: string, name: string, damage: (b: Buffer) => void): Promise<string> {
  const b = await readFile(path);
  damage(b);
  const out = join(dir, `${name}.parquet`);
  await writeFile(out, b);
  return out;
}

/** The first data page of at least 64 bytes: where a flipped byte lands inside a page's values. */
const dataPageOf = (pages: readonly PageAt[], rowGroup = 0) => pages.find((p) => p.type === 0 && p.size >= 64 && p.rowGroup === rowGroup)!;

/** Whether the concatenation of `paths` fails with a ParquetConcatError; its message; no output left. */
async function refusal(paths: readonly string[], out: string): Promise<string> {
  const err = await concatParquet(await Promise.all(paths.map((p) => readParquetFooter(p))), out).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ParquetConcatError);
  await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  return (err as Error).message;
}

describe('concatParquet over damaged pages', () => {
  it('refuses an input with a byte flipped inside a page, naming the file, row group, column and page offset, and leaves no output', async () => {
    const files = (await filesOf(direct, TABLES.traces, 3, 40, 60)).map((f) => f.path);
    const page = dataPageOf(await pagesOf(files[1]!));
    const bad = await damaged(files[1]!, 'flipped', (b) => void (b[page.bodyAt + (page.size >> 1)]! ^= 0x04));
    const message = await refusal([files[0]!, bad, files[2]!], join(dir, 'flipped-concat.parquet'));
    expect(message).toContain(bad);
    expect(message).toContain(`row group 0, column ${page.column}, at byte ${page.at}:`);
    expect(message).toMatch(/page crc -?\d+ does not match/);
    // The same files undamaged concatenate.
    await concatParquet(await Promise.all(files.map((p) => readParquetFooter(p))), join(dir, 'undamaged-concat.parquet'));
  });

  it.each([
    // A torn write: a data page, header and all, zeros (the last page of its chunk: Floe writes one data page a chunk).
    [
      'zeroed',
      (b: Buffer, p: PageAt): void => {
        b.fill(0, p.at, p.bodyAt + p.size);
      },
    ],
    // A page header's compressed_page_size (field 3, after type and uncompressed size) off by one.
    [
      'resized',
      (b: Buffer, p: PageAt): void => {
        let at = p.at + 3;
        while (b[at]! & 0x80) at++;
        b[at + 2]! ^= 0x02;
      },
    ],
  ] as const)('refuses an input whose pages are %s, naming the file', async (name, damage) => {
    const [file] = await filesOf(direct, TABLES.logs, 1, 40, 70);
    const pages = await pagesOf(file!.path);
    const page = dataPageOf(pages);
    const bad = await damaged(file!.path, name, (b) => damage(b, page));
    const message = await refusal([bad], join(dir, `${name}-concat.parquet`));
    expect(message).toContain(`${bad}: damaged page in row group 0, column `);
  });

  it('keeps the crcs in its output, which concatenates again and is checked again', async () => {
    const table = TABLES.logs;
    const files = (await filesOf(direct, table, 3, 40, 80)).map((f) => f.path);
    const once = join(dir, 'crc-once.parquet');
    await concatParquet(await Promise.all(files.slice(0, 2).map((p) => readParquetFooter(p))), once);
    const pages = await pagesOf(once);
    const inputs = (await Promise.all(files.slice(0, 2).map(pagesOf))).flat();
    expect(pages.map((p) => [p.type, p.size, p.crc])).toEqual(inputs.map((p) => [p.type, p.size, p.crc]));
    expect(pages.filter((p) => p.crc === undefined || p.crc !== p.bytesCrc)).toEqual([]);

    const twice = join(dir, 'crc-twice.parquet');
    await concatParquet([await readParquetFooter(once), await readParquetFooter(files[2]!)], twice);
    expect(await rowsOf([twice])).toEqual(await rowsOf(files));
    // A page of the output's second input's row group damaged: found at its offset in the output.
    const groups = (await readParquetFooter(once)).rowGroups;
    const page = dataPageOf(pages, groups - 1);
    const bad = await damaged(once, 'crc-once-flipped', (b) => void (b[page.bodyAt + 10]! ^= 0x80));
    const message = await refusal([bad, files[2]!], join(dir, 'crc-twice-flipped.parquet'));
    expect(message).toContain(`${bad}: damaged page in row group ${groups - 1}, column ${page.column}, at byte ${page.at}:`);
  });

  it('checks the same whatever the size of the blocks the copy reads (headers cut across blocks)', async () => {
    const [file] = await filesOf(direct, TABLES.traces, 1, 60, 90);
    const page = dataPageOf(await pagesOf(file!.path));
    const bad = await damaged(file!.path, 'walked-in-blocks', (b) => void (b[page.bodyAt + 20]! ^= 0x01));
    /** The walk over the body fed in blocks of `size` bytes: its error message, or undefined. */
    const walk = async (path: string, size: number): Promise<string | undefined> => {
      const footer: ParquetFooter = await readParquetFooter(path);
      const body = (await readFile(path)).subarray(0, footer.bodyEnd);
      try {
        const w = new PageWalk(footer);
        for (let at = 4; at < body.length; at += size) w.feed(body.subarray(at, Math.min(at + size, body.length)), at);
        w.end();
        return undefined;
      } catch (err) {
        expect(err).toBeInstanceOf(ParquetConcatError);
        return (err as Error).message;
      }
    };
    const whole = await walk(bad, 1 << 30);
    expect(whole).toContain(`column ${page.column}, at byte ${page.at}:`);
    for (const size of [1, 2, 7, 64, 4093]) {
      expect(await walk(file!.path, size), `blocks of ${size}`).toBeUndefined();
      expect(await walk(bad, size), `blocks of ${size}`).toBe(whole);
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
