import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsTable, readJsonColumns, tracesTable, type TableDef } from '@floe/schema';
import { ColumnBatchBuilder, RowTemplate, batchSchema, isColumnBatch, isSeriesDefinitions, plainBatch, readColumnBatch, renumberRefs, type BatchColumnType } from './column-batch.ts';
import { columnBatchValues } from './column-batch-rows.ts';
import { ParquetWriter } from './parquet-writer.ts';
import { writeColumnBatchParquet } from './column-batch-parquet.ts';
import { encodeLevelRuns, encodeRepeatedRun } from './parquet-format.ts';

let dir: string;
let instance: DuckDBInstance;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-column-batch-'));
  instance = await DuckDBInstance.create(':memory:');
});
afterAll(async () => {
  instance.closeSync();
  await rm(dir, { recursive: true, force: true });
});

const rawNames = (t: TableDef) => t.columns.filter((c) => !c.derived && !c.expr).map((c) => c.name);

/** What DuckDB reads back: every raw column as JSON text, row by row, in insertion order. */
async function readBack(table: TableDef, source: string): Promise<string[]> {
  const conn = await instance.connect();
  try {
    const cols = rawNames(table).map((n) => `"${n}"`);
    const r = await conn.runAndReadAll(`SELECT to_json(struct_pack(${cols.map((c) => `${c} := ${c}`).join(', ')}))::VARCHAR FROM ${source}`);
    return r.getRows().map((row) => String(row[0]));
  } finally {
    conn.closeSync();
  }
}

/** Rows → batches of `perBatch` rows → one Parquet file, read back; and the same rows as NDJSON through read_json. */
async function roundTrip(table: TableDef, rows: Record<string, unknown>[], perBatch: number) {
  const batches = [];
  for (let i = 0; i < rows.length; i += perBatch) {
    const b = ColumnBatchBuilder.forTable(table);
    for (const r of rows.slice(i, i + perBatch)) b.addRow(r);
    batches.push(readColumnBatch(b.finish()));
  }
  const parquet = join(dir, `${table.name}-${perBatch}.parquet`);
  const n = await writeColumnBatchParquet(parquet, batches);
  expect(n).toBe(rows.length);
  const ndjson = join(dir, `${table.name}-${perBatch}.ndjson`);
  await writeFile(ndjson, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const viaJson = await readBack(table, `read_json('${ndjson}', format = 'newline_delimited', columns = ${readJsonColumns(table)})`);
  const viaBatch = await readBack(table, `read_parquet('${parquet}')`);
  return { viaJson, viaBatch };
}

const span = (i: number): Record<string, unknown> => ({
  trace_id: (i % 7).toString(16).padStart(32, '0'),
  span_id: i.toString(16).padStart(16, '0'),
  parent_span_id: i % 3 === 0 ? '' : 'ab'.repeat(8),
  trace_state: i % 5 === 0 ? 'k=v' : '',
  name: `GET /item/${i} ünïcødé ${'x'.repeat(i % 40)} \u{1F600}`,
  kind: 'server',
  start_time_unix_nano: String(1_700_000_000_000_000_000n + BigInt(i)),
  end_time_unix_nano: String(1_700_000_000_000_000_500n + BigInt(i)),
  duration_nano: '500',
  status_code: i % 4 === 0 ? 'error' : 'unset',
  status_message: '',
  service_name: `svc-${i % 3}`,
  scope_name: 'scope',
  scope_version: i % 2 ? '1.0' : null,
  flags: i % 2 ? 256 : 0,
  span_attr_str: i % 6 === 0 ? {} : { 'http.method': 'GET', 'url.path': `/x/${i}`, '': 'empty key', quote: 'a"b\\c\n' },
  span_attr_int: i % 5 === 0 ? {} : { 'http.status_code': 200 + (i % 3), big: '9007199254740993', neg: -(2 ** 40) - i },
  span_attr_double: { ratio: i / 7, nan: 'NaN', inf: 'Infinity', ninf: '-Infinity' },
  span_attr_bool: i % 9 === 0 ? {} : { ok: i % 2 === 0, other: true },
  resource_attr_str: { 'service.name': `svc-${i % 3}` },
  resource_attr_int: {},
  resource_attr_double: {},
  resource_attr_bool: {},
  events_json: i % 4 === 1 ? JSON.stringify([{ timeUnixNano: '1', name: 'e', attributes: [] }]) : null,
  links_json: null,
  dropped_counts: i % 11 === 0 ? '{"attributes":1,"events":0,"links":0}' : null,
});

const point = (i: number): Record<string, unknown> => ({
  metric_name: `m_${i % 4}`,
  metric_type: ['gauge', 'sum', 'histogram', 'summary'][i % 4],
  description: i % 2 ? 'help' : null,
  unit: '',
  temporality: i % 4 === 1 ? 'cumulative' : null,
  is_monotonic: i % 4 === 1 ? i % 8 === 1 : null,
  series_id: (i % 10).toString(16).padStart(16, '0'),
  service_name: 'svc',
  scope_name: '',
  scope_version: '',
  start_unix_nano: i % 3 ? null : '1700000000000000000',
  time_unix_nano: String(1_700_000_000_000_000_000n + BigInt(i) * 1_000_000_000n),
  value: i % 4 < 2 ? i * 1.5 : null,
  value_int: i % 4 === 0 ? String(i) : null,
  count: i % 4 >= 2 ? String(i * 10) : null,
  sum: i % 4 >= 2 ? i * 2.25 : null,
  min: null,
  max: i % 4 === 2 ? 99.5 : null,
  explicit_bounds: i % 4 === 2 ? (i % 8 === 2 ? [] : [0.1, 1, 10]) : null,
  bucket_counts: i % 4 === 2 ? (i % 8 === 2 ? ['5'] : ['1', '2', '3', String(i)]) : null,
  exp_scale: i % 13 === 0 ? -3 : null,
  exp_zero_count: null,
  exp_zero_threshold: null,
  exp_positive_offset: i % 13 === 0 ? -2147483648 : null,
  exp_positive_bucket_counts: i % 13 === 0 ? ['1', null, '3'] : null,
  exp_negative_offset: null,
  exp_negative_bucket_counts: i % 13 === 0 ? [] : null,
  quantiles: i % 4 === 3 ? [{ quantile: 0.5, value: i }, { quantile: 0.99, value: null }, null] : null,
  flags: i % 17 === 0 ? 1 : 0,
  point_attr_str: { job: 'api', instance: `host-${i % 5}:9090` },
  point_attr_int: {},
  point_attr_double: {},
  point_attr_bool: i % 2 ? { b: false } : {},
  resource_attr_str: {},
  resource_attr_int: {},
  resource_attr_double: {},
  resource_attr_bool: {},
  scope_attr_str: {},
  scope_attr_int: {},
  scope_attr_double: {},
  scope_attr_bool: {},
});

/** A row as columnBatchValues gives it back: longs as numbers when exact (else text), NaN and infinities as text. */
function asDecoded(table: TableDef, row: Record<string, unknown>): Record<string, unknown> {
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  const leaf = (t: string, v: unknown): unknown => {
    if (v === null || v === undefined) return null;
    if (t === 'long') {
      const b = BigInt(v as string | number);
      return b >= -max && b <= max ? Number(b) : String(b);
    }
    if (t === 'double') {
      const x = Number(v);
      return Number.isFinite(x) ? x : String(x);
    }
    if (t === 'boolean') return v === true || v === 'true';
    return v;
  };
  const value = (t: BatchColumnType, v: unknown): unknown => {
    if (typeof t === 'string') return leaf(t, v);
    if (v === null || v === undefined) return null;
    if ('map' in t) return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, leaf(t.map, x)]));
    const el = t.list;
    return (v as unknown[]).map((x) =>
      typeof el === 'string' ? leaf(el, x) : x === null || x === undefined ? null : Object.fromEntries(el.struct.map(([f, ft]) => [f, leaf(ft, (x as Record<string, unknown>)[f])])),
    );
  };
  return Object.fromEntries(batchSchema(table).map(([name, t]) => [name, value(t, row[name])]));
}

describe('column batches', () => {
  it('read back by DuckDB as the same rows read_json makes of their NDJSON (traces)', async () => {
    const rows = Array.from({ length: 300 }, (_, i) => span(i));
    for (const perBatch of [1, 7, 300]) {
      const { viaJson, viaBatch } = await roundTrip(tracesTable, rows, perBatch);
      expect(viaBatch).toEqual(viaJson);
    }
  });

  it('read back by DuckDB as the same rows read_json makes of their NDJSON (metrics: lists, structs, ints, booleans)', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => point(i));
    for (const perBatch of [3, 200]) {
      const { viaJson, viaBatch } = await roundTrip(metricsTable, rows, perBatch);
      expect(viaBatch).toEqual(viaJson);
    }
  });

  it('spans many row groups when batches are many', async () => {
    const rows = Array.from({ length: 70_000 }, (_, i) => ({ ...span(i), span_attr_str: {}, name: 'n' }));
    const { viaJson, viaBatch } = await roundTrip(tracesTable, rows, 1000);
    expect(viaBatch.length).toBe(70_000);
    expect(viaBatch).toEqual(viaJson);
  });

  it('encodes levels as RLE runs and bit-packed groups', () => {
    // 10 ones: one RLE run (header 10<<1, value 1).
    expect([...encodeLevelRuns(new Uint8Array(10).fill(1), 10, 1, 1)]).toEqual([20, 1]);
    // 0,1,0,1,0: one bit-packed group of 8 (header 1<<1|1), bits LSB first.
    expect([...encodeLevelRuns(Uint8Array.of(0, 1, 0, 1, 0), 5, 1, 1)]).toEqual([3, 0b01010]);
    // width 2: 8 levels 0..3 repeating pack into two bytes, then a run of 9 threes.
    expect([...encodeLevelRuns(Uint8Array.of(0, 1, 2, 3, 0, 1, 2, 3, ...new Array(9).fill(3)), 17, 2, 3)]).toEqual([3, 0b11100100, 0b11100100, 18, 3]);
    expect(() => encodeLevelRuns(Uint8Array.of(2), 1, 1, 1)).toThrow(/above its maximum/);
  });

  it('writes n equal values as the one RLE run encodeLevelRuns makes of them, without reading them', () => {
    for (const [n, v, width] of [[8, 0, 1], [10, 1, 1], [122_880, 2, 2], [1_000_000, 300, 9], [70_000, 0x1234567, 27]] as const) {
      expect([...encodeRepeatedRun(n, v, width)]).toEqual([...encodeLevelRuns(new Uint32Array(n).fill(v), n, width, 2 ** width - 1)]);
    }
    // Fewer than 8 (encodeLevelRuns would bit-pack them): still one run, header n << 1.
    expect([...encodeRepeatedRun(3, 1, 1)]).toEqual([6, 1]);
    expect(encodeRepeatedRun(0, 1, 1).length).toBe(0);
  });

  it('bit-packs values of every width from 2 to 32 bits as a BigInt reference packs them', () => {
    let x = 12345;
    const rand = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
    for (let width = 2; width <= 32; width++) {
      const max = width === 32 ? 0xffffffff : 2 ** width - 1;
      // Values next to each other differ (no RLE run): one bit-packed run of ceil(n / 8) groups.
      const n = 21;
      const values = new Uint32Array(n);
      values[0] = max;
      for (let i = 1; i < n; i++) values[i] = (values[i - 1]! + 1 + (rand() % max)) % (max + 1);
      let bits = 0n;
      values.forEach((v, i) => (bits |= BigInt(v) << BigInt(i * width)));
      const bytes = Array.from({ length: Math.ceil(n / 8) * width }, (_, b) => Number((bits >> BigInt(8 * b)) & 0xffn));
      expect([...encodeLevelRuns(values, n, width, max)], `width ${width}`).toEqual([Math.ceil(n / 8) * 2 + 1, ...bytes]);
    }
  });

  it('decode back to the rows added (columnBatchValues), and a row template appends the columns it holds', () => {
    for (const [table, rows] of [
      [tracesTable, Array.from({ length: 40 }, (_, i) => span(i))],
      [metricsTable, Array.from({ length: 40 }, (_, i) => point(i))],
    ] as const) {
      const b = ColumnBatchBuilder.forTable(table);
      for (const r of rows) b.addRow(r);
      expect(columnBatchValues(b.finish())).toEqual(rows.map((r) => asDecoded(table, r)));
    }
    // A template of every metrics column but the per-point ones, appended and completed by hand.
    const b = ColumnBatchBuilder.forTable(metricsTable);
    const own = new Set(['time_unix_nano', 'value']);
    const row = point(1);
    const t: RowTemplate = b.template(row, own);
    for (let i = 0; i < 3; i++) {
      b.appendTemplate(t);
      const time = b.column('time_unix_nano');
      const value = b.column('value');
      if (time.kind !== 'primitive' || value.kind !== 'primitive') throw new Error('primitive columns expected');
      time.leaf.long(1_000 + i);
      value.leaf.f64(i / 2);
      b.endRow();
    }
    expect(columnBatchValues(b.finish())).toEqual([0, 1, 2].map((i) => asDecoded(metricsTable, { ...row, time_unix_nano: 1_000 + i, value: i / 2 })));
    expect(() => ColumnBatchBuilder.forTable(tracesTable).appendTemplate(t)).toThrow(/another schema/);
  });

  it('row templates with different NULL columns, interleaved with whole rows, read back as every row', () => {
    // The templates' NULL leaves are owed and written later in one fill per leaf: any order of
    // templates (whose NULL sets differ: descriptions, temporality, histogram fields), rows added
    // whole in between, and a column looked up in the middle of a row must still give each row
    // its own values.
    const own = new Set(['time_unix_nano', 'value']);
    const templates = Array.from({ length: 13 }, (_, i) => point(i));
    const order = [0, 0, 1, 5, 5, 5, -1, 2, 12, 3, 0, -1, -1, 7, 9, 1, 0, 4, 4, 11, 6, 8, 10, -1, 0];
    for (const lookUpMidRow of [false, true]) {
      const b = ColumnBatchBuilder.forTable(metricsTable);
      const made = templates.map((row) => b.template(row, own));
      const time = b.column('time_unix_nano');
      const value = b.column('value');
      if (time.kind !== 'primitive' || value.kind !== 'primitive') throw new Error('primitive columns expected');
      const want: unknown[] = [];
      order.forEach((t, k) => {
        const at = 1_000 + k;
        if (t < 0) {
          const whole = { ...point(20 + k), time_unix_nano: at, value: k };
          b.addRow(whole);
          want.push(asDecoded(metricsTable, whole));
          return;
        }
        b.appendTemplate(made[t]!);
        if (lookUpMidRow && k % 3 === 0) b.column('value');
        time.leaf.long(at);
        value.leaf.f64(k / 4);
        b.endRow();
        want.push(asDecoded(metricsTable, { ...templates[t]!, time_unix_nano: at, value: k / 4 }));
      });
      expect(columnBatchValues(b.finish())).toEqual(want);
      // Cleared with rows owed, the builder starts afresh.
      b.appendTemplate(made[0]!);
      time.leaf.long(1);
      value.leaf.f64(1);
      b.endRow();
      b.clear();
      b.appendTemplate(made[2]!);
      time.leaf.long(2);
      value.leaf.f64(2);
      b.endRow();
      expect(columnBatchValues(b.finish())).toEqual([asDecoded(metricsTable, { ...templates[2]!, time_unix_nano: 2, value: 2 })]);
    }
  });

  it('rows by series reference read back, with their definitions, as the rows their templates make', () => {
    // Templates whose NULL columns differ (so some leaves are referenced, some NULL in every
    // template), referenced in any order and more than once, renumbered as the WAL appender does.
    const own = new Set(['time_unix_nano', 'value']);
    const templates = Array.from({ length: 9 }, (_, i) => point(i));
    const order = [3, 0, 0, 8, 1, 5, 3, 2, 7, 6, 4, 0];
    const b = ColumnBatchBuilder.forTable(metricsTable);
    const made = templates.map((row) => b.template(row, own));
    const time = b.column('time_unix_nano');
    const value = b.column('value');
    if (time.kind !== 'primitive' || value.kind !== 'primitive') throw new Error('primitive columns expected');
    const want = order.map((t, k) => {
      b.appendRef(made[t]!);
      time.leaf.long(1_000 + k);
      value.leaf.f64(k / 4);
      b.endRow();
      return asDecoded(metricsTable, { ...templates[t]!, time_unix_nano: 1_000 + k, value: k / 4 });
    });
    // Templates in the order first referenced; each row's reference is its template's index there.
    expect(b.templates).toEqual([...new Set(order)].map((t) => made[t]));
    const payload = b.finish();
    expect(columnBatchValues(payload, b.templates)).toEqual(want);
    const view = readColumnBatch(payload);
    expect([...view.refs!]).toEqual(order.map((t) => [...new Set(order)].indexOf(t)));
    // A referenced leaf holds nothing in the batch: the series' labels and name are not there.
    expect(view.leaves.filter((l) => l.ref).length).toBeGreaterThan(3);
    expect(payload.length).toBeLessThan(ColumnBatchBuilder.seriesDefinitions(b.templates).length);

    // Definitions split over two records and numbered in another order (a segment's numbering).
    const numbering = b.templates.map((_, i) => (i * 5 + 2) % b.templates.length);
    const byNumber = [...b.templates];
    b.templates.forEach((t, i) => (byNumber[numbering[i]!] = t));
    const copy = payload.slice();
    renumberRefs(copy, numbering);
    const defs = [byNumber.slice(0, 3), byNumber.slice(3)].map((ts) => readColumnBatch(ColumnBatchBuilder.seriesDefinitions(ts)));
    expect(isSeriesDefinitions(defs[0]!.bytes)).toBe(true);
    expect(isColumnBatch(defs[0]!.bytes)).toBe(false);
    const plain = plainBatch(readColumnBatch(copy, { defs }));
    const again = ColumnBatchBuilder.forTable(metricsTable);
    for (const row of want) again.addRow(row as Record<string, unknown>);
    expect(columnBatchValues(again.finish())).toEqual(want);
    expect(plain.leaves.map((l) => [l.levels, [...l.defs], [...(l.reps ?? [])], [...l.values]])).toEqual(
      plainBatch(readColumnBatch(again.finish())).leaves.map((l) => [l.levels, [...l.defs], [...(l.reps ?? [])], [...l.values]]),
    );

    // A reference beyond the definitions, or definitions of another schema, fail the check.
    expect(() => readColumnBatch(copy, { defs: defs.slice(0, 1) })).toThrow(/references series \d+, its segment defines 3/);
    const traceDefs = ColumnBatchBuilder.forTable(tracesTable);
    const spanTemplate = traceDefs.template(span(1), new Set(['start_time_unix_nano']));
    expect(() => readColumnBatch(copy, { defs: [readColumnBatch(ColumnBatchBuilder.seriesDefinitions([spanTemplate]))] })).toThrow(/another schema/);
    // Rows of other kinds do not mix with references, in either order.
    expect(() => b.addRow(point(1))).toThrow(/series reference/);
    expect(() => b.appendTemplate(made[0]!)).toThrow(/series reference/);
    b.clear();
    b.addRow(point(1));
    expect(() => b.appendRef(made[0]!)).toThrow(/another kind/);
  });

  it('keeps the columns rows share once per run, and reads them back as every row', () => {
    const rows = Array.from({ length: 60 }, (_, i) => span(i));
    // Three runs of rows that share a resource (20, 1 and 39 rows), as a transcoder writes them.
    const runs = [rows.slice(0, 20), rows.slice(20, 21), rows.slice(21)].map((run) =>
      run.map((r) => ({ ...r, service_name: run[0]!.service_name, resource_attr_str: run[0]!.resource_attr_str })),
    );
    const shared = new Set(['service_name', 'resource_attr_str']);
    const withRuns = ColumnBatchBuilder.forTable(tracesTable);
    const plain = ColumnBatchBuilder.forTable(tracesTable);
    for (const run of runs) {
      withRuns.addRows(run, shared);
      for (const r of run) plain.addRow(r);
    }
    const a = withRuns.finish();
    const b = plain.finish();
    expect(a.length).toBeLessThan(b.length);
    const view = readColumnBatch(a);
    const names = view.schema.leafNames;
    const runLeaves = names.filter((_, i) => view.leaves[i]!.runs);
    expect(runLeaves).toEqual(['service_name', 'resource_attr_str.key', 'resource_attr_str.value']);
    expect([...view.leaves[names.indexOf('service_name')]!.runs!]).toEqual([20, 1, 39]);
    expect(columnBatchValues(a)).toEqual(columnBatchValues(b));

    // A leaf with plain rows after its runs is written plain: payloads hold one kind per leaf.
    withRuns.clear();
    withRuns.addRows(runs[0]!, shared);
    for (const r of runs[1]!) withRuns.addRow(r);
    const mixed = withRuns.finish();
    expect(readColumnBatch(mixed).leaves.some((l) => l.runs)).toBe(false);
    expect(columnBatchValues(mixed)).toEqual(columnBatchValues(b).slice(0, 21));
    // And a run after plain rows after runs: copied where the expanded runs moved it.
    withRuns.clear();
    withRuns.addRows(runs[0]!, shared);
    for (const r of runs[1]!) withRuns.addRow(r);
    withRuns.addRows(runs[2]!, shared);
    expect(columnBatchValues(withRuns.finish())).toEqual(columnBatchValues(b));

    // Runs that do not add up to the batch's rows, or a run of no rows: refused.
    // The run table (a count, then a row count per run) sits just before the leaf's levels.
    const at = view.leaves[names.indexOf('service_name')]!.defs.byteOffset - a.byteOffset - 16;
    const short = a.slice();
    new DataView(short.buffer).setUint32(at + 4, 19, true);
    expect(() => readColumnBatch(short)).toThrow(/leaf service_name: runs of 59 rows, the batch has 60/);
    const empty = a.slice();
    new DataView(empty.buffer).setUint32(at + 8, 0, true);
    expect(() => readColumnBatch(empty)).toThrow(/leaf service_name: a run of no rows/);

    // A payload of plain leaves as written before run leaves ("FCB1", in WALs of older acceptors)
    // reads as it did; in one, a level count with the run bit is no run leaf but a count too large.
    const old = b.slice();
    old[3] = 0x31;
    expect(columnBatchValues(old)).toEqual(columnBatchValues(b));
    const oldWithRuns = a.slice();
    oldWithRuns[3] = 0x31;
    expect(() => readColumnBatch(oldWithRuns)).toThrow(/runs past the payload/);
  });

  it('refuses malformed payloads', () => {
    const b = ColumnBatchBuilder.forTable(tracesTable);
    b.addRow(span(1));
    const payload = b.finish();
    expect(() => readColumnBatch(payload.subarray(0, payload.length - 1))).toThrow(/runs past/);
    expect(() => readColumnBatch(Uint8Array.of(0x7b, 0x7d))).toThrow(/not a column batch/);
    const longer = new Uint8Array(payload.length + 1);
    longer.set(payload);
    expect(() => readColumnBatch(longer)).toThrow(/after its last leaf/);
    // A level above its maximum, a row count that disagrees, values that do not frame: each refused.
    const view = readColumnBatch(payload);
    const badLevel = payload.slice();
    badLevel[view.leaves[0]!.defs.byteOffset - payload.byteOffset] = 7;
    expect(() => readColumnBatch(badLevel)).toThrow(/leaf trace_id: definition level 7 above 1/);
    const badRows = payload.slice();
    new DataView(badRows.buffer).setUint32(4, 2, true);
    expect(() => readColumnBatch(badRows)).toThrow(/1 rows, the batch has 2/);
    const badString = payload.slice();
    new DataView(badString.buffer).setUint32(view.leaves[0]!.values.byteOffset - payload.byteOffset, 9999, true);
    expect(() => readColumnBatch(badString)).toThrow(/values (end inside|do not frame)/);
  });

  it('ParquetWriter takes NDJSON and column batches of different schemas in one write', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => span(i));
    // A batch from an acceptor that does not send links_json (an older or newer schema).
    const partial = new ColumnBatchBuilder(batchSchema(tracesTable).filter(([name]) => name !== 'links_json'));
    for (const r of rows.slice(10, 20)) partial.addRow(r);
    const withLinks = rows.map((r, i) => (i >= 10 && i < 20 ? r : { ...r, links_json: '[{"traceId":"x"}]' }));
    const full = ColumnBatchBuilder.forTable(tracesTable);
    for (const r of withLinks.slice(0, 10)) full.addRow(r);
    const ndjson = new TextEncoder().encode(withLinks.slice(20).map((r) => JSON.stringify(r)).join('\n') + '\n');

    const writer = new ParquetWriter(join(dir, 'writer'));
    try {
      const out = await writer.write(tracesTable, [full.finish(), partial.finish(), ndjson]);
      expect(out.rowCount).toBe(30);
      const got = await readBack(tracesTable, `read_parquet('${out.path}') ORDER BY span_id`);
      const ndjsonAll = join(dir, 'mixed.ndjson');
      await writeFile(ndjsonAll, withLinks.map((r, i) => JSON.stringify(i >= 10 && i < 20 ? { ...r, links_json: null } : r)).join('\n') + '\n');
      const want = await readBack(tracesTable, `read_json('${ndjsonAll}', format = 'newline_delimited', columns = ${readJsonColumns(tracesTable)}) ORDER BY span_id`);
      expect(got).toEqual(want);
      expect(got.filter((r) => r.includes('"links_json":null')).length).toBe(10);
    } finally {
      writer.close();
    }
  });
});
