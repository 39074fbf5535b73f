import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLES, type TableDef } from '@floe/schema';
import { ColumnBatchBuilder } from './column-batch.ts';
import { createObjectStore } from './create-object-store.ts';
import { ObjectNotFoundError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';
import { ParquetWriter } from './parquet-writer.ts';
import { verifyLocalParquetPages, verifyParquetPages } from './parquet-verify.ts';
import { ParquetConcatError } from './parquet-concat.ts';
import { pagesOf } from './testing/parquet-pages.ts';
import { randomRawRows } from './testing/raw-rows.ts';

let dir: string;
let store: ObjectStore;
let direct: ParquetWriter;
let duckdb: ParquetWriter;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-parquet-verify-'));
  store = createObjectStore({ kind: 'fs', root: join(dir, 'store') });
  direct = new ParquetWriter(join(dir, 'direct'));
  duckdb = new ParquetWriter(join(dir, 'duckdb'), { encoder: 'duckdb' });
});
afterAll(async () => {
  direct.close();
  duckdb.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** A file of `rows` rows written by `writer` (Floe's own encoder, or DuckDB's), its bytes. */
async function written(writer: ParquetWriter, table: TableDef, rows: number, seed: number): Promise<Buffer> {
  const b = ColumnBatchBuilder.forTable(table);
  for (const r of randomRawRows(table, rows, seed)) b.addRow(r);
  const file = await writer.write(table, [b.finish()]);
  return readFile(file.path);
}

/** The store, counting the bytes each ranged GET asks for. */
function counted(): { store: ObjectStore; asked: number[] } {
  const asked: number[] = [];
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop !== 'getRange') return Reflect.get(target, prop, receiver) as unknown;
      return (key: string, offset: number, length: number) => {
        asked.push(length);
        return target.getRange(key, offset, length);
      };
    },
  });
  return { store: wrapped, asked };
}

describe('verifyParquetPages', () => {
  it('finds nothing wrong with sound files of Floe\'s encoder (crcs on every page) and of DuckDB (none), in blocks of any size', async () => {
    const floe = await written(direct, TABLES.traces, 60, 1);
    const duck = await written(duckdb, TABLES.logs, 60, 2);
    expect((await pagesOf(await localCopy('sound-floe', floe))).every((p) => p.crc !== undefined)).toBe(true);
    await store.put('sound/floe.parquet', floe);
    await store.put('sound/duck.parquet', duck);
    for (const blockBytes of [undefined, 3, 4093]) {
      expect(await verifyParquetPages(store, 'sound/floe.parquet', { blockBytes })).toBeUndefined();
      expect(await verifyParquetPages(store, 'sound/duck.parquet', { blockBytes, sizeBytes: duck.length })).toBeUndefined();
    }
  });

  it('reads a file in ranged GETs of at most a block each, the footer with the last bytes', async () => {
    const bytes = await written(direct, TABLES.traces, 2000, 3);
    await store.put('blocks/floe.parquet', bytes);
    const c = counted();
    const block = 16 * 1024;
    expect(await verifyParquetPages(c.store, 'blocks/floe.parquet', { sizeBytes: bytes.length, blockBytes: block })).toBeUndefined();
    const tail = Math.min(bytes.length, 64 * 1024);
    expect(c.asked[0]).toBe(tail);
    expect(c.asked.slice(1).every((n) => n <= block)).toBe(true);
    // The body once, the tail once: every byte read about once.
    expect(c.asked.reduce((a, n) => a + n, 0)).toBeLessThan(bytes.length + tail);
    expect(c.asked.length).toBeGreaterThan(bytes.length / block);
  });

  it('names the row group, column and page offset of a byte flipped inside a page (same size)', async () => {
    const bytes = await written(direct, TABLES.traces, 300, 4);
    const pages = await pagesOf(await localCopy('flip-src', bytes));
    const page = pages.find((p) => p.type === 0 && p.size >= 64)!;
    const bad = Buffer.from(bytes);
    bad[page.bodyAt + (page.size >> 1)]! ^= 0x04;
    await store.put('flipped/floe.parquet', bad);
    for (const blockBytes of [undefined, 5]) {
      const damage = await verifyParquetPages(store, 'flipped/floe.parquet', { blockBytes });
      expect(damage).toEqual({
        key: 'flipped/floe.parquet',
        message: expect.stringMatching(new RegExp(`^flipped/floe\\.parquet: damaged page in row group 0, column ${page.column.replaceAll('.', '\\.')}, at byte ${page.at}: page crc -?\\d+ does not match its bytes' -?\\d+$`)),
        rowGroup: 0,
        column: page.column,
        offset: page.at,
      });
    }
  });

  it.each([
    // An upload cut short: the footer and closing magic are gone.
    ['truncated', (b: Buffer) => b.subarray(0, b.length - 100), /: not a Parquet file \(magic missing\)$/],
    // The footer's bytes garbled under an intact length and magic.
    ['garbled footer', (b: Buffer) => Buffer.concat([b.subarray(0, b.length - 8 - 40), Buffer.alloc(40, 0xff), b.subarray(b.length - 8)]), /: damaged footer \(.+\)$/],
    ['not Parquet', () => Buffer.from('{"not": "parquet, but long enough"}'), /: not a Parquet file \(magic missing\)$/],
  ] as const)('reports a file whose footer cannot be read (%s) as damaged, without a place in it', async (name, damage, message) => {
    const key = `footer/${name.replaceAll(' ', '-')}.parquet`;
    await store.put(key, damage(await written(direct, TABLES.logs, 100, 5)));
    expect(await verifyParquetPages(store, key)).toEqual({ key, message: expect.stringMatching(message), rowGroup: null, column: null, offset: null });
  });

  it('reports an object shorter than the size it was listed with, and rejects one that is not there', async () => {
    const bytes = await written(direct, TABLES.logs, 100, 6);
    await store.put('short/floe.parquet', bytes);
    expect(await verifyParquetPages(store, 'short/floe.parquet', { sizeBytes: bytes.length + 10 })).toMatchObject({ message: `short/floe.parquet: ends at byte ${bytes.length}, before the ${bytes.length + 10} bytes it was listed with` });
    await expect(verifyParquetPages(store, 'short/none.parquet')).rejects.toBeInstanceOf(ObjectNotFoundError);
  });
});

describe('verifyLocalParquetPages, and the rewrites that check their inputs with it', () => {
  it('finds the same damage in a local file as in the store, and a rewrite refuses the file by name before DuckDB reads it', async () => {
    const sound = await written(direct, TABLES.traces, 300, 7);
    const other = await written(direct, TABLES.traces, 200, 8);
    const page = (await pagesOf(await localCopy('local-src', sound))).find((p) => p.type === 0 && p.size >= 64)!;
    const bad = Buffer.from(sound);
    bad[page.bodyAt + (page.size >> 1)]! ^= 0x10;
    const badPath = await localCopy('local-flipped', bad);
    const otherPath = await localCopy('local-other', other);
    const soundPath = await localCopy('local-sound', sound);

    expect(await verifyLocalParquetPages(soundPath)).toBeUndefined();
    expect(await verifyLocalParquetPages(badPath)).toEqual({
      key: badPath,
      message: expect.stringContaining(`${badPath}: damaged page in row group 0, column ${page.column}, at byte ${page.at}: page crc`),
      rowGroup: 0,
      column: page.column,
      offset: page.at,
    });

    // DuckDB alone reads the damaged file without an error, but not as it was written.
    // The compactor's sorted rewrite and a delete request's rewrite refuse it instead.
    const rewrite = direct.rewrite(TABLES.traces, [otherPath, badPath]);
    await expect(rewrite).rejects.toBeInstanceOf(ParquetConcatError);
    await expect(rewrite).rejects.toThrow(`not rewritten: ${badPath}: damaged page in row group 0, column ${page.column}, at byte ${page.at}`);
    await expect(direct.deleteWhere(TABLES.traces, [badPath], { sql: 'false', params: [] })).rejects.toThrow(`not rewritten: ${badPath}`);
    // The same inputs undamaged rewrite to every row.
    expect((await direct.rewrite(TABLES.traces, [otherPath, soundPath])).rowCount).toBe(500);
  });
});

/** The bytes as a local file, for the test's own page reader. */
async function localCopy(name: string, bytes: Uint8Array): Promise<string> {
  const key = `local/${name}.parquet`;
  await store.put(key, bytes);
  return store.localPath(key)!;
}
