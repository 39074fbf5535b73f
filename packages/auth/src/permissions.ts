import { FloeError } from '@floe/errors';
import { roleRank, type MembershipRole } from '@floe/meta';
import type { Principal } from './principal.ts';

/**
 * Who may do what on the management API: the one table every route consults (spec 2,
 * Authentication, "Who may do what").
 *
 * - Instance-wide actions (tenants, users) need the break-glass key or an instance-admin session.
 * - Inside a tenant a principal has a role: instance admins and the break-glass key act as admin
 *   of every tenant; a user has their effective membership role; a tenant-wide key with
 *   `tenant:manage` is a tenant admin (spec: "Tenant admin: session with admin role or a
 *   tenant:manage key"); any other key of the tenant reads only. A key of another tenant, or a
 *   user without a membership, has no role there: 403.
 * - Dataset-bound keys never manage the tenant even with `tenant:manage`: they could otherwise
 *   mint tenant-wide keys and widen their own reach.
 */
export type TenantAction =
  | 'tenant.read'
  | 'tenant.update'
  | 'dataset.create'
  | 'dataset.delete'
  | 'membership.read'
  | 'membership.manage'
  | 'api_key.read'
  | 'api_key.create'
  | 'api_key.manage'
  | 'tables.manage'
  | 'schema_registry.manage';

export type InstanceAction = 'tenant.create' | 'tenant.delete' | 'tenant.disable' | 'tenant.limits' | 'user.read' | 'user.manage' | 'ops.compact';

const MIN_ROLE: Record<TenantAction, MembershipRole> = {
  'tenant.read': 'viewer',
  'membership.read': 'viewer',
  'api_key.read': 'member',
  // Members may create keys for their own tools, but never a tenant:manage key (grantableScopes).
  'api_key.create': 'member',
  'api_key.manage': 'admin',
  'tenant.update': 'admin',
  'dataset.create': 'admin',
  'dataset.delete': 'admin',
  'membership.manage': 'admin',
  'tables.manage': 'admin',
  'schema_registry.manage': 'admin',
};

/** Scopes only a tenant admin may put on a key: managing the tenant, and deleting its data. */
const ADMIN_ONLY_SCOPES = new Set(['tenant:manage', 'delete']);

export function isInstanceAdmin(p: Principal): boolean {
  return p.kind === 'admin_key' || (p.kind === 'user' && p.user.isInstanceAdmin);
}

/** The principal's role in a tenant, or undefined when it has none there. */
export function tenantRole(p: Principal, tenantId: string): MembershipRole | undefined {
  if (isInstanceAdmin(p)) return 'admin';
  if (p.kind === 'user') return p.roles.get(tenantId);
  if (p.kind === 'api_key') {
    if (p.tenantId !== tenantId) return undefined;
    return p.scopes.includes('tenant:manage') && p.datasetId === null ? 'admin' : 'viewer';
  }
  return undefined;
}

/** Throws 403 unless the principal may perform the action in the tenant; returns its role. */
export function authorizeTenant(p: Principal, action: TenantAction, tenantId: string): MembershipRole {
  const role = tenantRole(p, tenantId);
  if (role === undefined) throw new FloeError('forbidden', `no access to tenant ${tenantId}`, { code: 'FLOE_ERR_AUTH_WRONG_TENANT' });
  if (roleRank(role) < roleRank(MIN_ROLE[action])) {
    throw new FloeError('forbidden', `${action} in tenant ${tenantId} needs the ${MIN_ROLE[action]} role (you have ${role})`, { code: 'FLOE_ERR_AUTH_ROLE' });
  }
  return role;
}

/** Throws 403 unless the principal is an instance admin. */
export function authorizeInstance(p: Principal, action: InstanceAction): void {
  if (!isInstanceAdmin(p)) throw new FloeError('forbidden', `${action} needs an instance admin`, { code: 'FLOE_ERR_AUTH_INSTANCE_ADMIN' });
}

/** Throws 403 when a role may not put these scopes on a key. */
export function assertGrantableScopes(role: MembershipRole, scopes: readonly string[]): void {
  if (role === 'admin') return;
  const refused = scopes.filter((s) => ADMIN_ONLY_SCOPES.has(s));
  if (refused.length > 0) throw new FloeError('forbidden', `only a tenant admin may grant ${refused.join(', ')}`, { code: 'FLOE_ERR_AUTH_ROLE' });
}

/**
 * Whether the principal may revoke a key: tenant admins any key of the tenant, members the keys
 * they created themselves.
 */
export function mayRevokeKey(p: Principal, tenantId: string, key: { createdBy: string | null }): boolean {
  const role = tenantRole(p, tenantId);
  if (role === 'admin') return true;
  return role === 'member' && p.kind === 'user' && key.createdBy === `user:${p.user.id}`;
}

/** Whether the principal may read a user record: instance admins any, users themselves. */
export function mayReadUser(p: Principal, userId: string): boolean {
  return isInstanceAdmin(p) || (p.kind === 'user' && p.user.id === userId);
}

/**
 * Throws 403 unless the principal may list or provision the tenant's tables (spec 2, "Who may do
 * what" 3): any valid key of the tenant, whatever its scopes, and tenant admins.
 */
export function authorizeTables(p: Principal, tenantId: string): void {
  if (p.kind === 'api_key' && p.tenantId === tenantId) return;
  authorizeTenant(p, 'tables.manage', tenantId);
}
