import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { readColumnBatch } from './column-batch.ts';
import { writeColumnBatchParquet } from './column-batch-parquet.ts';

/**
 * The rows of column-batch payloads of one schema as JSON values (DuckDB's to_json of each row:
 * maps as objects, lists as arrays, 64-bit integers as numbers), read back through the same
 * Parquet file the writer makes of them. For tests and for inspecting a WAL by hand.
 */
export async function columnBatchRows(payloads: readonly Uint8Array[]): Promise<Record<string, unknown>[]> {
  if (payloads.length === 0) return [];
  const views = payloads.map((p) => readColumnBatch(p));
  const dir = await mkdtemp(join(tmpdir(), 'floe-batch-rows-'));
  const db = await DuckDBInstance.create(':memory:', { threads: '1' });
  try {
    const path = join(dir, 'rows.parquet');
    await writeColumnBatchParquet(path, views);
    const conn = await db.connect();
    const result = await conn.runAndReadAll(`SELECT to_json(t)::VARCHAR FROM read_parquet('${path.replaceAll("'", "''")}') AS t`);
    conn.closeSync();
    return result.getRows().map((r) => JSON.parse(String(r[0])) as Record<string, unknown>);
  } finally {
    db.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
}
