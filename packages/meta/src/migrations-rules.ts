// The ruler's tables: rule groups as tenants define them (Prometheus rule-file groups, set through
// the Cortex/Mimir ruler config API), the state of their last evaluation (health, errors and
// active alerts, so any router answers /api/v1/rules and a new leader restores pending and firing
// alerts instead of starting their `for` over), and the lease that makes one router the
// evaluator. One migration appended to MIGRATIONS.

import type { Migration } from './migrations.ts';

export const RULES_MIGRATION: Migration = {
  id: 15,
  name: 'ruler: rule groups, their evaluation state, the evaluator lease',
  sql: `
CREATE TABLE IF NOT EXISTS rule_groups (
  tenant_id   text NOT NULL,
  dataset_id  text NOT NULL,
  language    text NOT NULL CONSTRAINT rule_groups_language CHECK (language IN ('promql', 'logql')),
  namespace   text NOT NULL,
  name        text NOT NULL,
  definition  jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  -- Counts the definition's changes: an evaluation's state is saved only over the version evaluated.
  version     integer NOT NULL DEFAULT 1,
  -- The evaluation state of this definition; cleared when the definition changes.
  state       jsonb,
  PRIMARY KEY (tenant_id, dataset_id, language, namespace, name),
  -- A dataset's rules go with it (and with its tenant, through the dataset).
  FOREIGN KEY (tenant_id, dataset_id) REFERENCES datasets (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS leases (
  name        text PRIMARY KEY,
  holder      text NOT NULL,
  expires_at  timestamptz NOT NULL
);
`,
};
