// Rule groups of the ruler, per tenant, dataset and query language, named by namespace (a rule
// file's name in Prometheus, a namespace in the Cortex ruler API) and group name. The definition
// is the group as @floe/query's rule model stores it (JSON); this module does not interpret it.

import type { Db } from './db.ts';
import { MetaError } from './errors.ts';

export type RuleLanguage = 'promql' | 'logql';

export interface RuleGroupKey {
  tenantId: string;
  datasetId: string;
  language: RuleLanguage;
  namespace: string;
  name: string;
}

export interface StoredRuleGroup extends RuleGroupKey {
  definition: unknown;
  updatedAt: Date;
  /** Counts the definition's changes (saveRuleGroupState saves only over the version evaluated). */
  version: number;
  /** The last evaluation's state (the ruler's JSON), null before the first or after a change. */
  state: unknown;
}

export interface RuleGroupFilter {
  /** Leave out the groups of disabled tenants (the ruler evaluates none of theirs). */
  enabledTenantsOnly?: boolean;
  /** Only these groups. */
  keys?: readonly RuleGroupKey[];
  tenantId?: string;
  datasetId?: string;
  language?: RuleLanguage;
  namespace?: string;
  name?: string;
}

type Row = {
  tenant_id: string;
  dataset_id: string;
  language: RuleLanguage;
  namespace: string;
  name: string;
  definition: unknown;
  updated_at: Date;
  version: number;
  state: unknown;
};

const fromRow = (r: Row): StoredRuleGroup => ({
  tenantId: r.tenant_id,
  datasetId: r.dataset_id,
  language: r.language,
  namespace: r.namespace,
  name: r.name,
  definition: r.definition,
  updatedAt: r.updated_at,
  version: Number(r.version),
  state: r.state,
});

/** The filter as a WHERE clause over the key columns, in key order. */
function where(filter: RuleGroupFilter): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  const add = (column: string, value: string | undefined) => {
    if (value === undefined) return;
    params.push(value);
    parts.push(`${column} = $${params.length}`);
  };
  add('tenant_id', filter.tenantId);
  add('dataset_id', filter.datasetId);
  add('language', filter.language);
  add('namespace', filter.namespace);
  add('name', filter.name);
  if (filter.enabledTenantsOnly) parts.push('tenant_id IN (SELECT id FROM tenants WHERE NOT disabled)');
  if (filter.keys) {
    const columns = (['tenantId', 'datasetId', 'language', 'namespace', 'name'] as const).map((k) => {
      params.push(filter.keys!.map((key) => key[k]));
      return `$${params.length}::text[]`;
    });
    parts.push(`(tenant_id, dataset_id, language, namespace, name) IN (SELECT * FROM unnest(${columns.join(', ')}))`);
  }
  return { sql: parts.length > 0 ? `WHERE ${parts.join(' AND ')}` : '', params };
}

/** Rule groups matching the filter, in (tenant, dataset, language, namespace, name) order. */
export async function listRuleGroups(db: Db, filter: RuleGroupFilter = {}): Promise<StoredRuleGroup[]> {
  const w = where(filter);
  const { rows } = await db.query<Row>(
    `SELECT tenant_id, dataset_id, language, namespace, name, definition, updated_at, version, state FROM rule_groups ${w.sql} ORDER BY tenant_id, dataset_id, language, namespace, name`,
    w.params,
  );
  return rows.map(fromRow);
}

/**
 * The groups matching the filter with their versions only: what an evaluator polls to learn which
 * groups changed, without reading every definition and state each time.
 */
export async function listRuleGroupVersions(db: Db, filter: RuleGroupFilter = {}): Promise<Array<RuleGroupKey & { version: number }>> {
  const w = where(filter);
  const { rows } = await db.query<Pick<Row, 'tenant_id' | 'dataset_id' | 'language' | 'namespace' | 'name' | 'version'>>(
    `SELECT tenant_id, dataset_id, language, namespace, name, version FROM rule_groups ${w.sql} ORDER BY tenant_id, dataset_id, language, namespace, name`,
    w.params,
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, datasetId: r.dataset_id, language: r.language, namespace: r.namespace, name: r.name, version: Number(r.version) }));
}

/**
 * Creates or replaces a group. Replacing clears its state: the rules may have changed, so their
 * alerts start over (as when Prometheus reloads a group whose rules changed). Refused with
 * `conflict` when it would be the tenant's group number `maxGroupsPerTenant + 1` of the language.
 */
export async function putRuleGroup(db: Db, key: RuleGroupKey, definition: unknown, maxGroupsPerTenant: number): Promise<void> {
  await db.withTransaction(async (tx) => {
    // Serialises concurrent writes of one tenant, so the count below cannot be raced past the cap.
    await tx.query(`SELECT id FROM tenants WHERE id = $1 FOR UPDATE`, [key.tenantId]);
    const { rows } = await tx.query<{ n: string | number; present: boolean }>(
      `SELECT count(*) AS n, bool_or(namespace = $3 AND name = $4 AND dataset_id = $5) AS present FROM rule_groups WHERE tenant_id = $1 AND language = $2`,
      [key.tenantId, key.language, key.namespace, key.name, key.datasetId],
    );
    const n = Number(rows[0]?.n ?? 0);
    if (!rows[0]?.present && n >= maxGroupsPerTenant) {
      throw new MetaError('bad_data', `per-tenant rule group limit reached: ${maxGroupsPerTenant} groups (limits.ruler_max_rule_groups_per_tenant)`);
    }
    await tx.query(
      `INSERT INTO rule_groups (tenant_id, dataset_id, language, namespace, name, definition, updated_at, state)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, now(), NULL)
       ON CONFLICT (tenant_id, dataset_id, language, namespace, name)
       DO UPDATE SET definition = EXCLUDED.definition, updated_at = now(),
         version = CASE WHEN rule_groups.definition = EXCLUDED.definition THEN rule_groups.version ELSE rule_groups.version + 1 END,
         state = CASE WHEN rule_groups.definition = EXCLUDED.definition THEN rule_groups.state ELSE NULL END`,
      [key.tenantId, key.datasetId, key.language, key.namespace, key.name, JSON.stringify(definition)],
    );
  });
}

/** Deletes the groups matching the filter (one group, or a whole namespace); how many went. */
export async function deleteRuleGroups(db: Db, filter: RuleGroupFilter & { tenantId: string }): Promise<number> {
  const w = where(filter);
  const { rowCount } = await db.query(`DELETE FROM rule_groups ${w.sql}`, w.params);
  return rowCount;
}

/**
 * Records a group's evaluation state, but only while its definition is still `version`, the one
 * evaluated (a group replaced or deleted meanwhile keeps its cleared state). True when recorded.
 */
export async function saveRuleGroupState(db: Db, key: RuleGroupKey, version: number, state: unknown): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE rule_groups SET state = $6::jsonb
     WHERE tenant_id = $1 AND dataset_id = $2 AND language = $3 AND namespace = $4 AND name = $5 AND version = $7`,
    [key.tenantId, key.datasetId, key.language, key.namespace, key.name, JSON.stringify(state), version],
  );
  return rowCount > 0;
}
