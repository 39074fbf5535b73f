import { LABEL_COLUMNS, type PlannerTable } from '@floe/query';
import { logsTable, sanitizeLabelKey } from '@floe/schema';

/**
 * The logs table a request plans against: @floe/schema's logsTable plus the materialized label
 * columns (`label_<key>`) that the caller's own table recorded at its creation (spec 1, "Log label
 * resolution" rules 4-5). Tables differ per tenant and dataset, so the router reads the columns
 * of the caller's logs table from the Iceberg catalog (the table's own definition, label columns
 * included; no querier round trip). Answers are cached per (tenant, dataset): a table's label columns are fixed at
 * creation, so a table that has some keeps them; a table without any (or not created yet) is asked
 * again after a few seconds, so labels apply soon after the table is created.
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

const BASE_COLUMNS = new Set(logsTable.columns.map((c) => c.name));

/**
 * The planner table for the columns a logs view has. A label name resolves to a label column
 * `label_<sanitised name>` (the exact key, or its underscore spelling) only when that is
 * unambiguous from the columns alone: a name with characters a key's sanitised form cannot tell
 * apart (upper case, `-`, …) and a column involved in a `_2` suffix collision resolve to no column,
 * so the label falls back to attribute-map extraction, which reads the same data for the exact key
 * (a materialized attribute stays in its map too).
 */
export function plannerTableFromColumns(names: readonly string[]): PlannerTable {
  const labels = new Set(names.filter((n) => !BASE_COLUMNS.has(n) && n.startsWith('label_')));
  if (labels.size === 0) return logsTable;
  const labelColumn = (label: string): string | undefined => {
    if (!/^[a-z0-9_.]+$/u.test(label)) return undefined;
    const column = `label_${sanitizeLabelKey(label)}`;
    if (!labels.has(column)) return undefined;
    // Two keys that sanitise alike: the later got `_2` (`_3`…); queries on either use the maps.
    if (labels.has(`${column}_2`)) return undefined;
    const suffixed = /^(.+)_\d+$/u.exec(column);
    if (suffixed && labels.has(suffixed[1]!)) return undefined;
    return column;
  };
  return {
    name: logsTable.name,
    columns: [...logsTable.columns, ...[...labels].map((name) => ({ name }))],
    labelColumn,
  };
}

export interface LogTableCache {
  /** The planner table of (tenant, dataset); `columns` lists its logs view's columns when asked. */
  get(tenant: string, dataset: string, columns: () => Promise<readonly string[]>): Promise<PlannerTable>;
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
