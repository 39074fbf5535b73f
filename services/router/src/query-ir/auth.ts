import fp from 'fastify-plugin';
import { DEFAULT_DATASET, authenticate, credentialsFrom, isValidName, tenantRole, type AuthDeps, type ManagementAuthDeps, type Principal } from '@floe/auth';
import { FloeError, forbidden } from '@floe/errors';
import { readSessionCookie } from '../session/cookie.ts';
import { headerValue } from '@floe/runtime';

/**
 * Who may use the native Query IR endpoint. A key authenticates exactly as on the query APIs
 * (Bearer or Basic, X-Tenant-ID, optional X-Dataset-ID, the `query` scope), so a script sees one
 * set of rules. A browser session (the demo account's included: spec 2 allowlists POST
 * /api/v1/query for it) may read any tenant it is a member of, named by X-Tenant-ID; the querier
 * is then shown the internal service key (querier-client.ts), since a session has no key to pass.
 * An Authorization header wins over a cookie, as in resolvePrincipal.
 */

export const queryIrAuth = fp<{ auth: AuthDeps; managementAuth: ManagementAuthDeps }>(async (app, opts) => {
  app.addHook('onRequest', async (req) => {
    const get = (n: string) => headerValue(req.headers, n);
    const token = readSessionCookie(get('cookie'));
    if (get('authorization') || !token) {
      req.tenant = await authenticate(credentialsFrom(get), opts.auth, 'query');
      return;
    }
    const session = await opts.managementAuth.session(token);
    if (!session) throw new FloeError('unauthorized', 'session expired or signed out', { code: 'FLOE_ERR_AUTH_SESSION' });
    const principal: Principal = { kind: 'user', user: session.user, sessionId: session.sessionId, roles: session.roles };
    const tenant = get('x-tenant-id')?.trim();
    if (!tenant) throw new FloeError('bad_data', 'missing X-Tenant-ID header: name the tenant to query', { code: 'FLOE_ERR_AUTH_NO_TENANT' });
    if (!isValidName(tenant)) throw new FloeError('bad_data', 'invalid X-Tenant-ID', { code: 'FLOE_ERR_AUTH_BAD_TENANT' });
    // Any role reads (viewer included); instance admins reach every tenant (tenantRole).
    if (tenantRole(principal, tenant) === undefined) throw forbidden(`no read access to tenant ${tenant}`, { code: 'FLOE_ERR_AUTH_WRONG_TENANT' });
    const datasetHeader = get('x-dataset-id')?.trim() || undefined;
    if (datasetHeader !== undefined && !isValidName(datasetHeader)) throw new FloeError('bad_data', 'invalid X-Dataset-ID', { code: 'FLOE_ERR_AUTH_BAD_DATASET' });
    const dataset = datasetHeader ?? DEFAULT_DATASET;
    if (!(await opts.auth.datasetExists(tenant, dataset))) throw forbidden(`dataset ${dataset} does not exist for tenant ${tenant}`, { code: 'FLOE_ERR_AUTH_NO_DATASET' });
    req.tenant = { tenant, dataset, principal: `user:${session.user.id}`, scopes: ['query'], isAdmin: false };
    req.tenantFromSession = true;
  });
});
