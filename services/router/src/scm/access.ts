import { isInstanceAdmin, tenantRole, type Principal } from '@floe/auth';
import { forbidden } from '@floe/errors';

/**
 * Who may use the source-control integration (spec 2, Authentication, "Who may do what" 1–2).
 * The roles come from @floe/auth's tenantRole, so a tenant admin here is exactly a tenant admin
 * everywhere else.
 */

/** Link, list and remove: tenant admins (admin session, tenant-wide tenant:manage key) and instance admins. */
export function authorizeScmManage(p: Principal, tenantId: string): void {
  if (tenantRole(p, tenantId) !== 'admin') throw forbidden(`managing source-control links of tenant ${tenantId} needs a tenant admin`, { code: 'FLOE_ERR_AUTH_ROLE' });
}

/** Attach: instance admins only; a tenant's own tenant:manage grant is not enough. */
export function authorizeScmAttach(p: Principal): void {
  if (!isInstanceAdmin(p)) throw forbidden('attaching an installation needs an instance admin', { code: 'FLOE_ERR_AUTH_INSTANCE_ADMIN' });
}

/** Source context: anyone who may read a signal of the tenant (a member of any role, a key with `query`). */
export function authorizeSourceContext(p: Principal, tenantId: string): void {
  if (p.kind === 'api_key' ? p.tenantId === tenantId && p.scopes.includes('query') : tenantRole(p, tenantId) !== undefined) return;
  throw forbidden(`no read access to tenant ${tenantId}`, { code: 'FLOE_ERR_AUTH_WRONG_TENANT' });
}
