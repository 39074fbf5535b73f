// The public demo account (spec 2, Demo mode): provisioned at every start while demo mode is on.

import type { Db } from './db.ts';
import { MetaError } from './errors.ts';
import { isValidTenantId } from './ids.ts';
import { hashPassword } from './passwords.ts';
import { assertPassword, createUser, getUserByEmail, type User } from './users.ts';

/** granted_by of the demo user's membership: configuration granted it, not a person. */
export const DEMO_GRANT = 'demo';

/**
 * Brings the demo user to its configured state: the configured password, neither instance admin
 * nor disabled, and exactly one membership, viewer of `tenantId` (any other row, local or
 * SSO-mapped, on any tenant, is removed, so a role raised by hand is downgraded). Sessions are
 * kept: the password is public, so ending them at every start would protect nothing.
 * Errors: not_found (tenant), bad_data (email, password).
 */
export async function provisionDemoUser(db: Db, input: { email: string; password: string; tenantId: string }): Promise<User> {
  assertPassword(input.password);
  const hash = await hashPassword(input.password);
  return db.withTransaction(async (tx) => {
    const { rows } = isValidTenantId(input.tenantId) ? await tx.query('SELECT 1 FROM tenants WHERE id = $1', [input.tenantId]) : { rows: [] };
    if (rows.length === 0) throw new MetaError('not_found', `demo tenant ${JSON.stringify(input.tenantId)} does not exist`);
    const found = await getUserByEmail(tx, input.email);
    const id = found?.id ?? (await createUser(tx, { email: input.email, displayName: 'Demo' })).id;
    await tx.query('UPDATE users SET password_hash = $2, is_instance_admin = false, disabled = false WHERE id = $1', [id, hash]);
    await tx.query('DELETE FROM memberships WHERE user_id = $1', [id]);
    await tx.query(`INSERT INTO memberships (tenant_id, user_id, role, source, granted_by) VALUES ($1, $2, 'viewer', 'local', $3)`, [input.tenantId, id, DEMO_GRANT]);
    return (await getUserByEmail(tx, input.email))!;
  });
}
