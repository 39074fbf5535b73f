import { DUCKDB_TYPES, type ColumnDef, type ColumnType, type PrimitiveType, type TableDef } from './types.ts';

/** Derived forms of one table definition: Iceberg schema JSON, DuckDB types, Parquet field ids. */

export const PARTITION_FIELD_ID = 1000;

const icebergPrimitive = (t: PrimitiveType): string => t;

export function duckdbType(t: ColumnType): string {
  return typeof t === 'string' ? DUCKDB_TYPES[t] : `MAP(VARCHAR, ${DUCKDB_TYPES[t.map]})`;
}

/** Identifiers are quoted even though they come from this allow-list of column names. */
export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

export function icebergSchema(table: TableDef, schemaId = 0) {
  return {
    type: 'struct' as const,
    'schema-id': schemaId,
    fields: table.columns.map((c) => icebergField(table, c)),
  };
}

function icebergField(table: TableDef, c: ColumnDef) {
  const base = { id: c.id, name: c.name, required: c.required ?? false, doc: c.doc };
  if (typeof c.type === 'string') return { ...base, type: icebergPrimitive(c.type) };
  const ids = table.mapIds[c.name]!;
  return {
    ...base,
    type: { type: 'map', 'key-id': ids.keyId, key: 'string', 'value-id': ids.valueId, value: icebergPrimitive(c.type.map), 'value-required': false },
  };
}

export function lastColumnId(table: TableDef): number {
  return Math.max(...table.columns.map((c) => c.id), ...Object.values(table.mapIds).flatMap((m) => [m.keyId, m.valueId]));
}

export function partitionSpec(table: TableDef) {
  const source = table.columns.find((c) => c.name === table.partitionSource)!;
  return { 'spec-id': 0, fields: [{ 'source-id': source.id, 'field-id': PARTITION_FIELD_ID, name: `${source.name}_hour`, transform: 'hour' }] };
}

export function partitionFieldName(table: TableDef): string {
  return `${table.partitionSource}_hour`;
}

export function sortOrderJson(table: TableDef) {
  return {
    'order-id': 1,
    fields: table.sortOrder.map((name) => ({
      transform: 'identity',
      'source-id': table.columns.find((c) => c.name === name)!.id,
      direction: 'asc',
      'null-order': 'nulls-first',
    })),
  };
}

/** `columns={...}` argument of DuckDB read_json for the columns the acceptor sends. */
export function readJsonColumns(table: TableDef): string {
  return `{${table.columns
    .filter((c) => !c.derived)
    .map((c) => `${quoteIdent(c.name)}: '${duckdbType(c.type)}'`)
    .join(', ')}}`;
}

/** The SELECT list that turns raw rows into the stored layout (derived columns computed). */
export function selectStoredColumns(table: TableDef): string {
  return table.columns
    .map((c) => {
      if (c.derived && c.type === 'timestamptz') return `make_timestamptz(${quoteIdent(c.derived)} // 1000) AS ${quoteIdent(c.name)}`;
      return quoteIdent(c.name);
    })
    .join(', ');
}

/** `FIELD_IDS {...}` option of DuckDB COPY, so Parquet columns carry the Iceberg field ids. */
export function parquetFieldIds(table: TableDef): string {
  return `{${table.columns
    .map((c) => {
      if (typeof c.type === 'string') return `${quoteIdent(c.name)}: ${c.id}`;
      const ids = table.mapIds[c.name]!;
      return `${quoteIdent(c.name)}: {__duckdb_field_id: ${c.id}, key: ${ids.keyId}, value: ${ids.valueId}}`;
    })
    .join(', ')}}`;
}

/** Column list DDL for a typed empty relation (a table with no data yet). */
export function emptyColumnsDdl(table: TableDef): string {
  return table.columns.map((c) => `${quoteIdent(c.name)} ${duckdbType(c.type)}`).join(', ');
}

export function columnNames(table: TableDef): string[] {
  return table.columns.map((c) => c.name);
}

const isLong = (t: ColumnType) => t === 'long';
const isLongMap = (t: ColumnType) => typeof t === 'object' && t.map === 'long';

/** The columns a row carries in id blocks: the stored ones the writer does not derive. */
export function rowJsonColumns(table: TableDef): string[] {
  return table.columns.filter((c) => !c.derived).map((c) => c.name);
}

/**
 * DuckDB expression for one stored row as a JSON array of rowJsonColumns' values (the rows of a
 * file's id blocks; positional, since keys would double the bytes). 64-bit integers become
 * strings, since JSON numbers lose them past 2^53.
 */
export function rowJsonSql(table: TableDef): string {
  const values = table.columns
    .filter((c) => !c.derived)
    .map((c) => {
      const col = quoteIdent(c.name);
      return isLong(c.type) ? `${col}::VARCHAR` : isLongMap(c.type) ? `${col}::MAP(VARCHAR, VARCHAR)` : col;
    });
  return `json_array(${values.join(', ')})`;
}

/**
 * A row from rowJsonSql's array (named by `columns`, the writer's rowJsonColumns) as an object
 * with its 64-bit integers back as bigint. Columns the table has and the file lacks are null.
 */
export function reviveRowJson<T>(table: TableDef, columns: readonly string[], values: readonly unknown[]): T {
  const row: Record<string, unknown> = {};
  for (const c of table.columns) row[c.name] = null;
  columns.forEach((name, i) => {
    row[name] = values[i] ?? null;
  });
  for (const c of table.columns) {
    const v = row[c.name];
    if (v === null || v === undefined) continue;
    if (isLong(c.type) && typeof v === 'string') row[c.name] = BigInt(v);
    else if (isLongMap(c.type) && typeof v === 'object') {
      const m = v as Record<string, unknown>;
      for (const k of Object.keys(m)) if (typeof m[k] === 'string') m[k] = BigInt(m[k] as string);
    }
  }
  return row as T;
}
