import fp from 'fastify-plugin';
import { FloeError } from '@floe/errors';
import { rateLimited, type TenantLimits, type TokenBuckets } from '@floe/limits';

export interface QueryBudget {
  /** Throws the 429 FloeError when the tenant's query budget is spent. */
  take(tenant: string): Promise<void>;
}

/**
 * The router's per-tenant query budget (limits.max_query_requests_per_sec, overridable in a
 * tenant's settings.limits): one token per query API request, from a bucket shared by every
 * router of a cluster when limits.store is redis (spec 1, Errors 3).
 */
export function createQueryBudget(buckets: TokenBuckets, limitsOf: (tenant: string) => Promise<TenantLimits>): QueryBudget {
  return {
    async take(tenant) {
      const limit = (await limitsOf(tenant)).queryRequests;
      if (!limit) return;
      const taken = await buckets.take(`${tenant}:query_requests`, 1, limit);
      if (!taken.allowed) throw rateLimited(`tenant ${tenant} queries`, limit, taken);
    },
  };
}

/**
 * Charges every request of the scope (after authentication) to its tenant's query budget. A
 * request whose client has already gone (watchCallerGone: an HTTP/2 stream reset right after its
 * headers, a closed connection) is dropped first: a started query runs to its end whoever waits, so a flood of
 * requests reset as soon as sent would otherwise fill the tenant's querier queue with answers
 * nobody reads.
 */
export const queryBudgetPlugin = fp<{ budget: QueryBudget | undefined }>(async (app, opts) => {
  const budget = opts.budget;
  app.addHook('preHandler', async (req) => {
    if (req.callerGone?.aborted) throw new FloeError('canceled', 'the client closed the request');
    if (budget && req.tenant) await budget.take(req.tenant.tenant);
  });
});

