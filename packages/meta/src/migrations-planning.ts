// The tables of the product-planning API (spec 3, services/planning): migration 6, then later
// ones appended to MIGRATIONS (11 release phases, 12 ideas and to-dos). They live in the metadata
// database because planning records are small, relational and tenant-owned like tenants and keys;
// nothing of the telemetry path reads them.
//
// Load-bearing choices:
// - Every row carries tenant_id (FK to tenants, cascade): a tenant's planning data goes with it,
//   and every statement of the service filters on it.
// - Ids come from one sequence, planning_ids, so an id names one record of any kind (as the ids of
//   the API it is modelled on do) and the description object of a record has an id of its own.
// - Reference numbers (PRJ1-12, PRJ1-R-3, PRJ1-E-2…) are unique per tenant; their counters live on
//   the product row and are taken with UPDATE … RETURNING inside the inserting transaction.
// - Timestamps are timestamptz; the service shows and compares them at millisecond precision.

import type { Migration } from './migrations.ts';

const ID = `bigint PRIMARY KEY DEFAULT nextval('planning_ids')`;
const TENANT = `text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE`;
const USER_REF = `text REFERENCES users (id) ON DELETE SET NULL`;

// Goals, initiatives (migration 6) and ideas (migration 12): records of a product with a name, a
// description and a reference number, nothing more. Shipped migrations use it: never change it
// (a change of these tables is a new migration).
const productRecordTable = (table: string) => `CREATE TABLE IF NOT EXISTS ${table} (
  id                  ${ID},
  tenant_id           ${TENANT},
  product_id          bigint NOT NULL REFERENCES planning_products (id) ON DELETE CASCADE,
  reference_num       text NOT NULL,
  name                text NOT NULL,
  description         text NOT NULL DEFAULT '',
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, reference_num)
);`;

export const PLANNING_MIGRATION: Migration = {
  id: 6,
  name: 'product planning: products, workflows, releases, features, epics, requirements, goals, initiatives, competitors, comments, tags',
  sql: `
CREATE SEQUENCE IF NOT EXISTS planning_ids;

-- A product (workspace). reference_prefix starts every reference number of its records.
CREATE TABLE IF NOT EXISTS planning_products (
  id                    ${ID},
  tenant_id             ${TENANT},
  reference_prefix      text NOT NULL CONSTRAINT planning_products_prefix CHECK (reference_prefix ~ '^[A-Z][A-Z0-9]{0,9}$'),
  name                  text NOT NULL,
  description           text NOT NULL DEFAULT '',
  product_line          boolean NOT NULL DEFAULT false,
  workspace_type        text NOT NULL DEFAULT 'product_workspace',
  next_feature_num      integer NOT NULL DEFAULT 1,
  next_release_num      integer NOT NULL DEFAULT 1,
  next_epic_num         integer NOT NULL DEFAULT 1,
  next_initiative_num   integer NOT NULL DEFAULT 1,
  next_goal_num         integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, reference_prefix)
);

-- A product's workflows: one ordered list of statuses per record kind (feature, epic, release).
CREATE TABLE IF NOT EXISTS planning_workflow_statuses (
  id          ${ID},
  tenant_id   ${TENANT},
  product_id  bigint NOT NULL REFERENCES planning_products (id) ON DELETE CASCADE,
  record_kind text NOT NULL CONSTRAINT planning_workflow_statuses_kind CHECK (record_kind IN ('feature', 'epic', 'release')),
  name        text NOT NULL,
  position    integer NOT NULL,
  complete    boolean NOT NULL DEFAULT false,
  color       text NOT NULL DEFAULT '#dddddd',
  UNIQUE (product_id, record_kind, name)
);

CREATE TABLE IF NOT EXISTS planning_workflow_kinds (
  id          ${ID},
  tenant_id   ${TENANT},
  product_id  bigint NOT NULL REFERENCES planning_products (id) ON DELETE CASCADE,
  name        text NOT NULL,
  position    integer NOT NULL,
  UNIQUE (product_id, name)
);

CREATE TABLE IF NOT EXISTS planning_tags (
  id          ${ID},
  tenant_id   ${TENANT},
  name        text NOT NULL,
  color       text NOT NULL DEFAULT '#0073cf',
  UNIQUE (tenant_id, name)
);

${productRecordTable('planning_initiatives')}

${productRecordTable('planning_goals')}

-- Columns shared by releases, epics and features: a description with an id of its own, people,
-- tags, custom fields (key → value), the workflow status and the history of its changes.
CREATE TABLE IF NOT EXISTS planning_releases (
  id                      ${ID},
  tenant_id               ${TENANT},
  product_id              bigint NOT NULL REFERENCES planning_products (id) ON DELETE CASCADE,
  reference_num           text NOT NULL,
  name                    text NOT NULL,
  theme                   text NOT NULL DEFAULT '',
  start_date              date,
  release_date            date,
  external_release_date   date,
  development_started_on  date,
  released_on             date,
  parking_lot             boolean NOT NULL DEFAULT false,
  position                integer NOT NULL DEFAULT 0,
  progress                integer NOT NULL DEFAULT 0,
  progress_source         text NOT NULL DEFAULT 'progress_manual',
  workflow_status_id      bigint REFERENCES planning_workflow_statuses (id) ON DELETE SET NULL,
  status_changed_on       date,
  workflow_status_times   jsonb NOT NULL DEFAULT '[]'::jsonb,
  description_id          bigint NOT NULL DEFAULT nextval('planning_ids'),
  description             text NOT NULL DEFAULT '',
  description_created_at  timestamptz NOT NULL DEFAULT now(),
  description_updated_at  timestamptz NOT NULL DEFAULT now(),
  assigned_to_user_id     ${USER_REF},
  created_by_user_id      ${USER_REF},
  created_by_key_id       text,
  tags                    text[] NOT NULL DEFAULT '{}',
  custom_fields           jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at              timestamptz NOT NULL DEFAULT now(),
  updated_at              timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, reference_num)
);
CREATE INDEX IF NOT EXISTS planning_releases_product ON planning_releases (tenant_id, product_id);

CREATE TABLE IF NOT EXISTS planning_epics (
  id                      ${ID},
  tenant_id               ${TENANT},
  product_id              bigint NOT NULL REFERENCES planning_products (id) ON DELETE CASCADE,
  release_id              bigint REFERENCES planning_releases (id) ON DELETE SET NULL,
  initiative_id           bigint REFERENCES planning_initiatives (id) ON DELETE SET NULL,
  reference_num           text NOT NULL,
  name                    text NOT NULL,
  position                integer NOT NULL DEFAULT 0,
  score                   integer NOT NULL DEFAULT 0,
  progress                integer NOT NULL DEFAULT 0,
  progress_source         text NOT NULL DEFAULT 'progress_manual',
  duration_source         text NOT NULL DEFAULT 'duration_manual',
  start_date              date,
  due_date                date,
  workflow_status_id      bigint REFERENCES planning_workflow_statuses (id) ON DELETE SET NULL,
  status_changed_on       date,
  workflow_status_times   jsonb NOT NULL DEFAULT '[]'::jsonb,
  description_id          bigint NOT NULL DEFAULT nextval('planning_ids'),
  description             text NOT NULL DEFAULT '',
  description_created_at  timestamptz NOT NULL DEFAULT now(),
  description_updated_at  timestamptz NOT NULL DEFAULT now(),
  assigned_to_user_id     ${USER_REF},
  created_by_user_id      ${USER_REF},
  created_by_key_id       text,
  tags                    text[] NOT NULL DEFAULT '{}',
  custom_fields           jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at              timestamptz NOT NULL DEFAULT now(),
  updated_at              timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, reference_num)
);
CREATE INDEX IF NOT EXISTS planning_epics_product ON planning_epics (tenant_id, product_id);

CREATE TABLE IF NOT EXISTS planning_features (
  id                               ${ID},
  tenant_id                        ${TENANT},
  product_id                       bigint NOT NULL REFERENCES planning_products (id) ON DELETE CASCADE,
  release_id                       bigint NOT NULL REFERENCES planning_releases (id) ON DELETE CASCADE,
  epic_id                          bigint REFERENCES planning_epics (id) ON DELETE SET NULL,
  initiative_id                    bigint REFERENCES planning_initiatives (id) ON DELETE SET NULL,
  reference_num                    text NOT NULL,
  name                             text NOT NULL,
  position                         integer NOT NULL DEFAULT 0,
  score                            integer NOT NULL DEFAULT 0,
  progress                         integer NOT NULL DEFAULT 0,
  progress_source                  text NOT NULL DEFAULT 'progress_manual',
  start_date                       date,
  due_date                         date,
  workflow_kind_id                 bigint REFERENCES planning_workflow_kinds (id) ON DELETE SET NULL,
  workflow_status_id               bigint REFERENCES planning_workflow_statuses (id) ON DELETE SET NULL,
  status_changed_on                date,
  workflow_status_times            jsonb NOT NULL DEFAULT '[]'::jsonb,
  description_id                   bigint NOT NULL DEFAULT nextval('planning_ids'),
  description                      text NOT NULL DEFAULT '',
  description_created_at           timestamptz NOT NULL DEFAULT now(),
  description_updated_at           timestamptz NOT NULL DEFAULT now(),
  assigned_to_user_id              ${USER_REF},
  created_by_user_id               ${USER_REF},
  created_by_key_id                text,
  tags                             text[] NOT NULL DEFAULT '{}',
  custom_fields                    jsonb NOT NULL DEFAULT '{}'::jsonb,
  initial_estimate                 double precision,
  detailed_estimate                double precision,
  remaining_estimate               double precision,
  work_done                        double precision,
  next_requirement_num             integer NOT NULL DEFAULT 1,
  created_at                       timestamptz NOT NULL DEFAULT now(),
  updated_at                       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, reference_num)
);
CREATE INDEX IF NOT EXISTS planning_features_release ON planning_features (tenant_id, release_id);
CREATE INDEX IF NOT EXISTS planning_features_product ON planning_features (tenant_id, product_id);
CREATE INDEX IF NOT EXISTS planning_features_updated ON planning_features (tenant_id, updated_at);

CREATE TABLE IF NOT EXISTS planning_feature_goals (
  tenant_id   ${TENANT},
  feature_id  bigint NOT NULL REFERENCES planning_features (id) ON DELETE CASCADE,
  goal_id     bigint NOT NULL REFERENCES planning_goals (id) ON DELETE CASCADE,
  PRIMARY KEY (feature_id, goal_id)
);

CREATE TABLE IF NOT EXISTS planning_epic_goals (
  tenant_id   ${TENANT},
  epic_id     bigint NOT NULL REFERENCES planning_epics (id) ON DELETE CASCADE,
  goal_id     bigint NOT NULL REFERENCES planning_goals (id) ON DELETE CASCADE,
  PRIMARY KEY (epic_id, goal_id)
);

CREATE TABLE IF NOT EXISTS planning_requirements (
  id                      ${ID},
  tenant_id               ${TENANT},
  feature_id              bigint NOT NULL REFERENCES planning_features (id) ON DELETE CASCADE,
  reference_num           text NOT NULL,
  name                    text NOT NULL,
  position                integer NOT NULL DEFAULT 0,
  workflow_status_id      bigint REFERENCES planning_workflow_statuses (id) ON DELETE SET NULL,
  description_id          bigint NOT NULL DEFAULT nextval('planning_ids'),
  description             text NOT NULL DEFAULT '',
  description_created_at  timestamptz NOT NULL DEFAULT now(),
  description_updated_at  timestamptz NOT NULL DEFAULT now(),
  created_by_user_id      ${USER_REF},
  created_by_key_id       text,
  created_at              timestamptz NOT NULL DEFAULT now(),
  updated_at              timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, reference_num)
);

CREATE TABLE IF NOT EXISTS planning_competitors (
  id          ${ID},
  tenant_id   ${TENANT},
  product_id  bigint NOT NULL REFERENCES planning_products (id) ON DELETE CASCADE,
  name        text NOT NULL,
  description text NOT NULL DEFAULT '',
  strengths   text NOT NULL DEFAULT '',
  weaknesses  text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS planning_competitors_product ON planning_competitors (tenant_id, product_id);

-- Comments point at their parent by kind and id (no foreign key: parents live in several tables);
-- deleting a feature deletes its comments in the same transaction.
CREATE TABLE IF NOT EXISTS planning_comments (
  id              ${ID},
  tenant_id       ${TENANT},
  parent_kind     text NOT NULL,
  parent_id       bigint NOT NULL,
  body            text NOT NULL,
  user_id         ${USER_REF},
  key_id          text,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS planning_comments_parent ON planning_comments (tenant_id, parent_kind, parent_id);
`,
};

/**
 * Release phases (spec 3: a release's `phases`, comments on a release phase, a feature's
 * `release_phase`). No reference numbers: a phase is named by its id, or by its name within
 * its release. A feature's phase must be one of its release's; deleting a phase clears it.
 */
export const PLANNING_PHASES_MIGRATION: Migration = {
  id: 11,
  name: 'product planning: release phases',
  sql: `
CREATE TABLE IF NOT EXISTS planning_release_phases (
  id          ${ID},
  tenant_id   ${TENANT},
  release_id  bigint NOT NULL REFERENCES planning_releases (id) ON DELETE CASCADE,
  name        text NOT NULL,
  start_date  date,
  end_date    date,
  position    integer NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS planning_release_phases_release ON planning_release_phases (tenant_id, release_id);
ALTER TABLE planning_features ADD COLUMN IF NOT EXISTS release_phase_id bigint REFERENCES planning_release_phases (id) ON DELETE SET NULL;
`,
};

/**
 * Ideas and to-dos (spec 3: comments listed on both, added to ideas). Spec 3 shows no fields of
 * either beyond their identifiers, so they hold what the API they are modelled on needs at the
 * least: an idea is a product's, with a name, a description and a reference number (PRJ1-IDEA-n,
 * its counter on the product row like the others); a to-do is a feature's, named by id only, with
 * a name, a body, a status (pending or complete) and an optional due date. Deleting a feature
 * deletes its to-dos (cascade) and the service deletes their comments in the same transaction.
 */
export const PLANNING_IDEAS_TODOS_MIGRATION: Migration = {
  id: 12,
  name: 'product planning: ideas and to-dos',
  sql: `
ALTER TABLE planning_products ADD COLUMN IF NOT EXISTS next_idea_num integer NOT NULL DEFAULT 1;

${productRecordTable('planning_ideas')}

CREATE TABLE IF NOT EXISTS planning_to_dos (
  id          ${ID},
  tenant_id   ${TENANT},
  feature_id  bigint NOT NULL REFERENCES planning_features (id) ON DELETE CASCADE,
  name        text NOT NULL,
  body        text NOT NULL DEFAULT '',
  status      text NOT NULL DEFAULT 'pending' CONSTRAINT planning_to_dos_status CHECK (status IN ('pending', 'complete')),
  due_date    date,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS planning_to_dos_feature ON planning_to_dos (tenant_id, feature_id);
`,
};
