import { FloeError } from '@floe/errors';
import { TABLES, type TableName } from '@floe/schema';

/**
 * Which Floe tables a SQL text names, so the querier builds views for exactly those:
 * `traces` and `sql_traces` (the caller's tenant and dataset) and `<tenant>.<dataset>.traces`.
 * A three-part name of another tenant is refused here with a clear message; anything this scan
 * misses simply has no view and fails to bind, so the scan can only narrow access, never widen it.
 */
export interface TableRef {
  /** The name the SQL uses (view name). */
  viewName: string;
  tenant: string;
  dataset: string;
  table: TableName;
}

const IDENT = String.raw`(?:"((?:[^"]|"")+)"|([A-Za-z0-9_-]+))`;
/**
 * The first part starts only where a name can start (not inside a bare name, not at a quote that
 * follows a quote): otherwise every position of a long run of name characters (a 256 KiB string
 * literal) is tried as a start and backtracked over, which is quadratic and held the event loop
 * for minutes.
 */
const FIRST_IDENT = String.raw`(?:(?<!")"((?:[^"]|"")+)"|(?<![A-Za-z0-9_-])([A-Za-z0-9_-]+))`;
const TABLE_NAMES = Object.keys(TABLES).join('|');
const QUALIFIED = new RegExp(String.raw`${FIRST_IDENT}\s*\.\s*${IDENT}\s*\.\s*(?:"(${TABLE_NAMES})"|\b(${TABLE_NAMES})\b)`, 'gi');

export function tableRefs(sql: string, caller: { tenant: string; dataset: string; isAdmin: boolean; datasetBound?: boolean }): TableRef[] {
  const refs = new Map<string, TableRef>();
  for (const name of Object.keys(TABLES) as TableName[]) {
    refs.set(name, { viewName: name, tenant: caller.tenant, dataset: caller.dataset, table: name });
    refs.set(`sql_${name}`, { viewName: `sql_${name}`, tenant: caller.tenant, dataset: caller.dataset, table: name });
  }
  for (const m of sql.matchAll(QUALIFIED)) {
    const tenant = (m[1]?.replaceAll('""', '"') ?? m[2] ?? '').toLowerCase();
    const dataset = (m[3]?.replaceAll('""', '"') ?? m[4] ?? '').toLowerCase();
    const table = (m[5] ?? m[6] ?? '').toLowerCase() as TableName;
    if (tenant !== caller.tenant && !caller.isAdmin) {
      throw new FloeError('forbidden', `access to tables of tenant ${JSON.stringify(tenant)} is not allowed`, { code: 'FLOE_ERR_SQL_OTHER_TENANT' });
    }
    // A key bound to one dataset gets 403 for any other in X-Dataset-ID; a three-part name is no way around that.
    if (caller.datasetBound === true && dataset !== caller.dataset) {
      throw new FloeError('forbidden', `this API key may read only dataset ${JSON.stringify(caller.dataset)}, not ${JSON.stringify(dataset)}`, { code: 'FLOE_ERR_AUTH_WRONG_DATASET' });
    }
    const viewName = `${tenant}.${dataset}.${table}`;
    refs.set(viewName, { viewName, tenant, dataset, table });
  }
  return [...refs.values()];
}

/** Whether the SQL text mentions a view name at all (views nobody uses are not built). */
export function mentions(sql: string, ref: TableRef): boolean {
  const last = ref.viewName.split('.').pop()!;
  return new RegExp(String.raw`\b${last}\b`, 'i').test(sql);
}
