import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TableDef } from '@floe/schema';
import { ParquetWriter, writtenLocalFiles } from './parquet-writer.ts';

/** A table of the least a write needs: a time column, its derived partition source and a text sort key. */
const table: TableDef = {
  name: 'memory_test',
  version: 1,
  columns: [
    { name: 'time_unix_nano', id: 1, type: 'long', required: true, doc: 'time' },
    { name: 'timestamp', id: 2, type: 'timestamptz', derived: 'time_unix_nano', doc: 'partition source' },
    { name: 'name', id: 3, type: 'string', doc: 'sort key' },
  ],
  mapIds: {},
  partitionSource: 'timestamp',
  sortOrder: ['name', 'time_unix_nano'],
};
/** `n` rows whose sort key is a hash: DuckDB sorts them all before it writes one. */
const rows = (n: number) => `SELECT range AS time_unix_nano, make_timestamptz(range // 1000) AS timestamp, md5(range::VARCHAR) AS name FROM range(${n})`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-parquet-writer-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ParquetWriter memory', () => {
  it('runs DuckDB under the memoryLimit it is given, 2GB by default', async () => {
    const limited = new ParquetWriter(join(dir, 'limited'), { memoryLimit: '300MiB' });
    const plain = new ParquetWriter(join(dir, 'plain'));
    try {
      expect((await limited.writeQuery(table, rows(1000))).rowCount).toBe(1000);
      expect((await plain.writeQuery(table, rows(10))).rowCount).toBe(10);
      expect((await limited.memoryUsage()).limit).toBe('300.0 MiB');
      // DuckDB prints 2GB (10^9 bytes) in binary units.
      expect((await plain.memoryUsage()).limit).toBe('1.8 GiB');
    } finally {
      limited.close();
      plain.close();
    }
  });

  it('keeps nothing of the files it wrote and read once the write is done (DuckDB\'s file cache is off)', async () => {
    const writer = new ParquetWriter(join(dir, 'uncached'));
    try {
      const written = await writer.writeQuery(table, rows(200_000));
      expect(written.rowCount).toBe(200_000);
      // The write read its file back (statistics, ids): with the cache on, those bytes stayed.
      expect((await writer.memoryUsage()).bytes).toBe(0);
      await Promise.all(writtenLocalFiles(written).map((f) => rm(f, { force: true })));
    } finally {
      writer.close();
    }
  });

  it('holds no DuckDB memory before a write needs DuckDB, and creates no instance to say so', async () => {
    const writer = new ParquetWriter(join(dir, 'idle'));
    try {
      expect(await writer.memoryUsage()).toEqual({ bytes: 0, tempBytes: 0 });
    } finally {
      writer.close();
    }
  });

  it('reads what DuckDB holds during a COPY without waiting for it', async () => {
    const writer = new ParquetWriter(join(dir, 'busy'), { threads: 1, memoryLimit: '1GB' });
    try {
      await writer.writeQuery(table, rows(10));
      let copyDone = false;
      const copy = writer.writeQuery(table, rows(3_000_000)).finally(() => (copyDone = true));
      // Readings until one sees the sort's memory: each answers while the writer's own connection is busy.
      let seen = { bytes: 0, tempBytes: 0 };
      while (!copyDone && seen.bytes === 0) seen = await writer.memoryUsage();
      expect(copyDone).toBe(false);
      expect(seen.bytes).toBeGreaterThan(0);
      const written = await copy;
      expect(written.rowCount).toBe(3_000_000);
      await Promise.all(writtenLocalFiles(written).map((f) => rm(f, { force: true })));
    } finally {
      writer.close();
    }
  });
});
