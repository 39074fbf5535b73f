import fp from 'fastify-plugin';
import { rateLimited, type BucketLimit, type TokenBuckets } from '@floe/limits';
import { callerOf } from './auth.ts';

/**
 * The per-tenant request budget of the planning API: one token per authenticated request from
 * the tenant's bucket (planning.rate_limit_per_sec, planning.rate_limit_burst), kept in the
 * limits store, so every planning process of a cluster with limits.store: redis shares it.
 * Over it: 429 with retry_after (errors.ts).
 */
export const rateLimitPlugin = fp<{ buckets: TokenBuckets; limit: BucketLimit }>(async (app, opts) => {
  app.addHook('onRequest', async (req) => {
    const tenant = callerOf(req).tenantId;
    const taken = await opts.buckets.take(`${tenant}:planning_requests`, 1, opts.limit);
    if (!taken.allowed) throw rateLimited(`tenant ${tenant} planning requests`, opts.limit, taken);
  });
});
