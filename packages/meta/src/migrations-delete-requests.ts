// Delete requests (Loki's log deletion API, Prometheus's delete_series): what to delete, from
// which dataset's table, over which time window. The router records them, the compactor rewrites
// the affected files once a request is past its cancel period and marks it processed; until then
// queries leave the rows out. One migration appended to MIGRATIONS.

import type { Migration } from './migrations.ts';

export const DELETE_REQUESTS_MIGRATION: Migration = {
  id: 13,
  name: 'delete requests',
  sql: `
CREATE TABLE IF NOT EXISTS delete_requests (
  id            text PRIMARY KEY,
  tenant_id     text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  dataset_id    text NOT NULL,
  table_name    text NOT NULL,
  query         text NOT NULL,
  start_ms      bigint NOT NULL,
  end_ms        bigint NOT NULL CONSTRAINT delete_requests_window CHECK (end_ms >= start_ms),
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- Set when a compactor takes the request up; from then on it can no longer be cancelled.
  started_at    timestamptz,
  processed_at  timestamptz,
  deleted_rows  bigint,
  seq           bigserial
);
CREATE INDEX IF NOT EXISTS delete_requests_dataset ON delete_requests (tenant_id, dataset_id, table_name);
CREATE INDEX IF NOT EXISTS delete_requests_pending ON delete_requests (created_at) WHERE processed_at IS NULL;
`,
};

/** Metric delete requests name the series they delete, resolved when they are recorded (Prometheus's delete_series). */
export const DELETE_REQUEST_SERIES_MIGRATION: Migration = {
  id: 14,
  name: 'delete requests: series ids',
  sql: `
ALTER TABLE delete_requests ADD COLUMN IF NOT EXISTS series_ids text[];
`,
};
