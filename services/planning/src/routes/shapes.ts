import { notFound } from '@floe/errors';
import type { Db } from '@floe/meta';
import { paginationOf, type Pagination } from '../params/pagination.ts';
import { project } from '../params/projection.ts';
import { findProduct, findRecord, type FoundProduct, type FoundRecord, type NumberedTable } from '../store/lookups.ts';

/**
 * Response shapes and parent lookups shared by the routes. Lists carry `meta.pagination`
 * (spec 3, Limits), except releases, whose lists carry `pagination` at the top level as the
 * spec's release operations show.
 */
export function metaPage<K extends string, T extends { id: string }>(
  key: K,
  page: { records: T[]; total: number },
  p: { page: number; perPage: number; fields?: string[] },
): Record<K, unknown[]> & { meta: { pagination: Pagination } } {
  return { [key]: page.records.map((r) => project(r, p.fields)), meta: { pagination: paginationOf(p.page, p.perPage, page.total) } } as Record<K, unknown[]> & {
    meta: { pagination: Pagination };
  };
}

export async function productOr404(db: Db, tenantId: string, value: string): Promise<FoundProduct> {
  const found = await findProduct(db, tenantId, value);
  if (!found) throw notFound(`product ${value} not found`);
  return found;
}

const NOUN: Record<NumberedTable, string> = {
  planning_releases: 'release',
  planning_features: 'feature',
  planning_epics: 'epic',
  planning_requirements: 'requirement',
  planning_initiatives: 'initiative',
  planning_goals: 'goal',
  planning_ideas: 'idea',
};

export async function recordOr404(db: Db, table: NumberedTable, tenantId: string, value: string): Promise<FoundRecord> {
  const found = await findRecord(db, table, tenantId, value);
  if (!found) throw notFound(`${NOUN[table]} ${value} not found`);
  return found;
}

export function found<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw notFound(`${what} not found`);
  return value;
}
