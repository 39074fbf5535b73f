import { Redis } from 'ioredis';
import type { FloeConfig } from '@floe/config';
import { MemoryActiveSeries, RedisActiveSeries, type ActiveSeriesStore } from './active-series.ts';
import { MemoryDedup, RedisDedup, type DedupStore } from './dedup.ts';
import { RedisTokenBuckets } from './redis-buckets.ts';
import { FallbackTokenBuckets, MemoryTokenBuckets, type TokenBuckets } from './token-bucket.ts';

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
export function limitStoresFromConfig(config: Readonly<FloeConfig>, log?: { warn(obj: object, msg: string): void }): LimitStores {
  if (config.limits.store === 'memory') {
    const buckets = new MemoryTokenBuckets();
    const dedup = new MemoryDedup();
    const activeSeries = new MemoryActiveSeries();
    return { buckets, dedup, activeSeries, close: async () => void (await Promise.all([buckets.close(), dedup.close(), activeSeries.close()])) };
  }
  // Every caller has a way on without Redis (this process's buckets, storing a possible resend,
  // admitting a series uncounted), so once a connection that was up is lost, commands fail at
  // once until it is back: queued, they waited out reconnections whose backoff grows to 2 s, and
  // an ingest request with its five Redis calls took 5 to 20 s once Redis had been gone a while.
  // Before the first connection they wait for it (a process's first requests), 2 s at most.
  const redis = new Redis(config.limits.redis_url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: true, commandTimeout: 2000 });
  redis.on('close', () => {
    redis.options.enableOfflineQueue = false;
  });
  redis.on('ready', () => {
    redis.options.enableOfflineQueue = true;
  });
  redis.on('error', () => undefined);
  return {
    // Unreachable, Redis's buckets give way to this process's (per-process limits, not a 500).
    buckets: new FallbackTokenBuckets(new RedisTokenBuckets(redis, config.limits.key_prefix), {
      onFallback: (err) => log?.warn({ err }, 'Redis unreachable: rate limits hold per process until it answers again'),
    }),
    dedup: new RedisDedup(redis, config.limits.key_prefix),
    activeSeries: new RedisActiveSeries(redis, config.limits.key_prefix),
    close: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
