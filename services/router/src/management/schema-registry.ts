import type { FastifyPluginAsync } from 'fastify';
import { principalLabel } from '@floe/auth';
import { FloeError, notFound } from '@floe/errors';
import {
  ID_PATTERN,
  METRIC_INSTRUMENTS,
  REGISTRY_ATTRIBUTE_TYPES,
  REQUIREMENT_LEVELS,
  createSchemaRegistry,
  deleteSchemaRegistry,
  getSchemaRegistry,
  listSchemaRegistries,
  lockSchemaRegistries,
  updateSchemaRegistry,
  type Db,
  type SchemaRegistry,
  type SchemaRegistryDocument,
} from '@floe/meta';
import type { ManagementOptions } from './options.ts';
import { principalOf } from './principal-plugin.ts';
import { hasErrors, validateAttributeSample, validateRegistryDocument, type Problem } from './schema-registry-validation.ts';
import { schemaTenant } from './schema-scope.ts';
import { ERROR_RESPONSES } from './schemas.ts';

/**
 * Schema registries (spec 2, Management and operations): a tenant's attribute, entity and metric
 * definitions. Any role of the tenant reads; tenant admins write. A document with error-level
 * problems is refused (400, the problems in the message); `:validate` answers them instead.
 */

const TAGS = ['schema'];
const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const keyList = { type: 'array', maxItems: 256, items: { type: 'string', minLength: 1, maxLength: 255 } } as const;

export const registryIdSchema = { type: 'string', pattern: ID_PATTERN.source, description: 'Registry id: lowercase letters, digits, _ and -, at most 63 characters.' } as const;

const attributeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'type'],
  properties: {
    key: { type: 'string', minLength: 1, maxLength: 255 },
    type: { type: 'string', enum: [...REGISTRY_ATTRIBUTE_TYPES] },
    brief: text(2000),
    examples: { type: 'array', maxItems: 32, items: {} },
    requirement_level: { type: 'string', enum: [...REQUIREMENT_LEVELS] },
  },
} as const;

const entitySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'identifying_attributes'],
  properties: {
    type: { type: 'string', minLength: 1, maxLength: 255 },
    brief: text(2000),
    identifying_attributes: { ...keyList, minItems: 1, description: 'Attribute keys that together identify one entity (e.g. k8s.pod.uid).' },
    description_attributes: keyList,
  },
} as const;

const metricSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'instrument', 'unit'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    instrument: { type: 'string', enum: [...METRIC_INSTRUMENTS] },
    unit: { type: 'string', maxLength: 64, description: 'UCUM unit, as OpenTelemetry writes it (`s`, `By`, `{request}`).' },
    brief: text(2000),
    attributes: keyList,
  },
} as const;

const documentProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  description: text(4000),
  attributes: { type: 'array', maxItems: 5000, items: attributeSchema },
  entities: { type: 'array', maxItems: 1000, items: entitySchema },
  metrics: { type: 'array', maxItems: 5000, items: metricSchema },
} as const;

const documentBody = { type: 'object', additionalProperties: false, required: ['name'], properties: documentProperties } as const;
const createBody = { type: 'object', additionalProperties: false, required: ['id', 'name'], properties: { id: registryIdSchema, ...documentProperties } } as const;

const registrySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'tenant_id', 'name', 'attributes', 'entities', 'metrics', 'created_at', 'updated_at', 'created_by', 'updated_by'],
  properties: {
    id: registryIdSchema,
    tenant_id: { type: 'string' },
    ...documentProperties,
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
    created_by: { type: ['string', 'null'] },
    updated_by: { type: ['string', 'null'] },
  },
} as const;

const problemsSchema = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['path', 'severity', 'message'],
    properties: { path: { type: 'string' }, severity: { type: 'string', enum: ['error', 'warning'] }, message: { type: 'string' } },
  },
} as const;

const registryParams = { type: 'object', additionalProperties: false, required: ['registry_id'], properties: { registry_id: registryIdSchema } } as const;

type DocumentBody = Partial<Omit<SchemaRegistryDocument, 'name'>> & { name: string };

const toDocument = (b: DocumentBody): SchemaRegistryDocument => ({
  name: b.name,
  ...(b.description !== undefined ? { description: b.description } : {}),
  attributes: b.attributes ?? [],
  entities: b.entities ?? [],
  metrics: b.metrics ?? [],
});

export const registryWire = (r: SchemaRegistry) => ({
  id: r.id,
  tenant_id: r.tenantId,
  name: r.name,
  ...(r.description !== undefined ? { description: r.description } : {}),
  attributes: r.attributes,
  entities: r.entities,
  metrics: r.metrics,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
  created_by: r.createdBy,
  updated_by: r.updatedBy,
});

function refuseProblems(problems: readonly Problem[]): void {
  if (!hasErrors(problems)) return;
  const errors = problems.filter((p) => p.severity === 'error');
  const shown = errors.slice(0, 5).map((p) => `${p.path}: ${p.message}`);
  const more = errors.length > shown.length ? ` (and ${errors.length - shown.length} more; POST /api/v1/schema/registries:validate lists them all)` : '';
  throw new FloeError('bad_data', `the registry has ${errors.length} problem(s): ${shown.join('; ')}${more}`);
}

/** Validates against the tenant's other registries and writes, with the tenant's registries locked. */
async function checkedWrite(db: Db, tenantId: string, id: string, doc: SchemaRegistryDocument, write: (tx: Db) => Promise<SchemaRegistry>): Promise<SchemaRegistry> {
  return db.withTransaction(async (tx) => {
    await lockSchemaRegistries(tx, tenantId);
    const others = (await listSchemaRegistries(tx, tenantId)).filter((r) => r.id !== id);
    refuseProblems(validateRegistryDocument(doc, others));
    return write(tx);
  });
}

export const schemaRegistryRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  app.post<{ Body: DocumentBody & { id: string } }>(
    '/schema/registries',
    {
      schema: {
        operationId: 'create_schema_registry',
        summary: 'Create a schema registry of the caller’s tenant (tenant admin)',
        tags: TAGS,
        body: createBody,
        response: { 201: registrySchema, ...ERROR_RESPONSES },
      },
    },
    async (req, reply) => {
      const tenantId = schemaTenant(req, 'schema_registry.manage');
      const { id, ...rest } = req.body;
      const doc = toDocument(rest);
      const created = await checkedWrite(opts.db, tenantId, id, doc, (tx) => createSchemaRegistry(tx, { tenantId, id, document: doc, createdBy: principalLabel(principalOf(req)) }));
      return reply.code(201).send(registryWire(created));
    },
  );

  app.get(
    '/schema/registries',
    {
      schema: {
        operationId: 'list_schema_registries',
        summary: 'List the schema registries of the caller’s tenant',
        tags: TAGS,
        response: { 200: { type: 'object', additionalProperties: false, required: ['registries'], properties: { registries: { type: 'array', items: registrySchema } } }, ...ERROR_RESPONSES },
      },
    },
    async (req) => ({ registries: (await listSchemaRegistries(opts.db, schemaTenant(req, 'tenant.read'))).map(registryWire) }),
  );

  app.get<{ Params: { registry_id: string } }>(
    '/schema/registries/:registry_id',
    {
      schema: { operationId: 'get_schema_registry', summary: 'Get a schema registry', tags: TAGS, params: registryParams, response: { 200: registrySchema, ...ERROR_RESPONSES } },
    },
    async (req) => {
      const tenantId = schemaTenant(req, 'tenant.read');
      const found = await getSchemaRegistry(opts.db, tenantId, req.params.registry_id);
      if (!found) throw notFound(`schema registry ${req.params.registry_id} not found in tenant ${tenantId}`);
      return registryWire(found);
    },
  );

  app.put<{ Params: { registry_id: string }; Body: DocumentBody }>(
    '/schema/registries/:registry_id',
    {
      schema: {
        operationId: 'update_schema_registry',
        summary: 'Replace a schema registry’s document (tenant admin)',
        tags: TAGS,
        params: registryParams,
        body: documentBody,
        response: { 200: registrySchema, ...ERROR_RESPONSES },
      },
    },
    async (req) => {
      const tenantId = schemaTenant(req, 'schema_registry.manage');
      const id = req.params.registry_id;
      const doc = toDocument(req.body);
      return registryWire(await checkedWrite(opts.db, tenantId, id, doc, (tx) => updateSchemaRegistry(tx, { tenantId, id, document: doc, updatedBy: principalLabel(principalOf(req)) })));
    },
  );

  app.delete<{ Params: { registry_id: string } }>(
    '/schema/registries/:registry_id',
    {
      schema: { operationId: 'delete_schema_registry', summary: 'Delete a schema registry (tenant admin)', tags: TAGS, params: registryParams, response: { 204: { type: 'null' }, ...ERROR_RESPONSES } },
    },
    async (req, reply) => {
      const tenantId = schemaTenant(req, 'schema_registry.manage');
      if (!(await deleteSchemaRegistry(opts.db, tenantId, req.params.registry_id))) throw notFound(`schema registry ${req.params.registry_id} not found in tenant ${tenantId}`);
      return reply.code(204).send();
    },
  );

  // `::` is the router's escape of a literal colon: the path is /schema/registries:validate.
  app.post<{ Body: { registry?: DocumentBody & { id: string }; attributes?: Record<string, unknown> } }>(
    '/schema/registries::validate',
    {
      schema: {
        operationId: 'validate_schema_registry',
        summary: 'Check a registry document, or a sample of telemetry attributes against the tenant’s registries; nothing is stored',
        description:
          'With `registry`: the problems creating (or, for an existing id, replacing) it would meet. With `attributes` (`{key: JSON value}`): keys no registry defines (warnings) and values of another type than their definition (errors). Malformed documents are refused with 400 like on create.',
        tags: TAGS,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { registry: createBody, attributes: { type: 'object', maxProperties: 1000, additionalProperties: true } },
        },
        response: {
          200: { type: 'object', additionalProperties: false, required: ['valid', 'problems'], properties: { valid: { type: 'boolean', description: 'No error-level problem.' }, problems: problemsSchema } },
          ...ERROR_RESPONSES,
        },
      },
    },
    async (req) => {
      const tenantId = schemaTenant(req, 'tenant.read');
      const registries = await listSchemaRegistries(opts.db, tenantId);
      const problems: Problem[] = [];
      const { registry, attributes } = req.body;
      if (registry) {
        const { id, ...rest } = registry;
        problems.push(...validateRegistryDocument(toDocument(rest), registries.filter((r) => r.id !== id)));
      }
      if (attributes) problems.push(...validateAttributeSample(attributes, registries));
      return { valid: !hasErrors(problems), problems };
    },
  );
};
