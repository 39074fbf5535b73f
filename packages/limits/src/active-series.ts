import type { Redis } from 'ioredis';

/**
 * A tenant's active series, for limits.max_active_series (what Mimir calls the per-user series
 * limit): the series that took a data point within a window. Once a tenant has `limit` of them,
 * data points of a series it does not have yet are refused, while the series it has keep being
 * written; a series leaves the count once it has been idle for the whole window.
 *
 * Members are opaque strings (the acceptor's `<dataset>:<series_id>`). One key per tenant.
 */
export interface ActiveSeriesStore {
  /**
   * Marks `members` active now and returns the ones refused: those new to `key` once it holds
   * `limit` members active within the last `windowMs`. Members already active are never refused.
   */
  admit(key: string, members: readonly string[], limit: number, windowMs: number): Promise<Set<string>>;
  /** How many members of `key` were active within the last `windowMs`. */
  count(key: string, windowMs: number): Promise<number>;
  close(): Promise<void>;
}

/** Active series in this process's memory (embedded mode, a single acceptor). */
export class MemoryActiveSeries implements ActiveSeriesStore {
  /** key → member → when it last took a point (ms). A Map keeps insertion order: refreshed members move to the end. */
  readonly #keys = new Map<string, Map<string, number>>();

  async admit(key: string, members: readonly string[], limit: number, windowMs: number): Promise<Set<string>> {
    const now = Date.now();
    let active = this.#keys.get(key);
    if (!active) this.#keys.set(key, (active = new Map()));
    const refused = new Set<string>();
    let pruned = false;
    for (const m of members) {
      const at = active.get(m);
      if (at !== undefined && at > now - windowMs) {
        active.delete(m);
        active.set(m, now);
        continue;
      }
      if (active.size >= limit && !pruned) {
        prune(active, now - windowMs);
        pruned = true;
      }
      if (active.size >= limit) {
        refused.add(m);
        continue;
      }
      active.delete(m);
      active.set(m, now);
    }
    return refused;
  }

  async count(key: string, windowMs: number): Promise<number> {
    const active = this.#keys.get(key);
    if (!active) return 0;
    prune(active, Date.now() - windowMs);
    return active.size;
  }

  async close(): Promise<void> {
    this.#keys.clear();
  }
}

/** Drops the members idle since before `cutoff`: the oldest come first (admit() moves a refreshed member to the end). */
function prune(active: Map<string, number>, cutoff: number): void {
  for (const [m, at] of active) {
    if (at > cutoff) break;
    active.delete(m);
  }
}

/**
 * Active series in Redis, shared by every acceptor of a cluster: a sorted set per tenant whose
 * scores are the times members last took a point, by the Redis server's clock. One script prunes
 * the idle, refreshes the known and admits new members up to the limit atomically, so two
 * acceptors admitting at once cannot both take the last place.
 */
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local refused = {}
for i = 3, #ARGV do
  local m = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], m) then
    redis.call('ZADD', KEYS[1], now, m)
  elseif count < limit then
    redis.call('ZADD', KEYS[1], now, m)
    count = count + 1
  else
    refused[#refused + 1] = m
  end
end
redis.call('PEXPIRE', KEYS[1], window)
return refused
`;

const COUNT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])
`;

/** Members per script call: a long script blocks every other client of the Redis server. */
const CHUNK = 5_000;

interface ActiveSeriesCommands {
  floeAdmitSeries(key: string, limit: number, windowMs: number, ...members: string[]): Promise<string[]>;
  floeCountSeries(key: string, windowMs: number): Promise<number>;
}

export class RedisActiveSeries implements ActiveSeriesStore {
  readonly #redis: Redis & ActiveSeriesCommands;
  readonly #prefix: string;

  constructor(redis: Redis, keyPrefix: string) {
    redis.defineCommand('floeAdmitSeries', { numberOfKeys: 1, lua: ADMIT });
    redis.defineCommand('floeCountSeries', { numberOfKeys: 1, lua: COUNT });
    this.#redis = redis as Redis & ActiveSeriesCommands;
    this.#prefix = keyPrefix;
  }

  async admit(key: string, members: readonly string[], limit: number, windowMs: number): Promise<Set<string>> {
    const refused = new Set<string>();
    for (let i = 0; i < members.length; i += CHUNK) {
      const out = await this.#redis.floeAdmitSeries(this.#keyOf(key), limit, Math.max(1, Math.round(windowMs)), ...members.slice(i, i + CHUNK));
      for (const m of out) refused.add(m);
    }
    return refused;
  }

  async count(key: string, windowMs: number): Promise<number> {
    return Number(await this.#redis.floeCountSeries(this.#keyOf(key), Math.max(1, Math.round(windowMs))));
  }

  async close(): Promise<void> {}

  #keyOf(key: string): string {
    return `${this.#prefix}series:${key}`;
  }
}
