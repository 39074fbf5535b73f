/**
 * Column types Floe tables use, named after their Iceberg primitive. Each maps to one DuckDB
 * type (how the writer casts NDJSON rows and how an empty table is typed) and one Iceberg JSON
 * type (the catalog schema). Maps always have string keys.
 */
export type PrimitiveType = 'string' | 'long' | 'int' | 'double' | 'boolean' | 'timestamptz';
export type ColumnType = PrimitiveType | { map: PrimitiveType };

export interface ColumnDef {
  name: string;
  /** Iceberg field id; never reused, never renumbered. */
  id: number;
  type: ColumnType;
  required?: boolean;
  /** Filled by the writer from another column rather than sent by the acceptor. */
  derived?: string;
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
  /** The source column of the hour() partition (a µs timestamptz: Iceberg v2's hour needs it). */
  partitionSource: string;
  /** Canonical sort order inside each file. */
  sortOrder: string[];
  /**
   * Rows per Parquet row group (default 122,880, DuckDB's own). DuckDB writes each column chunk
   * as a single page, so a row group is the smallest unit a reader can skip or must decode whole.
   */
  rowGroupSize?: number;
  /** The column holding the id looked up by point queries (trace_id), indexed per file. */
  idColumn?: string;
}

export const DUCKDB_TYPES: Record<PrimitiveType, string> = {
  string: 'VARCHAR',
  long: 'BIGINT',
  int: 'INTEGER',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  timestamptz: 'TIMESTAMPTZ',
};
