import {
  DUCKDB_TYPES,
  isListType,
  isMapType,
  isStructType,
  type ColumnDef,
  type ColumnType,
  type ListType,
  type PrimitiveType,
  type StructType,
  type TableDef,
} from './types.ts';

/** Derived forms of one table definition: Iceberg schema JSON, DuckDB types, Parquet field ids. */

export const PARTITION_FIELD_ID = 1000;

const icebergPrimitive = (t: PrimitiveType): string => t;

/** A column the acceptor sends (in WAL payloads), not one the writer computes. */
const isRaw = (c: ColumnDef) => !c.derived && !c.expr;

/** The columns WAL payloads carry, in table order (read_json's columns, a column batch's schema). */
export const rawColumns = (table: TableDef): ColumnDef[] => table.columns.filter(isRaw);

/** Identifiers are quoted even though they come from this allow-list of column names. */
export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

const duckdbStruct = (s: StructType, prim: (t: PrimitiveType) => string = (t) => DUCKDB_TYPES[t]) =>
  `STRUCT(${s.struct.map((f) => `${quoteIdent(f.name)} ${prim(f.type)}`).join(', ')})`;

export function duckdbType(t: ColumnType): string {
  if (typeof t === 'string') return DUCKDB_TYPES[t];
  if (isMapType(t)) return `MAP(VARCHAR, ${DUCKDB_TYPES[t.map]})`;
  return `${isStructType(t.list) ? duckdbStruct(t.list) : DUCKDB_TYPES[t.list]}[]`;
}

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
  if (isListType(c.type)) return { ...base, type: icebergList(c.type) };
  const ids = table.mapIds[c.name]!;
  return {
    ...base,
    type: { type: 'map', 'key-id': ids.keyId, key: 'string', 'value-id': ids.valueId, value: icebergPrimitive(c.type.map), 'value-required': false },
  };
}

// Elements and struct fields are optional, as DuckDB writes them (OPTIONAL in the Parquet schema).
function icebergList(t: ListType) {
  const element = isStructType(t.list)
    ? { type: 'struct', fields: t.list.struct.map((f) => ({ id: f.id, name: f.name, required: false, type: icebergPrimitive(f.type), ...(f.doc ? { doc: f.doc } : {}) })) }
    : icebergPrimitive(t.list);
  return { type: 'list', 'element-id': t.elementId, element, 'element-required': false };
}

/** Every field id of the table: columns, map keys and values, list elements, struct fields. */
export function fieldIds(table: TableDef): number[] {
  const ids: number[] = [];
  for (const c of table.columns) {
    ids.push(c.id);
    if (isMapType(c.type)) {
      const m = table.mapIds[c.name];
      if (m) ids.push(m.keyId, m.valueId);
    } else if (isListType(c.type)) {
      ids.push(c.type.elementId);
      if (isStructType(c.type.list)) ids.push(...c.type.list.struct.map((f) => f.id));
    }
  }
  return ids;
}

export function lastColumnId(table: TableDef): number {
  return Math.max(...fieldIds(table));
}

/**
 * The unix-nanosecond column the partition source (the µs `timestamp`) is derived from: the
 * row's own time (a span's start, a log record's time, a data point's time).
 */
export function timeColumn(table: TableDef): string {
  const source = table.columns.find((c) => c.name === table.partitionSource);
  if (!source?.derived) throw new Error(`table ${table.name}: partition source ${table.partitionSource} is not derived from a time column`);
  return source.derived;
}

export function partitionSpec(table: TableDef) {
  const source = table.columns.find((c) => c.name === table.partitionSource)!;
  return { 'spec-id': 0, fields: [{ 'source-id': source.id, 'field-id': PARTITION_FIELD_ID, name: `${source.name}_hour`, transform: 'hour' }] };
}

/** Nanoseconds of an hour partition (the `hour` transform of every table's partition spec). */
export const NS_PER_HOUR = 3_600_000_000_000n;

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
    .filter(isRaw)
    .map((c) => `${quoteIdent(c.name)}: '${duckdbType(c.type)}'`)
    .join(', ')}}`;
}

/** The SELECT list that turns raw rows into the stored layout (derived and expr columns computed). */
export function selectStoredColumns(table: TableDef): string {
  return table.columns
    .map((c) => {
      if (c.derived && c.type === 'timestamptz') return `make_timestamptz(${quoteIdent(c.derived)} // 1000) AS ${quoteIdent(c.name)}`;
      if (c.expr) return `${c.expr} AS ${quoteIdent(c.name)}`;
      return quoteIdent(c.name);
    })
    .join(', ');
}

/**
 * The SELECT list that rewrites stored files into the stored layout (compaction), given the
 * columns the input files have (together). Columns are copied. A column with an expression (a
 * label) is computed from the maps where the inputs hold no value for it: a file written without
 * the column (union_by_name reads NULL there) gets it filled, and where a written label is NULL
 * the expression over the same maps is NULL too, so nothing written changes. Any other column
 * the inputs all lack (added to the table after they were written) is NULL.
 */
export function selectRewriteColumns(table: TableDef, present: ReadonlySet<string>): string {
  return table.columns
    .map((c) => {
      const name = quoteIdent(c.name);
      if (c.expr) return present.has(c.name) ? `COALESCE(${name}, ${c.expr}) AS ${name}` : `${c.expr} AS ${name}`;
      if (present.has(c.name)) return name;
      return `CAST(NULL AS ${duckdbType(c.type)}) AS ${name}`;
    })
    .join(', ');
}

/**
 * `FIELD_IDS {...}` option of DuckDB COPY, so Parquet columns carry the Iceberg field ids. DuckDB
 * names a map's children `key` and `value`, a list's child `element`, a struct's children by field.
 */
export function parquetFieldIds(table: TableDef): string {
  return `{${table.columns
    .map((c) => {
      if (typeof c.type === 'string') return `${quoteIdent(c.name)}: ${c.id}`;
      if (isListType(c.type)) {
        const el = c.type.list;
        const element = isStructType(el)
          ? `{__duckdb_field_id: ${c.type.elementId}, ${el.struct.map((f) => `${quoteIdent(f.name)}: ${f.id}`).join(', ')}}`
          : String(c.type.elementId);
        return `${quoteIdent(c.name)}: {__duckdb_field_id: ${c.id}, element: ${element}}`;
      }
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
const isLongMap = (t: ColumnType) => isMapType(t) && t.map === 'long';
const hasLong = (t: ColumnType) =>
  isLong(t) || isLongMap(t) || (isListType(t) && (isStructType(t.list) ? t.list.struct.some((f) => f.type === 'long') : t.list === 'long'));
/** The same type with every 64-bit integer as VARCHAR (JSON numbers lose them past 2^53). */
const jsonSafeDuckdbType = (t: ColumnType): string => {
  const prim = (p: PrimitiveType) => (p === 'long' ? 'VARCHAR' : DUCKDB_TYPES[p]);
  if (typeof t === 'string') return prim(t);
  if (isMapType(t)) return `MAP(VARCHAR, ${prim(t.map)})`;
  return `${isStructType(t.list) ? duckdbStruct(t.list, prim) : prim(t.list)}[]`;
};
const toBigInt = (v: unknown) => (typeof v === 'string' ? BigInt(v) : v);

/** The columns a row carries in id blocks: the stored ones the writer does not derive or compute. */
export function rowJsonColumns(table: TableDef): string[] {
  return table.columns.filter(isRaw).map((c) => c.name);
}

/**
 * DuckDB expression for one stored row as a JSON array of rowJsonColumns' values (the rows of a
 * file's id blocks; positional, since keys would double the bytes). 64-bit integers become
 * strings, since JSON numbers lose them past 2^53.
 */
export function rowJsonSql(table: TableDef): string {
  const values = table.columns
    .filter(isRaw)
    .map((c) => {
      const col = quoteIdent(c.name);
      return hasLong(c.type) ? `${col}::${jsonSafeDuckdbType(c.type)}` : col;
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
    } else if (isListType(c.type) && Array.isArray(v)) {
      const el = c.type.list;
      if (el === 'long') row[c.name] = v.map(toBigInt);
      else if (isStructType(el)) {
        const longs = el.struct.filter((f) => f.type === 'long').map((f) => f.name);
        for (const item of v as Array<Record<string, unknown> | null>) if (item) for (const k of longs) item[k] = toBigInt(item[k]);
      }
    }
  }
  return row as T;
}

/** The attribute value types of the typed maps, as type pins name them. */
export type AttributeType = 'str' | 'int' | 'double' | 'bool';
const ATTRIBUTE_TYPE_OF: Partial<Record<PrimitiveType, AttributeType>> = { string: 'str', long: 'int', double: 'double', boolean: 'bool' };

/** The table's typed attribute maps (`<scope>_attr_<type>`) with the type of their values. */
export function attributeMaps(table: TableDef): Array<{ column: string; type: AttributeType }> {
  const out: Array<{ column: string; type: AttributeType }> = [];
  for (const c of table.columns) {
    if (!isMapType(c.type) || !/_attr_(str|int|double|bool)$/.test(c.name)) continue;
    const type = ATTRIBUTE_TYPE_OF[c.type.map];
    if (type) out.push({ column: c.name, type });
  }
  return out;
}

/**
 * DuckDB query over `source` (a relation of the stored layout, e.g. a written file) counting, per
 * attribute key and value type, the values of every typed map of every scope: rows
 * (key VARCHAR, type VARCHAR, n BIGINT). The writer checks them against the dataset's type pins.
 */
export function attributeTypesSql(table: TableDef, source: string): string {
  const maps = attributeMaps(table);
  if (maps.length === 0) return `SELECT CAST(NULL AS VARCHAR) AS "key", CAST(NULL AS VARCHAR) AS "type", CAST(0 AS BIGINT) AS n WHERE false`;
  const branches = maps.map((m) => `SELECT unnest(map_keys(${quoteIdent(m.column)})) AS "key", '${m.type}' AS "type" FROM ${source}`);
  return `SELECT "key", "type", CAST(count(*) AS BIGINT) AS n FROM (${branches.join(' UNION ALL ')}) GROUP BY "key", "type"`;
}
