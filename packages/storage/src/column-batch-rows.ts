import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { ColumnBatchBuilder, columnLeaves, plainBatch, readColumnBatch, type RowTemplate } from './column-batch.ts';
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

const utf8Decoder = new TextDecoder();

/** A long as the converters' row objects hold it: a number when exact, otherwise its decimal text. */
function longValue(v: bigint): number | string {
  return v >= -BigInt(Number.MAX_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : String(v);
}

/** A double as JSON can hold it: NaN and the infinities as their names (as the NDJSON rows had them). */
const doubleValue = (v: number): number | string => (Number.isFinite(v) ? v : String(v));

/**
 * The rows of one column-batch payload as the converters' row objects hold them (what
 * ColumnBatchBuilder.addRow takes back): 64-bit integers as numbers when exact and as decimal
 * text otherwise, NaN and infinities as text, maps as objects, lists as arrays, NULL as null.
 * Synchronous and without DuckDB; for tests of converters that write columns directly.
 */
export function columnBatchValues(payload: Uint8Array, series?: readonly RowTemplate[]): Record<string, unknown>[] {
  // A batch of series references ("FCB3") reads its rows with the templates it references (ColumnBatchBuilder.templates).
  const defs = series && series.length > 0 ? [readColumnBatch(ColumnBatchBuilder.seriesDefinitions(series))] : undefined;
  const view = plainBatch(readColumnBatch(payload, defs ? { defs } : {}));
  const rows: Record<string, unknown>[] = Array.from({ length: view.rows }, () => ({}));
  const cursors = view.leaves.map((leaf, i) => ({ leaf, shape: view.schema.leaves[i]!, k: 0, vp: 0, dv: new DataView(leaf.values.buffer, leaf.values.byteOffset, leaf.values.byteLength) }));
  type Cursor = (typeof cursors)[number];
  const value = (c: Cursor): unknown => {
    const { dv, leaf } = c;
    switch (c.shape.type) {
      case 'long':
        return longValue(dv.getBigInt64((c.vp += 8) - 8, true));
      case 'double':
        return doubleValue(dv.getFloat64((c.vp += 8) - 8, true));
      case 'int':
        return dv.getInt32((c.vp += 4) - 4, true);
      case 'boolean':
        return leaf.values[c.vp++] !== 0;
      case 'string': {
        const n = dv.getUint32(c.vp, true);
        c.vp += 4 + n;
        return utf8Decoder.decode(leaf.values.subarray(c.vp - n, c.vp));
      }
    }
  };
  /** The definition levels of one row's entries (a nested leaf: the first at rep 0, the rest at rep 1). */
  const rowLevels = (c: Cursor): number[] => {
    const defs = [c.leaf.defs[c.k++]!];
    while (c.k < c.leaf.levels && c.leaf.reps![c.k] === 1) defs.push(c.leaf.defs[c.k++]!);
    return defs;
  };
  let at = 0;
  for (const col of view.schema.columns) {
    const mine = cursors.slice(at, (at += columnLeaves(col).length));
    for (const row of rows) {
      if (col.kind === 'primitive') {
        const c = mine[0]!;
        row[col.name] = c.leaf.defs[c.k++] === 1 ? value(c) : null;
      } else if (col.kind === 'map') {
        const [key, val] = mine as [Cursor, Cursor];
        const keys = rowLevels(key);
        const vals = rowLevels(val);
        if (keys[0] === 0) row[col.name] = null;
        else if (keys[0] === 1) row[col.name] = {};
        else row[col.name] = Object.fromEntries(keys.map((_, i) => [value(key), vals[i] === 3 ? value(val) : null]));
      } else if (col.kind === 'list') {
        const c = mine[0]!;
        const defs = rowLevels(c);
        row[col.name] = defs[0] === 0 ? null : defs[0] === 1 ? [] : defs.map((d) => (d === 3 ? value(c) : null));
      } else {
        const fields = mine.map((c) => rowLevels(c));
        const first = fields[0]![0];
        row[col.name] =
          first === 0 ? null : first === 1 ? [] : fields[0]!.map((d, e) => (d === 2 ? null : Object.fromEntries(col.fields.map((f, i) => [f.name, fields[i]![e] === 4 ? value(mine[i]!) : null]))));
      }
    }
  }
  return rows;
}
