// Schema registries (spec 2, Management and operations: /api/v1/schema/registries): per-tenant
// documents of attribute, entity and metric definitions. A registry is read and written whole, so
// its definitions live in one jsonb document rather than rows of their own; resolution reads every
// registry of a tenant (a handful) and searches them in the router. One migration appended to
// MIGRATIONS.

import type { Migration } from './migrations.ts';

export const SCHEMA_REGISTRY_MIGRATION: Migration = {
  id: 9,
  name: 'schema registries',
  sql: `
CREATE TABLE IF NOT EXISTS schema_registries (
  tenant_id   text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  id          text NOT NULL CONSTRAINT schema_registries_id_format CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  name        text NOT NULL,
  document    jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  created_by  text,
  updated_by  text,
  PRIMARY KEY (tenant_id, id)
);
`,
};
