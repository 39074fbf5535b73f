/**
 * Column types Floe tables use, named after their Iceberg primitive. Each maps to one DuckDB
 * type (how the writer casts WAL rows and how an empty table is typed) and one Iceberg JSON
 * type (the catalog schema). Maps always have string keys. Lists hold a primitive or a struct of
 * primitives (e.g. a summary's quantiles); their element (and a struct element's fields) carry
 * their own Iceberg field ids, written in the column type so they are as permanent as the
 * column's own id.
 */
export type PrimitiveType = 'string' | 'long' | 'int' | 'double' | 'boolean' | 'timestamptz';

export interface StructField {
  name: string;
  /** Iceberg field id, unique within the table like every other id. */
  id: number;
  type: PrimitiveType;
  doc?: string;
}

export interface StructType {
  struct: StructField[];
}

export interface ListType {
  list: PrimitiveType | StructType;
  /** Iceberg field id of the list element. */
  elementId: number;
}

export interface MapType {
  map: PrimitiveType;
}

export type ColumnType = PrimitiveType | MapType | ListType;

export const isMapType = (t: ColumnType): t is MapType => typeof t === 'object' && 'map' in t;
export const isListType = (t: ColumnType): t is ListType => typeof t === 'object' && 'list' in t;
export const isStructType = (t: PrimitiveType | StructType): t is StructType => typeof t === 'object';

export interface ColumnDef {
  name: string;
  /** Iceberg field id; never reused, never renumbered. */
  id: number;
  type: ColumnType;
  required?: boolean;
  /** Filled by the writer from another column rather than sent by the acceptor. */
  derived?: string;
  /**
   * Computed by the writer with this DuckDB expression over the row's raw columns (never sent
   * by the acceptor, never in read_json's columns): a materialized label (labels.ts).
   */
  expr?: string;
  /** The attribute key a materialized label column holds (set together with expr). */
  attributeKey?: string;
  doc: string;
}

export interface MapFieldIds {
  keyId: number;
  valueId: number;
}

export interface TableDef {
  name: string;
  /** Bumped whenever columns are added; loading an older table evolves it forward. */
  version: number;
  columns: ColumnDef[];
  /** Field ids used by map key/value children, by map column name. */
  mapIds: Record<string, MapFieldIds>;
  /**
   * The source column of the hour() partition (a µs timestamptz: Iceberg v2's hour needs it),
   * derived from the table's unix-nanosecond time column (see timeColumn in forms.ts).
   */
  partitionSource: string;
  /** Canonical sort order inside each file (primitive columns only: Iceberg sorts by identity). */
  sortOrder: string[];
  /**
   * Rows per Parquet row group (default 122,880, DuckDB's own). DuckDB writes each column chunk
   * as a single page, so a row group is the smallest unit a reader can skip or must decode whole.
   */
  rowGroupSize?: number;
  /** The column holding the id looked up by point queries (trace_id), indexed per file. */
  idColumn?: string;
  /**
   * Where a materialized label takes its value, in precedence order: attribute scopes whose typed
   * maps `<scope>_attr_{str,int,double,bool}` the table has (the record's own scope first, then
   * its resource). A table without it gets no materialized labels.
   */
  labelScopes?: readonly string[];
}

export const DUCKDB_TYPES: Record<PrimitiveType, string> = {
  string: 'VARCHAR',
  long: 'BIGINT',
  int: 'INTEGER',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  timestamptz: 'TIMESTAMPTZ',
};

/** DuckDB's own rows per row group, Floe's for tables that set no rowGroupSize. */
const DEFAULT_ROW_GROUP_SIZE = 122_880;

/** Rows per Parquet row group of a table's files. */
export const rowGroupSizeOf = (table: TableDef): number => table.rowGroupSize ?? DEFAULT_ROW_GROUP_SIZE;
