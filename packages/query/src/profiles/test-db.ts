import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { PlannerTable, PrintedSql } from '../sql/printer.ts';
import { lit, mapLiteral as map, runPrinted } from '../sql/test-db.ts';

/**
 * Test support only (never exported from the package): an in-memory DuckDB holding a `profiles`
 * table, so the plans of plan.ts run the way the querier runs them (parameters bound like
 * services/querier's bindParams). The columns mirror packages/schema/src/profiles.ts, which this
 * layer-1 package may not import; packages/testkit/test/profilequery.e2e.test.ts runs the same
 * plans against the table the writer creates from it. Rows hold samples_json and
 * stacktraces_json exactly as services/acceptor/src/profiles-to-rows.ts writes them.
 */
const MAP = (t: string) => `MAP(VARCHAR, ${t})`;
const COLUMNS: Array<[string, string]> = [
  ['timestamp', 'TIMESTAMPTZ'],
  ['time_unix_nano', 'BIGINT'],
  ['service_name', 'VARCHAR'],
  ['profile_id', 'VARCHAR'],
  ['profile_type', 'VARCHAR'],
  ['sample_type', 'VARCHAR'],
  ['sample_unit', 'VARCHAR'],
  ['period_type', 'VARCHAR'],
  ['period_unit', 'VARCHAR'],
  ['period', 'BIGINT'],
  ['duration_nano', 'BIGINT'],
  ['trace_id', 'VARCHAR'],
  ['span_id', 'VARCHAR'],
  ['total_value', 'BIGINT'],
  ['samples_json', 'VARCHAR'],
  ['stacktraces_json', 'VARCHAR'],
  ['scope_name', 'VARCHAR'],
  ['scope_version', 'VARCHAR'],
  ...(['profile', 'resource'] as const).flatMap((scope) => [
    [`${scope}_attr_str`, MAP('VARCHAR')] as [string, string],
    [`${scope}_attr_int`, MAP('BIGINT')] as [string, string],
    [`${scope}_attr_double`, MAP('DOUBLE')] as [string, string],
    [`${scope}_attr_bool`, MAP('BOOLEAN')] as [string, string],
  ]),
];

/** The profiles table as the planner sees it (what the router passes from @floe/schema). */
export const PROFILES: PlannerTable = { name: 'profiles', columns: COLUMNS.map(([name]) => ({ name })) };

/** PROFILES with materialized label columns (column name → attribute key), as a tenant's table may have them. */
export const withLabelColumns = (labels: Readonly<Record<string, string>>): PlannerTable => ({
  name: 'profiles',
  columns: [...PROFILES.columns, ...Object.entries(labels).map(([name, attributeKey]) => ({ name, attributeKey }))],
});

export interface ProfileSample {
  /** Frame names, leaf first. */
  stack: string[];
  value: number;
  trace_id?: string;
  span_id?: string;
}

export interface ProfileRow {
  t: bigint;
  service: string;
  type: string;
  id?: string;
  durationNs?: bigint;
  traceId?: string;
  spanId?: string;
  samples: ProfileSample[];
  attrs?: { str?: Record<string, string>; int?: Record<string, number> };
  resource?: { str?: Record<string, string>; bool?: Record<string, boolean> };
}

/** samples_json and stacktraces_json as the acceptor writes them: distinct stacks in order of first use. */
export function profileJson(samples: readonly ProfileSample[]): { samples_json: string; stacktraces_json: string } {
  const stacks: string[][] = [];
  const ids = new Map<string, number>();
  const out = samples.map((s) => {
    const key = JSON.stringify(s.stack);
    let stack = ids.get(key);
    if (stack === undefined) {
      stack = stacks.push(s.stack) - 1;
      ids.set(key, stack);
    }
    const sample: Record<string, unknown> = { stack, value: s.value, values: [s.value] };
    if (s.trace_id) Object.assign(sample, { trace_id: s.trace_id, span_id: s.span_id });
    return sample;
  });
  return { samples_json: JSON.stringify(out), stacktraces_json: JSON.stringify(stacks) };
}

export interface ProfilesDb {
  run(q: PrintedSql): Promise<Array<Record<string, unknown>>>;
  close(): void;
}

/**
 * `labels`: materialized label columns (column name → attribute key), filled as the writer fills
 * them: the profile's attribute, else the resource's, as text.
 */
export async function openProfilesDb(rows: readonly ProfileRow[], labels: Readonly<Record<string, string>> = {}): Promise<ProfilesDb> {
  const db = await DuckDBInstance.create(':memory:');
  const c: DuckDBConnection = await db.connect();
  const columns = [...COLUMNS, ...Object.keys(labels).map((n) => [n, 'VARCHAR'] as [string, string])];
  await c.run(`CREATE TABLE profiles (${columns.map(([n, t]) => `"${n}" ${t}`).join(', ')})`);
  for (const r of rows) {
    const [, sampleType, sampleUnit, periodType, periodUnit] = r.type.split(':') as [string, string, string, string, string];
    const json = profileJson(r.samples);
    const cols: Record<string, string> = {
      timestamp: `make_timestamp(${(r.t / 1000n).toString()}::BIGINT)::TIMESTAMPTZ`,
      time_unix_nano: r.t.toString(),
      service_name: lit(r.service),
      profile_id: r.id ? lit(r.id) : 'NULL',
      profile_type: lit(r.type),
      sample_type: lit(sampleType),
      sample_unit: lit(sampleUnit),
      period_type: lit(periodType),
      period_unit: lit(periodUnit),
      duration_nano: (r.durationNs ?? 10_000_000_000n).toString(),
      trace_id: r.traceId ? lit(r.traceId) : 'NULL',
      span_id: r.spanId ? lit(r.spanId) : 'NULL',
      total_value: String(r.samples.reduce((a, s) => a + s.value, 0)),
      samples_json: lit(json.samples_json),
      stacktraces_json: lit(json.stacktraces_json),
      profile_attr_str: map(r.attrs?.str, 'VARCHAR'),
      profile_attr_int: map(r.attrs?.int, 'BIGINT'),
      profile_attr_double: map(undefined, 'DOUBLE'),
      profile_attr_bool: map(undefined, 'BOOLEAN'),
      resource_attr_str: map(r.resource?.str, 'VARCHAR'),
      resource_attr_int: map(undefined, 'BIGINT'),
      resource_attr_double: map(undefined, 'DOUBLE'),
      resource_attr_bool: map(r.resource?.bool, 'BOOLEAN'),
    };
    for (const [column, key] of Object.entries(labels)) {
      const v = r.attrs?.str?.[key] ?? r.attrs?.int?.[key] ?? r.resource?.str?.[key] ?? r.resource?.bool?.[key];
      cols[column] = v === undefined ? 'NULL' : lit(String(v));
    }
    await c.run(`INSERT INTO profiles (${Object.keys(cols).map((k) => `"${k}"`).join(', ')}) VALUES (${Object.values(cols).join(', ')})`);
  }
  return {
    run: (q) => runPrinted(c, q),
    close() {
      c.closeSync();
      db.closeSync();
    },
  };
}
