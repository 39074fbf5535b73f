import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { sampleWindows, type StepGrid } from '../ir/log-metrics.ts';
import { evaluateMetricQuery, type MetricResult } from '../logql/evaluate.ts';
import { lowerMetricQuery } from '../logql/lower-metric.ts';
import { parseLogQL } from '../logql/parse.ts';
import { planLogSample } from './log-metrics.ts';
import { LOGS, openLogsDb, type LogRow, type LogsDb } from './test-db.ts';

/**
 * LogQL metric queries end to end inside the package: parse → lower → one printed SQL per leaf run
 * on DuckDB → evaluate, against values worked out by hand from the rows below (times in seconds).
 *
 * The default grid evaluates at 60s and 120s with a 60s step, so with [1m] the windows are
 * (0s, 60s] and (60s, 120s]: left-open, right-closed.
 */
const S = 1_000_000_000;
const body = (n: number) => 'x'.repeat(n);
const ROWS: LogRow[] = [
  { t: 10 * S, service: 'checkout', severity: 'INFO', body: body(10), log: { int: { latency: 100 }, str: { user: 'ann' } } },
  { t: 20 * S, service: 'checkout', severity: 'INFO', body: body(20), log: { int: { latency: 200 }, str: { user: 'bob' } } },
  { t: 30 * S, service: 'checkout', severity: 'ERROR', body: body(30), log: { int: { latency: 1000 }, str: { user: 'ann' } } },
  { t: 45 * S, service: 'web', severity: '', body: body(5) },
  { t: 60 * S, service: 'checkout', severity: 'INFO', body: body(6), log: { int: { latency: 60 }, str: { user: 'ann' } } },
  { t: 70 * S, service: 'checkout', severity: 'INFO', body: body(7), log: { int: { latency: 300 }, str: { user: 'ann' } } },
  { t: 90 * S, service: 'checkout', severity: 'ERROR', body: body(9), log: { int: { latency: 50 }, str: { user: 'bob' } } },
  { t: 65 * S, service: 'billing', severity: 'WARN', body: body(4), log: { str: { latency: 'abc' } } },
  { t: 15 * S, service: 'billing', severity: 'WARN', body: body(15), log: { str: { latency: '40' } } },
  { t: 120 * S, service: 'web', severity: '', body: body(12) },
  { t: 121 * S, service: 'checkout', severity: 'INFO', body: body(1) },
];

let db: LogsDb;
beforeAll(async () => {
  db = await openLogsDb(ROWS);
  // The web line at 45s carries only a severity number (17: ERROR), as OTLP senders may.
  await db.run({ sql: 'UPDATE logs SET severity_number = 17 WHERE time_unix_nano = 45000000000', params: [] });
});
afterAll(() => db.close());

const GRID: StepGrid = { startNs: 60n * BigInt(S), endNs: 120n * BigInt(S), stepNs: 60n * BigInt(S) };

/**
 * Runs the query and evaluates it twice: with the rows as DuckDB returned them and with each
 * leaf's rows reversed. The querier's row order is unspecified (a GROUP BY without ORDER BY), so
 * both must give the same result.
 */
async function run(q: string, grid: StepGrid = GRID): Promise<MetricResult> {
  const query = lowerMetricQuery(parseLogQL(q), q);
  const leaves = await Promise.all(
    query.leaves.map(async (leaf) => {
      const windows = sampleWindows(grid, leaf.rangeNs, leaf.offsetNs);
      return { windows, rows: await db.run(planLogSample(leaf.sample, windows, LOGS)) };
    }),
  );
  const steps = Number((grid.endNs - grid.startNs) / grid.stepNs) + 1;
  const result = evaluateMetricQuery(query, steps, leaves);
  const reversed = evaluateMetricQuery(query, steps, leaves.map((l) => ({ ...l, rows: [...l.rows].reverse() })));
  expect(reversed).toEqual(result);
  return result;
}

/** A matrix as [labels, [[seconds, value], …]] with the default grid's times. */
async function matrix(q: string, grid: StepGrid = GRID): Promise<Array<[Record<string, string>, Array<[number, number]>]>> {
  const r = await run(q, grid);
  if (r.kind !== 'matrix') throw new Error(`expected a matrix, got ${JSON.stringify(r)}`);
  const t = (k: number) => Number(grid.startNs + BigInt(k) * grid.stepNs) / S;
  return r.series.map((s) => [s.labels, [...s.points].map(([k, v]) => [t(k), v] as [number, number])]);
}

const checkout = { service_name: 'checkout' };

describe('range functions over step-aligned windows', () => {
  it('count_over_time: one series per (service_name, level), ordered by labels', async () => {
    expect(await matrix('count_over_time({service_name=~".+"}[1m])')).toEqual([
      [{ service_name: 'checkout', level: 'ERROR' }, [[60, 1], [120, 1]]],
      [{ service_name: 'checkout', level: 'INFO' }, [[60, 3], [120, 1]]],
      [{ service_name: 'billing', level: 'WARN' }, [[60, 1], [120, 1]]],
      [{ service_name: 'web' }, [[60, 1], [120, 1]]],
    ]);
  });

  it('rate, bytes_over_time and bytes_rate', async () => {
    expect(await matrix('sum(rate({service_name="checkout"}[1m]))')).toEqual([[{}, [[60, 4 / 60], [120, 2 / 60]]]]);
    expect(await matrix('sum(bytes_over_time({service_name=~".+"}[1m]))')).toEqual([[{}, [[60, 86], [120, 32]]]]);
    expect(await matrix('sum by (service_name) (bytes_rate({service_name="billing"}[1m]))')).toEqual([[{ service_name: 'billing' }, [[60, 15 / 60], [120, 4 / 60]]]]);
  });

  it('the unwrap family, skipping values that are not numbers', async () => {
    const u = (fn: string) => `${fn}({service_name=~".+"} | unwrap latency [1m]) by (service_name)`;
    expect(await matrix(u('sum_over_time'))).toEqual([
      [{ service_name: 'billing' }, [[60, 40]]],
      [checkout, [[60, 1360], [120, 350]]],
    ]);
    expect(await matrix(u('avg_over_time'))).toEqual([
      [{ service_name: 'billing' }, [[60, 40]]],
      [checkout, [[60, 340], [120, 175]]],
    ]);
    expect((await matrix(u('min_over_time')))[1]).toEqual([checkout, [[60, 60], [120, 50]]]);
    expect((await matrix(u('max_over_time')))[1]).toEqual([checkout, [[60, 1000], [120, 300]]]);
    expect((await matrix(u('first_over_time')))[1]).toEqual([checkout, [[60, 100], [120, 300]]]);
    expect((await matrix(u('last_over_time')))[1]).toEqual([checkout, [[60, 60], [120, 50]]]);
    const sv = (await matrix(u('stdvar_over_time')))[1]!;
    expect(sv[1][0]![1]).toBeCloseTo(147800, 6);
    expect(sv[1][1]).toEqual([120, 15625]);
    const sd = (await matrix(u('stddev_over_time')))[1]!;
    expect(sd[1][0]![1]).toBeCloseTo(Math.sqrt(147800), 9);
    expect(sd[1][1]![1]).toBe(125);
    expect((await matrix('quantile_over_time(0.5, {service_name="checkout"} | unwrap latency [1m]) by (service_name)'))).toEqual([[checkout, [[60, 150], [120, 175]]]]);
    expect((await matrix('quantile_over_time(0.9, {service_name="checkout"} | unwrap latency [1m]) by (service_name)'))[0]![1][0]![1]).toBeCloseTo(760, 9);
    // rate of an unwrapped value: the sum per second.
    expect(await matrix('sum(rate({service_name="checkout"} | unwrap latency [1m]))')).toEqual([[{}, [[60, 1360 / 60], [120, 350 / 60]]]]);
    // Without a grouping, the stream identity.
    expect(await matrix('max_over_time({service_name="checkout"} | unwrap latency | __error__="" [1m])')).toEqual([
      [{ service_name: 'checkout', level: 'ERROR' }, [[60, 1000], [120, 50]]],
      [{ service_name: 'checkout', level: 'INFO' }, [[60, 200], [120, 300]]],
    ]);
  });

  it('step shorter than the range: sliding windows, exact', async () => {
    const grid = { ...GRID, stepNs: 30n * BigInt(S) };
    // (0,60]: 10,20,30,60; (30,90]: 60,70,90; (60,120]: 70,90.
    expect(await matrix('sum(count_over_time({service_name="checkout"}[1m]))', grid)).toEqual([[{}, [[60, 4], [90, 3], [120, 2]]]]);
    expect(sampleWindows(grid, 60n * BigInt(S), 0n)).toMatchObject({ widthNs: 30n * BigInt(S), perStep: 1, perWindow: 2 });
  });

  it('step shorter than the range: every unwrap function merges the sub-buckets of each window', async () => {
    // 20s sub-buckets (0,20] (20,40] … ; each window is two of them. checkout's latencies:
    // (0,20]: 100@10s, 200@20s; (20,40]: 1000@30s; (40,60]: 60@60s; (60,80]: 300@70s; (80,100]: 50@90s.
    // Windows: (0,40] {100,200,1000}; (20,60] {1000,60}; (40,80] {60,300}; (60,100] {300,50}; (80,120] {50}.
    const grid = { startNs: 40n * BigInt(S), endNs: 120n * BigInt(S), stepNs: 20n * BigInt(S) };
    expect(sampleWindows(grid, 40n * BigInt(S), 0n)).toMatchObject({ widthNs: 20n * BigInt(S), perStep: 1, perWindow: 2 });
    const u = async (fn: string, param = '') => {
      const series = await matrix(`${fn}(${param}{service_name="checkout"} | unwrap latency [40s]) by (service_name)`, grid);
      expect(series.map(([labels]) => labels)).toEqual([checkout]);
      return series[0]![1];
    };
    const at = (values: number[]) => values.map((v, k) => [40 + 20 * k, v]);
    expect(await u('sum_over_time')).toEqual(at([1300, 1060, 360, 350, 50]));
    expect(await u('avg_over_time')).toEqual(at([1300 / 3, 530, 180, 175, 50]));
    expect(await u('min_over_time')).toEqual(at([100, 60, 60, 50, 50]));
    expect(await u('max_over_time')).toEqual(at([1000, 1000, 300, 300, 50]));
    expect(await u('first_over_time')).toEqual(at([100, 1000, 60, 300, 50]));
    expect(await u('last_over_time')).toEqual(at([1000, 60, 300, 50, 50]));
    expect(await u('quantile_over_time', '0.5, ')).toEqual(at([200, 530, 180, 175, 50]));
    // Population variance: (0,40] mean 1300/3, squared deviations (1000² + 700² + 1700²)/9 over 3 values;
    // (20,60] ±470; (40,80] ±120; (60,100] ±125; one value: 0.
    const variances = [4_380_000 / 27, 470 * 470, 120 * 120, 125 * 125, 0];
    const sv = await u('stdvar_over_time');
    const sd = await u('stddev_over_time');
    variances.forEach((v, k) => {
      expect(sv[k]![0]).toBe(40 + 20 * k);
      expect(sv[k]![1]).toBeCloseTo(v, 6);
      expect(sd[k]![1]).toBeCloseTo(Math.sqrt(v), 9);
    });
    // The additive ones over the same windows: lines (10,20 | 30 | 60 | 70 | 90 | none) and their bytes.
    expect(await matrix('sum(count_over_time({service_name="checkout"}[40s]))', grid)).toEqual([[{}, at([3, 2, 2, 2, 1])]]);
    expect(await matrix('sum(bytes_over_time({service_name="checkout"}[40s]))', grid)).toEqual([[{}, at([60, 36, 13, 16, 9])]]);
    expect(await matrix('sum(rate({service_name="checkout"} | unwrap latency [40s]))', grid)).toEqual([[{}, at([1300 / 40, 1060 / 40, 360 / 40, 350 / 40, 50 / 40])]]);
  });

  it('several rows of one series and sub-bucket merge like sub-buckets, whatever their order', () => {
    // What the querier returns when a label is NULL in some rows and '' in others (both absent).
    const windows = sampleWindows(GRID, 60n * BigInt(S), 0n);
    const rows = [
      { l0: null, j: 0, fv: 1, ft: 5n, lv: 1, lt: 5n, mn: 1, mx: 1 },
      { l0: '', j: 0, fv: 2, ft: 3n, lv: 2, lt: 3n, mn: 2, mx: 2 },
      { l0: '', j: 1, fv: 4, ft: 70n, lv: 4, lt: 80n, mn: 4, mx: 4 },
    ];
    for (const order of [rows, [...rows].reverse()]) {
      const at = (name: string) => {
        const q = `${name}({service_name="a"} | unwrap x [1m]) by (pod)`;
        const r = evaluateMetricQuery(lowerMetricQuery(parseLogQL(q), q), 2, [{ windows, rows: order }]);
        return r.kind === 'matrix' ? r.series.map((s) => [s.labels, [...s.points]]) : r;
      };
      expect(at('first_over_time')).toEqual([[{}, [[0, 2], [1, 4]]]]);
      expect(at('last_over_time')).toEqual([[{}, [[0, 1], [1, 4]]]]);
      expect(at('min_over_time')).toEqual([[{}, [[0, 1], [1, 4]]]]);
      expect(at('max_over_time')).toEqual([[{}, [[0, 2], [1, 4]]]]);
    }
  });

  it('quantile_over_time refuses (422) a query that would gather too many values, before gathering them', async () => {
    const grid = { startNs: 40n * BigInt(S), endNs: 120n * BigInt(S), stepNs: 20n * BigInt(S) };
    const q = 'quantile_over_time(0.5, {service_name="checkout"} | unwrap latency [40s]) by (service_name)';
    const query = lowerMetricQuery(parseLogQL(q), q);
    const windows = sampleWindows(grid, 40n * BigInt(S), 0n);
    const rows = await db.run(planLogSample(query.leaves[0]!.sample, windows, LOGS));
    // The windows hold 3 + 2 + 2 + 2 + 1 = 10 values.
    expect(evaluateMetricQuery(query, 5, [{ windows, rows }], 10).kind).toBe('matrix');
    expect(() => evaluateMetricQuery(query, 5, [{ windows, rows }], 9)).toThrow(expect.objectContaining({ kind: 'execution', message: expect.stringMatching(/more than 9 values/) }));
  });

  it('step longer than the range: rows between windows count nowhere', async () => {
    // (30,60]: the line at 60 only; (90,120]: none of checkout's.
    expect(await matrix('sum(count_over_time({service_name="checkout"}[30s]))')).toEqual([[{}, [[60, 1]]]]);
    // A range that is not a divisor of the step: (15,60] and (75,120] with 15s sub-buckets.
    expect(await matrix('sum(count_over_time({service_name="checkout"}[45s]))')).toEqual([[{}, [[60, 3], [120, 1]]]]);
  });

  it('offset shifts every window back', async () => {
    expect(await matrix('sum(count_over_time({service_name="checkout"}[1m] offset 1m))')).toEqual([[{}, [[120, 4]]]]);
  });

  it('an instant evaluation is the one window ending at the time', async () => {
    const at = { startNs: 60n * BigInt(S), endNs: 60n * BigInt(S), stepNs: BigInt(S) };
    expect(await matrix('sum(count_over_time({service_name="checkout"}[1m]))', at)).toEqual([[{}, [[60, 4]]]]);
    expect(await matrix('sum(count_over_time({service_name="checkout"}[30s]))', at)).toEqual([[{}, [[60, 1]]]]);
  });

  it('too many sub-buckets fall back to whole steps, the range rounded up to one', () => {
    const grid = { startNs: 0n, endNs: 10_999n * 10n * BigInt(S), stepNs: 10n * BigInt(S) };
    expect(sampleWindows(grid, 7n * BigInt(S), 0n)).toMatchObject({ widthNs: 10n * BigInt(S), perWindow: 1, perStep: 1, windowSeconds: 10 });
    expect(() => sampleWindows({ ...grid, endNs: 11_000n * 10n * BigInt(S) }, BigInt(S), 0n)).toThrow(/maximum resolution of 11,000 points/);
  });
});

describe('vector aggregations', () => {
  it('sum by, sum, and a label no row carries collapses everything into one series', async () => {
    expect(await matrix('sum by (level) (count_over_time({service_name=~".+"}[1m]))')).toEqual([
      [{}, [[60, 1], [120, 1]]],
      [{ level: 'ERROR' }, [[60, 1], [120, 1]]],
      [{ level: 'INFO' }, [[60, 3], [120, 1]]],
      [{ level: 'WARN' }, [[60, 1], [120, 1]]],
    ]);
    expect(await matrix('sum by (nope) (count_over_time({service_name="checkout"}[1m]))')).toEqual([[{}, [[60, 4], [120, 2]]]]);
    // A label named like an Object method is a label like any other, absent here.
    expect(await matrix('sum by (valueOf) (count_over_time({service_name="checkout"}[1m]))')).toEqual([[{}, [[60, 4], [120, 2]]]]);
    expect(await matrix('sum by (user) (count_over_time({service_name="checkout"}[1m]))')).toEqual([
      [{ user: 'ann' }, [[60, 3], [120, 1]]],
      [{ user: 'bob' }, [[60, 1], [120, 1]]],
    ]);
    expect(await matrix('sum without () (count_over_time({service_name="billing"}[1m]))')).toEqual([[{ service_name: 'billing', level: 'WARN' }, [[60, 1], [120, 1]]]]);
  });

  it('the log volume query: level as sent, detected_level derived (severity number first, then text, else unknown)', async () => {
    expect(await matrix('sum by (level, detected_level) (count_over_time({service_name=~".+"} | drop __error__ [1m]))')).toEqual([
      [{ detected_level: 'error' }, [[60, 1]]],
      [{ detected_level: 'error', level: 'ERROR' }, [[60, 1], [120, 1]]],
      [{ detected_level: 'info', level: 'INFO' }, [[60, 3], [120, 1]]],
      [{ detected_level: 'unknown' }, [[120, 1]]],
      [{ detected_level: 'warn', level: 'WARN' }, [[60, 1], [120, 1]]],
    ]);
  });

  it('detected_level alone: rows whose severity differs but derives the same level are one series', async () => {
    // (0s, 60s]: checkout ERROR at 30s and the web line with only severity number 17 at 45s; (60s, 120s]: ERROR at 90s.
    expect(await matrix('sum by (detected_level) (count_over_time({service_name=~".+"}[1m]))')).toContainEqual([{ detected_level: 'error' }, [[60, 2], [120, 1]]]);
    // Bytes and a non-additive function over the same derived label: 30 + 5 bytes, then 9.
    expect(await matrix('sum by (detected_level) (bytes_over_time({service_name=~".+"}[1m]))')).toContainEqual([{ detected_level: 'error' }, [[60, 35], [120, 9]]]);
    expect(await matrix('max by (detected_level) (count_over_time({service_name=~".+"}[1m]) by (detected_level))')).toContainEqual([{ detected_level: 'error' }, [[60, 2], [120, 1]]]);
  });

  it('a level reported by detected_level filters back to the rows it counted (the severity-number-only line included)', async () => {
    expect(await matrix('sum(count_over_time({service_name=~".+"} | detected_level="error" [1m]))')).toEqual([[{}, [[60, 2], [120, 1]]]]);
    expect(await matrix('sum(count_over_time({service_name=~".+", detected_level="error"}[1m]))')).toEqual([[{}, [[60, 2], [120, 1]]]]);
  });

  it('avg, min, max, count, stddev and stdvar across series (population)', async () => {
    const inner = 'sum by (service_name) (count_over_time({service_name=~".+"}[1m]))'; // checkout 4,2; billing 1,1; web 1,1
    expect(await matrix(`avg(${inner})`)).toEqual([[{}, [[60, 2], [120, 4 / 3]]]]);
    expect(await matrix(`min(${inner})`)).toEqual([[{}, [[60, 1], [120, 1]]]]);
    expect(await matrix(`max(${inner})`)).toEqual([[{}, [[60, 4], [120, 2]]]]);
    expect(await matrix(`count(${inner})`)).toEqual([[{}, [[60, 3], [120, 3]]]]);
    const sv = await matrix(`stdvar(${inner})`);
    expect(sv[0]![1][0]).toEqual([60, 2]);
    expect(sv[0]![1][1]![1]).toBeCloseTo(2 / 9, 12);
    const sd = await matrix(`stddev(${inner})`);
    expect(sd[0]![1][0]![1]).toBeCloseTo(Math.SQRT2, 12);
    expect(await matrix('count by (service_name) (count_over_time({service_name="checkout"}[1m]))')).toEqual([[checkout, [[60, 2], [120, 2]]]]);
  });

  it('topk and bottomk per step after aggregation; sort and sort_desc by the latest value', async () => {
    const inner = 'sum by (service_name) (count_over_time({service_name=~".+"}[1m]))';
    expect(await matrix(`topk(1, ${inner})`)).toEqual([[checkout, [[60, 4], [120, 2]]]]);
    expect(await matrix(`bottomk(2, ${inner})`)).toEqual([
      [{ service_name: 'billing' }, [[60, 1], [120, 1]]],
      [{ service_name: 'web' }, [[60, 1], [120, 1]]],
    ]);
    expect(await matrix('topk(1, sum by (service_name, level) (count_over_time({service_name="checkout"}[1m])) ) by (level)')).toHaveLength(2);
    expect((await matrix(`sort_desc(${inner})`)).map(([l]) => l.service_name)).toEqual(['checkout', 'billing', 'web']);
    expect((await matrix(`sort(${inner})`)).map(([l]) => l.service_name)).toEqual(['billing', 'web', 'checkout']);
  });

  it('sort and sort_desc order by the latest step, not the first', async () => {
    // checkout's latency sums: ERROR 1000 then 50, INFO 360 then 300: the order flips at 120s.
    const sums = 'sum by (level) (sum_over_time({service_name="checkout"} | unwrap latency [1m]))';
    expect(await matrix(`sort(${sums})`)).toEqual([
      [{ level: 'ERROR' }, [[60, 1000], [120, 50]]],
      [{ level: 'INFO' }, [[60, 360], [120, 300]]],
    ]);
    expect((await matrix(`sort_desc(${sums})`)).map(([l]) => l.level)).toEqual(['INFO', 'ERROR']);
  });
});

describe('binary operators', () => {
  const bySvc = (sel = '{service_name=~".+"}') => `sum by (service_name) (count_over_time(${sel}[1m]))`;

  it('vector(1)+vector(1) is 2 at every step (Grafana health check); scalars keep operand order', async () => {
    const at = { startNs: 3n * BigInt(S), endNs: 3n * BigInt(S), stepNs: BigInt(S) };
    expect(await run('vector(1)+vector(1)', at)).toEqual({ kind: 'matrix', series: [{ labels: {}, points: new Map([[0, 2]]) }] });
    expect(await run('1 + 2 * 3')).toEqual({ kind: 'scalar', value: 7 });
    expect(await run('2 > bool 1')).toEqual({ kind: 'scalar', value: 1 });
    expect(await matrix(`${bySvc('{service_name="checkout"}')} * 2`)).toEqual([[checkout, [[60, 8], [120, 4]]]]);
    expect(await matrix(`10 - ${bySvc('{service_name="checkout"}')}`)).toEqual([[checkout, [[60, 6], [120, 8]]]]);
    expect(await matrix(`${bySvc('{service_name="checkout"}')} / 4`)).toEqual([[checkout, [[60, 1], [120, 0.5]]]]);
    expect(await matrix(`8 / ${bySvc('{service_name="checkout"}')}`)).toEqual([[checkout, [[60, 2], [120, 4]]]]);
    expect(await matrix(`${bySvc('{service_name="checkout"}')} % 3 ^ 1`)).toEqual([[checkout, [[60, 1], [120, 2]]]]);
  });

  it('^ is a power, right-associative, with Go\'s special cases as in Loki', async () => {
    expect(await matrix(`${bySvc('{service_name="checkout"}')} ^ 3`)).toEqual([[checkout, [[60, 64], [120, 8]]]]);
    expect(await matrix(`2 ^ ${bySvc('{service_name="checkout"}')}`)).toEqual([[checkout, [[60, 16], [120, 4]]]]);
    expect(await run('2 ^ 3 ^ 2')).toEqual({ kind: 'scalar', value: 512 });
    // math.Pow(1, NaN) and math.Pow(-1, ±Inf) are 1, where JavaScript's ** gives NaN.
    expect(await run('1 ^ (0 / 0)')).toEqual({ kind: 'scalar', value: 1 });
    expect(await run('(0 - 1) ^ (1 / 0)')).toEqual({ kind: 'scalar', value: 1 });
  });

  it('vector arithmetic matches on labels per step; on (…) and ignoring (…)', async () => {
    expect(await matrix(`${bySvc()} / ${bySvc('{service_name=~"checkout|web"}')}`)).toEqual([
      [checkout, [[60, 1], [120, 1]]],
      [{ service_name: 'web' }, [[60, 1], [120, 1]]],
    ]);
    expect(await matrix(`${bySvc()} - on (service_name) sum by (service_name, level) (count_over_time({level="ERROR"}[1m]))`)).toEqual([[checkout, [[60, 3], [120, 1]]]]);
    expect(await matrix(`sum by (service_name, level) (count_over_time({level="ERROR"}[1m])) + ignoring (level) ${bySvc()}`)).toEqual([[checkout, [[60, 5], [120, 3]]]]);
  });

  it('comparisons filter, or give 1/0 with bool', async () => {
    expect(await matrix(`${bySvc()} > 1`)).toEqual([[checkout, [[60, 4], [120, 2]]]]);
    expect(await matrix(`3 < ${bySvc()}`)).toEqual([[checkout, [[60, 4]]]]);
    expect(await matrix(`${bySvc()} >= bool 2`)).toEqual([
      [{ service_name: 'billing' }, [[60, 0], [120, 0]]],
      [checkout, [[60, 1], [120, 1]]],
      [{ service_name: 'web' }, [[60, 0], [120, 0]]],
    ]);
    expect(await matrix(`${bySvc()} == ${bySvc('{service_name="web"}')}`)).toEqual([[{ service_name: 'web' }, [[60, 1], [120, 1]]]]);
    expect(await matrix(`${bySvc()} != bool ${bySvc('{service_name="web"}')}`)).toEqual([[{ service_name: 'web' }, [[60, 0], [120, 0]]]]);
  });

  it('and, or, unless carry values through', async () => {
    const errors = 'sum by (service_name) (count_over_time({level="ERROR"}[1m]))';
    expect(await matrix(`${bySvc()} and ${errors}`)).toEqual([[checkout, [[60, 4], [120, 2]]]]);
    expect((await matrix(`${bySvc()} unless ${errors}`)).map(([l]) => l.service_name)).toEqual(['billing', 'web']);
    expect(await matrix(`${bySvc('{service_name="web"}')} or ${bySvc('{service_name="billing"}')}`)).toEqual([
      [{ service_name: 'billing' }, [[60, 1], [120, 1]]],
      [{ service_name: 'web' }, [[60, 1], [120, 1]]],
    ]);
  });

  it('many-to-one matches: bad_data, or not_implemented under group_left', async () => {
    const many = `sum by (service_name, level) (count_over_time({service_name="checkout"}[1m])) / ignoring (level) ${bySvc()}`;
    await expect(run(many)).rejects.toMatchObject({ kind: 'bad_data', message: expect.stringMatching(/many-to-one/) });
    const grouped = many.replace('ignoring (level)', 'ignoring (level) group_left');
    await expect(run(grouped)).rejects.toMatchObject({ kind: 'not_implemented' });
  });

  it('group_left / group_right on a one-to-one match keep the whole labels of that side, as Prometheus does', async () => {
    const errors = 'sum by (service_name, level) (count_over_time({level="ERROR"}[1m]))';
    // checkout: ERROR 1 then 1, all 4 (10s, 20s, 30s, 60s) then 2 (70s, 90s).
    expect(await matrix(`${errors} / on (service_name) ${bySvc()}`)).toEqual([[checkout, [[60, 0.25], [120, 0.5]]]]);
    expect(await matrix(`${errors} / on (service_name) group_left ${bySvc()}`)).toEqual([[{ service_name: 'checkout', level: 'ERROR' }, [[60, 0.25], [120, 0.5]]]]);
    expect(await matrix(`${bySvc()} / on (service_name) group_right ${errors}`)).toEqual([[{ service_name: 'checkout', level: 'ERROR' }, [[60, 4], [120, 2]]]]);
  });
});

describe('label_replace', () => {
  const inner = 'sum by (service_name) (count_over_time({service_name=~".+"}[1m]))';
  it('anchored regex, $1, ${name}, no match unchanged, empty result deletes', async () => {
    expect((await matrix(`label_replace(${inner}, "svc", "s-$1", "service_name", "(.*)o.*")`)).map(([l]) => l)).toEqual([
      { service_name: 'billing' },
      { service_name: 'checkout', svc: 's-check' },
      { service_name: 'web' },
    ]);
    expect((await matrix(`label_replace(${inner}, "svc", "\${name}!", "service_name", "(?P<name>b[a-z]+)")`)).map(([l]) => l)).toEqual([
      { service_name: 'billing', svc: 'billing!' },
      checkout,
      { service_name: 'web' },
    ]);
    // Anchored: "eb" does not match "web".
    expect((await matrix(`label_replace(${inner}, "svc", "x", "service_name", "eb")`)).map(([l]) => l.svc)).toEqual([undefined, undefined, undefined]);
    expect((await matrix(`label_replace(${inner}, "service_name", "", "service_name", "web")`)).map(([l]) => l)).toEqual([{}, { service_name: 'billing' }, checkout]);
  });

  it('RE2 flags apply: (?i) folds case', async () => {
    expect((await matrix(`label_replace(${inner}, "svc", "$1", "service_name", "(?i)(WEB|CHECK)(?-i:out)?")`)).map(([l]) => l)).toEqual([
      { service_name: 'billing' },
      { service_name: 'checkout', svc: 'check' },
      { service_name: 'web', svc: 'web' },
    ]);
    // Inside (?-i:…) case matters again: OUT does not match checkout's "out".
    expect((await matrix(`label_replace(${inner}, "svc", "x", "service_name", "(?i)check(?-i:OUT)")`)).map(([l]) => l.svc)).toEqual([undefined, undefined, undefined]);
  });

  it('two series that end up with the same labels are an error', async () => {
    await expect(run(`label_replace(${inner}, "service_name", "all", "service_name", ".*")`)).rejects.toMatchObject({ kind: 'bad_data', message: expect.stringMatching(/same labelset/) });
    // Only the series the regex matches change: one rename without a collision is fine.
    expect((await matrix(`label_replace(${inner}, "service_name", "all", "service_name", "web")`)).map(([l]) => l.service_name)).toEqual(['all', 'billing', 'checkout']);
  });
});

describe('what lowering decides', () => {
  it('sum by (…) over an additive function groups in SQL by exactly its labels; others keep the stream identity', () => {
    const leaf = (q: string) => lowerMetricQuery(parseLogQL(q), q).leaves[0]!.sample.groupBy;
    expect(leaf('sum by (level) (rate({service_name="a"}[1m]))')).toEqual(['level']);
    expect(leaf('sum(count_over_time({service_name="a"}[1m]))')).toEqual([]);
    expect(leaf('avg by (level) (count_over_time({service_name="a"}[1m]))')).toEqual(['service_name', 'level']);
    expect(leaf('max by (pod) (rate({service_name="a"}[1m]))')).toEqual(['service_name', 'level', 'pod']);
    expect(leaf('count_over_time({service_name="a"}[1m]) / on (pod) count_over_time({service_name="a"}[1m])')).toEqual(['service_name', 'level', 'pod']);
    expect(leaf('sum_over_time({service_name="a"} | unwrap x [1m]) by (k8s.pod.name)')).toEqual(['k8s.pod.name']);
  });

  it('attribute keys reach the SQL as parameters only', () => {
    const q = 'sum by (user) (count_over_time({service_name="a"} |= "x\' OR 1=1" [1m]))';
    const m = lowerMetricQuery(parseLogQL(q), q);
    const plan = planLogSample(m.leaves[0]!.sample, sampleWindows(GRID, 60n * BigInt(S), 0n), LOGS);
    expect(plan.sql).not.toContain('user');
    expect(plan.sql).not.toContain('OR 1=1');
    expect(plan.params).toContain('user');
    expect(plan.params).toContain("x' OR 1=1");
  });

  it.each<[string, string, RegExp]>([
    ['sum without (level) (count_over_time({service_name="a"}[1m]))', 'not_implemented', /sum without \(…\) with a non-empty label list is not supported yet \(line 1, col 5\)/],
    ['sum(count_over_time({service_name="a"}[1m])) or vector(0)', 'not_implemented', /or vector\(…\)/],
    ['absent_over_time({service_name="a"}[1m])', 'not_implemented', /absent_over_time/],
    ['sum_over_time({service_name="a"} | unwrap duration(x) [1m])', 'not_implemented', /unwrap conversion duration\(\)/],
    ['approx_topk(2, count_over_time({service_name="a"}[1m]))', 'not_implemented', /approx_topk/],
    ['sum_over_time({service_name="a"}[1m])', 'bad_data', /invalid aggregation sum_over_time without unwrap/],
    ['count_over_time({service_name="a"} | unwrap x [1m])', 'bad_data', /invalid aggregation count_over_time with unwrap/],
    ['count_over_time({service_name="a"}[1m]) + bool 1', 'bad_data', /bool modifier can only be used on comparison operators/],
    ['1 > 2', 'bad_data', /comparisons between scalars must use BOOL modifier/],
  ])('%s → %s', (q, kind, message) => {
    let err: unknown;
    try {
      lowerMetricQuery(parseLogQL(q), q);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FloeError);
    expect((err as FloeError).kind).toBe(kind);
    expect((err as FloeError).message).toMatch(message);
  });
});

describe('injection through metric queries', () => {
  it.each([
    'sum(count_over_time({service_name="checkout\\" OR 1=1 --"}[1m]))',
    "sum(count_over_time({service_name=\"x' OR '1'='1\"}[1m]))",
    'sum by (user) (count_over_time({service_name=~".+"} |= "\'); DROP TABLE logs; --" [1m]))',
    'sum(count_over_time({service_name=~".+"} |= "100%" |= "_" [1m]))',
    'sum(count_over_time({service_name=~".+"} | user="\\\\" [1m]))',
    'sum(sum_over_time({service_name=~".+"} | unwrap latency | user=~".*\'.*" [1m]))',
  ])('%s matches nothing and leaves the table alone', async (q) => {
    expect(await matrix(q)).toEqual([]);
    expect(await db.rowCount()).toBe(ROWS.length);
  });
});

describe('sums and moments over many rows', () => {
  let big: LogsDb;
  const N = 400_000;
  beforeAll(async () => {
    big = await openLogsDb([]);
    // Several of DuckDB's row groups, so its threads meet the rows in an order that changes from
    // run to run: values 0…9 (mean 4.5, population variance 8.25) and 0.1…0.9 in (0s, 60s].
    await big.run({
      sql: `INSERT INTO logs (time_unix_nano, service_name, severity_text, body, log_attr_double)
            SELECT (1 + i % 59) * ${S}, 'spread', 'INFO', '', MAP {'v': (i % 10)::DOUBLE, 'w': (i % 10) / 10}
            FROM range(${N}) r(i)`,
      params: [],
    });
    // Values that barely vary around a large mean (1e9 and 1e9 + 1): variance 0.25, which the
    // sum of squares cannot give (it loses every bit of it), so Welford's moments must.
    await big.run({
      sql: `INSERT INTO logs (time_unix_nano, service_name, severity_text, body, log_attr_double)
            SELECT (1 + i % 59) * ${S}, 'narrow', 'INFO', '', MAP {'v': 1e9 + (i % 2)}
            FROM range(${N}) r(i)`,
      params: [],
    });
  }, 60_000);
  afterAll(() => big.close());

  async function at60(q: string): Promise<number> {
    const query = lowerMetricQuery(parseLogQL(q), q);
    const leaves = await Promise.all(
      query.leaves.map(async (leaf) => {
        const windows = sampleWindows(GRID, leaf.rangeNs, leaf.offsetNs);
        return { windows, rows: await big.run(planLogSample(leaf.sample, windows, LOGS)) };
      }),
    );
    const r = evaluateMetricQuery(query, 2, leaves);
    if (r.kind !== 'matrix') throw new Error(`expected a matrix, got ${JSON.stringify(r)}`);
    return r.series[0]!.points.get(0)!;
  }

  it('answer whole numbers the same, to the last bit, every time; tenths, and values barely varying around 1e9, within 1e-12', async () => {
    // Compensated sums of whole numbers are exact, so whatever order DuckDB's threads took the
    // answer is one number; tenths are not exact in binary, and may differ in the last bits.
    const exact: Array<[string, number]> = [
      ['stdvar_over_time({service_name="spread"} | unwrap v [1m])', 8.25],
      ['stddev_over_time({service_name="spread"} | unwrap v [1m])', Math.sqrt(8.25)],
      ['avg_over_time({service_name="spread"} | unwrap v [1m])', 4.5],
      ['sum_over_time({service_name="spread"} | unwrap v [1m])', 4.5 * N],
    ];
    for (const [q, expected] of exact) {
      const answers = new Set<number>();
      for (let i = 0; i < 4; i++) answers.add(await at60(q));
      expect([q, [...answers]]).toEqual([q, [expected]]);
    }
    const close: Array<[string, number]> = [
      ['sum_over_time({service_name="spread"} | unwrap w [1m])', 0.45 * N],
      ['stdvar_over_time({service_name="spread"} | unwrap w [1m])', 0.0825],
    ];
    // Welford's moments where the sums would lose everything.
    close.push(['stdvar_over_time({service_name="narrow"} | unwrap v [1m])', 0.25], ['avg_over_time({service_name="narrow"} | unwrap v [1m])', 1e9 + 0.5]);
    for (const [q, expected] of close) {
      for (let i = 0; i < 4; i++) expect([q, Math.abs((await at60(q)) - expected) / expected < 1e-12]).toEqual([q, true]);
    }
  }, 60_000);
});
