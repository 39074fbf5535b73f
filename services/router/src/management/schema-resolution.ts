import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '@floe/errors';
import { listAttributeTypeMismatches, listAttributeTypePins, listSchemaRegistries, type AttributeTypeMismatch, type AttributeTypePin, type RegistryAttribute, type SchemaRegistry } from '@floe/meta';
import type { ManagementOptions } from './options.ts';
import { storedTypeOf } from './schema-registry-validation.ts';
import { schemaDataset, schemaTenant } from './schema-scope.ts';
import { ERROR_RESPONSES, datasetIdSchema } from './schemas.ts';

/**
 * Resolution (spec 2, Management and operations): what Floe knows of attribute keys, entities and
 * metrics for the caller's tenant. An attribute joins its registry definition (if any) with what
 * ingest observed in one dataset: the type its key is pinned to and how many values arrived with
 * another type (attribute_type_mismatches). Entities and metrics come from the registries only:
 * metric names seen in storage are the Prometheus metadata API's business, which reads the tables.
 */

const TAGS = ['schema'];
const STORED_TYPES = ['str', 'int', 'double', 'bool'] as const;
const DEFAULT_LIMIT = 100;

const prefixQuery = { prefix: { type: 'string', maxLength: 255, description: 'Only names starting with this (e.g. `http.`).' } } as const;
const listQuery = {
  type: 'object',
  additionalProperties: false,
  // Query strings are not coerced on this API (see api-keys' include_revoked): a number is digits.
  properties: { ...prefixQuery, limit: { type: 'string', pattern: '^[1-9][0-9]{0,2}$|^1000$', default: String(DEFAULT_LIMIT), description: 'At most this many (1–1000, default 100).' } },
} as const;
const attributeQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { ...listQuery.properties, dataset: { ...datasetIdSchema, description: 'Dataset whose pins and mismatches are read (default: the key’s dataset, else the tenant’s default).' } },
} as const;

const nullable = <T extends object>(s: T) => ({ anyOf: [s, { type: 'null' }] }) as const;

const definitionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['registry_id', 'key', 'type'],
  properties: {
    registry_id: { type: 'string' },
    key: { type: 'string' },
    type: { type: 'string' },
    brief: { type: 'string' },
    examples: { type: 'array', items: {} },
    requirement_level: { type: 'string' },
  },
} as const;

const resolvedAttributeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'dataset', 'definition', 'stored_type', 'pinned_type', 'pinned_at', 'type_agrees', 'off_type_count', 'pin_conflict_count', 'mismatches'],
  properties: {
    key: { type: 'string' },
    dataset: { type: 'string' },
    definition: nullable(definitionSchema),
    stored_type: { type: ['string', 'null'], enum: [...STORED_TYPES, null], description: 'The typed attribute map the registry type lands in (arrays: str, as JSON text).' },
    pinned_type: { type: ['string', 'null'], enum: [...STORED_TYPES, null], description: 'The type ingest pinned the key to in this dataset (first type seen).' },
    pinned_at: { type: ['string', 'null'], format: 'date-time' },
    type_agrees: { type: ['boolean', 'null'], description: 'stored_type equals pinned_type; null when either is unknown.' },
    off_type_count: { type: 'integer', description: 'Values stored with another type than the pin, all tables.' },
    pin_conflict_count: { type: 'integer', description: 'Values that lost the pin to a concurrent first value of another type, all tables.' },
    mismatches: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['table', 'reason', 'count', 'last_seen_at'],
        properties: { table: { type: 'string' }, reason: { type: 'string', enum: ['off_type', 'pin_conflict'] }, count: { type: 'integer' }, last_seen_at: { type: 'string', format: 'date-time' } },
      },
    },
  },
} as const;

const listing = (name: string, items: object) =>
  ({ type: 'object', additionalProperties: false, required: [name, 'truncated'], properties: { [name]: { type: 'array', items }, truncated: { type: 'boolean', description: 'More matched than limit.' } } }) as const;

const entitySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'registry_id', 'identifying_attributes'],
  properties: { type: { type: 'string' }, registry_id: { type: 'string' }, brief: { type: 'string' }, identifying_attributes: { type: 'array', items: { type: 'string' } }, description_attributes: { type: 'array', items: { type: 'string' } } },
} as const;

const metricSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'registry_id', 'instrument', 'unit'],
  properties: { name: { type: 'string' }, registry_id: { type: 'string' }, instrument: { type: 'string' }, unit: { type: 'string' }, brief: { type: 'string' }, attributes: { type: 'array', items: { type: 'string' } } },
} as const;

type ListQuery = { prefix?: string; limit: string };
type AttributeQuery = ListQuery & { dataset?: string };

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Definitions of a tenant's registries by their name; validation keeps names unique per tenant. */
function definitions<T>(registries: readonly SchemaRegistry[], items: (r: SchemaRegistry) => readonly T[], name: (t: T) => string): Map<string, T & { registry_id: string }> {
  return new Map(registries.flatMap((r) => items(r).map((t) => [name(t), { ...t, registry_id: r.id }] as const)));
}

function page<T>(byKey: ReadonlyMap<string, T>, q: ListQuery): { items: T[]; truncated: boolean } {
  const limit = Number(q.limit);
  const names = [...byKey.keys()].filter((n) => n.startsWith(q.prefix ?? '')).sort(byName);
  return { items: names.slice(0, limit).map((n) => byKey.get(n)!), truncated: names.length > limit };
}

function resolve(key: string, dataset: string, def: (RegistryAttribute & { registry_id: string }) | undefined, pin: AttributeTypePin | undefined, mismatches: readonly AttributeTypeMismatch[]) {
  const stored = def ? storedTypeOf(def.type) : null;
  const count = (reason: string) => mismatches.filter((m) => m.reason === reason).reduce((n, m) => n + m.count, 0);
  return {
    key,
    dataset,
    definition: def ?? null,
    stored_type: stored,
    pinned_type: pin?.type ?? null,
    pinned_at: pin ? pin.firstSeenAt.toISOString() : null,
    type_agrees: stored !== null && pin ? stored === pin.type : null,
    off_type_count: count('off_type'),
    pin_conflict_count: count('pin_conflict'),
    mismatches: mismatches.map((m) => ({ table: m.table, reason: m.reason, count: m.count, last_seen_at: m.lastSeenAt.toISOString() })),
  };
}

export const schemaResolutionRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  app.get<{ Querystring: AttributeQuery }>(
    '/schema/attributes',
    {
      schema: {
        operationId: 'list_schema_attributes',
        summary: 'Attribute keys known to the tenant (registry definitions and keys pinned in the dataset), by key; `prefix` searches',
        tags: TAGS,
        querystring: attributeQuery,
        response: { 200: listing('attributes', resolvedAttributeSchema), ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const tenantId = schemaTenant(req, 'tenant.read');
      const dataset = await schemaDataset(req, opts, tenantId, req.query.dataset);
      const [registries, pins, mismatches] = await Promise.all([
        listSchemaRegistries(opts.db, tenantId),
        listAttributeTypePins(opts.db, tenantId, dataset.id),
        listAttributeTypeMismatches(opts.db, tenantId, dataset.id),
      ]);
      const defs = definitions(registries, (r) => r.attributes, (a) => a.key);
      const pinOf = new Map(pins.map((p) => [p.key, p]));
      const keys = new Map([...defs.keys(), ...pinOf.keys()].map((k) => [k, k]));
      const { items, truncated } = page(keys, req.query);
      return {
        attributes: items.map((k) => resolve(k, dataset.id, defs.get(k), pinOf.get(k), mismatches.filter((m) => m.key === k))),
        truncated,
      };
    },
  );

  app.get<{ Params: { key: string }; Querystring: { dataset?: string } }>(
    '/schema/attributes/:key',
    {
      schema: {
        operationId: 'get_schema_attribute',
        summary: 'Resolve one attribute key: its registry definition, pinned type and off-type count (404 when Floe knows nothing of it)',
        tags: TAGS,
        params: { type: 'object', additionalProperties: false, required: ['key'], properties: { key: { type: 'string', minLength: 1, maxLength: 1024 } } },
        querystring: { type: 'object', additionalProperties: false, properties: { dataset: attributeQuery.properties.dataset } },
        response: { 200: resolvedAttributeSchema, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const tenantId = schemaTenant(req, 'tenant.read');
      const dataset = await schemaDataset(req, opts, tenantId, req.query.dataset);
      const key = req.params.key;
      const [registries, pins, mismatches] = await Promise.all([
        listSchemaRegistries(opts.db, tenantId),
        listAttributeTypePins(opts.db, tenantId, dataset.id, [key]),
        listAttributeTypeMismatches(opts.db, tenantId, dataset.id, { key }),
      ]);
      const def = definitions(registries, (r) => r.attributes, (a) => a.key).get(key);
      if (!def && pins.length === 0 && mismatches.length === 0) throw notFound(`attribute ${key} is neither defined in a registry of tenant ${tenantId} nor seen in dataset ${dataset.id}`);
      return resolve(key, dataset.id, def, pins[0], mismatches);
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/schema/entities',
    {
      schema: { operationId: 'list_schema_entities', summary: 'Entity types the tenant’s registries define, by type; `prefix` searches', tags: TAGS, querystring: listQuery, response: { 200: listing('entities', entitySchema), ...ERROR_RESPONSES } },
    },
    async (req) => {
      const registries = await listSchemaRegistries(opts.db, schemaTenant(req, 'tenant.read'));
      const { items, truncated } = page(definitions(registries, (r) => r.entities, (e) => e.type), req.query);
      return { entities: items, truncated };
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/schema/metrics',
    {
      schema: {
        operationId: 'list_schema_metrics',
        summary: 'Metrics the tenant’s registries define, by name; `prefix` searches',
        description: 'Registry definitions only; the metric names stored in a dataset are listed by the Prometheus API (`/api/v1/metadata`, `/api/v1/label/__name__/values`).',
        tags: TAGS,
        querystring: listQuery,
        response: { 200: listing('metrics', metricSchema), ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const registries = await listSchemaRegistries(opts.db, schemaTenant(req, 'tenant.read'));
      const { items, truncated } = page(definitions(registries, (r) => r.metrics, (m) => m.name), req.query);
      return { metrics: items, truncated };
    },
  );
};
