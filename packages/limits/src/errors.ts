import { formatDurationMs } from '@floe/config';
import { FloeError, retryAfterSeconds } from '@floe/errors';
import type { BucketLimit, TakeResult } from './token-bucket.ts';

/**
 * The 429 of a token bucket (spec 1, Errors 3 and 4): body field retryAfterMs, and headers
 * Retry-After (whole seconds, rounded up, at least 1), X-RateLimit-Limit (the per-second budget of
 * the dimension that refused) and X-RateLimit-Burst, from the bucket's state.
 */
export function rateLimited(what: string, limit: BucketLimit, taken: TakeResult): FloeError {
  const retryAfterMs = Math.max(1, taken.retryAfterMs);
  return new FloeError('rate_limited', `${what}: rate limit exceeded, retry in ${retryAfterSeconds(retryAfterMs)} s`, {
    code: 'FLOE_ERR_RATE_LIMITED',
    retryAfterMs,
    headers: {
      'X-RateLimit-Limit': String(limit.ratePerSec),
      'X-RateLimit-Burst': String(limit.burst),
    },
  });
}

/** Over the storage quota: retrying does not help, so no Retry-After (spec 1, Errors 5). */
export function quotaExceeded(tenant: string, storedBytes: number, maxBytes: number): FloeError {
  return new FloeError('rate_limited', `quota_exceeded: tenant ${tenant} stores ${storedBytes} bytes, its quota is ${maxBytes} bytes; delete data, shorten retention or raise limits.max_storage_bytes`, {
    code: 'FLOE_ERR_QUOTA_EXCEEDED',
  });
}

/**
 * Why a data point of a new series is refused when its tenant is at limits.max_active_series
 * (the OTLP partial success's message, remote write's 400). Not a 429: Prometheus and the OTLP
 * exporters would retry that in vain until the series' idle ones age out.
 */
export function seriesLimitRefusal(tenant: string, limit: number, windowMs: number): string {
  return `tenant ${tenant} is at its limit of ${limit} active series (limits.max_active_series; a series stays active ${formatDurationMs(windowMs)} after its last data point), so data points of new series are refused: drop labels that vary without bound, or raise the limit`;
}
