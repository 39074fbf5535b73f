import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attributeTypesSql, tracesTable } from '@floe/schema';
import type { AttributeTypeCount } from './attribute-key-counts.ts';
import { ColumnBatchBuilder } from './column-batch.ts';
import { ParquetWriter } from './parquet-writer.ts';

let dir: string;
let writer: ParquetWriter;
let instance: DuckDBInstance;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-attr-counts-'));
  writer = new ParquetWriter(join(dir, 'w'));
  instance = await DuckDBInstance.create(':memory:');
});
afterAll(async () => {
  writer.close();
  instance.closeSync();
  await rm(dir, { recursive: true, force: true });
});

const sorted = (c: AttributeTypeCount[]) => [...c].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.type < b.type ? -1 : a.type > b.type ? 1 : 0));

/** The counts the query over the written file gives (the reference, and the path for NDJSON rows). */
async function countedBySql(path: string): Promise<AttributeTypeCount[]> {
  const conn = await instance.connect();
  try {
    const rows = (await conn.runAndReadAll(attributeTypesSql(tracesTable, `read_parquet('${path}')`))).getRows();
    return rows.map(([key, type, n]) => ({ key: String(key), type: type as AttributeTypeCount['type'], count: Number(n) }));
  } finally {
    conn.closeSync();
  }
}

const span = (i: number, attrs: Record<string, Record<string, unknown>>): Record<string, unknown> => ({
  trace_id: 'ab'.repeat(16),
  span_id: i.toString(16).padStart(16, '0'),
  name: 'n',
  start_time_unix_nano: String(1_700_000_000_000_000_000n + BigInt(i)),
  service_name: `svc-${i % 2}`,
  span_attr_str: {},
  span_attr_int: {},
  span_attr_double: {},
  span_attr_bool: {},
  resource_attr_str: {},
  resource_attr_int: {},
  resource_attr_double: {},
  resource_attr_bool: {},
  ...attrs,
});

describe('attribute key counts from column batches', () => {
  it('equal what the query over the written file counts: keys in several maps and types, changing sets and orders, non-ASCII, empty, prefixes', async () => {
    // Rows change their key sets and orders (each key is first compared with the one that
    // followed its predecessor last time), and keys are prefixes of each other.
    const rows = Array.from({ length: 500 }, (_, i) =>
      span(i, {
        span_attr_str: i % 4 === 0 ? {} : i % 3 === 0 ? { 'ünï.cødé': 'x', 'http.method': 'GET', '': 'empty key', [`key.${i % 2}`]: 'c' } : { 'http.method': 'GET', 'ünï.cødé': 'x', '': 'empty key', [`key.${i % 2}`]: 'c', http: 'prefix' },
        span_attr_int: { 'http.method': i, 'http.status_code': 200 },
        span_attr_double: i % 3 === 0 ? { ratio: i / 7 } : {},
        span_attr_bool: { 'cache.hit': true, '\u{1F600}': false },
        resource_attr_str: { 'service.name': `svc-${i % 2}`, 'http.method': 'resource too' },
        resource_attr_int: i % 5 === 0 ? { 'process.pid': i } : {},
      }),
    );
    const payloads = [];
    for (let i = 0; i < rows.length; i += 37) {
      const b = ColumnBatchBuilder.forTable(tracesTable);
      for (const r of rows.slice(i, i + 37)) b.addRow(r);
      payloads.push(b.finish());
    }
    const out = await writer.write(tracesTable, payloads, { attributeTypes: true });
    const want = await countedBySql(out.path);
    expect(sorted(out.attributeTypes!)).toEqual(sorted(want));
    // Spot checks, so that agreement is not agreement on nothing.
    expect(want).toContainEqual({ key: 'http.method', type: 'str', count: 500 + 375 });
    expect(want).toContainEqual({ key: 'http.method', type: 'int', count: 500 });
    expect(want).toContainEqual({ key: 'key.1', type: 'str', count: 250 });
    expect(want).toContainEqual({ key: 'key.0', type: 'str', count: 125 });
    expect(want).toContainEqual({ key: 'http', type: 'str', count: 250 });
    expect(want).toContainEqual({ key: '\u{1F600}', type: 'bool', count: 500 });
    await rm(out.path, { force: true });
  });

  it('NDJSON payloads in the write are counted too (by the query)', async () => {
    const b = ColumnBatchBuilder.forTable(tracesTable);
    b.addRow(span(1, { span_attr_str: { a: 'x' } }));
    const ndjson = new TextEncoder().encode(JSON.stringify(span(2, { span_attr_str: { a: 'y' }, span_attr_int: { a: 1 } })) + '\n');
    const out = await writer.write(tracesTable, [b.finish(), ndjson], { attributeTypes: true });
    expect(sorted(out.attributeTypes!)).toEqual([
      { key: 'a', type: 'int', count: 1 },
      { key: 'a', type: 'str', count: 2 },
    ]);
    await rm(out.path, { force: true });
  });
});
