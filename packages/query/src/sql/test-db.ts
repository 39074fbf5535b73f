import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { PlannerTable, PrintedSql } from './printer.ts';

/**
 * Test support only (never exported from the package): an in-memory DuckDB holding a `logs` or a
 * `metrics` table, so tests can run printed plans the way the querier does (same parameter
 * binding as services/querier's bindParams) and check rows, not just text.
 *
 * The columns mirror packages/schema/src/logs.ts and metrics.ts, which this layer-1 package may not import (the
 * router passes the real definition; packages/testkit/test/logquery.e2e.test.ts runs the same
 * plans against tables the writer created from it).
 */
const MAP = (t: string) => `MAP(VARCHAR, ${t})`;
const LOGS_COLUMNS: Array<[string, string]> = [
  ['timestamp', 'TIMESTAMPTZ'],
  ['time_unix_nano', 'BIGINT'],
  ['observed_time_unix_nano', 'BIGINT'],
  ['service_name', 'VARCHAR'],
  ['severity_text', 'VARCHAR'],
  ['severity_number', 'INTEGER'],
  ['body', 'VARCHAR'],
  ['body_type', 'VARCHAR'],
  ['trace_id', 'VARCHAR'],
  ['span_id', 'VARCHAR'],
  ['flags', 'BIGINT'],
  ['event_name', 'VARCHAR'],
  ['scope_name', 'VARCHAR'],
  ['scope_version', 'VARCHAR'],
  ['dropped_attributes_count', 'BIGINT'],
  ...(['log', 'resource', 'scope'] as const).flatMap((scope) => [
    [`${scope}_attr_str`, MAP('VARCHAR')] as [string, string],
    [`${scope}_attr_int`, MAP('BIGINT')] as [string, string],
    [`${scope}_attr_double`, MAP('DOUBLE')] as [string, string],
    [`${scope}_attr_bool`, MAP('BOOLEAN')] as [string, string],
  ]),
];

/** The logs table as the planner sees it (what the router passes from @floe/schema). */
export const LOGS: PlannerTable = { name: 'logs', columns: LOGS_COLUMNS.map(([name]) => ({ name })) };

export interface LogRow {
  t: number;
  service: string;
  severity: string;
  body: string;
  traceId?: string;
  log?: Attrs;
  resource?: Attrs;
  scope?: Attrs;
}

export interface Attrs {
  str?: Record<string, string>;
  int?: Record<string, number>;
  double?: Record<string, number>;
  bool?: Record<string, boolean>;
}

// Test-controlled text only: fixtures, not user input.
export const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;
export const mapLiteral = (m: Record<string, string | number | boolean> | undefined, type: string) => {
  const entries = Object.entries(m ?? {});
  if (entries.length === 0) return `MAP {}::MAP(VARCHAR, ${type})`;
  return `MAP {${entries.map(([k, v]) => `${lit(k)}: ${typeof v === 'string' ? lit(v) : String(v)}::${type}`).join(', ')}}`;
};

export interface LogsDb {
  run(q: PrintedSql): Promise<Array<Record<string, unknown>>>;
  /** The SQL runs and the table is still there afterwards with all its rows. */
  rowCount(): Promise<number>;
  close(): void;
}

export async function runPrinted(c: DuckDBConnection, q: PrintedSql): Promise<Array<Record<string, unknown>>> {
  const ps = await c.prepare(q.sql);
  q.params.forEach((v, i) => {
    if (v === null) ps.bindNull(i + 1);
    else if (typeof v === 'string') ps.bindVarchar(i + 1, v);
    else if (typeof v === 'boolean') ps.bindBoolean(i + 1, v);
    else if (Number.isSafeInteger(v)) ps.bindBigInt(i + 1, BigInt(v));
    else ps.bindDouble(i + 1, v);
  });
  const reader = await ps.runAndReadAll();
  return reader.getRowObjectsJS() as Array<Record<string, unknown>>;
}

export async function openLogsDb(rows: LogRow[]): Promise<LogsDb> {
  const db = await DuckDBInstance.create(':memory:');
  const c: DuckDBConnection = await db.connect();
  await c.run(`CREATE TABLE logs (${LOGS_COLUMNS.map(([n, t]) => `"${n}" ${t}`).join(', ')})`);
  for (const r of rows) {
    const cols: Record<string, string> = {
      timestamp: `make_timestamp(${r.t}::BIGINT)::TIMESTAMPTZ`,
      time_unix_nano: String(r.t),
      service_name: lit(r.service),
      severity_text: lit(r.severity),
      body: lit(r.body),
      trace_id: r.traceId ? lit(r.traceId) : 'NULL',
    };
    for (const scope of ['log', 'resource', 'scope'] as const) {
      const a = r[scope];
      cols[`${scope}_attr_str`] = mapLiteral(a?.str, 'VARCHAR');
      cols[`${scope}_attr_int`] = mapLiteral(a?.int, 'BIGINT');
      cols[`${scope}_attr_double`] = mapLiteral(a?.double, 'DOUBLE');
      cols[`${scope}_attr_bool`] = mapLiteral(a?.bool, 'BOOLEAN');
    }
    await c.run(`INSERT INTO logs (${Object.keys(cols).map((k) => `"${k}"`).join(', ')}) VALUES (${Object.values(cols).join(', ')})`);
  }
  return {
    run: (q) => runPrinted(c, q),
    async rowCount() {
      const r = await c.runAndReadAll('SELECT count(*)::INTEGER AS n FROM logs');
      return (r.getRowObjectsJS()[0] as { n: number }).n;
    },
    close() {
      c.closeSync();
      db.closeSync();
    },
  };
}

const METRICS_COLUMNS: Array<[string, string]> = [
  ['time_unix_nano', 'BIGINT'],
  ['metric_name', 'VARCHAR'],
  ['metric_type', 'VARCHAR'],
  ['description', 'VARCHAR'],
  ['unit', 'VARCHAR'],
  ['temporality', 'VARCHAR'],
  ['is_monotonic', 'BOOLEAN'],
  ['series_id', 'VARCHAR'],
  ['service_name', 'VARCHAR'],
  ['scope_name', 'VARCHAR'],
  ['value', 'DOUBLE'],
  ['count', 'BIGINT'],
  ['sum', 'DOUBLE'],
  ['explicit_bounds', 'DOUBLE[]'],
  ['bucket_counts', 'BIGINT[]'],
  ['exp_scale', 'INTEGER'],
  ['exp_zero_count', 'BIGINT'],
  ['exp_zero_threshold', 'DOUBLE'],
  ['exp_positive_offset', 'INTEGER'],
  ['exp_positive_bucket_counts', 'BIGINT[]'],
  ['exp_negative_offset', 'INTEGER'],
  ['exp_negative_bucket_counts', 'BIGINT[]'],
  ['quantiles', 'STRUCT(quantile DOUBLE, value DOUBLE)[]'],
  ['flags', 'BIGINT'],
  ...(['point', 'resource'] as const).flatMap((scope) => [
    [`${scope}_attr_str`, MAP('VARCHAR')] as [string, string],
    [`${scope}_attr_int`, MAP('BIGINT')] as [string, string],
    [`${scope}_attr_double`, MAP('DOUBLE')] as [string, string],
    [`${scope}_attr_bool`, MAP('BOOLEAN')] as [string, string],
  ]),
];

/** The metrics table as the planner sees it. */
export const METRICS: PlannerTable = { name: 'metrics', columns: METRICS_COLUMNS.map(([name]) => ({ name })) };

/** One stored data point; a column left out is NULL (attribute maps empty). */
export interface MetricRow {
  timeNs: bigint;
  name: string;
  type: 'gauge' | 'sum' | 'histogram' | 'exponential_histogram' | 'summary';
  seriesId: string;
  /** scope_name, e.g. REMOTE_WRITE_SCOPE for remote-written rows. */
  scope?: string;
  service?: string;
  isMonotonic?: boolean;
  value?: number;
  count?: number;
  sum?: number;
  explicitBounds?: number[];
  bucketCounts?: number[];
  exp?: { scale: number; zeroCount: number; zeroThreshold: number; positiveOffset: number; positive: number[] };
  quantiles?: Array<{ quantile: number; value: number }>;
  point?: Attrs;
  resource?: Attrs;
}

export interface MetricsDb {
  /** Rows as @floe/query's series builders read them: attribute maps as Map. */
  run(q: PrintedSql): Promise<Array<Record<string, unknown>>>;
  close(): void;
}

const num = (v: number | undefined) => (v === undefined ? 'NULL' : String(v));
const list = (v: number[] | undefined, type: string) => (v === undefined ? 'NULL' : `[${v.map(String).join(', ')}]::${type}[]`);

/**
 * `labels`: materialized label columns to add, column name → attribute key, filled as the writer
 * fills them (@floe/schema labelExpr): the key's value in the point's typed maps, then the
 * resource's, as text.
 */
export async function openMetricsDb(rows: MetricRow[], labels: Record<string, string> = {}): Promise<MetricsDb> {
  const db = await DuckDBInstance.create(':memory:');
  const c: DuckDBConnection = await db.connect();
  await c.run(`CREATE TABLE metrics (${METRICS_COLUMNS.map(([n, t]) => `"${n}" ${t}`).join(', ')})`);
  for (const r of rows) {
    const cols: Record<string, string> = {
      time_unix_nano: r.timeNs.toString(),
      metric_name: lit(r.name),
      metric_type: lit(r.type),
      series_id: lit(r.seriesId),
      scope_name: r.scope === undefined ? 'NULL' : lit(r.scope),
      service_name: r.service === undefined ? 'NULL' : lit(r.service),
      is_monotonic: r.isMonotonic === undefined ? 'NULL' : String(r.isMonotonic),
      value: num(r.value),
      count: num(r.count),
      sum: num(r.sum),
      explicit_bounds: list(r.explicitBounds, 'DOUBLE'),
      bucket_counts: list(r.bucketCounts, 'BIGINT'),
      exp_scale: num(r.exp?.scale),
      exp_zero_count: num(r.exp?.zeroCount),
      exp_zero_threshold: num(r.exp?.zeroThreshold),
      exp_positive_offset: num(r.exp?.positiveOffset),
      exp_positive_bucket_counts: list(r.exp?.positive, 'BIGINT'),
      quantiles: r.quantiles === undefined ? 'NULL' : `[${r.quantiles.map((q) => `{'quantile': ${q.quantile}, 'value': ${q.value}}`).join(', ')}]`,
    };
    for (const scope of ['point', 'resource'] as const) {
      const a = r[scope];
      cols[`${scope}_attr_str`] = mapLiteral(a?.str, 'VARCHAR');
      cols[`${scope}_attr_int`] = mapLiteral(a?.int, 'BIGINT');
      cols[`${scope}_attr_double`] = mapLiteral(a?.double, 'DOUBLE');
      cols[`${scope}_attr_bool`] = mapLiteral(a?.bool, 'BOOLEAN');
    }
    await c.run(`INSERT INTO metrics (${Object.keys(cols).map((k) => `"${k}"`).join(', ')}) VALUES (${Object.values(cols).join(', ')})`);
  }
  for (const [column, key] of Object.entries(labels)) {
    const lookups = (['point', 'resource'] as const).flatMap((scope) =>
      (['str', 'int', 'double', 'bool'] as const).map((type) => `CAST("${scope}_attr_${type}"[${lit(key)}] AS VARCHAR)`),
    );
    await c.run(`ALTER TABLE metrics ADD COLUMN "${column}" VARCHAR`);
    await c.run(`UPDATE metrics SET "${column}" = COALESCE(${lookups.join(', ')})`);
  }
  return {
    async run(q) {
      // DuckDB's JS values give a MAP as a list of {key, value}; the router's Arrow rows give maps.
      return (await runPrinted(c, q)).map((row) =>
        Object.fromEntries(
          Object.entries(row).map(([k, v]) => [k, /_attr_/.test(k) && Array.isArray(v) ? new Map((v as Array<{ key: string; value: unknown }>).map((e) => [e.key, e.value])) : v]),
        ),
      );
    },
    close() {
      c.closeSync();
      db.closeSync();
    },
  };
}
