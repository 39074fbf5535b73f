import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkUserPassword,
  createSession,
  createTenant,
  createUser,
  deleteUser,
  effectiveRoles,
  getSession,
  getUser,
  getUserByEmail,
  grantMappedMembership,
  grantMembership,
  listTenantMemberships,
  listUserMemberships,
  listUsers,
  revokeMembership,
  revokeSession,
  updateUser,
  verifyPassword,
} from './index.ts';
import type { Db } from './index.ts';
import { BACKENDS, createMigratedTestDatabase } from './test-databases.ts';
import type { TestDatabase } from './test-databases.ts';

describe.each(BACKENDS)('users, memberships and sessions on %s', (kind) => {
  let t: TestDatabase;
  let db: Db;

  beforeAll(async () => {
    t = await createMigratedTestDatabase(kind);
    db = t.db;
    await createTenant(db, { id: 'acme' });
    await createTenant(db, { id: 'other' });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('stores a salted scrypt hash, never the password', async () => {
    const a = await createUser(db, { email: 'Ann@Example.com', password: 'correct horse' });
    const b = await createUser(db, { email: 'bob@example.com', password: 'correct horse' });
    expect(a).toMatchObject({ email: 'ann@example.com', hasPassword: true, isInstanceAdmin: false, disabled: false });
    const { rows } = await db.query<{ email: string; password_hash: string }>('SELECT email, password_hash FROM users ORDER BY email');
    for (const r of rows) {
      expect(r.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
      expect(r.password_hash).not.toContain('correct horse');
    }
    // Same password, different salts.
    expect(rows[0]!.password_hash).not.toBe(rows[1]!.password_hash);
    expect(await verifyPassword('correct horse', rows[0]!.password_hash)).toBe(true);
    expect(await verifyPassword('correct horsf', rows[0]!.password_hash)).toBe(false);
    expect(Object.keys(a)).not.toContain('passwordHash');
    expect((await getUser(db, b.id))?.email).toBe('bob@example.com');
  });

  it.each([
    ['a duplicate email (case-insensitive)', { email: 'ANN@example.com' }, 'conflict'],
    ['a malformed email', { email: 'not-an-email' }, 'bad_data'],
    ['an email holding a NUL', { email: 'nul\u0000@example.com' }, 'bad_data'],
    ['a short password', { email: 'short@example.com', password: 'abc' }, 'bad_data'],
  ])('refuses %s', async (_n, input, errKind) => {
    await expect(createUser(db, input)).rejects.toMatchObject({ name: 'MetaError', kind: errKind });
  });

  it('checks passwords: right, wrong, unknown, passwordless, disabled', async () => {
    await createUser(db, { email: 'carol@example.com', password: 'pa55word!' });
    await createUser(db, { email: 'sso@example.com' });
    expect((await checkUserPassword(db, 'CAROL@example.com', 'pa55word!'))?.email).toBe('carol@example.com');
    expect(await checkUserPassword(db, 'carol@example.com', 'wrong-password')).toBeUndefined();
    expect(await checkUserPassword(db, 'nobody@example.com', 'pa55word!')).toBeUndefined();
    expect(await checkUserPassword(db, 'sso@example.com', '')).toBeUndefined();
    // An address no account can have (the database refuses a NUL) is a wrong one, not an error.
    expect(await checkUserPassword(db, 'carol\u0000@example.com', 'pa55word!')).toBeUndefined();
    expect(await getUserByEmail(db, 'carol@example.com\u0000')).toBeUndefined();
    const carol = (await getUserByEmail(db, 'carol@example.com'))!;
    await updateUser(db, carol.id, { disabled: true });
    expect(await checkUserPassword(db, 'carol@example.com', 'pa55word!')).toBeUndefined();
    await updateUser(db, carol.id, { disabled: false });
    expect(await checkUserPassword(db, 'carol@example.com', 'pa55word!')).toBeDefined();
  });

  it('sessions: token hashed at rest, revocable, ended by disabling or a new password, expired ones dead', async () => {
    const u = await createUser(db, { email: 'dave@example.com', password: 'pa55word!' });
    const { token, session } = await createSession(db, u.id, 60_000);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { rows } = await db.query<Record<string, unknown>>('SELECT * FROM sessions WHERE user_id = $1', [u.id]);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows[0]!['id']).toBe(session.id);
    expect((await getSession(db, token))?.user.email).toBe('dave@example.com');
    expect(await revokeSession(db, token)).toBe(true);
    expect(await getSession(db, token)).toBeUndefined();

    const s2 = await createSession(db, u.id, 60_000);
    await updateUser(db, u.id, { disabled: true });
    expect(await getSession(db, s2.token)).toBeUndefined();
    await updateUser(db, u.id, { disabled: false });
    expect(await getSession(db, s2.token)).toBeUndefined(); // revoked, not merely hidden

    const s3 = await createSession(db, u.id, 60_000);
    await updateUser(db, u.id, { password: 'n3w-password' });
    expect(await getSession(db, s3.token)).toBeUndefined();

    const s4 = await createSession(db, u.id, 60_000);
    await db.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [s4.session.id]);
    expect(await getSession(db, s4.token)).toBeUndefined();
    expect(await getSession(db, 'garbage')).toBeUndefined();
  });

  it('memberships: a local and a mapped row coexist, the higher role wins, revoke removes only the local one', async () => {
    const u = await createUser(db, { email: 'erin@example.com' });
    const admin = await createUser(db, { email: 'root@example.com', isInstanceAdmin: true });
    const first = await grantMembership(db, { tenantId: 'acme', userId: u.id, role: 'viewer', grantedBy: `user:${admin.id}` });
    expect(first.created).toBe(true);
    expect(first.membership).toMatchObject({ tenantId: 'acme', userId: u.id, email: 'erin@example.com', role: 'viewer', grantedBy: `user:${admin.id}`, source: 'local' });
    await grantMappedMembership(db, { tenantId: 'acme', userId: u.id, role: 'member' });
    await grantMembership(db, { tenantId: 'other', userId: u.id, role: 'admin', grantedBy: 'admin' });
    const rows = await listUserMemberships(db, u.id);
    expect(rows.map((r) => [r.tenantId, r.role, r.grantedBy])).toEqual([
      ['acme', 'viewer', `user:${admin.id}`],
      ['acme', 'member', 'oidc_mapping'],
      ['other', 'admin', 'admin'],
    ]);
    expect(Object.fromEntries(effectiveRoles(rows))).toEqual({ acme: 'member', other: 'admin' });

    const again = await grantMembership(db, { tenantId: 'acme', userId: u.id, role: 'admin', grantedBy: 'admin' });
    expect(again.created).toBe(false);
    expect(Object.fromEntries(effectiveRoles(await listUserMemberships(db, u.id)))).toMatchObject({ acme: 'admin' });

    await revokeMembership(db, 'acme', u.id);
    expect((await listTenantMemberships(db, 'acme')).filter((m) => m.userId === u.id).map((m) => m.grantedBy)).toEqual(['oidc_mapping']);
    await expect(revokeMembership(db, 'acme', u.id)).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('memberships: refuse unknown tenants, users and roles, and the reserved grantor', async () => {
    const u = await createUser(db, { email: 'frank@example.com' });
    await expect(grantMembership(db, { tenantId: 'nope', userId: u.id, role: 'viewer', grantedBy: 'admin' })).rejects.toMatchObject({ kind: 'not_found' });
    await expect(grantMembership(db, { tenantId: 'acme', userId: '0000000000000000', role: 'viewer', grantedBy: 'admin' })).rejects.toMatchObject({ kind: 'not_found' });
    await expect(grantMembership(db, { tenantId: 'acme', userId: u.id, role: 'owner' as 'admin', grantedBy: 'admin' })).rejects.toMatchObject({ kind: 'bad_data' });
    await expect(grantMembership(db, { tenantId: 'acme', userId: u.id, role: 'viewer', grantedBy: 'oidc_mapping' })).rejects.toMatchObject({ kind: 'bad_data' });
    // The database refuses the same, whoever writes.
    await expect(
      db.query(`INSERT INTO memberships (tenant_id, user_id, role, source, granted_by) VALUES ('acme', $1, 'viewer', 'local', 'oidc_mapping')`, [u.id]),
    ).rejects.toThrow(/memberships_granted_by/);
  });

  it('deleting a user removes memberships and sessions; listing is by email', async () => {
    const u = await createUser(db, { email: 'gone@example.com', password: 'pa55word!' });
    await grantMembership(db, { tenantId: 'acme', userId: u.id, role: 'viewer', grantedBy: 'admin' });
    const { token } = await createSession(db, u.id, 60_000);
    await deleteUser(db, u.id);
    expect(await getSession(db, token)).toBeUndefined();
    expect(await listUserMemberships(db, u.id)).toEqual([]);
    await expect(deleteUser(db, u.id)).rejects.toMatchObject({ kind: 'not_found' });
    const emails = (await listUsers(db)).map((x) => x.email);
    expect(emails).toEqual([...emails].sort());
  });
});
