import { LABEL_COLUMNS } from '@floe/query';

/**
 * Which log queries may resolve a label to a materialized label column (spec 1, "Log label
 * resolution" rules 4-5), so that only those ask for the caller's table columns
 * (../table-columns.ts).
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
