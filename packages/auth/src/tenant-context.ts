import { FloeError } from '@floe/errors';

/**
 * Who is calling, resolved once per request by the auth step and passed explicitly to every
 * storage and query call. Nothing reads the tenant from ambient state.
 */
export interface TenantContext {
  tenant: string;
  dataset: string;
  /** API key id, or 'admin' for the break-glass key. */
  principal: string;
  scopes: readonly string[];
  isAdmin: boolean;
  /** The API key is bound to `dataset`: a request may reach no other dataset of the tenant (SQL's three-part names included). */
  datasetBound?: boolean;
}

/** Throws 403 unless the scopes grant `scope` (a key's own, or '*' for the break-glass key). */
export function requireScope(scopes: readonly string[], scope: string): void {
  if (!scopes.includes(scope) && !scopes.includes('*')) throw new FloeError('forbidden', `API key lacks the ${scope} scope`, { code: 'FLOE_ERR_AUTH_SCOPE' });
}

/** Names that may appear in tenant/dataset positions (they become Iceberg namespaces and paths). */
const NAME_RE = /^(?:[a-z0-9][a-z0-9_-]{0,62}|_system|_monitoring)$/;
export const isValidName = (v: string) => NAME_RE.test(v);
