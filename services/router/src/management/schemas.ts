import { ERROR_KINDS } from '@floe/errors';
import { API_KEY_SCOPES, ID_PATTERN, MEMBERSHIP_ROLES, SYSTEM_TENANT_ID } from '@floe/meta';

/**
 * The JSON Schemas of the management API, written once: fastify validates requests and shapes
 * responses with them (response schemas also keep internal fields such as password hashes from
 * leaking), and the OpenAPI document is generated from the same objects. Shared shapes carry an
 * `$id` and are registered on the root instance; routes point at them with `ref(name)`.
 */

export const ref = (id: SharedSchemaId) => ({ $ref: `${id}#` }) as const;

const tenantIdPattern = `^(?:${ID_PATTERN.source.slice(1, -1)}|${SYSTEM_TENANT_ID})$`;
export const tenantIdSchema = { type: 'string', pattern: tenantIdPattern, description: 'Tenant id: lowercase letters, digits, _ and -, at most 63 characters.' } as const;
export const datasetIdSchema = { type: 'string', pattern: ID_PATTERN.source, description: 'Dataset id: lowercase letters, digits, _ and -, at most 63 characters.' } as const;
export const userIdSchema = { type: 'string', pattern: '^[0-9a-f]{16}$', description: 'User id (16 hex digits).' } as const;
export const keyIdSchema = { type: 'string', pattern: '^[0-9a-f]{16}$', description: 'API key id (16 hex digits), the public part of the secret.' } as const;
export const emailSchema = { type: 'string', minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' } as const;
export const labelSchema = { type: 'string', maxLength: 200 } as const;
export const roleSchema = { type: 'string', enum: [...MEMBERSHIP_ROLES], description: 'admin > member > viewer.' } as const;
export const scopesSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 16,
  items: { type: 'string', enum: [...API_KEY_SCOPES] },
  description: '`ingest` (send telemetry), `query` (read it), `tenant:manage` (tenant admin).',
} as const;
const timestamp = { type: 'string', format: 'date-time' } as const;
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;

export const SHARED_SCHEMAS = [
  {
    $id: 'ErrorEnvelope',
    description: 'The one error body of every Floe API.',
    type: 'object',
    additionalProperties: false,
    required: ['status', 'errorType', 'error'],
    properties: {
      status: { type: 'string', enum: ['error'] },
      errorType: {
        type: 'string',
        description: `Error kind: ${Object.entries(ERROR_KINDS)
          .map(([kind, { http }]) => `${kind} (${http})`)
          .join(', ')}.`,
      },
      error: { type: 'string', description: 'Client-safe message.' },
      retryAfterMs: { type: 'integer' },
    },
  },
  {
    $id: 'Tenant',
    type: 'object',
    additionalProperties: false,
    required: ['id', 'display_name', 'default_dataset', 'disabled', 'settings', 'created_at'],
    properties: {
      id: tenantIdSchema,
      display_name: { type: 'string' },
      default_dataset: { type: 'string', description: 'Always counted among the tenant’s datasets.' },
      disabled: { type: 'boolean', description: 'A disabled tenant’s API keys stop working.' },
      settings: { type: 'object', additionalProperties: true },
      created_at: timestamp,
    },
  },
  {
    $id: 'Dataset',
    type: 'object',
    additionalProperties: false,
    required: ['tenant_id', 'id', 'is_default', 'created_at'],
    properties: { tenant_id: tenantIdSchema, id: datasetIdSchema, is_default: { type: 'boolean' }, created_at: timestamp },
  },
  {
    $id: 'User',
    type: 'object',
    additionalProperties: false,
    required: ['id', 'email', 'display_name', 'is_instance_admin', 'disabled', 'has_password', 'oidc_issuer', 'oidc_subject', 'created_at'],
    properties: {
      id: userIdSchema,
      email: { type: 'string' },
      display_name: { type: 'string' },
      is_instance_admin: { type: 'boolean' },
      disabled: { type: 'boolean' },
      has_password: { type: 'boolean', description: 'False for passwordless (SSO) users.' },
      oidc_issuer: { type: ['string', 'null'] },
      oidc_subject: { type: ['string', 'null'] },
      created_at: timestamp,
    },
  },
  {
    $id: 'Membership',
    type: 'object',
    additionalProperties: false,
    required: ['tenant_id', 'user_id', 'email', 'display_name', 'role', 'granted_by', 'created_at'],
    properties: {
      tenant_id: tenantIdSchema,
      user_id: userIdSchema,
      email: { type: ['string', 'null'], description: 'null unless the caller manages the tenant, is an instance admin, or is this member.' },
      display_name: { type: 'string' },
      role: roleSchema,
      granted_by: {
        type: ['string', 'null'],
        description: '`oidc_mapping` for a row written by SSO group mappings; otherwise who granted it (`user:<id>`, `key:<id>`, `admin`). A local and a mapped row may coexist; the higher role is effective.',
      },
      created_at: timestamp,
    },
  },
  {
    $id: 'EffectiveRole',
    type: 'object',
    additionalProperties: false,
    required: ['tenant_id', 'role'],
    properties: { tenant_id: tenantIdSchema, role: roleSchema },
  },
  {
    $id: 'ApiKey',
    type: 'object',
    additionalProperties: false,
    required: ['id', 'tenant_id', 'dataset_id', 'name', 'scopes', 'created_at', 'last_used_at', 'revoked_at', 'created_by'],
    properties: {
      id: keyIdSchema,
      tenant_id: tenantIdSchema,
      dataset_id: { type: ['string', 'null'], description: 'null: every dataset of the tenant.' },
      name: { type: 'string' },
      scopes: { type: 'array', items: { type: 'string' } },
      created_at: timestamp,
      last_used_at: nullableTimestamp,
      revoked_at: nullableTimestamp,
      created_by: { type: ['string', 'null'] },
      expires_at: { ...timestamp, description: 'When the key stops working; only keys issued as OAuth access tokens expire.' },
    },
  },
  {
    $id: 'CreatedApiKey',
    description: 'An API key with its secret: returned once, at creation.',
    type: 'object',
    additionalProperties: false,
    required: ['id', 'tenant_id', 'dataset_id', 'name', 'scopes', 'created_at', 'last_used_at', 'revoked_at', 'created_by', 'secret'],
    properties: {
      id: keyIdSchema,
      tenant_id: tenantIdSchema,
      dataset_id: { type: ['string', 'null'] },
      name: { type: 'string' },
      scopes: { type: 'array', items: { type: 'string' } },
      created_at: timestamp,
      last_used_at: nullableTimestamp,
      revoked_at: nullableTimestamp,
      created_by: { type: ['string', 'null'] },
      secret: { type: 'string', description: 'Send as `Authorization: Bearer <secret>`. Not retrievable later.' },
    },
  },
  {
    $id: 'SessionUser',
    type: 'object',
    additionalProperties: false,
    required: ['id', 'email', 'display_name', 'is_instance_admin', 'is_demo'],
    properties: {
      id: userIdSchema,
      email: { type: 'string' },
      display_name: { type: 'string' },
      is_instance_admin: { type: 'boolean' },
      is_demo: { type: 'boolean', description: 'The read-only demo account.' },
    },
  },
] as const;

export type SharedSchemaId = (typeof SHARED_SCHEMAS)[number]['$id'];

/** Every error status a management route can answer, all with the envelope. */
export const ERROR_RESPONSES = { '4xx': ref('ErrorEnvelope'), '5xx': ref('ErrorEnvelope') } as const;

export const tenantParams = {
  type: 'object',
  additionalProperties: false,
  required: ['tenant_id'],
  properties: { tenant_id: tenantIdSchema },
} as const;
