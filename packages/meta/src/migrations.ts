// Schema migrations of the metadata database.
//
// Rules (load-bearing, see README):
// - Migrations are numbered: a new one takes max+1 and is appended. Never edit or renumber one that
//   has shipped; write a new migration instead.
// - DDL is idempotent (IF NOT EXISTS / IF EXISTS), so a migration re-run against a database where
//   another tool already created an object (e.g. a JDBC/PyIceberg catalog created iceberg_tables) is
//   harmless.
// - SQL stays portable between PostgreSQL 15 (cluster) and PGlite (PostgreSQL 18, embedded).
// - All pending migrations are applied in one transaction together with their floe_migrations
//   rows. On PostgreSQL the transaction first takes an advisory lock, so processes starting at the
//   same time apply each migration exactly once; PGlite is a single in-process connection.

import type { Db } from './db.ts';
import { DELETE_REQUEST_SERIES_MIGRATION, DELETE_REQUESTS_MIGRATION } from './migrations-delete-requests.ts';
import { OAUTH_MIGRATION, OAUTH_REPLAY_MIGRATION } from './migrations-oauth.ts';
import { PLANNING_IDEAS_TODOS_MIGRATION, PLANNING_MIGRATION, PLANNING_PHASES_MIGRATION } from './migrations-planning.ts';
import { SCHEMA_REGISTRY_MIGRATION } from './migrations-schema-registry.ts';
import { SCM_MIGRATION } from './migrations-scm.ts';
import { SELF_MONITORING_MIGRATION } from './migrations-self-monitoring.ts';
import { RULES_MIGRATION } from './migrations-rules.ts';
import { DELETIONS_MIGRATION } from './migrations-deletions.ts';

export interface Migration {
  readonly id: number;
  readonly name: string;
  readonly sql: string;
}

// Tenant and dataset ids become Iceberg namespace parts and URL path segments: lowercase, no dots.
const ID_CHECK = `'^[a-z0-9][a-z0-9_-]{0,62}$'`;

export const MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    name: 'tenants, datasets, api keys, users, memberships, sessions, iceberg sql catalog',
    sql: `
CREATE TABLE IF NOT EXISTS tenants (
  id            text PRIMARY KEY CONSTRAINT tenants_id_format CHECK (id ~ ${ID_CHECK} OR id = '_system'),
  display_name  text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  disabled      boolean NOT NULL DEFAULT false,
  settings      jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE TABLE IF NOT EXISTS datasets (
  tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id          text NOT NULL CONSTRAINT datasets_id_format CHECK (id ~ ${ID_CHECK}),
  is_default  boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- At most one default dataset per tenant.
CREATE UNIQUE INDEX IF NOT EXISTS datasets_one_default_per_tenant ON datasets (tenant_id) WHERE is_default;

-- id is the public key id embedded in the secret; key_hash is SHA-256 of the whole secret (hex).
-- A key bound to a dataset goes away with the dataset (CASCADE) rather than widening to the tenant.
CREATE TABLE IF NOT EXISTS api_keys (
  id            text PRIMARY KEY,
  tenant_id     text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  dataset_id    text,
  name          text NOT NULL DEFAULT '',
  key_hash      text NOT NULL UNIQUE,
  scopes        text[] NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz,
  created_by    text,
  FOREIGN KEY (tenant_id, dataset_id) REFERENCES datasets (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS api_keys_tenant ON api_keys (tenant_id);

-- Users, memberships and sessions serve later work (local and SSO sign-in); created now so the
-- schema is stable. Passwordless users (SSO just-in-time) have a null password_hash.
CREATE TABLE IF NOT EXISTS users (
  id                 text PRIMARY KEY,
  email              text NOT NULL UNIQUE CONSTRAINT users_email_lowercase CHECK (email = lower(email)),
  display_name       text NOT NULL DEFAULT '',
  password_hash      text,
  is_instance_admin  boolean NOT NULL DEFAULT false,
  disabled           boolean NOT NULL DEFAULT false,
  oidc_issuer        text,
  oidc_subject       text,
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS users_oidc_identity ON users (oidc_issuer, oidc_subject)
  WHERE oidc_subject IS NOT NULL;

-- A local grant and an SSO-mapped grant for the same user and tenant coexist (source is in the key);
-- the effective role is the higher one.
CREATE TABLE IF NOT EXISTS memberships (
  tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role        text NOT NULL CONSTRAINT memberships_role CHECK (role IN ('admin', 'member', 'viewer')),
  source      text NOT NULL CONSTRAINT memberships_source CHECK (source IN ('local', 'mapped')),
  granted_by  text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, user_id, source)
);
CREATE INDEX IF NOT EXISTS memberships_user ON memberships (user_id);

-- id is a hash of the session token; the token itself is never stored.
CREATE TABLE IF NOT EXISTS sessions (
  id          text PRIMARY KEY,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);
CREATE INDEX IF NOT EXISTS sessions_user ON sessions (user_id);

-- Iceberg SQL catalog, exactly the layout of Java JdbcCatalog (Spark, Trino, Flink) and PyIceberg
-- SqlCatalog, so those engines can open Floe's catalog directly (reference/storage.md §6).
-- iceberg_type is JdbcCatalog's "V1" view-support column ('TABLE' | 'VIEW', NULL read as TABLE);
-- added separately in case PyIceberg created the table without it.
CREATE TABLE IF NOT EXISTS iceberg_tables (
  catalog_name                VARCHAR(255) NOT NULL,
  table_namespace             VARCHAR(255) NOT NULL,
  table_name                  VARCHAR(255) NOT NULL,
  metadata_location           VARCHAR(1000),
  previous_metadata_location  VARCHAR(1000),
  iceberg_type                VARCHAR(5),
  PRIMARY KEY (catalog_name, table_namespace, table_name)
);
ALTER TABLE iceberg_tables ADD COLUMN IF NOT EXISTS iceberg_type VARCHAR(5);

CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
  catalog_name    VARCHAR(255) NOT NULL,
  namespace       VARCHAR(255) NOT NULL,
  property_key    VARCHAR(255),
  property_value  VARCHAR(1000),
  PRIMARY KEY (catalog_name, namespace, property_key)
);
`,
  },
  {
    id: 2,
    name: 'memberships.granted_by is oidc_mapping exactly for mapped rows; sessions by expiry',
    sql: `
-- Spec 2 (Resources: Membership): granted_by is a local grantor or 'oidc_mapping'. Rollback before a
-- downgrade deletes the rows with granted_by 'oidc_mapping', so the two must never disagree.
UPDATE memberships SET granted_by = 'oidc_mapping' WHERE source = 'mapped';
UPDATE memberships SET granted_by = NULL WHERE source = 'local' AND granted_by = 'oidc_mapping';
ALTER TABLE memberships DROP CONSTRAINT IF EXISTS memberships_granted_by;
ALTER TABLE memberships ADD CONSTRAINT memberships_granted_by
  CHECK ((source = 'mapped') = (granted_by IS NOT DISTINCT FROM 'oidc_mapping'));

-- createSession purges sessions past expiry.
CREATE INDEX IF NOT EXISTS sessions_expires ON sessions (expires_at);
`,
  },
  {
    id: 3,
    name: 'attribute type pins and type mismatch counts per dataset',
    sql: `
-- Issue 4 (attributes): a key's first-seen value type is pinned per dataset, across tables and
-- attribute scopes; the query layers read the pin to pick the typed map of a key.
CREATE TABLE IF NOT EXISTS attribute_type_pins (
  tenant_id      text NOT NULL,
  dataset_id     text NOT NULL,
  attr_key       text NOT NULL,
  attr_type      text NOT NULL CONSTRAINT attribute_type_pins_type CHECK (attr_type IN ('str', 'int', 'double', 'bool')),
  first_seen_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, dataset_id, attr_key),
  FOREIGN KEY (tenant_id, dataset_id) REFERENCES datasets (tenant_id, id) ON DELETE CASCADE
);

-- Values stored with another type than their key's pin (they are kept, in their own typed map):
-- off_type when the pin was there before, pin_conflict when the same batch or a concurrent
-- writer brought the key's first values in two types and the other type won.
CREATE TABLE IF NOT EXISTS attribute_type_mismatches (
  tenant_id     text NOT NULL,
  dataset_id    text NOT NULL,
  table_name    text NOT NULL,
  attr_key      text NOT NULL,
  reason        text NOT NULL CONSTRAINT attribute_type_mismatches_reason CHECK (reason IN ('off_type', 'pin_conflict')),
  count         bigint NOT NULL DEFAULT 0,
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, dataset_id, table_name, attr_key, reason),
  FOREIGN KEY (tenant_id, dataset_id) REFERENCES datasets (tenant_id, id) ON DELETE CASCADE
);
`,
  },
  {
    id: 4,
    name: 'query demand per attribute key',
    sql: `
-- Spec 1 (Log query API): labels used in query filters that are not dedicated columns are counted
-- as query demand, advice for which attributes deserve a materialized label column.
CREATE TABLE IF NOT EXISTS attribute_query_demand (
  tenant_id     text NOT NULL,
  dataset_id    text NOT NULL,
  table_name    text NOT NULL,
  attr_key      text NOT NULL,
  count         bigint NOT NULL DEFAULT 0,
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, dataset_id, table_name, attr_key),
  FOREIGN KEY (tenant_id, dataset_id) REFERENCES datasets (tenant_id, id) ON DELETE CASCADE
);
`,
  },
  {
    id: 5,
    name: 'api keys in creation order',
    sql: `
-- created_at ties (PGlite's clock moves in milliseconds; one transaction's rows share now()), so
-- listing "oldest first" needs an order of its own.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS seq bigserial;
`,
  },
  PLANNING_MIGRATION,
  SCM_MIGRATION,
  SELF_MONITORING_MIGRATION,
  SCHEMA_REGISTRY_MIGRATION,
  OAUTH_MIGRATION,
  PLANNING_PHASES_MIGRATION,
  PLANNING_IDEAS_TODOS_MIGRATION,
  DELETE_REQUESTS_MIGRATION,
  DELETE_REQUEST_SERIES_MIGRATION,
  RULES_MIGRATION,
  DELETIONS_MIGRATION,
  OAUTH_REPLAY_MIGRATION,
];

// Fixed key of the migration advisory lock ("floe-mig" in ASCII); other Floe locks must differ.
const MIGRATION_LOCK_KEY = '7380396369697925479';

export interface MigrateResult {
  /** Ids applied by this call, ascending (empty when the schema was already current). */
  applied: number[];
  /** Highest migration id recorded in the database after the call. */
  version: number;
  /**
   * Ids recorded in the database that this code does not know: the database was migrated by a
   * newer Floe. Tolerated (rolling upgrades run old and new side by side), reported for logging.
   */
  unknown: number[];
}

/** Checks the numbering rule: ids 1, 2, 3… with no gaps, in order, names unique and non-empty. */
export function validateMigrations(list: readonly Migration[]): void {
  list.forEach((m, i) => {
    if (m.id !== i + 1) throw new Error(`migration #${i} has id ${m.id}; ids must be 1, 2, 3… in order`);
    if (m.name.trim() === '' || m.sql.trim() === '') throw new Error(`migration ${m.id} has no name or sql`);
  });
}

/** Applies pending migrations; safe to call from many processes at once and on every start. */
export async function migrate(db: Db, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrateResult> {
  validateMigrations(migrations);
  return db.withTransaction(async (tx) => {
    if (tx.kind === 'pg') {
      // Serialises concurrent starts; released at COMMIT/ROLLBACK. The second process then sees
      // the first one's rows and applies nothing.
      await tx.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    }
    await tx.exec(`
CREATE TABLE IF NOT EXISTS floe_migrations (
  id          integer PRIMARY KEY,
  name        text NOT NULL,
  applied_at  timestamptz NOT NULL DEFAULT now()
)`);
    const { rows } = await tx.query<{ id: number }>('SELECT id FROM floe_migrations ORDER BY id');
    const done = new Set(rows.map((r) => r.id));
    const known = new Set(migrations.map((m) => m.id));
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.id)) continue;
      await tx.exec(m.sql);
      await tx.query('INSERT INTO floe_migrations (id, name) VALUES ($1, $2)', [m.id, m.name]);
      applied.push(m.id);
    }
    const all = [...done, ...applied];
    return {
      applied,
      version: all.length === 0 ? 0 : Math.max(...all),
      unknown: [...done].filter((id) => !known.has(id)).sort((a, b) => a - b),
    };
  });
}
