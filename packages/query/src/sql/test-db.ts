import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { PlannerTable, PrintedSql } from './printer.ts';

/**
 * Test support only (never exported from the package): an in-memory DuckDB holding a `logs`
 * table, so tests can run printed plans the way the querier does (same parameter binding as
 * services/querier's bindParams) and check rows, not just text.
 *
 * The columns mirror packages/schema/src/logs.ts, which this layer-1 package may not import (the
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
const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;
const map = (m: Record<string, string | number | boolean> | undefined, type: string) => {
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
      cols[`${scope}_attr_str`] = map(a?.str, 'VARCHAR');
      cols[`${scope}_attr_int`] = map(a?.int, 'BIGINT');
      cols[`${scope}_attr_double`] = map(a?.double, 'DOUBLE');
      cols[`${scope}_attr_bool`] = map(a?.bool, 'BOOLEAN');
    }
    await c.run(`INSERT INTO logs (${Object.keys(cols).map((k) => `"${k}"`).join(', ')}) VALUES (${Object.values(cols).join(', ')})`);
  }
  return {
    async run(q) {
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
    },
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
