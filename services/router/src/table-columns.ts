import type { FastifyRequest } from 'fastify';
import type { PlannerTable } from '@floe/query';

/**
 * The table a request plans against: a signal's fixed definition (@floe/schema) plus the
 * materialized label columns (`label_<key>`) that the caller's own table recorded at its creation
 * (spec 1, rule 5). Tables differ per tenant and dataset, so the router reads the columns of the
 * caller's table from the Iceberg catalog (the table's own definition, label columns with the
 * attribute key each holds; no querier round trip). Answers are cached per (tenant, dataset): a
 * table's label columns are fixed at creation, so a table that has some keeps them; a table
 * without any (or not created yet) is asked again after a few seconds, so labels apply soon after
 * the table is created.
 */

/** How long the columns of a table with label columns, and of one without, are reused. */
export const LABELS_TTL_MS = 5 * 60_000;
export const NO_LABELS_TTL_MS = 2_000;

/** A column of a table's definition; a materialized label carries its attribute key. */
export type TableColumn = PlannerTable['columns'][number];

/** A dataset's columns of one table as the catalog records them (none when it does not exist yet). */
export type TableColumns = (tenant: string, dataset: string, table: string) => Promise<readonly TableColumn[]>;

/**
 * The planner table for a table's columns: `base` plus its materialized label columns, each with
 * the attribute key it holds, from which the planners resolve label names. `base` itself when the
 * table has none.
 */
export function plannerTableFromColumns(base: PlannerTable, columns: readonly TableColumn[]): PlannerTable {
  const labels = columns.filter((c) => c.attributeKey !== undefined);
  if (labels.length === 0) return base;
  return { name: base.name, columns: [...base.columns, ...labels] };
}

export interface TableCache {
  /** The planner table of (tenant, dataset); `columns` lists its table's columns when asked. */
  get(tenant: string, dataset: string, columns: () => Promise<readonly TableColumn[]>): Promise<PlannerTable>;
}

/** Planner tables of one signal's table (`base`) per (tenant, dataset). */
export function createTableCache(base: PlannerTable, now: () => number = Date.now): TableCache {
  const cache = new Map<string, { at: number; ttl: number; table: Promise<PlannerTable> }>();
  return {
    get(tenant, dataset, columns) {
      const key = `${tenant}\u0000${dataset}`;
      const hit = cache.get(key);
      if (hit && now() - hit.at < hit.ttl) return hit.table;
      const entry = { at: now(), ttl: NO_LABELS_TTL_MS, table: columns().then((c) => plannerTableFromColumns(base, c)) };
      cache.set(key, entry);
      entry.table.then(
        (t) => {
          if (t !== base) entry.ttl = LABELS_TTL_MS;
        },
        () => {
          if (cache.get(key) === entry) cache.delete(key);
        },
      );
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
      return entry.table;
    },
  };
}

/**
 * The planner table of one signal's table (`base`, named `table` in the catalog) for a dataset,
 * its materialized label columns included, cached per (tenant, dataset); `base` when the router
 * has no catalog to ask.
 */
export function datasetTables(base: PlannerTable, table: string, columns: TableColumns | undefined): (tenant: string, dataset: string) => Promise<PlannerTable> {
  const cache = createTableCache(base);
  return async (tenant, dataset) => (columns ? cache.get(tenant, dataset, () => columns(tenant, dataset, table)) : base);
}

/** datasetTables for the caller of a request (`base` when it names no tenant). */
export function callerTables(base: PlannerTable, table: string, columns: TableColumns | undefined): (req: FastifyRequest) => Promise<PlannerTable> {
  const of = datasetTables(base, table, columns);
  return async (req) => (req.tenant ? of(req.tenant.tenant, req.tenant.dataset) : base);
}
