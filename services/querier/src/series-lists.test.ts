import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Table } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PER_FILE_COLUMN, PER_FILE_HOUR_NS, planMetricSeriesPoints, seriesIdFromHalves } from '@floe/query';
import { NS_PER_HOUR, metricsTable } from '@floe/schema';
import { createTrustedRunner, type TrustedRunner } from './sandbox/index.ts';
import { serializeLong } from '@floe/iceberg';
import { timeRangeOf, type TimeRange } from './file-resolver.ts';
import { fileInside, fileListsKeyer, mergeLists, splitByFile, type FileLists } from './series-lists.ts';

const H = 3_600_000_000_000n;
const HOUR0 = 480_000;
const at = (hour: number, minute: number) => BigInt(hour) * H + BigInt(minute) * 60_000_000_000n + 123_456n;

/** Rows of a test file: [series id, metric name, hour, minute, value (null: none), flags, nanoseconds more]. */
type Row = [string, string, number, number, number | null, number, number?];

let dir: string;
let runner: TrustedRunner;
const files: Array<{ path: string; hour: number; time: TimeRange | undefined }> = [];

/** Writes a file of one hour; `bounds`: the time bounds its manifest entry would carry (µs of its first and last row). */
async function writeFile(name: string, hour: number, rows: Row[], bounds = false): Promise<void> {
  const path = join(dir, name);
  const values = rows
    .map(([id, metric, h, m, v, flags, ns]) => `('${id}', '${metric}', 'gauge', ${at(h, m) + BigInt(ns ?? 0)}, ${v === null ? 'NULL::DOUBLE' : `'${v}'::DOUBLE`}, ${flags}, '')`)
    .join(', ');
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  await con.run(
    `COPY (SELECT * FROM (VALUES ${values}) AS t(series_id, metric_name, metric_type, time_unix_nano, value, flags, scope_name) ORDER BY metric_name, series_id, time_unix_nano) TO '${path}' (FORMAT parquet)`,
  );
  con.closeSync();
  instance.closeSync();
  const us = rows.map(([, , h, m]) => at(h, m) / 1000n);
  const min = us.reduce((a, b) => (b < a ? b : a));
  const max = us.reduce((a, b) => (b > a ? b : a));
  files.push({ path, hour, time: bounds ? timeRangeOf(hour, serializeLong(min), serializeLong(max)) : timeRangeOf(hour, undefined, undefined) });
}

const A = 'aaaaaaaa00000001';
const B = 'aaaaaaaa00000002';
const TEXT = 'custom-series-id';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floe-series-lists-'));
  runner = createTrustedRunner({ threads: 2 });
  const hourRows = (hour: number, extra: Row[] = []): Row[] => [
    [A, 'load', hour, 5, hour - HOUR0 + 1, 0],
    [A, 'load', hour, 40, hour - HOUR0 + 1.5, 0],
    [B, 'load', hour, 10, null, 0],
    [TEXT, 'load', hour, 20, 7, 0],
    [A, 'other', hour, 30, 99, 0],
    ...extra,
  ];
  // Two files in the first hour (before compaction merges them), then one an hour, and a file of
  // another metric only.
  // The window below starts at 30 minutes into the first hour: the point at that nanosecond is
  // outside, the next one (the same millisecond) inside; likewise at its end, 50 minutes into the last.
  await writeFile('h0a.parquet', HOUR0, hourRows(HOUR0, [[A, 'load', HOUR0, 30, 0.5, 0, 0], [A, 'load', HOUR0, 30, 0.75, 0, 1]]));
  await writeFile('h0b.parquet', HOUR0, [[A, 'load', HOUR0, 50, 3, 0]]);
  await writeFile('h1.parquet', HOUR0 + 1, hourRows(HOUR0 + 1, [[B, 'load', HOUR0 + 1, 45, Number.NaN, 1]]));
  await writeFile('h1-other.parquet', HOUR0 + 1, [[A, 'other', HOUR0 + 1, 1, 1, 0]]);
  await writeFile('h2.parquet', HOUR0 + 2, hourRows(HOUR0 + 2));
  // The last hour's bounds say its rows end 40 minutes in, before the window does.
  await writeFile('h3.parquet', HOUR0 + 3, hourRows(HOUR0 + 3), true);
  await writeFile('h3-late.parquet', HOUR0 + 3, [[A, 'load', HOUR0 + 3, 50, 4, 0, 0], [A, 'load', HOUR0 + 3, 50, 5, 0, 1], [B, 'load', HOUR0 + 3, 55, 1, 1]]);
});

afterAll(async () => {
  runner?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A point-lists answer as plain data: per series id, its points sorted by time, and its staleness times. */
function normalized(table: Table): Record<string, { points: Array<[number, number]>; stale: number[] | null }> {
  const out: Record<string, { points: Array<[number, number]>; stale: number[] | null }> = {};
  for (const row of table) {
    const r = row.toJSON() as { series_hi: number; series_lo: number; series_text: string | null; t: { toArray(): Float64Array }; v: { toArray(): Float64Array }; stale_t: { toArray(): Float64Array } | null };
    const id = seriesIdFromHalves(r.series_hi, r.series_lo, r.series_text);
    const t = [...r.t.toArray()];
    const v = [...r.v.toArray()];
    expect(out[id], `series ${id} answered twice`).toBeUndefined();
    out[id] = { points: t.map((x, i) => [x, v[i]!] as [number, number]).sort((a, b) => a[0] - b[0]), stale: r.stale_t ? [...r.stale_t.toArray()].sort() : null };
  }
  return out;
}

describe('per-file point lists', () => {
  /** The windowed read and its per-file form of (start, end]. */
  const plan = (startNs: bigint, endNs: bigint) =>
    planMetricSeriesPoints(
      { kind: 'metric_series_points', window: { startNs, endNs }, selects: [{ metricNames: ['load'], matchers: [] }], metricTypes: ['gauge', 'sum'], otelLabels: false, labels: false },
      metricsTable,
    );
  const run = (sql: string, params: unknown[], paths: string[], fileNames = false) =>
    runner.run({ views: [{ name: 'metrics', files: paths, emptySchemaSql: '', fileNames }], sql, params, timeoutMs: 30_000, maxRows: 1_000_000 });
  const hourStart = (hour: number) => BigInt(hour) * H;

  it('answer windows as the windowed query does, from one read of each file, cut to the nanosecond', async () => {
    // Every file read once by the per-file form (it has no window: the first plan's serves all).
    const perFile = plan(at(HOUR0, 30), at(HOUR0 + 3, 50)).hints.per_file!;
    const answer = await run(perFile.sql, perFile.params, files.map((f) => f.path), true);
    const kept = splitByFile(answer.table, PER_FILE_COLUMN, files.map((f) => ({ path: f.path, hourStartNs: hourStart(f.hour) })));
    // A file of another metric only still has its (empty) entry: it is not read again.
    expect(kept.get(join(dir, 'h1-other.parquet'))!.hi.length).toBe(0);
    expect(kept.get(join(dir, "h1.parquet"))!.hi.length).toBe(3);
    const fromKept = (startNs: bigint, endNs: bigint) => {
      const p = plan(startNs, endNs);
      expect(p.hints.per_file).toEqual(perFile);
      const first = BigInt(p.hints.start_ns);
      const last = BigInt(p.hints.end_ns);
      return mergeLists(files.map((f) => ({ lists: kept.get(f.path)!, inside: fileInside(f.time, first, last) })), first, last);
    };
    const windowed = async (startNs: bigint, endNs: bigint) => {
      const p = plan(startNs, endNs);
      return (await run(p.sql, p.params, files.map((f) => f.path))).table;
    };

    // From the middle of the first hour to 50 minutes into the last.
    const [start, end] = [at(HOUR0, 30), at(HOUR0 + 3, 50)];
    // Wholly inside: the middle hours by their partition, the last hour's first file by its bounds.
    expect(files.filter((f) => fileInside(f.time, start + 1n, end)).map((f) => f.path.slice(dir.length + 1))).toEqual(['h1.parquet', 'h1-other.parquet', 'h2.parquet', 'h3.parquet']);
    const expected = normalized(await windowed(start, end));
    expect(Object.keys(expected).sort()).toEqual([A, B, TEXT].sort());
    expect(normalized(fromKept(start, end))).toEqual(expected);
    // The staleness marker of hour 1 and the NaN of a missing value come through; other series' stale_t stays NULL.
    expect(expected[B]!.stale).toEqual([Number(at(HOUR0 + 1, 45) / 1_000_000n)]);
    expect(expected[A]!.stale).toBeNull();
    expect(expected[B]!.points.filter(([, v]) => Number.isNaN(v))).toHaveLength(4);
    // The first hour's points after 30 minutes (of the two in its 30th minute's millisecond, the
    // later), the last hour's up to 50 minutes (of the two in that millisecond, the earlier).
    const ms = (ns: bigint) => Number(ns / 1_000_000n);
    expect(expected[A]!.points).toEqual([
      [ms(start), 0.75],
      [ms(at(HOUR0, 40)), 1.5],
      [ms(at(HOUR0, 50)), 3],
      [ms(at(HOUR0 + 1, 5)), 2],
      [ms(at(HOUR0 + 1, 40)), 2.5],
      [ms(at(HOUR0 + 2, 5)), 3],
      [ms(at(HOUR0 + 2, 40)), 3.5],
      [ms(at(HOUR0 + 3, 5)), 4],
      [ms(at(HOUR0 + 3, 40)), 4.5],
      [ms(end), 4],
    ]);

    // Other windows from the same kept lists: five minutes of one hour (an instant query's), one
    // across an hour's end, and one that holds none of a file's points.
    for (const [a, b] of [
      [at(HOUR0 + 2, 3), at(HOUR0 + 2, 8)],
      [at(HOUR0 + 1, 30), at(HOUR0 + 2, 30)],
      [at(HOUR0 + 1, 41), at(HOUR0 + 1, 44)],
      [at(HOUR0, 0), at(HOUR0 + 4, 0)],
    ] as const) {
      expect(normalized(fromKept(a, b)), `window (${a}, ${b}]`).toEqual(normalized(await windowed(a, b)));
    }
    expect(fromKept(at(HOUR0 + 1, 41), at(HOUR0 + 1, 44)).numRows).toBe(0);
  });

  it('merge an answer of no rows, and of series the parts share', () => {
    const all = [0n, 2n ** 62n] as const;
    expect(mergeLists([], ...all).numRows).toBe(0);
    const lists = (hi: number[], lo: number[], tOff: number[], t: number[], v: number[], sOff: number[], staleT: number[]): FileLists => ({
      hi: Uint32Array.from(hi),
      lo: Uint32Array.from(lo),
      text: undefined,
      tOff: Int32Array.from(tOff),
      t: Float64Array.from(t),
      tNs: new Uint32Array(t.length),
      v: Float64Array.from(v),
      sOff: Int32Array.from(sOff),
      staleT: Float64Array.from(staleT),
      staleNs: new Uint32Array(staleT.length),
    });
    const one = lists([1], [2], [0, 2], [10, 20], [1, 2], [0, 0], []);
    const two = lists([1, 3], [2, 4], [0, 1, 2], [30, 5], [3, 9], [0, 1, 1], [30]);
    expect(normalized(mergeLists([one, two].map((l) => ({ lists: l, inside: true })), ...all))).toEqual({
      [seriesIdFromHalves(1, 2, null)]: { points: [[10, 1], [20, 2], [30, 3]], stale: [30] },
      [seriesIdFromHalves(3, 4, null)]: { points: [[5, 9]], stale: null },
    });
    // Cut to [15 ms, 25 ms]: only series 1-2's point at 20 is left, series 3-4 has none.
    expect(normalized(mergeLists([one, two].map((l) => ({ lists: l, inside: false })), 15_000_000n, 25_000_000n))).toEqual({
      [seriesIdFromHalves(1, 2, null)]: { points: [[20, 2]], stale: null },
    });
  });

  it('merge series that share a half, or have text ids, in whatever row order each part lists them', () => {
    const lists = (rows: Array<[number, number, string | null, number]>): FileLists => ({
      hi: Uint32Array.from(rows.map((r) => r[0])),
      lo: Uint32Array.from(rows.map((r) => r[1])),
      text: rows.some((r) => r[2] !== null) ? rows.map((r) => r[2]) : undefined,
      tOff: Int32Array.from({ length: rows.length + 1 }, (_, i) => i),
      t: Float64Array.from(rows.map((r) => r[3])),
      tNs: new Uint32Array(rows.length),
      v: Float64Array.from(rows.map((r) => r[3] / 10)),
      sOff: new Int32Array(rows.length + 1),
      staleT: new Float64Array(0),
      staleNs: new Uint32Array(0),
    });
    const big = 0xfffffff0;
    // The halves of the text ids' rows are not theirs (DuckDB answers 0): only the text tells them apart.
    const one = lists([[big, 1, null, 10], [big, 2, null, 11], [0, 0, 'x', 12], [1, big, null, 13]]);
    const two = lists([[0, 0, 'y', 20], [1, big, null, 21], [big, 2, null, 22], [0, 0, 'x', 23], [big, 1, null, 24]]);
    expect(normalized(mergeLists([one, two].map((l) => ({ lists: l, inside: true })), 0n, 2n ** 62n))).toEqual({
      [seriesIdFromHalves(big, 1, null)]: { points: [[10, 1], [24, 2.4]], stale: null },
      [seriesIdFromHalves(big, 2, null)]: { points: [[11, 1.1], [22, 2.2]], stale: null },
      [seriesIdFromHalves(1, big, null)]: { points: [[13, 1.3], [21, 2.1]], stale: null },
      x: { points: [[12, 1.2], [23, 2.3]], stale: null },
      y: { points: [[20, 2]], stale: null },
    });
    // A compacted file's long runs of one series, after a flush file's single point.
    const times = Array.from({ length: 40 }, (_, k) => 100 + k);
    const long: FileLists = {
      ...lists([[big, 1, null, 0]]),
      tOff: Int32Array.from([0, 40]),
      t: Float64Array.from(times),
      tNs: new Uint32Array(40),
      v: Float64Array.from(times, (x) => -x),
      sOff: Int32Array.from([0, 30]),
      staleT: Float64Array.from(times.slice(0, 30)),
      staleNs: new Uint32Array(30),
    };
    expect(normalized(mergeLists([one, long].map((l) => ({ lists: l, inside: true })), 0n, 2n ** 62n))[seriesIdFromHalves(big, 1, null)]).toEqual({
      points: [[10, 1], ...times.map((x) => [x, -x])],
      stale: times.slice(0, 30).sort(),
    });
  });

  it('count a file as inside a window only when every time its rows may have is', () => {
    const first = BigInt(HOUR0) * H;
    const hour = timeRangeOf(HOUR0, undefined, undefined);
    expect(hour).toEqual({ first, last: first + H - 1n });
    expect(fileInside(hour, first, first + H - 1n)).toBe(true);
    expect(fileInside(hour, first + 1n, first + H)).toBe(false);
    expect(fileInside(hour, first, first + H - 2n)).toBe(false);
    expect(fileInside(undefined, 0n, 2n ** 62n)).toBe(false);
    expect(timeRangeOf('x', undefined, undefined)).toBeUndefined();
    // Bounds (µs) narrow the hour: a row's nanoseconds lie within 999 of them.
    const us = first / 1000n;
    expect(timeRangeOf(HOUR0, serializeLong(us + 10n), serializeLong(us + 20n))).toEqual({ first: first + 10_000n, last: first + 20_999n });
    // Bounds outside the hour, reversed, or not 8 bytes are not believed.
    expect(timeRangeOf(HOUR0, serializeLong(us - 1n), serializeLong(us + 20n))).toEqual(hour);
    expect(timeRangeOf(HOUR0, serializeLong(us + 20n), serializeLong(us + 10n))).toEqual(hour);
    expect(timeRangeOf(HOUR0, Uint8Array.of(1, 2), serializeLong(us + 10n))).toEqual(hour);
  });

  it("read times as offsets into the tables' hour partitions", () => {
    // The planner's per-file form and the querier's reading of it agree on what an hour is.
    expect(PER_FILE_HOUR_NS).toBe(NS_PER_HOUR);
    expect(H).toBe(NS_PER_HOUR);
  });

  it('key kept lists by caller, query and values as well as the file', () => {
    const a = fileListsKeyer('acme\u0000default', 'SELECT 1', ['x'])('/f.parquet');
    expect(fileListsKeyer('globex\u0000default', 'SELECT 1', ['x'])('/f.parquet')).not.toBe(a);
    expect(fileListsKeyer('acme\u0000default', 'SELECT 1', ['y'])('/f.parquet')).not.toBe(a);
    expect(fileListsKeyer('acme\u0000default', 'SELECT 2', ['x'])('/f.parquet')).not.toBe(a);
    expect(fileListsKeyer('acme\u0000default', 'SELECT 1', ['x'])('/g.parquet')).not.toBe(a);
    expect(fileListsKeyer('acme\u0000default', 'SELECT 1', ['x'])('/f.parquet')).toBe(a);
  });
});
