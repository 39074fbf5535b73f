/**
 * @floe/limits: per-tenant token buckets (ingest requests and bytes, query requests), storage
 * quotas and resend dedup, in memory (embedded) or in Redis (cluster: one budget per tenant
 * across every process).
 */
export { FallbackTokenBuckets, MemoryTokenBuckets, refillAndTake } from './token-bucket.ts';
export type { BucketLimit, TakeResult, TokenBuckets } from './token-bucket.ts';
export { RedisTokenBuckets } from './redis-buckets.ts';
export { MemoryDedup, RedisDedup } from './dedup.ts';
export { MemoryActiveSeries, RedisActiveSeries } from './active-series.ts';
export type { ActiveSeriesStore } from './active-series.ts';
export type { DedupStore } from './dedup.ts';
export { cachedTenantLimits, tenantLimits } from './tenant-limits.ts';
export type { CachedTenantLimits, RetentionStream, TenantLimits, TenantRecord } from './tenant-limits.ts';
export { limitStoresFromConfig } from './from-config.ts';
export type { LimitStores } from './from-config.ts';
export { quotaExceeded, rateLimited, seriesLimitRefusal } from './errors.ts';
export { FAILED_LOGINS, LoginAttempts } from './login-attempts.ts';
export { HeldBytes, type HeldBytesWords } from './held-bytes.ts';
