import { LABEL_COLUMNS, type PlannerTable } from '@floe/query';
import { logsTable } from '@floe/schema';

/**
 * The logs table a request plans against: @floe/schema's logsTable plus the materialized label
 * columns (`label_<key>`) that the caller's own table recorded at its creation (spec 1, "Log label
 * resolution" rules 4-5). Tables differ per tenant and dataset, so the router reads the columns
 * of the caller's logs table from the Iceberg catalog (the table's own definition, label columns
 * with the attribute key each holds; no querier round trip). Answers are cached per (tenant,
 * dataset): a table's label columns are fixed at creation, so a table that has some keeps them; a
 * table without any (or not created yet) is asked again after a few seconds, so labels apply soon
 * after the table is created.
 */

/** Keys of IR objects that name one label, and keys that hold a list of label names. */
const LABEL_KEYS = new Set(['label', 'unwrap', 'field']);
const LABEL_LIST_KEYS = new Set(['groupBy', 'by', 'labels']);
const NEVER_COLUMNS = new Set(['detected_level', '__error__', '__error_details__']);
const mayBeMaterialized = (name: string) => !(name in LABEL_COLUMNS) && !NEVER_COLUMNS.has(name);

/**
 * Whether a query's IR (or a list of label names) names any label that a materialized label
 * column could back: every label other than the fixed column ones. When none does, the request
 * plans against logsTable without asking for the table's columns.
 */
export function mayUseLabelColumn(ir: unknown): boolean {
  if (typeof ir === 'string') return mayBeMaterialized(ir);
  if (Array.isArray(ir)) return ir.some(mayUseLabelColumn);
  return walk(ir);
}

/** Inside an IR object only the label keys name labels (line filter values, kinds, … do not). */
function walk(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(walk);
  if (node === null || typeof node !== 'object') return false;
  for (const [k, v] of Object.entries(node)) {
    if (LABEL_KEYS.has(k) && typeof v === 'string' && mayBeMaterialized(v)) return true;
    if (LABEL_LIST_KEYS.has(k) && Array.isArray(v) && v.some((x) => typeof x === 'string' && mayBeMaterialized(x))) return true;
    if (typeof v === 'object' && walk(v)) return true;
  }
  return false;
}

/** How long the columns of a table with label columns, and of one without, are reused. */
export const LABELS_TTL_MS = 5 * 60_000;
export const NO_LABELS_TTL_MS = 2_000;

/** A column of a logs table's definition; a materialized label carries its attribute key. */
export type LogColumn = PlannerTable['columns'][number];

/**
 * The planner table for a logs table's columns: logsTable plus its materialized label columns,
 * each with the attribute key it holds, from which the planner resolves label names (the exact
 * key, or its underscore spelling when only one key has it: @floe/query's sql/log-labels.ts).
 */
export function plannerTableFromColumns(columns: readonly LogColumn[]): PlannerTable {
  const labels = columns.filter((c) => c.attributeKey !== undefined);
  if (labels.length === 0) return logsTable;
  return { name: logsTable.name, columns: [...logsTable.columns, ...labels] };
}

export interface LogTableCache {
  /** The planner table of (tenant, dataset); `columns` lists its logs table's columns when asked. */
  get(tenant: string, dataset: string, columns: () => Promise<readonly LogColumn[]>): Promise<PlannerTable>;
}

export function createLogTableCache(now: () => number = Date.now): LogTableCache {
  const cache = new Map<string, { at: number; ttl: number; table: Promise<PlannerTable> }>();
  return {
    get(tenant, dataset, columns) {
      const key = `${tenant}\u0000${dataset}`;
      const hit = cache.get(key);
      if (hit && now() - hit.at < hit.ttl) return hit.table;
      const entry = { at: now(), ttl: NO_LABELS_TTL_MS, table: columns().then(plannerTableFromColumns) };
      cache.set(key, entry);
      entry.table.then(
        (t) => {
          if (t !== logsTable) entry.ttl = LABELS_TTL_MS;
        },
        () => {
          if (cache.get(key) === entry) cache.delete(key);
        },
      );
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
      return entry.table;
    },
  };
}
