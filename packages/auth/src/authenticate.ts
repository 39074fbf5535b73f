import { timingSafeEqual, createHash } from 'node:crypto';
import { FloeError } from '@floe/errors';
import { isValidName, requireScope, type TenantContext } from './tenant-context.ts';

export interface VerifiedKey {
  keyId: string;
  tenantId: string;
  datasetId: string | null;
  scopes: readonly string[];
}

export interface AuthDeps {
  verifyKey(secret: string): Promise<VerifiedKey | undefined>;
  /** Whether the dataset exists for the tenant (cached by the caller). */
  datasetExists(tenant: string, dataset: string): Promise<boolean>;
  /** Break-glass key from config (`auth.admin_api_key`); empty disables it. */
  adminApiKey: string;
  /**
   * Floe's internal service key (auth.internal_service_key), accepted for `serviceScopes` only:
   * the router presents it to a querier on behalf of a signed-in session, which has no API key to
   * forward (the native Query IR endpoint, spec 2), and its ruler to an acceptor to write
   * recording-rule results. Empty or absent: not accepted.
   */
  serviceKey?: string;
  /** The scopes the service key stands for in this process (default: `query` only). */
  serviceScopes?: readonly string[];
}

export interface Credentials {
  authorization: string | undefined;
  tenant: string | undefined;
  dataset: string | undefined;
}

export const DEFAULT_DATASET = 'default';

export interface AuthenticateOptions {
  /**
   * Without X-Tenant-ID (or a Basic user), the tenant is the API key's own: for clients that hold
   * one tenant's key and cannot add headers, such as MCP clients with an OAuth access token.
   */
  tenantFromKey?: boolean;
  /**
   * The kind of error when no tenant is named (default `unauthorized`, 401). The trace query API
   * answers `bad_data` (400): there a missing header is a malformed request, while remote write
   * and the other APIs keep 401 (spec 1, Authentication rules 2 and 3).
   */
  missingTenant?: 'unauthorized' | 'bad_data';
}

const sha = (s: string) => createHash('sha256').update(s).digest();
const sameSecret = (a: string, b: string) => timingSafeEqual(sha(a), sha(b));

/**
 * Resolves the caller's tenant and dataset from `Authorization: Bearer <key>` (or `Basic
 * base64(<tenant>:<key>)`), `X-Tenant-ID` and the optional `X-Dataset-ID`. Missing or unknown key → 401; a key bound to another tenant or dataset
 * → 403; a malformed tenant/dataset name → 400; no tenant named → 401, or 400 with
 * `missingTenant: 'bad_data'`.
 */
export async function authenticate(creds: Credentials, deps: AuthDeps, requiredScope?: string, opts: AuthenticateOptions = {}): Promise<TenantContext> {
  const header = creds.authorization?.trim();
  if (!header) throw new FloeError('unauthorized', 'missing Authorization header (expected "Bearer <api key>")', { code: 'FLOE_ERR_AUTH_MISSING' });
  const { secret, user } = parseAuthorization(header);
  // Basic auth names the tenant as the user (as Mimir and Loki gateways do): senders that cannot
  // set X-Tenant-ID, such as Prometheus's remote_write basic_auth, still reach their tenant.
  let tenant = creds.tenant?.trim() || user;
  if (!tenant && opts.tenantFromKey) tenant = (await deps.verifyKey(secret))?.tenantId;
  if (!tenant) {
    // With tenantFromKey a tenant is missing only because the key names none (unknown, admin or
    // service key): that is a failure to authenticate, not a malformed request.
    if (opts.missingTenant === 'bad_data' && !opts.tenantFromKey) {
      throw new FloeError('bad_data', 'missing X-Tenant-ID header: name the tenant to query', { code: 'FLOE_ERR_AUTH_NO_TENANT' });
    }
    throw new FloeError('unauthorized', 'missing X-Tenant-ID header', { code: 'FLOE_ERR_AUTH_NO_TENANT' });
  }
  if (!isValidName(tenant)) throw new FloeError('bad_data', 'invalid X-Tenant-ID', { code: 'FLOE_ERR_AUTH_BAD_TENANT' });
  const datasetHeader = creds.dataset?.trim() || undefined;
  if (datasetHeader !== undefined && !isValidName(datasetHeader)) {
    throw new FloeError('bad_data', 'invalid X-Dataset-ID', { code: 'FLOE_ERR_AUTH_BAD_DATASET' });
  }

  if (deps.adminApiKey && sameSecret(secret, deps.adminApiKey)) {
    const dataset = datasetHeader ?? DEFAULT_DATASET;
    // As for a key: data written to a dataset that does not exist would never be stored (the
    // writer drops records of deleted datasets), so it is refused here.
    if (datasetHeader !== undefined && !(await deps.datasetExists(tenant, dataset))) throw noSuchDataset(tenant, dataset);
    return { tenant, dataset, principal: 'admin', scopes: ['*'], isAdmin: true };
  }
  // The router has already checked the session's membership and the dataset, or evaluates the
  // tenant's own rules; the key stands only for the scopes this process grants it.
  if (deps.serviceKey && requiredScope !== undefined && (deps.serviceScopes ?? ['query']).includes(requiredScope) && sameSecret(secret, deps.serviceKey)) {
    return { tenant, dataset: datasetHeader ?? DEFAULT_DATASET, principal: 'service', scopes: [requiredScope], isAdmin: false };
  }

  const key = await deps.verifyKey(secret);
  if (!key) throw new FloeError('unauthorized', 'invalid or revoked API key', { code: 'FLOE_ERR_AUTH_INVALID_KEY' });
  if (key.tenantId !== tenant) throw new FloeError('forbidden', `API key is not valid for tenant ${tenant}`, { code: 'FLOE_ERR_AUTH_WRONG_TENANT' });
  const dataset = datasetHeader ?? key.datasetId ?? DEFAULT_DATASET;
  if (key.datasetId !== null && key.datasetId !== dataset) {
    throw new FloeError('forbidden', `API key is not valid for dataset ${dataset}`, { code: 'FLOE_ERR_AUTH_WRONG_DATASET' });
  }
  if (requiredScope) requireScope(key.scopes, requiredScope);
  if (datasetHeader !== undefined && !(await deps.datasetExists(tenant, dataset))) throw noSuchDataset(tenant, dataset);
  return { tenant, dataset, principal: key.keyId, scopes: key.scopes, isAdmin: false, ...(key.datasetId !== null ? { datasetBound: true } : {}) };
}

const noSuchDataset = (tenant: string, dataset: string) =>
  new FloeError('forbidden', `dataset ${dataset} does not exist for tenant ${tenant}`, { code: 'FLOE_ERR_AUTH_NO_DATASET' });

const MALFORMED = 'malformed Authorization header (expected "Bearer <api key>" or "Basic base64(<tenant>:<api key>)")';

/** The key of `Bearer <key>` or `Basic base64(<tenant>:<key>)`, with the Basic form's tenant; anything else is 401. */
export function parseAuthorization(header: string): { secret: string; user: string | undefined } {
  const bearer = /^Bearer\s+(\S+)$/i.exec(header);
  if (bearer) return { secret: bearer[1]!, user: undefined };
  const basic = /^Basic\s+([A-Za-z0-9+/]+=*)$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0 && colon < decoded.length - 1) return { secret: decoded.slice(colon + 1), user: decoded.slice(0, colon) };
  }
  throw new FloeError('unauthorized', MALFORMED, { code: 'FLOE_ERR_AUTH_MALFORMED' });
}

/**
 * A header getter in which X-Scope-OrgID, the Grafana stack's tenant header, names the tenant when
 * X-Tenant-ID is absent (the Tempo surfaces, where Grafana sends it; the acceptor, where Grafana's
 * agents and SDKs do). Credentials are still required and must be valid
 * for that tenant: Tempo trusts the header, but Floe's ports reach every tenant's data, so a bare
 * header would let any caller read any tenant.
 */
export const withScopeOrgId = (get: (name: string) => string | undefined) => (name: string) => (name === 'x-tenant-id' ? (get('x-tenant-id') ?? get('x-scope-orgid')) : get(name));

/** Reads the three credential headers from a plain header bag (HTTP headers or gRPC metadata). */
export function credentialsFrom(get: (name: string) => string | undefined): Credentials {
  return { authorization: get('authorization'), tenant: get('x-tenant-id'), dataset: get('x-dataset-id') };
}
