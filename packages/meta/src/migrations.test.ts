import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate, validateMigrations } from './index.ts';
import { PLANNING_IDEAS_TODOS_MIGRATION } from './migrations-planning.ts';
import type { Db } from './index.ts';
import { BACKENDS, createTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

const EXPECTED_TABLES = [
  'api_keys',
  'attribute_query_demand',
  'attribute_type_mismatches',
  'attribute_type_pins',
  'datasets',
  'delete_requests',
  'deletions',
  'floe_migrations',
  'iceberg_namespace_properties',
  'iceberg_tables',
  'leases',
  'memberships',
  'oauth_clients',
  'oauth_codes',
  'oauth_grants',
  'oauth_requests',
  'oauth_retired_refresh',
  'planning_comments',
  'planning_competitors',
  'planning_epic_goals',
  'planning_epics',
  'planning_feature_goals',
  'planning_features',
  'planning_goals',
  'planning_ideas',
  'planning_initiatives',
  'planning_products',
  'planning_release_phases',
  'planning_releases',
  'planning_requirements',
  'planning_tags',
  'planning_to_dos',
  'planning_workflow_kinds',
  'planning_workflow_statuses',
  'rule_groups',
  'schema_registries',
  'scm_installations',
  'scm_link_states',
  'sessions',
  'tenants',
  'users',
];

async function columns(db: Db, table: string): Promise<Array<{ name: string; type: string; len: number | null; nullable: string }>> {
  const { rows } = await db.query<{ name: string; type: string; len: number | null; nullable: string }>(
    `SELECT column_name AS name, data_type AS type, character_maximum_length AS len, is_nullable AS nullable
     FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1
     ORDER BY ordinal_position`,
    [table],
  );
  return rows;
}

async function primaryKey(db: Db, table: string): Promise<string[]> {
  const { rows } = await db.query<{ col: string }>(
    `SELECT kcu.column_name AS col
     FROM information_schema.table_constraints tc
     JOIN information_schema.key_column_usage kcu
       ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
     WHERE tc.table_schema = current_schema() AND tc.table_name = $1 AND tc.constraint_type = 'PRIMARY KEY'
     ORDER BY kcu.ordinal_position`,
    [table],
  );
  return rows.map((r) => r.col);
}

describe('migration list', () => {
  it('is numbered 1, 2, 3… (a new migration takes max+1)', () => {
    expect(() => validateMigrations(MIGRATIONS)).not.toThrow();
    expect(MIGRATIONS.map((m) => m.id)).toEqual(MIGRATIONS.map((_, i) => i + 1));
  });

  it.each([
    ['a gap', [{ id: 1, name: 'a', sql: 'SELECT 1' }, { id: 3, name: 'c', sql: 'SELECT 1' }]],
    ['not starting at 1', [{ id: 2, name: 'b', sql: 'SELECT 1' }]],
    ['out of order', [{ id: 2, name: 'b', sql: 'SELECT 1' }, { id: 1, name: 'a', sql: 'SELECT 1' }]],
    ['an empty name', [{ id: 1, name: ' ', sql: 'SELECT 1' }]],
  ])('rejects %s', (_name, list) => {
    expect(() => validateMigrations(list)).toThrow();
  });
});

describe.each(BACKENDS)('migrate on %s', (kind) => {
  let t: TestDatabase | undefined;
  afterEach(async () => {
    await t?.drop();
    t = undefined;
  });

  it('creates the schema once and is idempotent', async () => {
    t = await createTestDatabase(kind);
    const first = await migrate(t.db);
    expect(first).toEqual({ applied: MIGRATIONS.map((m) => m.id), version: MIGRATIONS.length, unknown: [] });
    const second = await migrate(t.db);
    expect(second).toEqual({ applied: [], version: MIGRATIONS.length, unknown: [] });

    const { rows } = await t.db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(EXPECTED_TABLES);
    const recorded = await t.db.query<{ id: number; name: string }>('SELECT id, name FROM floe_migrations ORDER BY id');
    expect(recorded.rows).toEqual(MIGRATIONS.map((m) => ({ id: m.id, name: m.name })));

    // The DDL itself is idempotent: replaying every migration's SQL changes nothing and does not fail.
    for (const m of MIGRATIONS) await t.db.exec(m.sql);
  });

  it('applies each migration exactly once when several processes start at the same time', async () => {
    t = await createTestDatabase(kind);
    // pg: four separate pools, like four processes; PGlite: four callers on the one in-process handle.
    const handles = await Promise.all([t.open(), t.open(), t.open(), t.open()]);
    const results = await Promise.all(handles.map((h) => migrate(h)));
    const applied = results.map((r) => r.applied).filter((a) => a.length > 0);
    expect(applied).toEqual([MIGRATIONS.map((m) => m.id)]);
    expect(results.every((r) => r.version === MIGRATIONS.length)).toBe(true);
    const { rows } = await t.db.query<{ n: string }>('SELECT count(*) AS n FROM floe_migrations');
    expect(rows[0]?.n).toBe(String(MIGRATIONS.length));
  });

  it('applies a later migration on top, and reports ids it does not know', async () => {
    t = await createTestDatabase(kind);
    await migrate(t.db);
    const next = [...MIGRATIONS, { id: MIGRATIONS.length + 1, name: 'probe', sql: 'CREATE TABLE IF NOT EXISTS probe_m (x int)' }];
    expect((await migrate(t.db, next)).applied).toEqual([MIGRATIONS.length + 1]);
    // Run by the older code again (a rolling upgrade): tolerated, reported.
    expect(await migrate(t.db)).toEqual({ applied: [], version: MIGRATIONS.length + 1, unknown: [MIGRATIONS.length + 1] });
  });

  it('brings a database migrated before ideas and to-dos up to date, keeping its products', async () => {
    t = await createTestDatabase(kind);
    await migrate(t.db, MIGRATIONS.slice(0, PLANNING_IDEAS_TODOS_MIGRATION.id - 1));
    await t.db.exec(`
      INSERT INTO tenants (id, display_name) VALUES ('acme', 'Acme');
      INSERT INTO planning_products (tenant_id, reference_prefix, name, next_goal_num) VALUES ('acme', 'PRJ1', 'Checkout', 4);`);
    expect((await migrate(t.db)).applied).toEqual(MIGRATIONS.map((m) => m.id).filter((id) => id >= PLANNING_IDEAS_TODOS_MIGRATION.id));
    const { rows } = await t.db.query('SELECT reference_prefix, next_goal_num, next_idea_num FROM planning_products');
    expect(rows).toEqual([{ reference_prefix: 'PRJ1', next_goal_num: 4, next_idea_num: 1 }]);
    expect((await columns(t.db, 'planning_ideas')).map((c) => c.name)).toEqual(['id', 'tenant_id', 'product_id', 'reference_num', 'name', 'description', 'created_at', 'updated_at']);
    expect((await columns(t.db, 'planning_to_dos')).map((c) => c.name)).toEqual(['id', 'tenant_id', 'feature_id', 'name', 'body', 'status', 'due_date', 'created_at', 'updated_at']);
  });

  it('rolls back every pending migration when one fails', async () => {
    t = await createTestDatabase(kind);
    const broken = [...MIGRATIONS, { id: MIGRATIONS.length + 1, name: 'broken', sql: 'CREATE TABLE probe_b (x int); SELECT * FROM no_such_table' }];
    await expect(migrate(t.db, broken)).rejects.toThrow(/no_such_table/);
    const { rows } = await t.db.query(
      `SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('tenants', 'floe_migrations', 'probe_b')`,
    );
    expect(rows).toEqual([]);
  });

  it('creates the Iceberg SQL catalog tables with the JdbcCatalog / PyIceberg layout', async () => {
    t = await createTestDatabase(kind);
    await migrate(t.db);
    expect(await columns(t.db, 'iceberg_tables')).toEqual([
      { name: 'catalog_name', type: 'character varying', len: 255, nullable: 'NO' },
      { name: 'table_namespace', type: 'character varying', len: 255, nullable: 'NO' },
      { name: 'table_name', type: 'character varying', len: 255, nullable: 'NO' },
      { name: 'metadata_location', type: 'character varying', len: 1000, nullable: 'YES' },
      { name: 'previous_metadata_location', type: 'character varying', len: 1000, nullable: 'YES' },
      { name: 'iceberg_type', type: 'character varying', len: 5, nullable: 'YES' },
    ]);
    expect(await primaryKey(t.db, 'iceberg_tables')).toEqual(['catalog_name', 'table_namespace', 'table_name']);
    expect(await columns(t.db, 'iceberg_namespace_properties')).toEqual([
      { name: 'catalog_name', type: 'character varying', len: 255, nullable: 'NO' },
      { name: 'namespace', type: 'character varying', len: 255, nullable: 'NO' },
      { name: 'property_key', type: 'character varying', len: 255, nullable: 'NO' }, // NOT NULL through the primary key
      { name: 'property_value', type: 'character varying', len: 1000, nullable: 'YES' },
    ]);
    expect(await primaryKey(t.db, 'iceberg_namespace_properties')).toEqual(['catalog_name', 'namespace', 'property_key']);
  });

  it('adopts iceberg_tables created earlier by PyIceberg (no iceberg_type column)', async () => {
    t = await createTestDatabase(kind);
    await t.db.exec(`
      CREATE TABLE iceberg_tables (
        catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
        metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000),
        PRIMARY KEY (catalog_name, table_namespace, table_name));
      INSERT INTO iceberg_tables VALUES ('py', 'ns', 't', 'file:///m/00000.metadata.json', NULL);`);
    await migrate(t.db);
    const { rows } = await t.db.query('SELECT table_name, iceberg_type FROM iceberg_tables');
    expect(rows).toEqual([{ table_name: 't', iceberg_type: null }]);
  });

  describe('constraints', () => {
    let c: TestDatabase;
    beforeAll(async () => {
      c = await createTestDatabase(kind);
      await migrate(c.db);
      await c.db.exec(`
        INSERT INTO tenants (id, display_name) VALUES ('acme', 'Acme'), ('_system', 'System');
        INSERT INTO datasets (tenant_id, id, is_default) VALUES ('acme', 'default', true);
        INSERT INTO users (id, email) VALUES ('u0', 'zed@example.com');`);
    });
    afterAll(async () => {
      await c?.drop();
    });

    it.each([
      ['a tenant id with a dot', `INSERT INTO tenants (id, display_name) VALUES ('acme.prod', 'x')`, '23514'],
      ['an upper-case tenant id', `INSERT INTO tenants (id, display_name) VALUES ('Acme', 'x')`, '23514'],
      ['a 64-character tenant id', `INSERT INTO tenants (id, display_name) VALUES ('${'a'.repeat(64)}', 'x')`, '23514'],
      ['a dataset id with a dot', `INSERT INTO datasets (tenant_id, id) VALUES ('acme', 'a.b')`, '23514'],
      ['a second default dataset', `INSERT INTO datasets (tenant_id, id, is_default) VALUES ('acme', 'other', true)`, '23505'],
      ['a dataset of an unknown tenant', `INSERT INTO datasets (tenant_id, id) VALUES ('nobody', 'd')`, '23503'],
      ['a key bound to an unknown dataset', `INSERT INTO api_keys (id, tenant_id, dataset_id, key_hash) VALUES ('k1', 'acme', 'nope', 'h1')`, '23503'],
      ['an upper-case email', `INSERT INTO users (id, email) VALUES ('u1', 'Ann@Example.com')`, '23514'],
      ['a duplicate email', `INSERT INTO users (id, email) VALUES ('u2', 'zed@example.com')`, '23505'],
      ['an unknown role', `INSERT INTO memberships (tenant_id, user_id, role, source) VALUES ('acme', 'u0', 'owner', 'local')`, '23514'],
      ['an unknown membership source', `INSERT INTO memberships (tenant_id, user_id, role, source) VALUES ('acme', 'u0', 'admin', 'ldap')`, '23514'],
    ])('the schema rejects %s', async (_name, sql, sqlstate) => {
      await expect(c.db.query(sql)).rejects.toMatchObject({ code: sqlstate });
    });

    it('lets a local and a mapped membership of the same user and tenant coexist', async () => {
      await c.db.query(
        `INSERT INTO memberships (tenant_id, user_id, role, source, granted_by)
         VALUES ('acme', 'u0', 'viewer', 'local', 'admin'), ('acme', 'u0', 'admin', 'mapped', 'oidc_mapping')`,
      );
      const { rows } = await c.db.query(`SELECT role, source FROM memberships WHERE user_id = 'u0' ORDER BY source`);
      expect(rows).toEqual([
        { role: 'viewer', source: 'local' },
        { role: 'admin', source: 'mapped' },
      ]);
    });
  });
});
