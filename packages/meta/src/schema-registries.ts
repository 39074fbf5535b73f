// Schema registries: a tenant's own definitions of the attributes, entities and metrics its
// telemetry carries, in the spirit of OpenTelemetry semantic-convention registries. Floe never
// enforces them on ingest; the router resolves attribute keys against them and validates samples.
// The document keeps the wire's snake_case: it is stored and answered as written, whole.

import type { Db } from './db.ts';
import { MetaError, mapConstraintError } from './errors.ts';
import { ID_PATTERN, isValidTenantId } from './ids.ts';

/** OpenTelemetry attribute types (semantic conventions' primitive and array types). */
export const REGISTRY_ATTRIBUTE_TYPES = ['string', 'int', 'double', 'boolean', 'string[]', 'int[]', 'double[]', 'boolean[]'] as const;
export type RegistryAttributeType = (typeof REGISTRY_ATTRIBUTE_TYPES)[number];

export const REQUIREMENT_LEVELS = ['required', 'conditionally_required', 'recommended', 'opt_in'] as const;
export type RequirementLevel = (typeof REQUIREMENT_LEVELS)[number];

export const METRIC_INSTRUMENTS = ['counter', 'updowncounter', 'gauge', 'histogram'] as const;
export type MetricInstrument = (typeof METRIC_INSTRUMENTS)[number];

export interface RegistryAttribute {
  key: string;
  type: RegistryAttributeType;
  brief?: string;
  examples?: unknown[];
  requirement_level?: RequirementLevel;
}

export interface RegistryEntity {
  type: string;
  brief?: string;
  identifying_attributes: string[];
  description_attributes?: string[];
}

export interface RegistryMetric {
  name: string;
  instrument: MetricInstrument;
  unit: string;
  brief?: string;
  attributes?: string[];
}

export interface SchemaRegistryDocument {
  name: string;
  description?: string;
  attributes: RegistryAttribute[];
  entities: RegistryEntity[];
  metrics: RegistryMetric[];
}

export interface SchemaRegistry extends SchemaRegistryDocument {
  tenantId: string;
  id: string;
  createdAt: Date;
  updatedAt: Date;
  createdBy: string | null;
  updatedBy: string | null;
}

type Row = { tenant_id: string; id: string; document: SchemaRegistryDocument; created_at: Date; updated_at: Date; created_by: string | null; updated_by: string | null };
const COLUMNS = 'tenant_id, id, document, created_at, updated_at, created_by, updated_by';

const toRegistry = (r: Row): SchemaRegistry => ({
  ...r.document,
  tenantId: r.tenant_id,
  id: r.id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  createdBy: r.created_by,
  updatedBy: r.updated_by,
});

// Only the document's own fields are stored: a caller's extra properties never reach the row.
const documentJson = (d: SchemaRegistryDocument) =>
  JSON.stringify({ name: d.name, ...(d.description !== undefined ? { description: d.description } : {}), attributes: d.attributes, entities: d.entities, metrics: d.metrics });

/**
 * Serialises writes to one tenant's registries until the transaction ends, so a check across them
 * (one definition per attribute key) and the write it guards see the same set. The tenant's row
 * lock is the natural mutex: nothing else holds it for long.
 */
export async function lockSchemaRegistries(tx: Db, tenantId: string): Promise<void> {
  const { rowCount } = await tx.query('SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE', [tenantId]);
  if (rowCount === 0) throw new MetaError('not_found', `tenant ${tenantId} not found`);
}

/** Errors: bad_data (id format), not_found (tenant), conflict (registry exists). */
export async function createSchemaRegistry(db: Db, input: { tenantId: string; id: string; document: SchemaRegistryDocument; createdBy: string | null }): Promise<SchemaRegistry> {
  if (!ID_PATTERN.test(input.id)) throw new MetaError('bad_data', `invalid registry id ${JSON.stringify(input.id)}: must match ${ID_PATTERN.source}`);
  const res = await db
    .query<Row>(
      `INSERT INTO schema_registries (tenant_id, id, name, document, created_by, updated_by)
       SELECT id, $2, $3, $4::jsonb, $5, $5 FROM tenants WHERE id = $1
       ON CONFLICT DO NOTHING
       RETURNING ${COLUMNS}`,
      [input.tenantId, input.id, input.document.name, documentJson(input.document), input.createdBy],
    )
    .catch((err: unknown) => mapConstraintError(err, `schema registry ${input.tenantId}/${input.id}`));
  const row = res.rows[0];
  if (row) return toRegistry(row);
  const tenant = await db.query('SELECT 1 FROM tenants WHERE id = $1', [input.tenantId]);
  if (tenant.rowCount === 0) throw new MetaError('not_found', `tenant ${input.tenantId} not found`);
  throw new MetaError('conflict', `schema registry ${input.id} already exists in tenant ${input.tenantId}`);
}

export async function getSchemaRegistry(db: Db, tenantId: string, id: string): Promise<SchemaRegistry | undefined> {
  if (!isValidTenantId(tenantId) || !ID_PATTERN.test(id)) return undefined;
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM schema_registries WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rows[0] ? toRegistry(rows[0]) : undefined;
}

/** A tenant's registries by id; [] for an unknown tenant. */
export async function listSchemaRegistries(db: Db, tenantId: string): Promise<SchemaRegistry[]> {
  if (!isValidTenantId(tenantId)) return [];
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM schema_registries WHERE tenant_id = $1 ORDER BY id`, [tenantId]);
  return rows.map(toRegistry);
}

/** Replaces the whole document. Errors: not_found. */
export async function updateSchemaRegistry(db: Db, input: { tenantId: string; id: string; document: SchemaRegistryDocument; updatedBy: string | null }): Promise<SchemaRegistry> {
  const { rows } = await db.query<Row>(
    `UPDATE schema_registries SET name = $3, document = $4::jsonb, updated_at = now(), updated_by = $5
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${COLUMNS}`,
    [input.tenantId, input.id, input.document.name, documentJson(input.document), input.updatedBy],
  );
  if (!rows[0]) throw new MetaError('not_found', `schema registry ${input.id} not found in tenant ${input.tenantId}`);
  return toRegistry(rows[0]);
}

/** Whether a registry was deleted. */
export async function deleteSchemaRegistry(db: Db, tenantId: string, id: string): Promise<boolean> {
  if (!isValidTenantId(tenantId) || !ID_PATTERN.test(id)) return false;
  const { rowCount } = await db.query('DELETE FROM schema_registries WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rowCount > 0;
}
