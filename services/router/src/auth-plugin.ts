import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { authenticate, credentialsFrom, type AuthDeps, type AuthenticateOptions, type TenantContext } from '@floe/auth';
import type { CallerCredentials } from './querier-client.ts';
import { headerValue } from '@floe/runtime';

declare module 'fastify' {
  interface FastifyRequest {
    tenant?: TenantContext;
    /** The tenant was resolved from a session cookie, not from a key the querier could check. */
    tenantFromSession?: boolean;
    /** Aborts when the client goes away before its answer is sent (watchCallerGone). */
    callerGone?: AbortSignal;
  }
}

/**
 * Gives the request a signal that aborts when its connection (or HTTP/2 stream) closes before the
 * answer was sent, which callerCredentials hands to the querier: a query nobody waits for any
 * more (Grafana cancels a panel's superseded queries) leaves the querier's queue or stops.
 */
export function watchCallerGone(req: FastifyRequest, reply: FastifyReply): void {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) gone.abort();
  });
  req.callerGone = gone.signal;
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
  const creds: CallerCredentials = { authorization: headerValue(req.headers, 'authorization') ?? '', tenant: req.tenant!.tenant, dataset: req.tenant!.dataset, ...(req.callerGone ? { signal: req.callerGone } : {}) };
  return req.tenantFromSession ? { ...creds, asService: true } : creds;
}

export type { FastifyPluginAsync };
