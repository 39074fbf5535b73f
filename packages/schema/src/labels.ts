import { lastColumnId, quoteIdent } from './forms.ts';
import type { ColumnDef, TableDef } from './types.ts';

/**
 * Materialized labels (spec 1, "Log label resolution" rule 5; spec 2, provisioning rule 7):
 * configured attribute keys promoted to nullable text columns `label_<key>`, because a filter on
 * a column is about 20 times cheaper than on a map (reference/storage.md §2). A table gets them
 * only when it is created; the table records them (see @floe/iceberg, table property
 * `floe.materialized-labels`) and every later writer, compactor and reader rebuilds the same
 * per-table definition from that record with withMaterializedLabels, never from the current
 * configuration. The attribute stays in its typed map as well.
 *
 * A label is the key's value in the record's own typed maps, then in the resource's (the
 * table's labelScopes, in labelSources' order), whatever its type, as text: the column's `expr`
 * for DuckDB (rewrites, and the flushes DuckDB encodes), and the same lookup in the writer's own
 * encoder (@floe/storage sorted-batch-parquet.ts), which gives a label holding a double to DuckDB.
 */

export interface MaterializedLabel {
  /** The attribute key, exactly as configured (dots, case). */
  key: string;
  /** Its column: `label_` + the sanitised key, suffixed `_2`, `_3`… when taken. */
  column: string;
  /** Iceberg field id of the column. */
  id: number;
}

/**
 * Label columns take field ids from here up, far above every id a table definition uses (and
 * will use: definitions only add columns, with ids below this), so a later schema version can
 * never add a column whose id a label of an existing table already holds.
 */
export const LABEL_FIELD_ID_BASE = 10_000;

/** `k8s.pod.name` → `k8s_pod_name`: lower-cased, every character outside [a-z0-9_] as `_`. */
export const sanitizeLabelKey = (key: string): string => key.toLowerCase().replace(/[^a-z0-9_]/gu, '_');

/**
 * The label columns a table created now gets for `keys` (in configuration order): the name is
 * `label_<sanitised key>`; a name already taken by a column of the table or by an earlier label
 * gets `_2`, `_3`… (spec 1 rule 5: the later key's column gets the suffix). Ids are fresh, above
 * LABEL_FIELD_ID_BASE and the table's own. A key given twice counts once. Tables without
 * labelScopes get none.
 */
export function planMaterializedLabels(def: TableDef, keys: readonly string[]): MaterializedLabel[] {
  if (!def.labelScopes || def.labelScopes.length === 0) return [];
  const taken = new Set(def.columns.map((c) => c.name));
  const seen = new Set<string>();
  let nextId = Math.max(LABEL_FIELD_ID_BASE, lastColumnId(def)) + 1;
  const out: MaterializedLabel[] = [];
  for (const key of keys) {
    if (key === '' || seen.has(key)) continue;
    seen.add(key);
    const base = `label_${sanitizeLabelKey(key)}`;
    let column = base;
    for (let n = 2; taken.has(column); n++) column = `${base}_${n}`;
    taken.add(column);
    out.push({ key, column, id: nextId++ });
  }
  return out;
}

const sqlString = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** The typed maps of an attribute scope, string first: how a value of any type becomes text. */
const TYPED_MAPS = ['str', 'int', 'double', 'bool'] as const;

/** A typed map a label is looked up in: its column and value type (`str` is the text itself). */
export interface LabelSource {
  column: string;
  type: (typeof TYPED_MAPS)[number];
}

/**
 * Where a label's value comes from, in order: the typed maps of each of the table's label scopes
 * (within a scope, string first), those the table has. The first that holds the key gives it.
 */
export function labelSources(def: TableDef): LabelSource[] {
  const have = new Set(def.columns.map((c) => c.name));
  const out: LabelSource[] = [];
  for (const scope of def.labelScopes ?? []) {
    for (const type of TYPED_MAPS) {
      const column = `${scope}_attr_${type}`;
      if (have.has(column)) out.push({ column, type });
    }
  }
  return out;
}

/**
 * DuckDB expression for one label over the raw row: the key's value in the first of
 * labelSources that has it, as text. A map lookup of a missing key or a NULL map is NULL, so the
 * COALESCE falls through.
 */
export function labelExpr(def: TableDef, key: string): string {
  const k = sqlString(key);
  const parts = labelSources(def).map(({ column, type }) => {
    const v = `${quoteIdent(column)}[${k}]`;
    return type === 'str' ? v : `CAST(${v} AS VARCHAR)`;
  });
  return parts.length === 0 ? 'CAST(NULL AS VARCHAR)' : `COALESCE(${parts.join(', ')})`;
}

/**
 * The definition of one table instance: the signal's definition plus the label columns that
 * table recorded at creation (nullable strings computed by the writer). Every form (Iceberg
 * schema, Parquet FIELD_IDS, the writer's SELECT, an empty relation's DDL) then includes them.
 */
export function withMaterializedLabels(def: TableDef, labels: readonly MaterializedLabel[]): TableDef {
  if (labels.length === 0) return def;
  const names = new Set(def.columns.map((c) => c.name));
  const extra: ColumnDef[] = labels.map((l) => {
    if (names.has(l.column)) throw new Error(`table ${def.name}: label column ${l.column} collides with a column of the table`);
    names.add(l.column);
    return {
      name: l.column,
      id: l.id,
      type: 'string',
      expr: labelExpr(def, l.key),
      attributeKey: l.key,
      doc: `materialized label: attribute ${JSON.stringify(l.key)} of the ${(def.labelScopes ?? []).join(', then the ')} attributes, as text`,
    };
  });
  return { ...def, columns: [...def.columns, ...extra] };
}
