import { Redis } from 'ioredis';
import type { FloeConfig } from '@floe/config';
import { MemoryActiveSeries, RedisActiveSeries, type ActiveSeriesStore } from './active-series.ts';
import { MemoryDedup, RedisDedup, type DedupStore } from './dedup.ts';
import { RedisTokenBuckets } from './redis-buckets.ts';
import { MemoryTokenBuckets, type TokenBuckets } from './token-bucket.ts';

export interface LimitStores {
  buckets: TokenBuckets;
  dedup: DedupStore;
  /** Each tenant's active series (limits.max_active_series). */
  activeSeries: ActiveSeriesStore;
  close(): Promise<void>;
}

/**
 * The stores behind limits and dedup: in process memory (embedded default, or a single acceptor),
 * or Redis (`limits.store: redis`) so that every acceptor and router shares one budget per tenant
 * a resend is recognised whichever acceptor it reaches, and a tenant's active series are counted
 * once across them.
 */
export function limitStoresFromConfig(config: Readonly<FloeConfig>): LimitStores {
  if (config.limits.store === 'memory') {
    const buckets = new MemoryTokenBuckets();
    const dedup = new MemoryDedup();
    const activeSeries = new MemoryActiveSeries();
    return { buckets, dedup, activeSeries, close: async () => void (await Promise.all([buckets.close(), dedup.close(), activeSeries.close()])) };
  }
  // Commands wait (queue) while Redis reconnects; callers decide what a failure means.
  const redis = new Redis(config.limits.redis_url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
  redis.on('error', () => undefined);
  return {
    buckets: new RedisTokenBuckets(redis, config.limits.key_prefix),
    dedup: new RedisDedup(redis, config.limits.key_prefix),
    activeSeries: new RedisActiveSeries(redis, config.limits.key_prefix),
    close: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
