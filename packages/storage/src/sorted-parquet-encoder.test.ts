import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracesTable, withMaterializedLabels } from '@floe/schema';
import { ColumnBatchBuilder } from './column-batch.ts';
import { Scratch } from './scratch.ts';
import { NeedsDuckDbError } from './sorted-batch-parquet.ts';
import { SortedParquetEncoder } from './sorted-parquet-encoder.ts';
import { randomRawRows } from './testing/raw-rows.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-encoder-thread-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function payloads(rows: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  const all = randomRawRows(tracesTable, rows, 5);
  for (let i = 0; i < rows; i += 500) {
    const b = ColumnBatchBuilder.forTable(tracesTable);
    for (const r of all.slice(i, i + 500)) b.addRow(r);
    out.push(b.finish());
  }
  return out;
}

describe('the encoding thread', () => {
  it('takes payloads in shared memory as they are, beside copied ones, and writes the same file', async () => {
    const enc = new SortedParquetEncoder();
    try {
      const plain = payloads(3000);
      // Small shared buffers: the payloads land in several, at unaligned offsets, next to a plain one.
      const memory = new Scratch(64 * 1024, 1 << 30, { shared: true });
      const mixed = plain.map((p, i) => {
        if (i === 2) return p;
        memory.u8(3);
        const copy = memory.u8(p.length);
        copy.set(p);
        return copy.subarray(0);
      });
      expect(new Set(mixed.map((p) => p.buffer)).size).toBeGreaterThan(2);
      expect(mixed.filter((p) => p.buffer instanceof SharedArrayBuffer)).toHaveLength(plain.length - 1);
      const a = await enc.encode(join(dir, 'plain.parquet'), tracesTable, plain, false);
      const b = await enc.encode(join(dir, 'mixed.parquet'), tracesTable, mixed, false);
      expect(b.result).toEqual(a.result);
      expect((await readFile(join(dir, 'mixed.parquet'))).equals(await readFile(join(dir, 'plain.parquet')))).toBe(true);
    } finally {
      enc.close();
    }
  });

  it('answers a failed encode with its error (one only DuckDB writes, as such) and goes on with the next', async () => {
    const enc = new SortedParquetEncoder();
    try {
      // Batches of another schema than the table's own: the thread has no plan for them.
      const renamed = { ...tracesTable, columns: tracesTable.columns.map((c) => (c.name === 'flags' ? { ...c, type: 'string' as const } : c)) };
      const failed = enc.encode(join(dir, 'a.parquet'), renamed, payloads(100), false);
      await expect(failed).rejects.toThrow(/need DuckDB/);
      await expect(failed).rejects.not.toBeInstanceOf(NeedsDuckDbError);
      // A label whose value is a double: the flush is DuckDB's to write.
      const labelled = withMaterializedLabels(tracesTable, [{ key: 'k', column: 'label_k', id: 10_000 }]);
      const doubled = ColumnBatchBuilder.forTable(tracesTable);
      for (const r of randomRawRows(tracesTable, 10, 9)) doubled.addRow({ ...r, span_attr_str: {}, span_attr_int: {}, span_attr_double: { k: 0.5 } });
      await expect(enc.encode(join(dir, 'a2.parquet'), labelled, [doubled.finish()], false)).rejects.toBeInstanceOf(NeedsDuckDbError);
      const ok = await enc.encode(join(dir, 'b.parquet'), tracesTable, payloads(1000), true);
      expect(ok.result.rowCount).toBe(1000);
      expect(ok.attributeTypes!.length).toBeGreaterThan(0);
      expect((await stat(join(dir, 'b.parquet'))).size).toBeGreaterThan(0);
    } finally {
      enc.close();
    }
  });

  it('fails the flush in flight when the thread goes away, and starts a new thread for the next', async () => {
    const enc = new SortedParquetEncoder();
    try {
      const batches = payloads(5000);
      const first = enc.encode(join(dir, 'c.parquet'), tracesTable, batches, false);
      // The thread is still loading its modules: it is stopped before it reads the request.
      enc.close();
      // The next flush is sent at once, before the old thread's exit is reported: only the
      // request the old thread held fails.
      const again = enc.encode(join(dir, 'd.parquet'), tracesTable, batches, false);
      await expect(first).rejects.toThrow(/encoding thread exited/);
      expect((await again).result.rowCount).toBe(5000);
    } finally {
      enc.close();
    }
  });
});
