import { flightDoGet, TRUNCATED_AT_ROWS } from '@floe/flight';
import type { Table } from 'apache-arrow';

export interface SqlOptions {
  url: string;
  apiKey?: string;
  tenant?: string;
  dataset?: string;
  timeout: string;
  json?: boolean;
  /** Values for `$1`, `$2`, … in order (parseParam). */
  param?: string[];
}

/**
 * A `--param` value: a JSON number, true, false or null as that value, anything else as text
 * (`--param '"007"'` for text that reads as a number). Bound by the querier, never spliced into
 * the SQL.
 */
export function parseParam(text: string): string | number | boolean | null {
  try {
    const v: unknown = JSON.parse(text);
    if (v === null || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') return v;
  } catch {
    // Not JSON: the text itself.
  }
  return text;
}

const plain = (v: unknown): unknown => {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
};

export function rowsOf(table: Table): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const row of table) if (row) out.push(plain(row.toJSON()) as Record<string, unknown>);
  return out;
}

export function formatTable(columns: string[], rows: Record<string, unknown>[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? 'NULL' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const grid = rows.map((r) => columns.map((c) => cell(r[c]).replaceAll('\n', '\\n')));
  const widths = columns.map((c, i) => Math.min(60, Math.max(c.length, ...grid.map((g) => g[i]!.length))));
  const line = (cells: string[]) => cells.map((s, i) => (s.length > widths[i]! ? `${s.slice(0, widths[i]! - 1)}…` : s.padEnd(widths[i]!))).join(' | ');
  return [line(columns), widths.map((w) => '-'.repeat(w)).join('-+-'), ...grid.map(line), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n');
}

/**
 * `floe sql`: the ticket is the SQL text itself, the simplest form any Flight client can send, or
 * with `--param` values the querier's JSON form `{"sql", "params"}`.
 */
export async function runSql(query: string, opts: SqlOptions): Promise<number> {
  if (!opts.apiKey || !opts.tenant) {
    process.stderr.write('floe sql: --api-key and --tenant (or FLOE_API_KEY and FLOE_TENANT) are required\n');
    return 2;
  }
  const deadlineMs = Number(opts.timeout);
  if (!Number.isFinite(deadlineMs) || deadlineMs <= 0) {
    process.stderr.write(`floe sql: --timeout must be a positive number of milliseconds, not ${JSON.stringify(opts.timeout)}\n`);
    return 2;
  }
  const metadata: Record<string, string> = { authorization: `Bearer ${opts.apiKey}`, 'x-tenant-id': opts.tenant };
  if (opts.dataset) metadata['x-dataset-id'] = opts.dataset;
  try {
    const params = (opts.param ?? []).map(parseParam);
    const ticket = Buffer.from(params.length > 0 ? JSON.stringify({ sql: query, params }) : query);
    const table = await flightDoGet({ url: opts.url, ticket, metadata, deadlineMs });
    const cutAt = table.schema.metadata.get(TRUNCATED_AT_ROWS);
    if (cutAt !== undefined) process.stderr.write(`floe sql: warning: the result was cut at ${cutAt} rows (querier.max_result_rows); narrow the query or add a LIMIT\n`);
    const rows = rowsOf(table);
    if (opts.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
    else process.stdout.write(`${formatTable(table.schema.fields.map((f) => f.name), rows)}\n`);
    return 0;
  } catch (err) {
    const e = err as { code?: number; details?: string; message?: string };
    process.stderr.write(`floe sql: ${e.details ?? e.message ?? String(err)}${e.code !== undefined ? ` (gRPC code ${e.code})` : ''}\n`);
    return 1;
  }
}
