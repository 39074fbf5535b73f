import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { authenticate, credentialsFrom, type AuthDeps, type AuthenticateOptions, type TenantContext } from '@floe/auth';
import type { CallerCredentials } from './querier-client.ts';
import { headerValue } from '@floe/runtime';

declare module 'fastify' {
  interface FastifyRequest {
    tenant?: TenantContext;
    /** The tenant was resolved from a session cookie, not from a key the querier could check. */
    tenantFromSession?: boolean;
  }
}

/**
 * Resolves the caller's TenantContext once per request (onRequest, before any body is read) for
 * every route registered inside the scope that uses it.
 */
export const authPlugin = fp<{ auth: AuthDeps; scope: string } & AuthenticateOptions>(async (app, opts) => {
  app.addHook('onRequest', async (req) => {
    req.tenant = await authenticate(credentialsFrom((n) => headerValue(req.headers, n)), opts.auth, opts.scope, { tenantFromKey: opts.tenantFromKey, missingTenant: opts.missingTenant });
  });
});

/** The credentials forwarded to a querier, which authorises the call the same way. */
export function callerCredentials(req: FastifyRequest): CallerCredentials {
  const creds: CallerCredentials = { authorization: headerValue(req.headers, 'authorization') ?? '', tenant: req.tenant!.tenant, dataset: req.tenant!.dataset };
  return req.tenantFromSession ? { ...creds, asService: true } : creds;
}

export type { FastifyPluginAsync };
