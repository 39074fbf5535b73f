import { tracesTable } from './traces.ts';
import type { TableDef } from './types.ts';

/** Every table a dataset can hold. Later signals (logs, metrics, profiles) join this list. */
export const TABLES = { traces: tracesTable } as const satisfies Record<string, TableDef>;
export type TableName = keyof typeof TABLES;

export const isTableName = (v: string): v is TableName => Object.hasOwn(TABLES, v);
export const tableDef = (name: TableName): TableDef => TABLES[name];
