import type { SessionUser } from '@floe/auth';
import { DEFAULT_DATASET_ID, type ApiKey, type CreatedApiKey, type Dataset, type Membership, type MembershipRole, type Tenant, type User } from '@floe/meta';

/**
 * Records of @floe/meta (camelCase, Date) in their wire form (snake_case, ISO strings): the
 * shapes of the `Tenant`, `Dataset`, `User`, `Membership` and `ApiKey` schemas.
 */
const iso = (d: Date) => d.toISOString();
const isoOrNull = (d: Date | null) => (d === null ? null : d.toISOString());

export const tenantWire = (t: Tenant) => ({
  id: t.id,
  display_name: t.displayName,
  default_dataset: t.defaultDatasetId ?? DEFAULT_DATASET_ID,
  disabled: t.disabled,
  settings: t.settings,
  created_at: iso(t.createdAt),
});

export const datasetWire = (d: Dataset) => ({ tenant_id: d.tenantId, id: d.id, is_default: d.isDefault, created_at: iso(d.createdAt) });

export const userWire = (u: User) => ({
  id: u.id,
  email: u.email,
  display_name: u.displayName,
  is_instance_admin: u.isInstanceAdmin,
  disabled: u.disabled,
  has_password: u.hasPassword,
  oidc_issuer: u.oidcIssuer,
  oidc_subject: u.oidcSubject,
  created_at: iso(u.createdAt),
});

/** `showEmail` false: a caller who may not see the member's email (personal data) gets null. */
export const membershipWire = (m: Membership, showEmail = true) => ({
  tenant_id: m.tenantId,
  user_id: m.userId,
  email: showEmail ? m.email : null,
  display_name: m.displayName,
  role: m.role,
  granted_by: m.grantedBy,
  created_at: iso(m.createdAt),
});

export const apiKeyWire = (k: ApiKey) => ({
  id: k.id,
  tenant_id: k.tenantId,
  dataset_id: k.datasetId,
  name: k.name,
  scopes: k.scopes,
  created_at: iso(k.createdAt),
  last_used_at: isoOrNull(k.lastUsedAt),
  revoked_at: isoOrNull(k.revokedAt),
  created_by: k.createdBy,
  // Only OAuth access tokens expire: other keys' records stay as they were.
  ...(k.expiresAt ? { expires_at: iso(k.expiresAt) } : {}),
});

export const createdApiKeyWire = (k: CreatedApiKey) => ({ ...apiKeyWire(k), secret: k.secret });

export const rolesWire = (roles: ReadonlyMap<string, MembershipRole>) =>
  [...roles].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([tenant_id, role]) => ({ tenant_id, role }));

export const sessionUserWire = (u: SessionUser) => ({
  id: u.id,
  email: u.email,
  display_name: u.displayName,
  is_instance_admin: u.isInstanceAdmin,
  is_demo: u.isDemo,
});
