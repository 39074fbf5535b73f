import type { Redis } from 'ioredis';
import type { BucketLimit, TakeResult, TokenBuckets } from './token-bucket.ts';

/**
 * Token buckets in Redis, so every acceptor (or router) of a cluster spends one budget per
 * tenant. One Lua script refills and takes atomically, timed by the Redis server's clock (TIME)
 * so the processes' clocks never disagree about a bucket. The same arithmetic as refillAndTake.
 */
const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local need = math.min(tonumber(ARGV[3]), burst)
local s = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens = burst
if s[1] then
  local elapsed = math.max(0, now - tonumber(s[2]))
  tokens = math.min(burst, tonumber(s[1]) + elapsed * rate / 1000)
end
local allowed = 0
local retry = 0
if tokens >= need then
  tokens = math.min(burst, tokens - need)
  allowed = 1
else
  retry = math.ceil((need - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'last', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, retry, tostring(tokens)}
`;

export class RedisTokenBuckets implements TokenBuckets {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, keyPrefix: string) {
    this.#redis = redis;
    this.#prefix = keyPrefix;
    redis.defineCommand('floeTakeTokens', { numberOfKeys: 1, lua: SCRIPT });
  }

  async take(key: string, cost: number, limit: BucketLimit): Promise<TakeResult> {
    const take = (this.#redis as unknown as { floeTakeTokens(k: string, rate: number, burst: number, cost: number): Promise<[number, number, string]> }).floeTakeTokens;
    const [allowed, retry, tokens] = await take.call(this.#redis, `${this.#prefix}bucket:${key}`, limit.ratePerSec, limit.burst, cost);
    return { allowed: allowed === 1, retryAfterMs: Number(retry), remaining: Number(tokens) };
  }

  async close(): Promise<void> {}
}
