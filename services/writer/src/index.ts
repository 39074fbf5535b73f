/**
 * @floe/writer: WAL → sorted Parquet → Iceberg fast-append, exactly once per WAL segment and
 * table (the consumed segments are recorded in each snapshot summary).
 */
export { start } from './start.ts';
export type { SharedDeps } from './start.ts';
export { AttributeTypePins } from './attribute-types.ts';
export { Committer } from './committer.ts';
export { CATALOG_NAME, WAREHOUSE_PREFIX, ensureTable, namespaceOf } from './tables.ts';
