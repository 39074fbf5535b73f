// When each tenant and dataset was last deleted. The WAL may still hold records acknowledged
// before a deletion when a tenant or dataset of the same id is created again; the writer drops
// the records older than the deletion (their ids carry the time they were appended), so the new
// one starts empty. One migration appended to MIGRATIONS.

import type { Migration } from './migrations.ts';

export const DELETIONS_MIGRATION: Migration = {
  id: 16,
  name: 'deletions: when each tenant and dataset was last deleted',
  sql: `
CREATE TABLE IF NOT EXISTS deletions (
  tenant_id   text NOT NULL,
  -- '' for the tenant as a whole
  dataset_id  text NOT NULL DEFAULT '',
  deleted_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, dataset_id)
);
`,
};
