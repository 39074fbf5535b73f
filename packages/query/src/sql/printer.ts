import { FloeError } from '@floe/errors';

/**
 * The only ways text gets into printed SQL (STYLE habit 5): values become `$n` parameters,
 * identifiers are quoted and must be columns of the table definition, and the few literals the
 * planner writes itself (fixed label names) go through `literal`, which escapes and refuses NUL.
 * Nothing a user typed is ever concatenated into the SQL text.
 */

export type SqlParam = string | number | boolean | null;

/**
 * What the planner knows of a table: its name and its columns (materialized labels carry their
 * attribute key). Structurally a subset of @floe/schema's TableDef, which callers pass in: the
 * schema package stays the one definition of the columns (the identifier allowlist), and a table
 * whose columns differ (materialized labels are per table) is planned against its own columns.
 */
export interface PlannerTable {
  name: string;
  columns: ReadonlyArray<{ name: string; attributeKey?: string }>;
  /**
   * The materialized label column for a label name, when the table has one. Absent: the column
   * whose attributeKey is the label, or whose key's underscore spelling it is when only one key
   * has that spelling (sql/log-labels.ts).
   */
  labelColumn?: (label: string) => string | undefined;
}

/** A double-quoted SQL identifier. */
export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Printed SQL: DuckDB text with `$1…$n` placeholders and their values. */
export interface PrintedSql {
  sql: string;
  params: SqlParam[];
}

export class SqlBuilder {
  readonly params: SqlParam[] = [];
  readonly #seen = new Map<string, string>();
  readonly table: PlannerTable;

  constructor(table: PlannerTable) {
    this.table = table;
  }

  /** A placeholder for a value; equal values share one placeholder. */
  param(value: string | number | boolean): string {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new FloeError('bad_data', `not a finite number: ${value}`);
    const key = `${typeof value}:${String(value)}`;
    const hit = this.#seen.get(key);
    if (hit) return hit;
    this.params.push(value);
    const placeholder = `$${this.params.length}`;
    this.#seen.set(key, placeholder);
    return placeholder;
  }

  /** A BIGINT value (unix nanoseconds) passed as its decimal text: JSON numbers stop at 2^53. */
  bigint(value: bigint): string {
    return `CAST(${this.param(value.toString())} AS BIGINT)`;
  }

  /** A quoted column name of this table; anything else is a planner bug, never user input. */
  column(name: string): string {
    if (!this.table.columns.some((c) => c.name === name)) throw new FloeError('internal', `planner referenced unknown column ${JSON.stringify(name)} of ${this.table.name}`);
    return quoteIdent(name);
  }

  /** The table's own (unqualified) name: the querier resolves it to the caller's tenant and dataset. */
  tableName(): string {
    return quoteIdent(this.table.name);
  }
}

/** A SQL string literal for the planner's own constants: quotes doubled, NUL refused. */
export function literal(s: string): string {
  if (s.includes('\0')) throw new FloeError('internal', 'NUL in a SQL literal');
  return `'${s.replaceAll("'", "''")}'`;
}

/** A non-negative integer printed as a literal (LIMIT): checked, so it can never carry text. */
export function intLiteral(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new FloeError('internal', `not a non-negative integer: ${n}`);
  return String(n);
}
