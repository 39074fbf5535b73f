import { DuckDBInstance } from '@duckdb/node-api';
import type { PlannerTable, PrintedSql } from './printer.ts';
import { lit, mapLiteral, runPrinted, type Attrs } from './test-db.ts';

/**
 * Test support only: an in-memory DuckDB holding a `traces` table with the columns of
 * packages/schema/src/traces.ts (which this layer-1 package may not import; the router passes the
 * real definition, and packages/testkit/test/trace-search.e2e.test.ts runs the same plans against
 * tables the writer created).
 */
const MAP = (t: string) => `MAP(VARCHAR, ${t})`;
const TRACES_COLUMNS: Array<[string, string]> = [
  ['timestamp', 'TIMESTAMPTZ'],
  ['trace_id', 'VARCHAR'],
  ['span_id', 'VARCHAR'],
  ['parent_span_id', 'VARCHAR'],
  ['trace_state', 'VARCHAR'],
  ['name', 'VARCHAR'],
  ['kind', 'VARCHAR'],
  ['start_time_unix_nano', 'BIGINT'],
  ['end_time_unix_nano', 'BIGINT'],
  ['duration_nano', 'BIGINT'],
  ['status_code', 'VARCHAR'],
  ['status_message', 'VARCHAR'],
  ['service_name', 'VARCHAR'],
  ['scope_name', 'VARCHAR'],
  ['scope_version', 'VARCHAR'],
  ['flags', 'BIGINT'],
  ...(['span', 'resource'] as const).flatMap((scope) => [
    [`${scope}_attr_str`, MAP('VARCHAR')] as [string, string],
    [`${scope}_attr_int`, MAP('BIGINT')] as [string, string],
    [`${scope}_attr_double`, MAP('DOUBLE')] as [string, string],
    [`${scope}_attr_bool`, MAP('BOOLEAN')] as [string, string],
  ]),
  ['events_json', 'VARCHAR'],
  ['links_json', 'VARCHAR'],
  ['dropped_counts', 'VARCHAR'],
];

export const TRACES: PlannerTable = { name: 'traces', columns: TRACES_COLUMNS.map(([name]) => ({ name })) };

export interface SpanRow {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: string;
  startNs: bigint;
  durationNs: bigint;
  status?: string;
  service: string;
  span?: Attrs;
  resource?: Attrs;
}

export interface TracesDb {
  run(q: PrintedSql): Promise<Array<Record<string, unknown>>>;
  close(): void;
}

export async function openTracesDb(rows: SpanRow[]): Promise<TracesDb> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(`CREATE TABLE traces (${TRACES_COLUMNS.map(([n, t]) => `"${n}" ${t}`).join(', ')})`);
  for (const r of rows) {
    const cols: Record<string, string> = {
      timestamp: `make_timestamp(${r.startNs / 1000n}::BIGINT)::TIMESTAMPTZ`,
      trace_id: lit(r.traceId),
      span_id: lit(r.spanId),
      parent_span_id: lit(r.parentSpanId ?? ''),
      name: lit(r.name),
      kind: lit(r.kind ?? 'internal'),
      start_time_unix_nano: String(r.startNs),
      end_time_unix_nano: String(r.startNs + r.durationNs),
      duration_nano: String(r.durationNs),
      status_code: lit(r.status ?? 'unset'),
      service_name: lit(r.service),
    };
    for (const scope of ['span', 'resource'] as const) {
      const a = r[scope];
      cols[`${scope}_attr_str`] = mapLiteral(a?.str, 'VARCHAR');
      cols[`${scope}_attr_int`] = mapLiteral(a?.int, 'BIGINT');
      cols[`${scope}_attr_double`] = mapLiteral(a?.double, 'DOUBLE');
      cols[`${scope}_attr_bool`] = mapLiteral(a?.bool, 'BOOLEAN');
    }
    await c.run(`INSERT INTO traces (${Object.keys(cols).map((k) => `"${k}"`).join(', ')}) VALUES (${Object.values(cols).join(', ')})`);
  }
  return {
    run: (q) => runPrinted(c, q),
    close() {
      c.closeSync();
      db.closeSync();
    },
  };
}
