// The tables of the source-control integration (spec 2, Resources: Source-control installation and
// Link state), one migration appended to MIGRATIONS.
//
// Load-bearing choices:
// - No host credential is stored: installation tokens are minted on demand and kept in memory
//   (spec 2, source-context rule 7). What is stored is which tenant linked which installation.
// - Link states keep only the SHA-256 of the single-use token, so a leaked database cannot finish
//   a pending link; used_at is set in the transaction that records the installation.
// - An installation is linked per tenant: (tenant_id, installation_id) is the key, so removing it
//   from one tenant never touches another's link.

import type { Migration } from './migrations.ts';

export const SCM_MIGRATION: Migration = {
  id: 7,
  name: 'source-control installations and link states',
  sql: `
CREATE TABLE IF NOT EXISTS scm_link_states (
  state_hash  text PRIMARY KEY,
  tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  -- The user who started the flow; NULL when it was started with a key (tenant:manage or the
  -- break-glass key), and then any admin of the tenant may finish it.
  user_id     text REFERENCES users (id) ON DELETE CASCADE,
  started_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX IF NOT EXISTS scm_link_states_expires ON scm_link_states (expires_at);

CREATE TABLE IF NOT EXISTS scm_installations (
  tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  installation_id  bigint NOT NULL CONSTRAINT scm_installations_id_positive CHECK (installation_id > 0),
  account_login    text NOT NULL,
  account_type     text NOT NULL,
  -- Last list of covered repositories (owner/name) read from the host, in the host's order.
  repositories     text[] NOT NULL DEFAULT '{}',
  linked_by        text NOT NULL,
  linked_at        timestamptz NOT NULL DEFAULT now(),
  refreshed_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, installation_id)
);
`,
};
