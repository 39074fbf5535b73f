import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_GRANT, createTenant, createUser, grantMembership, provisionDemoUser } from './index.ts';
import type { Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

/**
 * Demo account provisioning (spec 2, Demo mode: "tenant_id (required when enabled; must already
 * exist)"). A refused provisioning changes nothing: the router logs it and starts without the
 * demo account (services/router/src/session/login-from-config.test.ts).
 */
describe.each(BACKENDS)('demo account provisioning on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;
  const demoRows = (email: string) =>
    db.query<{ email: string; password_hash: string | null; is_instance_admin: boolean; tenant_id: string | null; role: string | null }>(
      'SELECT u.email, u.password_hash, u.is_instance_admin, m.tenant_id, m.role FROM users u LEFT JOIN memberships m ON m.user_id = u.id WHERE u.email = $1 ORDER BY m.tenant_id',
      [email],
    );

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
    await createTenant(db, { id: 'acme' });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it.each([
    ['a tenant that does not exist', 'ghost', 'demo tenant "ghost" does not exist'],
    ['a tenant id no tenant can have', 'Not A Tenant!', 'demo tenant "Not A Tenant!" does not exist'],
  ])('refuses %s with not_found naming it, and creates no user', async (_n, tenantId, message) => {
    await expect(provisionDemoUser(db, { email: 'demo@example.com', password: 'demo-password', tenantId })).rejects.toMatchObject({ name: 'MetaError', kind: 'not_found', message });
    expect((await demoRows('demo@example.com')).rows).toEqual([]);
  });

  it('a missing tenant leaves an existing demo user, its password and its memberships untouched', async () => {
    const u = await createUser(db, { email: 'kept@example.com', password: 'the-old-password', isInstanceAdmin: true });
    await grantMembership(db, { tenantId: 'acme', userId: u.id, role: 'admin', grantedBy: 'admin' });
    const before = (await demoRows('kept@example.com')).rows;
    expect(before).toMatchObject([{ is_instance_admin: true, tenant_id: 'acme', role: 'admin' }]);
    await expect(provisionDemoUser(db, { email: 'kept@example.com', password: 'demo-password', tenantId: 'gone' })).rejects.toMatchObject({ kind: 'not_found' });
    expect((await demoRows('kept@example.com')).rows).toEqual(before);
  });

  it.each([
    ['a password too short to be one', { email: 'demo2@example.com', password: 'abc' }],
    ['an email that is no email', { email: 'demo', password: 'demo-password' }],
  ])('refuses %s with bad_data and creates no user', async (_n, input) => {
    await expect(provisionDemoUser(db, { ...input, tenantId: 'acme' })).rejects.toMatchObject({ name: 'MetaError', kind: 'bad_data' });
    expect((await demoRows(input.email)).rows).toEqual([]);
  });

  it('an existing tenant gets the demo user as its only viewer, granted by demo', async () => {
    const u = await provisionDemoUser(db, { email: 'demo@example.com', password: 'demo-password', tenantId: 'acme' });
    expect(u).toMatchObject({ email: 'demo@example.com', isInstanceAdmin: false, disabled: false, hasPassword: true });
    expect((await db.query('SELECT tenant_id, role, source, granted_by FROM memberships WHERE user_id = $1', [u.id])).rows).toEqual([
      { tenant_id: 'acme', role: 'viewer', source: 'local', granted_by: DEMO_GRANT },
    ]);
  });
});
