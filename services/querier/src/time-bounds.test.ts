import { DuckDBDateValue, DuckDBInstance, DuckDBTimestampNanosecondsValue, DuckDBTimestampTZValue, DuckDBTimestampValue } from '@duckdb/node-api';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTimeBoundsExtractor, type TimeBounds, type TimeBoundsExtractor } from './time-bounds.ts';

const H = 3_600_000_000_000n; // one hour in ns
const DAY = 24n * H;
const T0 = 1_704_103_200_000_000_000n; // 2024-01-01T10:00:00Z
const T1 = T0 + H; // 2024-01-01T11:00:00Z

/** A bounds object without undefined keys (the extractor only sets the sides it knows). */
function b(minNs?: bigint, maxNs?: bigint): TimeBounds {
  const r: TimeBounds = {};
  if (minNs !== undefined) r.minNs = minNs;
  if (maxNs !== undefined) r.maxNs = maxNs;
  return r;
}

interface Case {
  name: string;
  sql: string;
  params?: unknown[];
  want: Array<[string, TimeBounds]>;
  /** Extract with sessionTimeZoneIsUtc: false. */
  anyZone?: boolean;
}

const cases: Case[] = [
  {
    name: 'ns range with >= and <',
    sql: 'SELECT * FROM traces WHERE start_time_unix_nano >= 1704103200000000000 AND start_time_unix_nano < 1704106800000000000',
    want: [['traces', b(T0, T1)]],
  },
  {
    name: 'ns BETWEEN, exact beyond 2^53',
    sql: 'SELECT count(*) FROM traces WHERE start_time_unix_nano BETWEEN 1704103200000000001 AND 1704106799999999999',
    want: [['traces', b(T0 + 1n, T1 - 1n)]],
  },
  {
    name: 'TIMESTAMP literals on bare timestamp, widened to whole µs',
    sql: "SELECT * FROM traces WHERE timestamp >= TIMESTAMP '2024-01-01 10:00:00' AND timestamp < TIMESTAMP '2024-01-01 11:00:00'",
    want: [['traces', b(T0, T1 + 999n)]],
  },
  {
    name: "'…Z'::TIMESTAMPTZ and a +02:00 offset on quoted \"timestamp\"",
    sql: `SELECT * FROM traces WHERE "timestamp" > '2024-01-01T10:00:00Z'::TIMESTAMPTZ AND "timestamp" <= '2024-01-01T13:00:00+02:00'::TIMESTAMPTZ`,
    want: [['traces', b(T0, T1 + 999n)]],
  },
  {
    name: 'CAST(… AS TIMESTAMPTZ) BETWEEN, naive string read as UTC',
    sql: "SELECT * FROM traces WHERE \"timestamp\" BETWEEN CAST('2024-01-01 10:00:00' AS TIMESTAMPTZ) AND CAST('2024-01-01 11:00' AS TIMESTAMP WITH TIME ZONE)",
    want: [['traces', b(T0, T1 + 999n)]],
  },
  {
    name: 'plain string with 9 fractional digits: both neighbouring µs covered',
    sql: "SELECT * FROM traces WHERE \"timestamp\" = '2024-01-01 10:00:00.123456789'",
    want: [['traces', b(T0 + 123_456_000n, T0 + 123_457_999n)]],
  },
  {
    name: 'DATE literal is midnight',
    sql: "SELECT * FROM traces WHERE \"timestamp\" >= DATE '2024-01-01' AND \"timestamp\" < DATE '2024-01-02'",
    want: [['traces', b(T0 - 10n * H, T0 + 14n * H + 999n)]],
  },
  {
    name: 'to_timestamp(seconds) and make_timestamptz(µs)',
    sql: 'SELECT * FROM traces WHERE "timestamp" >= to_timestamp(1704103200) AND "timestamp" < make_timestamptz(1704106800000000)',
    want: [['traces', b(T0, T1 + 999n)]],
  },
  {
    name: 'make_timestamp(µs) and epoch_ms(ms)',
    sql: 'SELECT * FROM traces WHERE "timestamp" > make_timestamp(1704103200000000) AND "timestamp" <= epoch_ms(1704106800000)',
    want: [['traces', b(T0, T1 + 999n)]],
  },
  {
    name: 'to_timestamp of a decimal: one µs of slack each way',
    sql: 'SELECT * FROM traces WHERE "timestamp" >= to_timestamp(1704103200.5)',
    want: [['traces', b(T0 + 499_999_000n)]],
  },
  {
    name: 'around the epoch, // truncates toward zero: the lower bound widens by 999 ns',
    sql: 'SELECT * FROM traces WHERE "timestamp" >= make_timestamptz(0) AND "timestamp" <= make_timestamptz(1)',
    want: [['traces', b(-999n, 1999n)]],
  },
  {
    name: 'mirrored comparisons',
    sql: "SELECT * FROM traces WHERE 1704103200000000000 <= start_time_unix_nano AND TIMESTAMP '2024-01-01 11:00:00' > \"timestamp\"",
    want: [['traces', b(T0, T1 + 999n)]],
  },
  {
    name: 'several conjuncts intersect (max of lower, min of upper), nested ANDs flattened',
    sql: 'SELECT * FROM traces WHERE (start_time_unix_nano >= 1704099600000000000 AND (start_time_unix_nano >= 1704103200000000000 AND start_time_unix_nano <= 1704110400000000000)) AND "timestamp" <= make_timestamptz(1704106800000000)',
    want: [['traces', b(T0, T1 + 999n)]],
  },
  {
    name: 'IN list gives its smallest and largest value',
    sql: 'SELECT * FROM traces WHERE start_time_unix_nano IN (1704106800000000000, 1704103200000000000)',
    want: [['traces', b(T0, T1)]],
  },
  {
    name: 'a top-level OR: nothing',
    sql: "SELECT * FROM traces WHERE start_time_unix_nano >= 1704103200000000000 OR service_name = 'api'",
    want: [],
  },
  {
    name: 'an OR inside the conjunction only drops its own comparisons',
    sql: 'SELECT * FROM traces WHERE start_time_unix_nano <= 1704106800000000000 AND (start_time_unix_nano >= 1704103200000000000 OR duration_nano > 5)',
    want: [['traces', b(undefined, T1)]],
  },
  {
    name: 'NOT BETWEEN is not a range',
    sql: 'SELECT * FROM traces WHERE start_time_unix_nano NOT BETWEEN 1704103200000000000 AND 1704106800000000000',
    want: [],
  },
  {
    name: 'comparisons on other columns are ignored',
    sql: "SELECT * FROM traces WHERE duration_nano < 1704103200000000000 AND service_name = 'api' AND start_time_unix_nano >= 1704103200000000000",
    want: [['traces', b(T0)]],
  },
  {
    name: 'end_time_unix_nano <= X bounds the start; end >= X says nothing',
    sql: 'SELECT * FROM traces WHERE end_time_unix_nano <= 1704106800000000000 AND end_time_unix_nano >= 1704103200000000000',
    want: [['traces', b(undefined, T1)]],
  },
  {
    name: 'now() and interval arithmetic: no entry',
    sql: "SELECT * FROM traces WHERE \"timestamp\" > now() - INTERVAL 1 HOUR AND \"timestamp\" < TIMESTAMP '2024-01-01 11:00:00' + INTERVAL 1 HOUR",
    want: [],
  },
  {
    name: 'join: only conjuncts qualified by each alias count',
    sql: "SELECT * FROM traces t JOIN sql_traces s USING (trace_id, end_time_unix_nano) WHERE t.start_time_unix_nano >= 1704103200000000000 AND s.\"timestamp\" < TIMESTAMP '2024-01-01 11:00:00' AND end_time_unix_nano <= 1704103200000000000",
    want: [
      ['traces', b(T0)],
      ['sql_traces', b(undefined, T1 + 999n)],
    ],
  },
  {
    name: 'LEFT JOIN: WHERE conjuncts bound both sides, ON conditions are ignored',
    sql: 'SELECT * FROM traces t LEFT JOIN sql_traces s ON t.trace_id = s.trace_id AND s.start_time_unix_nano >= 1704103200000000000 WHERE s.start_time_unix_nano <= 1704106800000000000 AND t.start_time_unix_nano >= 1704103200000000000',
    want: [
      ['traces', b(T0)],
      ['sql_traces', b(undefined, T1)],
    ],
  },
  {
    name: 'EXCEPT with both branches bounded: the hull',
    sql: 'SELECT trace_id, start_time_unix_nano FROM traces WHERE start_time_unix_nano >= 1704103200000000000 EXCEPT SELECT trace_id, start_time_unix_nano FROM traces WHERE start_time_unix_nano >= 1704106800000000000',
    want: [['traces', b(T0)]],
  },
  {
    name: 'self-join: a reference without a bound leaves the table unbounded',
    sql: 'SELECT * FROM traces a JOIN traces b2 ON a.trace_id = b2.trace_id WHERE a.start_time_unix_nano >= 1704103200000000000',
    want: [],
  },
  {
    name: 'self-join with both references bounded: the hull',
    sql: 'SELECT * FROM traces a, traces b2 WHERE a.start_time_unix_nano BETWEEN 1704103200000000000 AND 1704103200000001000 AND b2.start_time_unix_nano BETWEEN 1704103200000000500 AND 1704106800000000000',
    want: [['traces', b(T0, T1)]],
  },
  {
    name: 'outer WHERE over a FROM subquery: not pushed down, no entry',
    sql: 'SELECT * FROM (SELECT * FROM traces) s WHERE s.start_time_unix_nano >= 1704103200000000000',
    want: [],
  },
  {
    name: "a FROM subquery's own WHERE counts",
    sql: 'SELECT count(*) FROM (SELECT * FROM traces WHERE start_time_unix_nano >= 1704103200000000000) s WHERE s.duration_nano > 0',
    want: [['traces', b(T0)]],
  },
  {
    name: 'WITH … SELECT over one table',
    sql: 'WITH recent AS (SELECT * FROM traces WHERE start_time_unix_nano < 1704106800000000000) SELECT service_name, count(*) FROM recent GROUP BY 1',
    want: [['traces', b(undefined, T1)]],
  },
  {
    name: 'a CTE named like the table: no entry',
    sql: 'WITH traces AS (SELECT * FROM sql_traces) SELECT * FROM traces WHERE start_time_unix_nano >= 1704103200000000000',
    want: [],
  },
  {
    name: 'UNION ALL: one unbounded branch spoils the table',
    sql: 'SELECT trace_id FROM traces WHERE start_time_unix_nano >= 1704103200000000000 UNION ALL SELECT trace_id FROM traces',
    want: [],
  },
  {
    name: 'a WHERE subquery on the same table unbounded: no entry',
    sql: 'SELECT * FROM traces WHERE start_time_unix_nano >= 1704103200000000000 AND trace_id IN (SELECT trace_id FROM traces)',
    want: [],
  },
  {
    name: 'a correlated subquery: only its qualified conjuncts count',
    sql: 'SELECT * FROM sql_traces s WHERE s.start_time_unix_nano >= 1704103200000000000 AND EXISTS (SELECT 1 FROM traces t WHERE t.trace_id = s.trace_id AND t.start_time_unix_nano <= 1704106800000000000 AND start_time_unix_nano >= 1704103200000000000)',
    want: [
      ['sql_traces', b(T0)],
      ['traces', b(undefined, T1)],
    ],
  },
  {
    name: 'a select-list alias named timestamp: unqualified refs are ignored',
    sql: 'SELECT start_time_unix_nano AS "timestamp" FROM traces WHERE "timestamp" >= to_timestamp(1704103200) AND traces.start_time_unix_nano <= 1704106800000000000',
    want: [['traces', b(undefined, T1)]],
  },
  {
    name: 'ASOF join and TABLESAMPLE: not analysed',
    sql: 'SELECT * FROM traces t ASOF JOIN sql_traces s ON t.trace_id = s.trace_id AND t.start_time_unix_nano >= s.start_time_unix_nano WHERE t.start_time_unix_nano >= 1704103200000000000 UNION ALL SELECT *, * FROM acme.default.traces TABLESAMPLE 50% WHERE start_time_unix_nano >= 1704103200000000000',
    want: [],
  },
  {
    name: 'three-part name, quoted and upper-case, qualified by schema.table',
    sql: 'SELECT * FROM "ACME"."default".Traces WHERE "default".traces.start_time_unix_nano >= 1704103200000000000',
    want: [['acme.default.traces', b(T0)]],
  },
  {
    name: '$1 (number) and $2 (bigint) parameters',
    sql: 'SELECT * FROM traces WHERE start_time_unix_nano >= $1 AND start_time_unix_nano <= $2',
    params: [1_704_103_200_000_000, T1],
    want: [['traces', b(1_704_103_200_000_000n, T1)]],
  },
  {
    name: '? placeholder, unary minus on a parameter',
    sql: 'SELECT * FROM traces WHERE start_time_unix_nano >= ? AND start_time_unix_nano >= -? AND end_time_unix_nano < ?',
    params: [T0, -T0 + H, T1 + H],
    want: [['traces', b(T0, T1 + H)]],
  },
  {
    name: 'numeric-string parameter on the ns column; a non-integer number is ignored',
    sql: 'SELECT * FROM traces WHERE start_time_unix_nano >= $1 AND start_time_unix_nano <= $2',
    params: ['1704103200000000000', 1.7041068e18],
    want: [['traces', b(T0)]],
  },
  {
    name: 'timestamp parameters: ISO string and Date',
    sql: 'SELECT * FROM traces WHERE "timestamp" >= $1 AND "timestamp" < $2',
    params: ['2024-01-01 10:00:00Z', new Date('2024-01-01T11:00:00Z')],
    want: [['traces', b(T0, T1 + 999n)]],
  },
  {
    name: "Flight SQL's bound instants: TIMESTAMPTZ at its µs, TIMESTAMP_NS naive",
    sql: 'SELECT * FROM traces WHERE "timestamp" >= $1 AND "timestamp" <= CAST($2 AS TIMESTAMPTZ)',
    params: [new DuckDBTimestampTZValue((T0 + 123_456_000n) / 1000n), new DuckDBTimestampNanosecondsValue(T1 + 123_456_789n)],
    want: [['traces', b(T0 + 123_456_000n, T1 + 123_457_999n)]],
  },
  {
    name: "Flight SQL's bound DATE and TIMESTAMP: naive",
    sql: 'SELECT * FROM traces WHERE "timestamp" >= $1 AND "timestamp" < $2',
    params: [new DuckDBDateValue(19_723), new DuckDBTimestampValue(T1 / 1000n)],
    want: [['traces', b(1_704_067_200_000_000_000n, T1 + 999n)]],
  },
  {
    name: 'string literal on the ns column: a plain integer is parsed exactly, anything else ignored',
    sql: "SELECT * FROM traces WHERE start_time_unix_nano >= '1704103200000000000' AND start_time_unix_nano <= '1.7041068e18'",
    want: [['traces', b(T0)]],
  },
  {
    name: 'an offset in a string cast to naive TIMESTAMP is refused',
    sql: "SELECT * FROM traces WHERE \"timestamp\" >= TIMESTAMP '2024-01-01 08:00:00+02' AND \"timestamp\" <= TIMESTAMP '2024-01-01 11:00:00+00'",
    want: [['traces', b(undefined, T1 + 999n)]],
  },
  {
    name: 'session zone not UTC: naive values widened by a day, zoned ones exact',
    sql: "SELECT * FROM traces WHERE \"timestamp\" >= TIMESTAMP '2024-01-01 05:00:00' AND \"timestamp\" <= '2024-01-01 11:00:00Z'",
    anyZone: true,
    want: [['traces', b(T0 - 5n * H - DAY, T1 + 999n)]],
  },
  {
    name: 'unparseable SQL: empty',
    sql: 'SELEC * FROM traces WHERE start_time_unix_nano >= 1',
    want: [],
  },
  {
    name: 'not a SELECT: empty',
    sql: 'DELETE FROM traces WHERE start_time_unix_nano >= 1704103200000000000',
    want: [],
  },
];

describe('time bounds', () => {
  let utc: TimeBoundsExtractor;
  let anyZone: TimeBoundsExtractor;
  beforeAll(async () => {
    utc = await createTimeBoundsExtractor();
    anyZone = await createTimeBoundsExtractor({ sessionTimeZoneIsUtc: false });
  });
  afterAll(() => {
    utc.close();
    anyZone.close();
  });

  it.each(cases)('$name', async (c) => {
    const got = await (c.anyZone ? anyZone : utc).extract(c.sql, c.params);
    expect(got).toStrictEqual(new Map(c.want));
  });

  it('serves concurrent calls and rejects after close', async () => {
    const ex = await createTimeBoundsExtractor();
    const sql = (i: number) => `SELECT * FROM traces WHERE start_time_unix_nano >= ${T0 + BigInt(i)}`;
    const got = await Promise.all(Array.from({ length: 20 }, (_, i) => ex.extract(sql(i))));
    expect(got.map((m) => m.get('traces')?.minNs)).toStrictEqual(Array.from({ length: 20 }, (_, i) => T0 + BigInt(i)));
    ex.close();
    await expect(ex.extract(sql(0))).rejects.toThrow('closed');
  });
});

/**
 * Soundness: pruning every table to its bounds must not change any query's result. Tables hold
 * spans just inside and outside every edge the cases use; each case runs on the full tables and
 * again with rows outside the extracted bounds deleted.
 */
describe('time bounds are never narrower than the truth', () => {
  const offsets = [-DAY - 1n, -H - 1n, -1001n, -1000n, -999n, -1n, 0n, 1n, 499_998_999n, 499_999_000n, 500_000_000n, 999n, 1000n, 123_455_999n, 123_456_000n, 123_456_789n, 123_457_999n, 123_458_000n, 1000n * 1000n, H - 1n, H, H + 1n, H + 999n, H + 1000n, 2n * H, 14n * H, 14n * H + 1000n, DAY];
  const tables = ['traces', 'sql_traces', 'acme."default".traces'];
  let inst: DuckDBInstance;
  let conn: DuckDBConnection;
  let utc: TimeBoundsExtractor;
  let anyZone: TimeBoundsExtractor;

  beforeAll(async () => {
    utc = await createTimeBoundsExtractor();
    anyZone = await createTimeBoundsExtractor({ sessionTimeZoneIsUtc: false });
    inst = await DuckDBInstance.create(':memory:');
    conn = await inst.connect();
    const starts = [...offsets.map((o) => T0 + o), -1001n, -1000n, -999n, -1n, 0n, 1n, 999n, 1000n];
    const values = starts.map((s, i) => `(${s}, ${i % 3})`).join(', ');
    await conn.run(`CREATE TABLE src AS SELECT make_timestamptz(s // 1000) AS "timestamp", 't' || k AS trace_id, s AS start_time_unix_nano, s + k * 1000 AS end_time_unix_nano, k * 1000 AS duration_nano, 'api' AS service_name FROM (VALUES ${values}) v(s, k)`);
    await conn.run(`ATTACH ':memory:' AS acme`);
    await conn.run(`CREATE SCHEMA acme."default"`);
  });
  afterAll(() => {
    utc.close();
    anyZone.close();
    conn?.closeSync();
    inst?.closeSync();
  });

  const run = async (sql: string, params: unknown[] | undefined): Promise<string> => {
    const ps = await conn.prepare(sql);
    (params ?? []).forEach((p, i) => {
      if (typeof p === 'string') ps.bindVarchar(i + 1, p);
      else if (typeof p === 'bigint') ps.bindBigInt(i + 1, p);
      else if (typeof p === 'number') ps.bindDouble(i + 1, p);
      else ps.bindValue(i + 1, p as DuckDBValue);
    });
    const rows = (await ps.runAndReadAll()).getRowsJson();
    return JSON.stringify(rows.map((r) => JSON.stringify(r)).sort());
  };

  const runnable = cases.filter((c) => !c.params?.some((p) => p instanceof Date) && c.want.length > 0);
  it.each(runnable)('$name', async (c) => {
    await conn.run(`SET TimeZone = '${c.anyZone ? 'America/New_York' : 'UTC'}'`);
    for (const t of tables) await conn.run(`CREATE OR REPLACE TABLE ${t} AS SELECT * FROM src`);
    const full = await run(c.sql, c.params);
    const bounds = await (c.anyZone ? anyZone : utc).extract(c.sql, c.params);
    for (const [key, bd] of bounds) {
      const table = key === 'acme.default.traces' ? 'acme."default".traces' : key;
      await conn.run(`DELETE FROM ${table} WHERE start_time_unix_nano < ${bd.minNs ?? -(2n ** 63n)} OR start_time_unix_nano > ${bd.maxNs ?? 2n ** 63n - 1n}`);
    }
    const pruned = await run(c.sql, c.params);
    expect(JSON.parse(full).length).toBeGreaterThan(0);
    expect(pruned).toBe(full);
  });
});

describe('file order from ORDER BY … LIMIT', () => {
  let extractor: TimeBoundsExtractor;
  beforeAll(async () => {
    extractor = await createTimeBoundsExtractor();
  });
  afterAll(() => extractor?.close());

  it.each<[string, string | undefined]>([
    ['SELECT * FROM logs ORDER BY time_unix_nano DESC LIMIT 100', 'newest_first'],
    ['SELECT body FROM logs l ORDER BY l."timestamp" LIMIT 5', 'oldest_first'],
    ['SELECT * FROM traces WHERE service_name = $1 ORDER BY start_time_unix_nano ASC, span_id LIMIT 10', 'oldest_first'],
    ['SELECT * FROM logs ORDER BY "TIME_UNIX_NANO" DESC NULLS LAST LIMIT 1', 'newest_first'],
    // Not a top-N by time: no order.
    ['SELECT * FROM logs ORDER BY time_unix_nano DESC', undefined],
    ['SELECT * FROM logs LIMIT 10', undefined],
    ['SELECT * FROM logs ORDER BY severity_text, time_unix_nano DESC LIMIT 10', undefined],
    ['SELECT * FROM logs ORDER BY time_unix_nano + 0 DESC LIMIT 10', undefined],
    ['SELECT * FROM (SELECT * FROM logs ORDER BY time_unix_nano DESC LIMIT 10) ORDER BY body', undefined],
    ['SELECT 1; SELECT * FROM logs ORDER BY time_unix_nano DESC LIMIT 1', undefined],
    ['SELEC nonsense', undefined],
  ])('%s → %s', async (sql, want) => {
    expect((await extractor.scanHints(sql, ['svc'])).fileOrder).toBe(want);
  });

  it('keeps the time bounds of the same parse', async () => {
    const hints = await extractor.scanHints(`SELECT * FROM traces WHERE start_time_unix_nano >= ${T0} ORDER BY start_time_unix_nano DESC LIMIT 5`);
    expect(hints).toEqual({ bounds: new Map([['traces', { minNs: T0 }]]), fileOrder: 'newest_first' });
  });
});
