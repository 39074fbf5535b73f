import { createHash, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryActiveSeries, RedisActiveSeries, type ActiveSeriesStore } from './active-series.ts';
import { MemoryDedup, RedisDedup } from './dedup.ts';
import { RedisTokenBuckets } from './redis-buckets.ts';
import { tenantLimits } from './tenant-limits.ts';
import { FallbackTokenBuckets, MemoryTokenBuckets, refillAndTake } from './token-bucket.ts';

const REDIS_URL = process.env.FLOE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `floe-test-${randomBytes(6).toString('hex')}:`;
const clients: Redis[] = [];
const client = () => {
  const r = new Redis(REDIS_URL);
  clients.push(r);
  return r;
};

afterAll(async () => {
  const r = client();
  const keys = await r.keys(`${prefix}*`);
  if (keys.length > 0) await r.del(...keys);
  await Promise.all(clients.map((c) => c.quit()));
});

describe('token bucket arithmetic', () => {
  const limit = { ratePerSec: 10, burst: 20 };
  it('starts full, refuses past the burst with the wait until the cost is there, refills over time', () => {
    let s = refillAndTake(undefined, 0, 15, limit);
    expect(s.result).toEqual({ allowed: true, retryAfterMs: 0, remaining: 5 });
    s = refillAndTake(s.state, 0, 8, limit);
    expect(s.result).toEqual({ allowed: false, retryAfterMs: 300, remaining: 5 });
    s = refillAndTake(s.state, 300, 8, limit);
    expect(s.result.allowed).toBe(true);
    expect(s.result.remaining).toBeCloseTo(0);
    // Never more than the burst, however long the pause.
    s = refillAndTake(s.state, 3_600_000, 1, limit);
    expect(s.result.remaining).toBe(19);
  });

  it('a cost above the burst passes a full bucket instead of never', () => {
    expect(refillAndTake(undefined, 0, 1000, limit).result).toEqual({ allowed: true, retryAfterMs: 0, remaining: 0 });
  });

  it('a negative cost gives tokens back, never beyond the burst', () => {
    let s = refillAndTake(undefined, 0, 3, limit);
    s = refillAndTake(s.state, 0, -1, limit);
    expect(s.result).toEqual({ allowed: true, retryAfterMs: 0, remaining: 18 });
    s = refillAndTake(s.state, 0, -5, limit);
    expect(s.result.remaining).toBe(20);
  });

  it('memory buckets keep one bucket per key', async () => {
    let now = 0;
    const b = new MemoryTokenBuckets(() => now);
    expect((await b.take('a', 20, limit)).allowed).toBe(true);
    expect((await b.take('a', 1, limit)).allowed).toBe(false);
    expect((await b.take('b', 20, limit)).allowed).toBe(true);
    now = 100;
    expect(await b.take('a', 1, limit)).toEqual({ allowed: true, retryAfterMs: 0, remaining: 0 });
  });
});

describe('token buckets in Redis', () => {
  it('two processes spend one budget per key', async () => {
    const a = new RedisTokenBuckets(client(), prefix);
    const b = new RedisTokenBuckets(client(), prefix);
    const limit = { ratePerSec: 0.001, burst: 5 }; // no noticeable refill during the test
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).take('tenant-x:ingest', 1, limit)));
    expect(results.filter((r) => r.allowed)).toHaveLength(5);
    const refused = results.find((r) => !r.allowed)!;
    expect(refused.retryAfterMs).toBeGreaterThan(900_000);
    // Another key has its own budget.
    expect((await a.take('tenant-y:ingest', 5, limit)).allowed).toBe(true);
  });

  it('gives tokens back on a negative cost, never beyond the burst', async () => {
    const a = new RedisTokenBuckets(client(), prefix);
    const limit = { ratePerSec: 0.001, burst: 5 };
    expect((await a.take('give-back', 5, limit)).allowed).toBe(true);
    expect((await a.take('give-back', -1, limit)).remaining).toBeCloseTo(1);
    expect((await a.take('give-back', -10, limit)).remaining).toBe(5);
  });

  it('refills by the Redis clock', async () => {
    const a = new RedisTokenBuckets(client(), prefix);
    const limit = { ratePerSec: 100, burst: 2 };
    expect((await a.take('refill', 2, limit)).allowed).toBe(true);
    const refused = await a.take('refill', 2, limit);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(20);
    await new Promise((r) => setTimeout(r, 40));
    expect((await a.take('refill', 2, limit)).allowed).toBe(true);
  });
});

describe('token buckets when Redis is unreachable', () => {
  it("take this process's buckets instead, leave Redis alone for a pause, then use it again", async () => {
    // A Redis nothing listens for: every command fails (after the client's own retries).
    const dead = new Redis('redis://127.0.0.1:1', { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true });
    dead.on('error', () => undefined);
    const live = new RedisTokenBuckets(client(), prefix);
    let shared: { take: RedisTokenBuckets['take']; close(): Promise<void> } = new RedisTokenBuckets(dead, prefix);
    let now = 0;
    const failures: unknown[] = [];
    const buckets = new FallbackTokenBuckets({ take: (...a) => shared.take(...a), close: async () => undefined }, { onFallback: (e) => failures.push(e), pauseMs: 5000, now: () => now });
    const limit = { ratePerSec: 0.001, burst: 3 };
    // The limit still holds, per process: three pass, the fourth is refused with its wait.
    const taken = [];
    for (let i = 0; i < 4; i++) taken.push(await buckets.take('t:ingest', 1, limit));
    expect(taken.map((t) => t.allowed)).toEqual([true, true, true, false]);
    expect(taken[3]!.retryAfterMs).toBeGreaterThan(900_000);
    // One failure seen: during the pause Redis was not asked again.
    expect(failures).toHaveLength(1);
    // Back after the pause: the shared buckets answer again (a fresh key there is full).
    shared = live;
    now = 5000;
    expect((await buckets.take('fallback-back', 3, limit)).allowed).toBe(true);
    expect((await live.take('fallback-back', 1, limit)).allowed).toBe(false);
    expect(failures).toHaveLength(1);
    dead.disconnect();
  });
});

describe('resend dedup', () => {
  const fp = (text: string) => createHash('sha256').update(text).digest();

  it.each([
    ['memory', () => new MemoryDedup()],
    ['redis (shared by two processes)', () => new RedisDedup(client(), prefix)],
  ] as const)('%s: remembered for the window only', async (_name, make) => {
    const first = make();
    const second = _name.startsWith('redis') ? make() : first;
    expect(await second.seen(fp('fp-1'))).toBe(false);
    await first.remember(fp('fp-1'), 150);
    expect(await second.seen(fp('fp-1'))).toBe(true);
    expect(await second.seen(fp('fp-2'))).toBe(false);
    await new Promise((r) => setTimeout(r, 250));
    expect(await second.seen(fp('fp-1'))).toBe(false);
  });

  it('redis: one process at a time has the turn to store a fingerprint, until it gives it back or it lapses', async () => {
    const [a, b] = [new RedisDedup(client(), prefix), new RedisDedup(client(), prefix)];
    expect(await a.claim(fp('turn'), 60_000)).toBe(true);
    expect(await b.claim(fp('turn'), 60_000)).toBe(false);
    expect(await b.claim(fp('other'), 60_000)).toBe(true);
    await a.release(fp('turn'));
    expect(await b.claim(fp('turn'), 150)).toBe(true);
    await new Promise((r) => setTimeout(r, 250));
    expect(await a.claim(fp('turn'), 60_000)).toBe(true);
  });

  it('memory: one request at a time has the turn, as in Redis', async () => {
    const m = new MemoryDedup();
    expect(await m.claim(fp('turn'), 60_000)).toBe(true);
    expect(await m.claim(fp('turn'), 60_000)).toBe(false);
    expect(await m.claim(fp('other'), 60_000)).toBe(true);
    await m.release(fp('turn'));
    expect(await m.claim(fp('turn'), 150)).toBe(true);
    await new Promise((r) => setTimeout(r, 250));
    expect(await m.claim(fp('turn'), 60_000)).toBe(true);
  });

  it('redis keys name the digest in base64url, as acceptors always have', async () => {
    const redis = client();
    await new RedisDedup(redis, prefix).remember(fp('named'), 60_000);
    expect(await redis.exists(`${prefix}dedup:${fp('named').toString('base64url')}`)).toBe(1);
  });
});

describe.each([
  ['memory', () => new MemoryActiveSeries()],
  ['redis', () => new RedisActiveSeries(client(), prefix)],
] as const)('active series (%s)', (_name, make: () => ActiveSeriesStore) => {
  const key = () => `t-${randomBytes(4).toString('hex')}`;

  it('admits new series up to the limit, then only the ones already active', async () => {
    const store = make();
    const k = key();
    expect(await store.admit(k, ['a', 'b'], 3, 60_000)).toEqual(new Set());
    // c takes the last place; d and e find none; a and b, active, are never refused.
    expect(await store.admit(k, ['c', 'd', 'a', 'e', 'b'], 3, 60_000)).toEqual(new Set(['d', 'e']));
    expect(await store.admit(k, ['a', 'b', 'c'], 3, 60_000)).toEqual(new Set());
    expect(await store.count(k, 60_000)).toBe(3);
    // Another tenant's key has its own places.
    expect(await store.admit(key(), ['d'], 3, 60_000)).toEqual(new Set());
  });

  it('a series idle for the whole window leaves the count and frees its place', async () => {
    const store = make();
    const k = key();
    expect(await store.admit(k, ['old'], 2, 300)).toEqual(new Set());
    await new Promise((r) => setTimeout(r, 150));
    expect(await store.admit(k, ['kept'], 2, 300)).toEqual(new Set());
    expect(await store.admit(k, ['new'], 2, 300)).toEqual(new Set(['new']));
    await new Promise((r) => setTimeout(r, 200));
    // 'old' has been idle 350 ms of a 300 ms window; 'kept' 200 ms.
    expect(await store.admit(k, ['new'], 2, 300)).toEqual(new Set());
    expect(await store.admit(k, ['old'], 2, 300)).toEqual(new Set(['old']));
    expect(await store.count(k, 300)).toBe(2);
  });
});

const DAY = 86_400_000;

describe('tenant limits', () => {
  const defaults = {
    ingest_requests_per_sec: 100,
    ingest_requests_burst: 0,
    ingest_bytes_per_sec: 0,
    ingest_bytes_burst: 0,
    max_query_requests_per_sec: 5,
    max_query_requests_burst: 10,
    max_storage_bytes: 0,
    retention: 30 * DAY,
    retention_by_table: { traces: 7 * DAY },
    retention_stream: [
      { selector: '{service_name="noisy"}', priority: 1, period: DAY },
      { selector: '{service_name="audit"}', priority: 5, period: 400 * DAY },
    ],
    ingest_max_age: 7 * DAY,
    ingest_max_future: 600_000,
    max_active_series: 0,
    active_series_window: 3_600_000,
    metrics_generator_processors: ['span_metrics' as const, 'service_graphs' as const],
    ruler_max_rule_groups_per_tenant: 100,
    ruler_max_rules_per_rule_group: 20,
  };
  it('defaults, 0 as unlimited, burst defaulting to the rate, per-tenant overrides', () => {
    expect(tenantLimits(defaults)).toEqual({
      ingestRequests: { ratePerSec: 100, burst: 100 },
      ingestBytes: undefined,
      queryRequests: { ratePerSec: 5, burst: 10 },
      maxStorageBytes: undefined,
      retentionMs: expect.any(Function),
      retentionStreams: [
        { selector: '{service_name="audit"}', priority: 5, periodMs: 400 * DAY, source: 'instance' },
        { selector: '{service_name="noisy"}', priority: 1, periodMs: DAY, source: 'instance' },
      ],
      maxActiveSeries: undefined,
      activeSeriesWindowMs: 3_600_000,
      metricsGeneratorProcessors: ['span_metrics', 'service_graphs'],
      ingestMaxAgeMs: 7 * DAY,
      ingestMaxFutureMs: 600_000,
      rulerMaxRuleGroups: 100,
      rulerMaxRulesPerGroup: 20,
    });
    const own = tenantLimits(defaults, { limits: { ingest_requests_per_sec: 0, max_storage_bytes: 1000, ingest_bytes_per_sec: 'x', ingest_max_age: '0s', ingest_max_future: '1h' } });
    expect(own.ingestRequests).toBeUndefined();
    expect(own.maxStorageBytes).toBe(1000);
    expect(own.ingestBytes).toBeUndefined();
    expect([own.ingestMaxAgeMs, own.ingestMaxFutureMs]).toEqual([0, 3_600_000]);
    const series = tenantLimits(defaults, { limits: { max_active_series: 5000, active_series_window: '20m' } });
    expect([series.maxActiveSeries, series.activeSeriesWindowMs]).toEqual([5000, 1_200_000]);
    // A window of 0 would count nothing: not a setting, the instance's stays.
    expect(tenantLimits(defaults, { limits: { active_series_window: '0s' } }).activeSeriesWindowMs).toBe(3_600_000);
    expect(tenantLimits(defaults, { limits: { metrics_generator_processors: [] } }).metricsGeneratorProcessors).toEqual([]);
    expect(tenantLimits(defaults, { limits: { metrics_generator_processors: ['nope'] } }).metricsGeneratorProcessors).toEqual(['span_metrics', 'service_graphs']);
    const ruler = tenantLimits(defaults, { limits: { ruler_max_rule_groups_per_tenant: 3, ruler_max_rules_per_rule_group: 0 } });
    // 0 is no count of rules: not a setting, the instance's stays.
    expect([ruler.rulerMaxRuleGroups, ruler.rulerMaxRulesPerGroup]).toEqual([3, 20]);
  });

  it('retention: the tenant\'s per-table value, its retention, the instance\'s per-table value, then the instance\'s', () => {
    const instance = tenantLimits(defaults);
    expect([instance.retentionMs('traces'), instance.retentionMs('logs')]).toEqual([7 * DAY, 30 * DAY]);
    const all = tenantLimits(defaults, { limits: { retention: '90d' } });
    expect([all.retentionMs('traces'), all.retentionMs('logs')]).toEqual([90 * DAY, 90 * DAY]);
    const perTable = tenantLimits(defaults, { limits: { retention: '0s', retention_by_table: { logs: '2w' } } });
    expect([perTable.retentionMs('traces'), perTable.retentionMs('logs'), perTable.retentionMs('metrics')]).toEqual([0, 14 * DAY, 0]);
    // Settings that are not duration texts are not settings: the instance's values stay.
    const junk = tenantLimits(defaults, { limits: { retention: true, retention_by_table: { traces: 'soon' } } });
    expect([junk.retentionMs('traces'), junk.retentionMs('logs')]).toEqual([7 * DAY, 30 * DAY]);
    // Milliseconds, as in the config.
    expect(tenantLimits(defaults, { limits: { retention: 3_600_000 } }).retentionMs('logs')).toBe(3_600_000);
  });

  it('stream retention: the tenant\'s rules by priority, then the instance\'s by priority', () => {
    const own = tenantLimits(defaults, {
      limits: {
        retention_stream: [
          { selector: '{service_name="a"}', period: '2d' },
          { selector: '{service_name="b"}', priority: 3, period: '12h' },
        ],
      },
    });
    expect(own.retentionStreams.map((r) => [r.selector, r.priority, r.periodMs, r.source])).toEqual([
      ['{service_name="b"}', 3, DAY / 2, 'tenant'],
      ['{service_name="a"}', 0, 2 * DAY, 'tenant'],
      ['{service_name="audit"}', 5, 400 * DAY, 'instance'],
      ['{service_name="noisy"}', 1, DAY, 'instance'],
    ]);
    // A period of 0s is no rule: refused as a whole, so the instance's rules alone stay.
    expect(tenantLimits(defaults, { limits: { retention_stream: [{ selector: '{a="b"}', period: '0s' }] } }).retentionStreams.map((r) => r.source)).toEqual(['instance', 'instance']);
  });
});
