/**
 * @floe/schema: one definition per table, from which the Iceberg schema, partition spec and sort
 * order, the DuckDB types the writer casts to, and the Parquet field ids all derive. Field ids are
 * permanent: columns are only ever added (nullable), so older tables evolve forward. A table
 * instance may add materialized label columns it recorded at creation (withMaterializedLabels):
 * the same forms then cover them.
 */
export { tracesTable } from './traces.ts';
export { logsTable } from './logs.ts';
export { metricsTable } from './metrics.ts';
export { metricExemplarsTable } from './exemplars.ts';
export { profilesTable } from './profiles.ts';
export { DUCKDB_TYPES, isListType, isMapType, isStructType, rowGroupSizeOf } from './types.ts';
export type { ColumnDef, ColumnType, PrimitiveType, TableDef, MapFieldIds, MapType, ListType, StructType, StructField } from './types.ts';
export {
  PARTITION_FIELD_ID,
  duckdbType,
  rawColumns,
  quoteIdent,
  icebergSchema,
  lastColumnId,
  fieldIds,
  timeColumn,
  partitionSpec,
  partitionFieldName,
  NS_PER_HOUR,
  sortOrderJson,
  readJsonColumns,
  selectStoredColumns,
  selectRewriteColumns,
  parquetFieldIds,
  emptyColumnsDdl,
  columnNames,
  rowJsonColumns,
  rowJsonSql,
  reviveRowJson,
  attributeMaps,
  attributeTypesSql,
} from './forms.ts';
export type { AttributeType } from './forms.ts';
export { LABEL_FIELD_ID_BASE, labelExpr, labelSources, planMaterializedLabels, sanitizeLabelKey, withMaterializedLabels } from './labels.ts';
export type { LabelSource, MaterializedLabel } from './labels.ts';
export { TABLES, tableDef, isTableName } from './tables.ts';
export type { TableName } from './tables.ts';
export { OPS_JOB_WAIT_DEFAULT_MS, OPS_JOB_WAIT_MAX_MS, TABLE_PROBLEM_KINDS } from './table-problems.ts';
export type { TableProblemKind } from './table-problems.ts';
export { rebuildTrace, typedAttributes } from './trace-otlp.ts';
export type { SpanRow } from './trace-otlp.ts';
