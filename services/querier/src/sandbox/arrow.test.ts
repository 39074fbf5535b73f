import { DuckDBInstance, DuckDBVarCharType, type DuckDBConnection, type DuckDBListVector } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { converterFor, denseItems, listValidity } from './arrow.ts';

// The list fast path reads two private node-api fields (a list's NULL mask, a number vector's
// items and mask). Each falls back to the public API when the shape is not there, which would be
// correct but slow and silent; these tests fail instead when a node-api upgrade changes it.

let instance: DuckDBInstance;
let conn: DuckDBConnection;

beforeAll(async () => {
  instance = await DuckDBInstance.create(':memory:');
  conn = await instance.connect();
});

afterAll(() => {
  conn.closeSync();
  instance.closeSync();
});

async function firstListVector(sql: string): Promise<DuckDBListVector> {
  const result = await conn.stream(sql);
  const chunk = await result.fetchChunk();
  return chunk!.getColumnVector(0) as DuckDBListVector;
}

describe('node-api vector internals the list fast path relies on', () => {
  it("a list vector's NULL mask is readable and agrees with getItemVector on every row", async () => {
    const lists = await firstListVector(`SELECT CASE WHEN i % 5 = 2 THEN NULL WHEN i % 5 = 4 THEN []::DOUBLE[] ELSE [i::DOUBLE] END FROM range(2048) t(i)`);
    const mask = listValidity(lists);
    expect(mask).toBeDefined();
    const fromMask = Array.from({ length: lists.itemCount }, (_, i) => mask!.itemValid(i));
    const fromSlices = Array.from({ length: lists.itemCount }, (_, i) => lists.getItemVector(i) !== null);
    expect(fromMask).toEqual(fromSlices);
    expect(fromMask.filter((valid) => !valid)).toHaveLength(410); // i % 5 = 2 for i < 2048
  });

  it('the items of a NULL-free number vector are read whole; one with a NULL is read item by item', async () => {
    const dense = (await firstListVector(`SELECT [i::DOUBLE, i / 4] FROM range(100) t(i)`)).childVector;
    const items = denseItems(dense, Float64Array);
    expect(items).toBeInstanceOf(Float64Array);
    expect(Array.from(items!)).toEqual(dense.toArray());
    expect(denseItems((await firstListVector(`SELECT [i::INTEGER, (i + 1)::INTEGER] FROM range(10) t(i)`)).childVector, Int32Array)).toBeInstanceOf(Int32Array);
    // Wrong element type, or a NULL among the items: no shortcut.
    expect(denseItems(dense, Float32Array)).toBeUndefined();
    const withNull = (await firstListVector(`SELECT [i::DOUBLE, NULL] FROM range(100) t(i)`)).childVector;
    expect(denseItems(withNull, Float64Array)).toBeUndefined();
  });
});

describe('lists of numbers from a vector', () => {
  it("an aggregate's lists, back to back in the child vector, are its items without a copy; lists in another order are copied", async () => {
    const sql = `SELECT g, list(CAST(i AS DOUBLE) / 2) AS v FROM range(5000) t(i), (VALUES ('a'), ('b')) s(g) GROUP BY g ORDER BY g`;
    const result = await conn.stream(`SELECT v FROM (${sql})`);
    const chunk = (await result.fetchChunk())!;
    const lists = chunk.getColumnVector(0) as DuckDBListVector;
    const converter = converterFor(lists.type);
    const data = converter.buildVector!(lists, chunk.rowCount);
    const items = denseItems(lists.childVector, Float64Array) as Float64Array;
    const values = data.children[0]!.values as Float64Array;
    expect(values.buffer).toBe(items.buffer);
    expect(Array.from(data.valueOffsets)).toEqual([0, 5000, 10000]);
    const halves = Float64Array.from({ length: 5000 }, (_, i) => i / 2);
    expect(values.slice(0, 5000).sort()).toEqual(halves);
    expect(values.slice(5000).sort()).toEqual(halves);

    // The same items gathered second list first: a copy, in that order.
    const gather = (converterFor(lists.childVector.type) as unknown as { gather: (v: unknown, s: Int32Array, l: Int32Array, n: number) => { values: Float64Array } }).gather;
    const swapped = gather(lists.childVector, Int32Array.of(5000, 0), Int32Array.of(5000, 5000), 10000).values;
    expect(swapped.buffer).not.toBe(items.buffer);
    expect(swapped[0]).toBe(items[5000]);
    expect(swapped[5000]).toBe(items[0]);
    expect(swapped[9999]).toBe(items[4999]);
  });
});

describe('Utf8 columns', () => {
  it('a long value takes its own size in the batch, not three bytes per character', () => {
    const long = 'é'.repeat(300_000) + 'x'.repeat(400_000); // 1,000,000 bytes of UTF-8
    const data = converterFor(DuckDBVarCharType.instance).build(['a', long, null, 'b']);
    const values = data.values as Uint8Array;
    expect(values.byteLength).toBe(1_000_002);
    expect(values.buffer.byteLength).toBeLessThan(1_500_000);
    expect(Array.from(data.valueOffsets)).toEqual([0, 1, 1_000_001, 1_000_001, 1_000_002]);
    expect(Buffer.from(values.subarray(1, 1_000_001)).toString('utf8')).toBe(long);
  });
});
