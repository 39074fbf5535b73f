// The self-monitoring dataset (spec 1, Tenancy: tenant _system, dataset _monitoring): its id lies
// outside ID_PATTERN on purpose, so no tenant can create it through the API, and the constraint
// admits it for _system only. One migration appended to MIGRATIONS.

import type { Migration } from './migrations.ts';

export const SELF_MONITORING_MIGRATION: Migration = {
  id: 8,
  name: 'the _monitoring dataset of tenant _system',
  sql: `
ALTER TABLE datasets DROP CONSTRAINT IF EXISTS datasets_id_format;
ALTER TABLE datasets ADD CONSTRAINT datasets_id_format
  CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$' OR (tenant_id = '_system' AND id = '_monitoring'));
`,
};
