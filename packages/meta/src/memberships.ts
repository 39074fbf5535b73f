// Memberships: a user's role in a tenant. Two kinds of row may exist for the same user and tenant:
// a local grant (made through the management API; granted_by names who granted it) and an
// SSO-mapped one (granted_by `oidc_mapping`, rewritten at every SSO login). They never touch each
// other, and the effective role is the higher of the two (spec 2, Resources: Membership).

import type { Db } from './db.ts';
import { MetaError, mapConstraintError } from './errors.ts';
import { assertLabel, isValidTenantId } from './ids.ts';
import { isValidUserId } from './users.ts';

/** Roles from lowest to highest. */
export const MEMBERSHIP_ROLES = ['viewer', 'member', 'admin'] as const;
export type MembershipRole = (typeof MEMBERSHIP_ROLES)[number];

/** granted_by of every SSO-mapped row, and of no local one. */
export const OIDC_MAPPING = 'oidc_mapping';

export const isMembershipRole = (v: unknown): v is MembershipRole => (MEMBERSHIP_ROLES as readonly unknown[]).includes(v);
export const roleRank = (role: MembershipRole): number => MEMBERSHIP_ROLES.indexOf(role);
/** The higher of two roles (admin > member > viewer); undefined counts as no role. */
export function higherRole(a: MembershipRole | undefined, b: MembershipRole | undefined): MembershipRole | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return roleRank(a) >= roleRank(b) ? a : b;
}

export interface Membership {
  tenantId: string;
  userId: string;
  /** The user's email, for listings. */
  email: string;
  /** The user's display name, for listings that may not show the email. */
  displayName: string;
  role: MembershipRole;
  /** Who granted a local row (`user:<id>`, `key:<id>`, `admin`), or `oidc_mapping`. */
  grantedBy: string | null;
  source: 'local' | 'mapped';
  createdAt: Date;
}

type MembershipRow = {
  tenant_id: string;
  user_id: string;
  email: string;
  display_name: string;
  role: MembershipRole;
  granted_by: string | null;
  source: 'local' | 'mapped';
  created_at: Date;
};

const SELECT = `SELECT m.tenant_id, m.user_id, u.email, u.display_name, m.role, m.granted_by, m.source, m.created_at
  FROM memberships m JOIN users u ON u.id = m.user_id`;

const toMembership = (r: MembershipRow): Membership => ({
  tenantId: r.tenant_id,
  userId: r.user_id,
  email: r.email,
  displayName: r.display_name,
  role: r.role,
  grantedBy: r.granted_by,
  source: r.source,
  createdAt: r.created_at,
});

function assertRole(role: unknown): asserts role is MembershipRole {
  if (!isMembershipRole(role)) throw new MetaError('bad_data', `role must be one of ${MEMBERSHIP_ROLES.join(', ')}`);
}

async function upsert(db: Db, tenantId: string, userId: string, role: MembershipRole, source: 'local' | 'mapped', grantedBy: string): Promise<{ membership: Membership; created: boolean }> {
  if (!isValidTenantId(tenantId)) throw new MetaError('not_found', `tenant ${JSON.stringify(tenantId)} not found`);
  if (!isValidUserId(userId)) throw new MetaError('not_found', `user ${JSON.stringify(userId)} not found`);
  const { rows } = await db
    .query<{ inserted: boolean }>(
      `INSERT INTO memberships (tenant_id, user_id, role, source, granted_by) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (tenant_id, user_id, source) DO UPDATE SET role = EXCLUDED.role, granted_by = EXCLUDED.granted_by
       RETURNING (xmax = 0) AS inserted`,
      [tenantId, userId, role, source, grantedBy],
    )
    // A missing tenant or user is a foreign-key violation → not_found.
    .catch((err: unknown) => mapConstraintError(err, `membership of user ${userId} in tenant ${tenantId}`));
  const { rows: found } = await db.query<MembershipRow>(`${SELECT} WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.source = $3`, [tenantId, userId, source]);
  return { membership: toMembership(found[0]!), created: rows[0]?.inserted === true };
}

/**
 * Grants (or changes) the local role of a user in a tenant. Never touches the SSO-mapped row.
 * Errors: bad_data (role, granted_by), not_found (tenant or user).
 */
export async function grantMembership(
  db: Db,
  input: { tenantId: string; userId: string; role: MembershipRole; grantedBy: string },
): Promise<{ membership: Membership; created: boolean }> {
  assertRole(input.role);
  assertLabel('granted_by', input.grantedBy);
  if (input.grantedBy === OIDC_MAPPING) throw new MetaError('bad_data', `granted_by ${OIDC_MAPPING} is reserved for SSO group mappings`);
  return upsert(db, input.tenantId, input.userId, input.role, 'local', input.grantedBy);
}

/** Writes the SSO-mapped role of a user in a tenant (group mappings at login). */
export async function grantMappedMembership(
  db: Db,
  input: { tenantId: string; userId: string; role: MembershipRole },
): Promise<{ membership: Membership; created: boolean }> {
  assertRole(input.role);
  return upsert(db, input.tenantId, input.userId, input.role, 'mapped', OIDC_MAPPING);
}

/** Removes the local grant only; a mapped row stays. Errors: not_found (no local grant). */
export async function revokeMembership(db: Db, tenantId: string, userId: string): Promise<void> {
  if (!isValidTenantId(tenantId) || !isValidUserId(userId)) throw new MetaError('not_found', 'membership not found');
  const res = await db.query(`DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2 AND source = 'local'`, [tenantId, userId]);
  if (res.rowCount === 0) throw new MetaError('not_found', `user ${userId} has no local membership in tenant ${tenantId}`);
}

/** Every membership row of a tenant (local and mapped), by email then source. */
export async function listTenantMemberships(db: Db, tenantId: string): Promise<Membership[]> {
  if (!isValidTenantId(tenantId)) return [];
  const { rows } = await db.query<MembershipRow>(`${SELECT} WHERE m.tenant_id = $1 ORDER BY u.email, m.source`, [tenantId]);
  return rows.map(toMembership);
}

/** Every membership row of a user, by tenant then source. */
export async function listUserMemberships(db: Db, userId: string): Promise<Membership[]> {
  if (!isValidUserId(userId)) return [];
  const { rows } = await db.query<MembershipRow>(`${SELECT} WHERE m.user_id = $1 ORDER BY m.tenant_id, m.source`, [userId]);
  return rows.map(toMembership);
}

/** The user's effective role per tenant: the higher of the local and the mapped row. */
export function effectiveRoles(rows: readonly Pick<Membership, 'tenantId' | 'role'>[]): Map<string, MembershipRole> {
  const out = new Map<string, MembershipRole>();
  for (const r of rows) out.set(r.tenantId, higherRole(out.get(r.tenantId), r.role)!);
  return out;
}

/**
 * Replaces the user's SSO-mapped rows with `wanted` (tenant → role) in one transaction (spec 2,
 * SSO rule 3): rows of tenants no longer wanted are removed, local rows are never read or
 * written. Tenants that do not exist are skipped and returned, so the caller can warn.
 */
export async function syncMappedMemberships(db: Db, userId: string, wanted: ReadonlyMap<string, MembershipRole>): Promise<{ skippedTenants: string[] }> {
  for (const role of wanted.values()) assertRole(role);
  return db.withTransaction(async (tx) => {
    const ids = [...wanted.keys()].filter(isValidTenantId);
    const { rows } = ids.length > 0 ? await tx.query<{ id: string }>('SELECT id FROM tenants WHERE id = ANY($1::text[])', [ids]) : { rows: [] };
    const existing = new Set(rows.map((r) => r.id));
    await tx.query(`DELETE FROM memberships WHERE user_id = $1 AND source = 'mapped' AND NOT (tenant_id = ANY($2::text[]))`, [userId, [...existing]]);
    for (const tenantId of existing) await upsert(tx, tenantId, userId, wanted.get(tenantId)!, 'mapped', OIDC_MAPPING);
    return { skippedTenants: [...wanted.keys()].filter((t) => !existing.has(t)) };
  });
}
