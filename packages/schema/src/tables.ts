import { metricExemplarsTable } from './exemplars.ts';
import { logsTable } from './logs.ts';
import { metricsTable } from './metrics.ts';
import { profilesTable } from './profiles.ts';
import { tracesTable } from './traces.ts';
import type { TableDef } from './types.ts';

/** Every table a dataset can hold (spec 1, "Tenancy": traces, logs, metrics, metric_exemplars, profiles). */
export const TABLES = {
  traces: tracesTable,
  logs: logsTable,
  metrics: metricsTable,
  metric_exemplars: metricExemplarsTable,
  profiles: profilesTable,
} as const satisfies Record<string, TableDef>;
export type TableName = keyof typeof TABLES;

export const isTableName = (v: string): v is TableName => Object.hasOwn(TABLES, v);
export const tableDef = (name: TableName): TableDef => TABLES[name];
