import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DataType, type Table } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSchemas } from '../file-schemas.ts';
import { makeScrubber, toSandboxError } from './errors.ts';
import { SandboxError, createTrustedRunner, describeSandboxedSelect, runSandboxedSelect, type SandboxErrorKind, type SandboxView, type TrustedRunner } from './index.ts';

const SINGLE = 'only a single SELECT statement is allowed';
const FILES = 'access to files outside your tables is not allowed';

let root: string;
let acmeDir: string;
let acmeF1: string;
let acmeF2: string;
let otherF1: string;
let views: SandboxView[];

const TRACE_A = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const TRACE_B = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
const T0 = 1_700_000_000_000_000_000n;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'floe-sandbox-test-'));
  acmeDir = join(root, 'acme', 'default', 'traces', 'data');
  const otherDir = join(root, 'other', 'default', 'traces', 'data');
  await mkdir(acmeDir, { recursive: true });
  await mkdir(otherDir, { recursive: true });
  acmeF1 = join(acmeDir, '00001.parquet');
  acmeF2 = join(acmeDir, '00002.parquet');
  otherF1 = join(otherDir, '00001.parquet');
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  try {
    // acme, file 1: two traces, three spans.
    await conn.run(`COPY (
      SELECT * FROM (VALUES
        ('${TRACE_A}', '0000000000000001', 'GET /orders', 'api', ${T0}::BIGINT, 1500::BIGINT, MAP {'http.method': 'GET', 'http.route': '/orders'}),
        ('${TRACE_A}', '0000000000000002', 'SELECT orders', 'db', ${T0 + 100n}::BIGINT, 700::BIGINT, MAP {'db.system': 'postgres'}),
        ('${TRACE_B}', '0000000000000003', 'POST /pay', 'api', ${T0 + 5_000_000_000n}::BIGINT, 9000::BIGINT, MAP {'http.method': 'POST'})
      ) t(trace_id, span_id, name, service_name, start_time_unix_nano, duration_nano, span_attributes)
    ) TO '${acmeF1}' (FORMAT parquet)`);
    // acme, file 2: 5000 generated spans and one more column (schema evolution → union_by_name).
    await conn.run(`COPY (
      SELECT 'gen-' || lpad(x::VARCHAR, 5, '0') AS trace_id, lpad(x::VARCHAR, 16, '0') AS span_id, 'op' AS name,
             'gen' AS service_name, (${T0} + x * 1000)::BIGINT AS start_time_unix_nano, (x % 97)::BIGINT AS duration_nano,
             MAP {'i': x::VARCHAR} AS span_attributes, (200 + x % 3)::INTEGER AS http_status
      FROM range(5000) t(x)
    ) TO '${acmeF2}' (FORMAT parquet)`);
    // the other tenant.
    await conn.run(`COPY (
      SELECT * FROM (VALUES
        ('cccccccccccccccccccccccccccccccc', '0000000000000009', 'secret-span', 'vault', ${T0}::BIGINT, 1::BIGINT, MAP {'secret': 'hunter2'})
      ) t(trace_id, span_id, name, service_name, start_time_unix_nano, duration_nano, span_attributes)
    ) TO '${otherF1}' (FORMAT parquet)`);
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
  views = [
    { name: 'acme.default.traces', files: [acmeF1, acmeF2], emptySchemaSql: '' },
    {
      name: 'acme.default.logs',
      files: [],
      emptySchemaSql: 'time_unix_nano BIGINT, ts TIMESTAMPTZ, body VARCHAR, attributes MAP(VARCHAR, VARCHAR), severity_number INTEGER',
    },
  ];
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

function run(sql: string, extra: { params?: unknown[]; maxRows?: number; maxBytes?: number; timeoutMs?: number } = {}) {
  return runSandboxedSelect({ views, sql, timeoutMs: extra.timeoutMs ?? 10_000, params: extra.params, maxRows: extra.maxRows, maxBytes: extra.maxBytes, threads: 2, memoryLimit: '256MB' });
}

async function refusal(p: Promise<unknown>): Promise<{ kind: SandboxErrorKind; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof SandboxError) return { kind: err.kind, message: err.message };
    throw err;
  }
  throw new Error('expected the query to be refused, but it returned rows');
}

function column(table: Table, name: string): unknown[] {
  const col = table.getChild(name);
  if (!col) throw new Error(`no column ${name}`);
  return [...col];
}

describe('runSandboxedSelect refuses', () => {
  // [label, sql, kind, message (exact, or a RegExp for DuckDB's own text)]
  const cases: Array<[string, () => string, SandboxErrorKind, string | RegExp]> = [
    ['read_csv of /etc/passwd', () => `SELECT * FROM read_csv('/etc/passwd')`, 'forbidden', 'table function read_csv is not allowed'],
    ['read_text', () => `SELECT * FROM read_text('/etc/hostname')`, 'forbidden', 'table function read_text is not allowed'],
    ["read_parquet of the other tenant's file", () => `SELECT * FROM read_parquet('${otherF1}')`, 'forbidden', 'table function read_parquet is not allowed'],
    ["the other tenant's file as a table name", () => `SELECT * FROM '${otherF1}'`, 'forbidden', FILES],
    ['read_parquet of a glob', () => `SELECT * FROM read_parquet('${root}/*/*/*/*/*.parquet')`, 'forbidden', 'table function read_parquet is not allowed'],
    ['glob', () => `SELECT * FROM glob('/etc/*')`, 'forbidden', 'table function glob is not allowed'],
    ['COPY to /tmp', () => `COPY (SELECT 1) TO '/tmp/x.csv'`, 'forbidden', SINGLE],
    ["COPY into the allowed file's directory", () => `COPY (SELECT 1) TO '${acmeDir}/evil.parquet'`, 'forbidden', SINGLE],
    ["ATTACH ':memory:'", () => `ATTACH ':memory:' AS m`, 'forbidden', SINGLE],
    ['ATTACH a file', () => `ATTACH '/tmp/x.db'`, 'forbidden', SINGLE],
    ['INSTALL httpfs', () => 'INSTALL httpfs', 'forbidden', SINGLE],
    ['LOAD httpfs', () => 'LOAD httpfs', 'forbidden', SINGLE],
    ['SET threads', () => 'SET threads=8', 'forbidden', SINGLE],
    ['RESET lock_configuration', () => 'RESET lock_configuration', 'forbidden', SINGLE],
    ['PRAGMA memory_limit', () => `PRAGMA memory_limit='10GB'`, 'forbidden', SINGLE],
    ['getenv', () => `SELECT getenv('HOME')`, 'forbidden', 'function getenv is not allowed'],
    ['current_setting', () => `SELECT current_setting('allowed_paths')`, 'forbidden', 'function current_setting is not allowed'],
    ['current_setting inside a lambda', () => `SELECT list_transform([1], x -> current_setting('allowed_paths'))`, 'forbidden', 'function current_setting is not allowed'],
    ['duckdb_settings()', () => 'SELECT * FROM duckdb_settings()', 'forbidden', 'table function duckdb_settings is not allowed'],
    ['duckdb_views (view SQL names the files)', () => 'SELECT sql FROM duckdb_views', 'forbidden', 'access to system catalog table duckdb_views is not allowed'],
    ['pg_views', () => 'SELECT definition FROM pg_views', 'forbidden', 'access to system catalog table pg_views is not allowed'],
    ['information_schema.views', () => 'SELECT view_definition FROM information_schema.views', 'forbidden', 'access to system catalog table information_schema.views is not allowed'],
    ['pg_get_viewdef', () => 'SELECT pg_get_viewdef(x) FROM range(100000) t(x)', 'forbidden', 'function pg_get_viewdef is not allowed'],
    ['two SELECTs', () => 'SELECT 1; SELECT 2', 'forbidden', SINGLE],
    ['SELECT then DROP VIEW', () => 'SELECT 1; DROP VIEW traces', 'forbidden', SINGLE],
    ['CREATE MACRO', () => 'CREATE MACRO twice(a) AS a * 2', 'forbidden', SINGLE],
    ['CREATE TEMP TABLE', () => 'CREATE TEMP TABLE t AS SELECT 1 AS a', 'forbidden', SINGLE],
    ['INSERT', () => `INSERT INTO acme.default.traces (trace_id) VALUES ('x')`, 'forbidden', SINGLE],
    ['query()', () => `SELECT * FROM query('SELECT 42')`, 'forbidden', 'table function query is not allowed'],
    ['EXPORT DATABASE', () => `EXPORT DATABASE '/tmp/x'`, 'forbidden', SINGLE],
    ['a view of the other tenant that was not provided', () => 'SELECT * FROM other.default.traces', 'bad_sql', /^Binder Error: Catalog "other" does not exist!/],
    ['a syntax error', () => 'SELEC 1', 'bad_sql', /^Parser Error: syntax error at or near "SELEC"/],
    ['blank text', () => '  ', 'bad_sql', 'no SQL statement given'],
    ['only a separator', () => ';', 'bad_sql', 'no SQL statement given'],
    ['only a comment', () => '-- nothing', 'bad_sql', 'no SQL statement given'],
    ['a NUL (DuckDB would drop what follows it)', () => 'SELECT 1\u0000; DROP VIEW traces', 'bad_sql', 'SQL must not contain NUL characters'],
  ];

  it.each(cases)('%s', async (_label, sql, kind, message) => {
    const got = await refusal(run(sql()));
    expect(got.kind).toBe(kind);
    if (typeof message === 'string') expect(got.message).toBe(message);
    else expect(got.message).toMatch(message);
    expect(got.message).not.toContain(root);
  });

  it('wrote nothing into the data directory or /tmp', () => {
    expect(existsSync(join(acmeDir, 'evil.parquet'))).toBe(false);
    expect(existsSync('/tmp/x.csv')).toBe(false);
  });

  it('a data file that vanished is internal, and the message names no path', async () => {
    const missing = join(acmeDir, 'gone.parquet');
    const got = await refusal(
      runSandboxedSelect({ views: [{ name: 'traces', files: [acmeF1, missing], emptySchemaSql: '' }], sql: 'SELECT 1', timeoutMs: 10_000 }),
    );
    expect(got.kind).toBe('internal');
    expect(got.message).toBe('sandbox setup failed: IO Error: No files found that match the pattern "<file>"');
    expect(got.message).not.toContain(root);
  });

  it('column DDL that tries to add a statement is refused before anything runs', async () => {
    const got = await refusal(
      runSandboxedSelect({
        views: [{ name: 'logs', files: [], emptySchemaSql: `a INT)) ; COPY (SELECT 1) TO '/tmp/x.csv' ; SELECT ((1` }],
        sql: 'SELECT 1',
        timeoutMs: 10_000,
      }),
    );
    expect(got).toEqual({ kind: 'internal', message: 'view logs: emptySchemaSql must not contain ";", "--" or "/*"' });
  });

  it('a value JavaScript cannot hold (a string past 512 MiB) is bad_sql, not internal', () => {
    let tooLong: unknown;
    try {
      'x'.repeat(2 ** 30);
    } catch (err) {
      tooLong = err;
    }
    expect(tooLong).toBeInstanceOf(RangeError);
    const got = toSandboxError(tooLong, { timedOut: false, timeoutMs: 1000, scrub: (m) => m });
    expect({ kind: got.kind, message: got.message }).toEqual({ kind: 'bad_sql', message: 'a value of the result is too large to return; select less (substr, list_slice, a LIMIT)' });
  });

  it('a data file the store damaged (Invalid Input Error naming it) is internal, not the query\'s bad_sql', () => {
    const scrub = makeScrubber(['/data/warehouse/acme/default/logs/data/h=1/f.parquet']);
    const ctx = { timedOut: false, timeoutMs: 1000, scrub };
    const damaged = toSandboxError(new Error("Invalid Input Error: No magic bytes found at end of file '/data/warehouse/acme/default/logs/data/h=1/f.parquet'"), ctx);
    expect({ kind: damaged.kind, message: damaged.message }).toEqual({ kind: 'internal', message: "query failed: Invalid Input Error: No magic bytes found at end of file '<file>'" });
    const userInput = toSandboxError(new Error("Invalid Input Error: Could not convert string 'x' to INT32"), ctx);
    expect(userInput.kind).toBe('bad_sql');
  });

  it("a text value past what a JavaScript string holds (repeat('x', 600000000)) is bad_sql, not internal", async () => {
    const got = await refusal(runSandboxedSelect({ views, sql: "SELECT repeat('x', 600000000) AS x", timeoutMs: 50_000, threads: 1, memoryLimit: '2GB' }));
    expect(got).toEqual({ kind: 'bad_sql', message: 'a value of the result is too large to return; select less (substr, list_slice, a LIMIT)' });
  }, 60_000);

  it('a wrong parameter count is bad_sql', async () => {
    const got = await refusal(run('SELECT * FROM traces WHERE trace_id = $1', { params: [] }));
    expect(got).toEqual({ kind: 'bad_sql', message: 'the query has 1 parameter(s) but 0 value(s) were given' });
  });
});

describe('runSandboxedSelect answers', () => {
  it('SELECT count(*) FROM traces (unqualified, through the search path; two files)', async () => {
    const r = await run('SELECT count(*) AS n FROM traces');
    expect(r.rowCount).toBe(1);
    expect(r.truncated).toBe(false);
    expect(column(r.table, 'n')).toEqual([5003n]);
  });

  it('WITH … SELECT', async () => {
    const r = await run(`WITH per_service AS (SELECT service_name, count(*) AS spans FROM traces GROUP BY service_name)
      SELECT service_name, spans FROM per_service ORDER BY service_name`);
    expect(column(r.table, 'service_name')).toEqual(['api', 'db', 'gen']);
    expect(column(r.table, 'spans')).toEqual([2n, 1n, 5000n]);
  });

  it('SELECT * FROM acme.default.traces WHERE … with $1/$2 parameters', async () => {
    const r = await run(
      'SELECT span_id, name, start_time_unix_nano, http_status FROM acme.default.traces WHERE trace_id = $1 AND start_time_unix_nano >= $2 ORDER BY span_id',
      { params: [TRACE_A, T0] },
    );
    expect(r.rowCount).toBe(2);
    expect(column(r.table, 'span_id')).toEqual(['0000000000000001', '0000000000000002']);
    expect(column(r.table, 'name')).toEqual(['GET /orders', 'SELECT orders']);
    expect(column(r.table, 'start_time_unix_nano')).toEqual([T0, T0 + 100n]);
    // The column only file 2 has is NULL for file 1's rows (union_by_name).
    expect(column(r.table, 'http_status')).toEqual([null, null]);
    expect(DataType.isInt(r.table.schema.fields.find((f) => f.name === 'start_time_unix_nano')!.type)).toBe(true);
  });

  it('describes a statement without running it: result columns and parameter types (DuckDB’s inference)', async () => {
    const d = await describeSandboxedSelect({
      views,
      sql: 'SELECT span_id, start_time_unix_nano + 1 AS t FROM traces WHERE trace_id = ? AND start_time_unix_nano >= ? AND ? LIMIT 0',
      timeoutMs: 10_000,
      threads: 2,
      memoryLimit: '256MB',
    });
    expect(d.columns.fields.map((f) => [f.name, String(f.type)])).toEqual([
      ['span_id', 'Utf8'],
      ['t', 'Int64'],
    ]);
    expect(d.parameters.fields.map((f) => [f.name, String(f.type)])).toEqual([
      ['1', 'Utf8'],
      ['2', 'Int64'],
      ['3', 'Bool'],
    ]);
    // A column whose type waits on a parameter's value, at the top or inside: no result schema until it runs; the parameter reads as text.
    for (const sql of ['SELECT $1 AS x', 'SELECT 1 AS n, {a: ?} AS s', 'SELECT [{a: $1}] AS l']) {
      const unknown = await describeSandboxedSelect({ views, sql, timeoutMs: 10_000 });
      expect([unknown.columns.fields.length, unknown.parameters.fields.map((f) => String(f.type))], sql).toEqual([0, ['Utf8']]);
    }
    // The gate applies as for a run.
    await expect(describeSandboxedSelect({ views, sql: "SELECT * FROM read_csv('/etc/passwd')", timeoutMs: 10_000 })).rejects.toMatchObject({ kind: 'forbidden' });
  });

  it("map access span_attributes['k'] and the MAP column itself as an Arrow Map", async () => {
    const r = await run(
      `SELECT span_attributes['http.method'] AS method, span_attributes FROM traces WHERE trace_id = $1 ORDER BY span_id`,
      { params: [TRACE_A] },
    );
    expect(column(r.table, 'method')).toEqual(['GET', null]);
    const attrs = r.table.getChild('span_attributes')!;
    expect(DataType.isMap(attrs.type)).toBe(true);
    expect(attrs.get(0)!.toJSON()).toEqual({ 'http.method': 'GET', 'http.route': '/orders' });
    expect(attrs.get(1)!.toJSON()).toEqual({ 'db.system': 'postgres' });
  });

  it('concurrent calls for two tenants each see only their own rows', async () => {
    const otherViews: SandboxView[] = [{ name: 'other.default.traces', files: [otherF1], emptySchemaSql: '' }];
    const [a, o] = await Promise.all([
      run('SELECT count(*) AS n FROM traces'),
      runSandboxedSelect({ views: otherViews, sql: 'SELECT name, span_attributes[$1] AS s FROM traces', params: ['secret'], timeoutMs: 10_000 }),
    ]);
    expect(column(a.table, 'n')).toEqual([5003n]);
    expect(o.table.toArray().map((r) => r.toJSON())).toEqual([{ name: 'secret-span', s: 'hunter2' }]);
  });

  it('information_schema.tables lists the provided views', async () => {
    const r = await run(`SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables ORDER BY table_name`);
    expect(r.table.toArray().map((row) => row.toJSON())).toEqual([
      { table_catalog: 'acme', table_schema: 'default', table_name: 'logs', table_type: 'VIEW' },
      { table_catalog: 'acme', table_schema: 'default', table_name: 'traces', table_type: 'VIEW' },
    ]);
  });

  it('an empty view yields 0 rows with the declared column types', async () => {
    const r = await run('SELECT * FROM acme.default.logs');
    expect(r.rowCount).toBe(0);
    expect(r.truncated).toBe(false);
    const fields = Object.fromEntries(r.table.schema.fields.map((f) => [f.name, String(f.type)]));
    expect(fields).toEqual({
      time_unix_nano: 'Int64',
      ts: 'Timestamp<MICROSECOND, UTC>',
      body: 'Utf8',
      attributes: 'Map<{key:Utf8, value:Utf8}>',
      severity_number: 'Int32',
    });
  });

  it('a huge cross join (1e18 pairs, small build side) with timeoutMs 200 ends with kind timeout', async () => {
    const got = await refusal(run('SELECT sum(a.range + b.range) FROM range(1000000000000) a, range(1000000) b', { timeoutMs: 200 }));
    expect(got).toEqual({ kind: 'timeout', message: 'query exceeded the time limit of 200 ms' });
  });

  it('a query whose caller went away is interrupted (kind canceled) long before its deadline, also when the caller was gone before it started', async () => {
    const caller = new AbortController();
    const running = refusal(runSandboxedSelect({ views, sql: 'SELECT sum(a.range + b.range) FROM range(1000000000000) a, range(1000000) b', timeoutMs: 600_000, threads: 2, memoryLimit: '256MB', signal: caller.signal }));
    setTimeout(() => caller.abort(), 100);
    expect(await running).toEqual({ kind: 'canceled', message: 'the query was cancelled by its caller' });
    expect(await refusal(runSandboxedSelect({ views, sql: 'SELECT 1', timeoutMs: 10_000, signal: caller.signal }))).toEqual({ kind: 'canceled', message: 'the query was cancelled by its caller' });
  }, 30_000);

  it('maxRows truncates (mid-chunk and exactly at a chunk boundary) and says so', async () => {
    const r10 = await run('SELECT trace_id FROM traces ORDER BY trace_id', { maxRows: 10 });
    expect(r10.rowCount).toBe(10);
    expect(r10.truncated).toBe(true);
    // The schema says so too: a Flight client sees it.
    expect(r10.table.schema.metadata.get('floe.truncated_at_rows')).toBe('10');
    expect(column(r10.table, 'trace_id')[0]).toBe(TRACE_A);
    const r2048 = await run('SELECT trace_id FROM traces ORDER BY trace_id', { maxRows: 2048 });
    expect(r2048.rowCount).toBe(2048);
    expect(r2048.truncated).toBe(true);
    const all = await run('SELECT trace_id FROM traces ORDER BY trace_id', { maxRows: 5003 });
    expect(all.rowCount).toBe(5003);
    expect(all.truncated).toBe(false);
    expect(all.table.schema.metadata.size).toBe(0);
    expect(all.table.batches.length).toBeGreaterThan(1);
  });

  it('refuses a result past maxBytes (too_large, naming the limit), whose rows DuckDB makes without touching its memory limit', async () => {
    // 20,000 rows of 10 kB: 200 MB held in the querier's heap at once without the cap.
    const sql = "SELECT repeat('x', 10000) AS v FROM range(20000)";
    const got = await refusal(run(sql, { maxBytes: 8 * 1024 * 1024 }));
    expect(got).toEqual({ kind: 'too_large', message: 'the result is larger than the 8 MiB a query may return (querier.max_result_mb); select fewer rows or columns, or aggregate' });
    // Under the cap the same shape answers whole.
    const fits = await run("SELECT repeat('x', 10000) AS v FROM range(500)", { maxBytes: 8 * 1024 * 1024 });
    expect(fits.rowCount).toBe(500);
    expect(fits.table.getChild('v')!.get(499)).toHaveLength(10000);
  });

  it('maps DuckDB types to Arrow types', async () => {
    const r = await run(`SELECT
        1::TINYINT AS i8, 2::SMALLINT AS i16, 3::INTEGER AS i32, 9007199254740993::BIGINT AS i64,
        4::UTINYINT AS u8, 5::UINTEGER AS u32, 18446744073709551615::UBIGINT AS u64,
        1.5::FLOAT AS f32, 2.25::DOUBLE AS f64, 12.345::DECIMAL(10,3) AS dec, true AS b,
        'héllo' AS s, '\\x00\\xFF'::BLOB AS bin, DATE '2024-02-29' AS d,
        TIMESTAMP '2024-01-02 03:04:05.123456' AS ts, TIMESTAMPTZ '2024-01-02 03:04:05.000001+00' AS tstz,
        '5f8b6f3e-2c1a-4d7b-9e7f-0123456789ab'::UUID AS id, 170141183460469231731687303715884105727::HUGEINT AS h,
        [1, 2, NULL]::INTEGER[] AS l, {'a': 1, 'b': 'x'} AS st, MAP {'k': 1::BIGINT} AS m, INTERVAL 1 DAY AS iv,
        NULL::VARCHAR AS nul`);
    const types = Object.fromEntries(r.table.schema.fields.map((f) => [f.name, String(f.type)]));
    expect(types).toEqual({
      i8: 'Int8', i16: 'Int16', i32: 'Int32', i64: 'Int64', u8: 'Uint8', u32: 'Uint32', u64: 'Uint64',
      f32: 'Float32', f64: 'Float64', dec: 'Float64', b: 'Bool', s: 'Utf8', bin: 'Binary', d: 'Date32<DAY>',
      ts: 'Timestamp<MICROSECOND>', tstz: 'Timestamp<MICROSECOND, UTC>', id: 'Utf8', h: 'Utf8',
      l: 'List<Int32>', st: 'Struct<{a:Int32, b:Utf8}>', m: 'Map<{key:Utf8, value:Int64}>', iv: 'Utf8', nul: 'Utf8',
    });
    const row = r.table.get(0)!;
    expect(row['i64']).toBe(9007199254740993n);
    expect(row['u64']).toBe(18446744073709551615n);
    expect(row['f32']).toBe(1.5);
    expect(row['dec']).toBe(12.345);
    expect(row['b']).toBe(true);
    expect(row['s']).toBe('héllo');
    expect([...(row['bin'] as Uint8Array)]).toEqual([0, 255]);
    // Arrow JS reads DateDay and Timestamp back as epoch milliseconds; the stored µs are exact.
    expect(row['d']).toBe(Date.UTC(2024, 1, 29));
    const tsRaw = r.table.getChild('ts')!.data[0]!.values as BigInt64Array;
    expect(tsRaw[0]).toBe(BigInt(Date.UTC(2024, 0, 2, 3, 4, 5)) * 1000n + 123456n);
    const tstzRaw = r.table.getChild('tstz')!.data[0]!.values as BigInt64Array;
    expect(tstzRaw[0]).toBe(BigInt(Date.UTC(2024, 0, 2, 3, 4, 5)) * 1000n + 1n);
    expect(row['id']).toBe('5f8b6f3e-2c1a-4d7b-9e7f-0123456789ab');
    expect(row['h']).toBe('170141183460469231731687303715884105727');
    expect([...(row['l'] as Iterable<unknown>)]).toEqual([1, 2, null]);
    expect((row['st'] as { toJSON(): unknown }).toJSON()).toEqual({ a: 1, b: 'x' });
    expect((row['m'] as { toJSON(): unknown }).toJSON()).toEqual({ k: 1n });
    expect(row['iv']).toBe('1 day');
    expect(row['nul']).toBe(null);
  });

  it('lists of numbers over several chunks: NULL lists, empty lists, NULL items, aggregates, a cut mid-chunk', async () => {
    // Row i: NULL when i % 7 = 3, empty when i % 7 = 5, else [i, NULL, i / 2] in l and [i, i / 2]
    // in m (DOUBLE; m's items have no NULL, which DuckDB stores without a NULL mask).
    const sql = `SELECT i,
        CASE WHEN i % 7 = 3 THEN NULL WHEN i % 7 = 5 THEN []::DOUBLE[] ELSE [i::DOUBLE, NULL, i / 2] END AS l,
        CASE WHEN i % 7 = 3 THEN NULL WHEN i % 7 = 5 THEN []::DOUBLE[] ELSE [i::DOUBLE, i / 2] END AS m
      FROM range(5000) t(i) ORDER BY i`;
    const r = await run(sql, { maxRows: 4100 });
    expect(r.rowCount).toBe(4100);
    expect(r.truncated).toBe(true);
    expect(r.table.batches.length).toBeGreaterThan(1);
    expect(String(r.table.schema.fields[1]!.type)).toBe('List<Float64>');
    expect(String(r.table.schema.fields[2]!.type)).toBe('List<Float64>');
    // Every row, across the chunk boundaries at 2048 and 4096 and the cut at 4100.
    const rows = (name: string) => column(r.table, name).map((l) => (l === null ? null : [...(l as Iterable<unknown>)]));
    const want = (items: (i: number) => unknown[]) => Array.from({ length: 4100 }, (_, i) => (i % 7 === 3 ? null : i % 7 === 5 ? [] : items(i)));
    expect(rows('l')).toEqual(want((i) => [i, null, i / 2]));
    expect(rows('m')).toEqual(want((i) => [i, i / 2]));
    expect(rows('l')[4096]).toEqual([4096, null, 2048]);
    const agg = await run(`SELECT g, list(x::DOUBLE) AS xs FROM (SELECT i % 3 AS g, i AS x FROM range(30000) t(i)) GROUP BY g ORDER BY g`);
    const xs = column(agg.table, 'xs').map((l) => [...(l as Iterable<number>)].sort((a, b) => a - b));
    expect(xs.map((l) => l.length)).toEqual([10000, 10000, 10000]);
    expect(xs[2]!.slice(0, 3)).toEqual([2, 5, 8]);
    expect(xs[0]!.reduce((a, b) => a + b, 0)).toBe(3 * (9999 * 10000) / 2);
  });

  it('spills to a private temp directory under the lock and removes it afterwards', async () => {
    const tempDir = join(root, 'spill');
    await mkdir(tempDir, { recursive: true });
    const r = await runSandboxedSelect({
      views,
      sql: `SELECT count(*) AS n, max(h) AS top FROM (SELECT md5(x::VARCHAR) || md5((x + 1)::VARCHAR) AS h FROM range(3000000) t(x) ORDER BY h)`,
      timeoutMs: 60_000,
      memoryLimit: '64MB',
      threads: 2,
      tempDir,
    });
    expect(column(r.table, 'n')).toEqual([3000000n]);
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(tempDir)).toEqual([]);
  });
});

describe('createTrustedRunner', () => {
  let runner: TrustedRunner;
  beforeAll(() => {
    runner = createTrustedRunner({ threads: 2, memoryLimit: '512MB' });
  });
  afterAll(() => runner.close());

  it('answers over TEMP views; concurrent calls with the same view name see only their own files', async () => {
    const [acme, other] = await Promise.all([
      runner.run({ views: [{ name: 'traces', files: [acmeF1, acmeF2], emptySchemaSql: '' }], sql: 'SELECT count(*) AS n, min(name) AS first FROM traces', timeoutMs: 10_000 }),
      runner.run({ views: [{ name: 'traces', files: [otherF1], emptySchemaSql: '' }], sql: 'SELECT count(*) AS n, min(name) AS first FROM traces', timeoutMs: 10_000 }),
    ]);
    expect(column(acme.table, 'n')).toEqual([5003n]);
    expect(column(acme.table, 'first')).toEqual(['GET /orders']);
    expect(column(other.table, 'n')).toEqual([1n]);
    expect(column(other.table, 'first')).toEqual(['secret-span']);
  });

  it('binds parameters and truncates at maxRows', async () => {
    const r = await runner.run({
      views: [{ name: 'traces', files: [acmeF1, acmeF2], emptySchemaSql: '' }],
      sql: 'SELECT span_id FROM traces WHERE service_name = $1 ORDER BY span_id',
      params: ['gen'],
      maxRows: 3,
      timeoutMs: 10_000,
    });
    expect(column(r.table, 'span_id')).toEqual(['0000000000000000', '0000000000000001', '0000000000000002']);
    expect(r.truncated).toBe(true);
  });

  it('refuses a result past maxBytes, and the connection serves the next call', async () => {
    const view = { name: 'traces', files: [acmeF1, acmeF2], emptySchemaSql: '' };
    const big = runner.run({ views: [view], sql: "SELECT repeat(span_id, 1000) AS v FROM traces", maxBytes: 1024 * 1024, timeoutMs: 10_000 });
    await expect(big).rejects.toMatchObject({ kind: 'too_large' });
    const next = await runner.run({ views: [view], sql: 'SELECT count(*) AS n FROM traces', timeoutMs: 10_000 });
    expect(column(next.table, 'n')).toEqual([5003n]);
  });

  it('empty views are typed', async () => {
    const r = await runner.run({
      views: [{ name: 'logs', files: [], emptySchemaSql: 'body VARCHAR, severity_number INTEGER' }],
      sql: 'SELECT * FROM logs',
      timeoutMs: 10_000,
    });
    expect(r.rowCount).toBe(0);
    expect(r.table.schema.fields.map((f) => `${f.name}:${String(f.type)}`)).toEqual(['body:Utf8', 'severity_number:Int32']);
  });

  it('keeps the statement gate, and the deadline', async () => {
    const v = [{ name: 'traces', files: [acmeF1], emptySchemaSql: '' }];
    expect(await refusal(runner.run({ views: v, sql: 'SELECT 1; DROP VIEW traces', timeoutMs: 10_000 }))).toEqual({ kind: 'forbidden', message: SINGLE });
    expect(await refusal(runner.run({ views: v, sql: 'CREATE TABLE t (a INTEGER)', timeoutMs: 10_000 }))).toEqual({ kind: 'forbidden', message: SINGLE });
    expect(await refusal(runner.run({ views: v, sql: 'SELECT sum(a.range + b.range) FROM range(1000000000000) a, range(1000000) b', timeoutMs: 200 }))).toEqual({
      kind: 'timeout',
      message: 'query exceeded the time limit of 200 ms',
    });
    const caller = new AbortController();
    setTimeout(() => caller.abort(), 100);
    expect(await refusal(runner.run({ views: v, sql: 'SELECT sum(a.range + b.range) FROM range(1000000000000) a, range(1000000) b', timeoutMs: 600_000, signal: caller.signal }))).toEqual({
      kind: 'canceled',
      message: 'the query was cancelled by its caller',
    });
    // The views of earlier calls are gone: they were TEMP views of connections that are closed.
    const later = await refusal(runner.run({ views: [], sql: 'SELECT * FROM traces', timeoutMs: 10_000 }));
    expect(later.kind).toBe('bad_sql');
    expect(later.message).toMatch(/^Catalog Error: Table with name traces does not exist!/);
  });

  it('close() with calls connecting, setting up and running lets each end cleanly before the instance goes', async () => {
    // close() lands after 0 to 19 microtasks (calls still awaiting the instance, or inside
    // instance.connect() on DuckDB's threads), after the poll phase, or after 1–3 ms (views being
    // created, queries running). Closing the instance under a connect is a use-after-free: before
    // the fix this test killed its worker process ("Worker exited unexpectedly").
    const waits: Array<() => Promise<unknown>> = [
      ...Array.from({ length: 20 }, (_, k) => async () => {
        for (let i = 0; i < k; i++) await Promise.resolve();
      }),
      () => new Promise((res) => setImmediate(res)),
      ...[1, 2, 3].map((ms) => () => new Promise((res) => setTimeout(res, ms))),
    ];
    for (const wait of waits) {
      const r = createTrustedRunner({ threads: 2, memoryLimit: '256MB' });
      await r.run({ views: [], sql: 'SELECT 1', timeoutMs: 10_000 }); // the instance exists
      const calls = Array.from({ length: 6 }, (_, i) =>
        r.run({ views: [{ name: 'traces', files: [acmeF1, acmeF2], emptySchemaSql: '' }], sql: `SELECT count(*) + ${i} AS n FROM traces`, timeoutMs: 10_000 }),
      );
      await wait();
      r.close();
      for (const [i, outcome] of (await Promise.allSettled(calls)).entries()) {
        if (outcome.status === 'fulfilled') expect(column(outcome.value.table, 'n')).toEqual([5003n + BigInt(i)]);
        else expect(outcome.reason).toMatchObject({ kind: 'internal' });
      }
      expect(await refusal(r.run({ views: [], sql: 'SELECT 1', timeoutMs: 10_000 }))).toEqual({ kind: 'internal', message: 'trusted runner is closed' });
    }
  });

  it('schemaKeys: equal for files of one schema, different for a file with another column; a missing file names no path', async () => {
    const [k1, k2, kOther] = await runner.schemaKeys([acmeF1, acmeF2, otherF1], 10_000);
    expect(k1).toBe(kOther);
    expect(k2).not.toBe(k1);
    expect(await runner.schemaKeys([], 10_000)).toEqual([]);
    const missing = join(acmeDir, 'gone.parquet');
    const got = await refusal(runner.schemaKeys([acmeF1, missing], 10_000));
    expect(got.kind).toBe('internal');
    expect(got.message).not.toContain(acmeDir);
  });

  it("FileSchemas over the runner's probe: files of one schema are the same, a file with another column is not", async () => {
    const schemas = new FileSchemas((paths, timeoutMs) => runner.schemaKeys(paths, timeoutMs));
    expect(await schemas.same([acmeF1, otherF1], 10_000)).toBe(true);
    expect(await schemas.same([acmeF1, acmeF2], 10_000)).toBe(false);
    expect(await schemas.same([otherF1, acmeF1, acmeF2], 10_000)).toBe(false);
    expect(await schemas.same([acmeF1, join(acmeDir, 'gone.parquet')], 10_000)).toBe(false);
  });

  it('a view of files of one schema (sameSchema) reads them without matching by name; hive-style directories add no column', async () => {
    const hourDir = join(root, 'acme', 'default', 'traces', 'data', 'timestamp_hour=472222');
    await mkdir(hourDir, { recursive: true });
    const inHour = join(hourDir, '00003.parquet');
    const inst = await DuckDBInstance.create(':memory:');
    const conn = await inst.connect();
    try {
      await conn.run(`COPY (SELECT * FROM read_parquet('${acmeF1}')) TO '${inHour}' (FORMAT parquet)`);
    } finally {
      conn.closeSync();
      inst.closeSync();
    }
    const [a, b] = await runner.schemaKeys([acmeF1, inHour], 10_000);
    expect(a).toBe(b);
    for (const sameSchema of [true, false]) {
      const r = await runner.run({ views: [{ name: 'traces', files: [acmeF1, inHour], emptySchemaSql: '', sameSchema }], sql: 'SELECT * FROM traces ORDER BY span_id, name', timeoutMs: 10_000 });
      expect(r.table.schema.fields.map((f) => f.name)).toEqual(['trace_id', 'span_id', 'name', 'service_name', 'start_time_unix_nano', 'duration_nano', 'span_attributes']);
      expect(column(r.table, 'span_id')).toEqual(['0000000000000001', '0000000000000001', '0000000000000002', '0000000000000002', '0000000000000003', '0000000000000003']);
    }
    // Files of two schemas without the flag: the older file reads NULL in the added column.
    const mixed = await runner.run({ views: [{ name: 'traces', files: [acmeF1, acmeF2], emptySchemaSql: '' }], sql: 'SELECT count(*) AS n, count(http_status) AS with_status FROM traces', timeoutMs: 10_000 });
    expect(column(mixed.table, 'n')).toEqual([5003n]);
    expect(column(mixed.table, 'with_status')).toEqual([5000n]);
  });

  it('a table name that is no name (a path in quotes) is bad_sql, not internal', async () => {
    const got = await refusal(runSandboxedSelect({ views: [{ name: 'acme.../other.traces', files: [], emptySchemaSql: 'SELECT 1 AS a' }], sql: 'SELECT 1', timeoutMs: 10_000, threads: 1, memoryLimit: '256MB' }));
    expect(got).toEqual({ kind: 'bad_sql', message: 'invalid table name "acme.../other.traces"' });
  });

  it('refuses dotted view names (TEMP views cannot live in another catalog)', async () => {
    const got = await refusal(runner.run({ views: [{ name: 'acme.default.traces', files: [acmeF1], emptySchemaSql: '' }], sql: 'SELECT 1', timeoutMs: 10_000 }));
    expect(got).toEqual({ kind: 'internal', message: 'trusted runner view names must be single identifiers (got "acme.default.traces")' });
  });
});
