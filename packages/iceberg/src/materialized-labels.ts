import { LABEL_FIELD_ID_BASE, isTableName, tableDef, withMaterializedLabels, type MaterializedLabel, type TableDef } from '@floe/schema';
import { currentSchema } from './metadata.ts';
import type { TableHandle } from './types.ts';

/**
 * Where a Floe table records the materialized labels it was created with (spec 2, provisioning
 * rule 7: applied only at creation): a JSON array of {key, column, id}. Writers, the compactor and
 * readers rebuild the table's own definition from it (floeTableDef), never from the current
 * configuration, so a table keeps the label columns it was born with, and a table created before
 * the configuration (no property) keeps none.
 */
export const MATERIALIZED_LABELS_PROPERTY = 'floe.materialized-labels';

/** The table property recording `labels` (none when there are none). */
export const materializedLabelsProperties = (labels: readonly MaterializedLabel[]): Record<string, string> =>
  labels.length === 0 ? {} : { [MATERIALIZED_LABELS_PROPERTY]: JSON.stringify(labels.map(({ key, column, id }) => ({ key, column, id }))) };

/**
 * The labels a table recorded, in column order, limited to those whose column is in the table's
 * current schema as a string field of the recorded id, in the label id range (a column dropped or
 * retyped by another engine is no longer written; a signal column is never a label). A property
 * that does not parse yields none.
 */
export function recordedMaterializedLabels(handle: TableHandle): MaterializedLabel[] {
  const raw = handle.metadata.properties?.[MATERIALIZED_LABELS_PROPERTY];
  if (!raw) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const fields = new Map(currentSchema(handle.metadata).fields.map((f) => [f.name, f]));
  const out: MaterializedLabel[] = [];
  for (const item of parsed as unknown[]) {
    if (!item || typeof item !== 'object') continue;
    const { key, column, id } = item as Record<string, unknown>;
    if (typeof key !== 'string' || typeof column !== 'string' || typeof id !== 'number' || id <= LABEL_FIELD_ID_BASE) continue;
    const field = fields.get(column);
    if (!field || field.id !== id || field.type !== 'string') continue;
    out.push({ key, column, id });
  }
  return out;
}

/** `def` (the signal's definition) plus the label columns the table recorded. */
export function withRecordedLabels(def: TableDef, handle: TableHandle): TableDef {
  const own = new Set(def.columns.map((c) => c.name));
  return withMaterializedLabels(def, recordedMaterializedLabels(handle).filter((l) => !own.has(l.column)));
}

/**
 * The definition of this table instance: its signal's definition (by table name) plus the label
 * columns it recorded at creation. What the writer writes, the compactor rewrites and a reader
 * of an empty table types its relation with.
 */
export function floeTableDef(handle: TableHandle): TableDef {
  if (!isTableName(handle.name)) throw new Error(`${handle.namespace}.${handle.name} is not a Floe table`);
  return withRecordedLabels(tableDef(handle.name), handle);
}
