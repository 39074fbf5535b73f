import { describe, expect, it } from 'vitest';
import { MemoryActiveSeries, tenantLimits, type ActiveSeriesStore } from '@floe/limits';
import { createLogger } from '@floe/telemetry';
import { SeriesLimiter, type SeriesGate } from './series-limit.ts';

const log = createLogger({ level: 'silent' });
const ctx = { tenant: 't', dataset: 'default' } as Parameters<SeriesLimiter['convert']>[0];
const limits = (max: number) => async () => ({ ...tenantLimits({ ...BASE, max_active_series: max }) });
const BASE = {
  ingest_requests_per_sec: 0,
  ingest_requests_burst: 0,
  ingest_bytes_per_sec: 0,
  ingest_bytes_burst: 0,
  max_query_requests_per_sec: 0,
  max_query_requests_burst: 0,
  max_storage_bytes: 0,
  retention: 0,
  retention_by_table: {},
  retention_stream: [],
  ingest_max_age: 0,
  ingest_max_future: 0,
  max_active_series: 0,
  active_series_window: 3_600_000,
  metrics_generator_processors: [],
  ruler_max_rule_groups_per_tenant: 100,
  ruler_max_rules_per_rule_group: 100,
};

/** A real in-memory store that counts the members it is asked about. */
class CountingStore implements ActiveSeriesStore {
  readonly inner = new MemoryActiveSeries();
  asked: string[] = [];
  admit(key: string, members: readonly string[], limit: number, windowMs: number) {
    this.asked.push(...members);
    return this.inner.admit(key, members, limit, windowMs);
  }
  count(key: string, windowMs: number) {
    return this.inner.count(key, windowMs);
  }
  close() {
    return this.inner.close();
  }
}

/** A conversion of series ids: the ones its gate admits, and how often it ran. */
function converter(ids: string[]) {
  const runs: Array<{ admitted: string[]; refusal: string | undefined }> = [];
  const convert = (gate: SeriesGate | undefined) => {
    const admitted = ids.filter((id) => gate === undefined || gate.admits(id));
    const run = { admitted, refusal: admitted.length < ids.length ? gate?.refusal : undefined };
    runs.push(run);
    return run;
  };
  return { convert, runs };
}

describe('SeriesLimiter', () => {
  it('without a limit converts once with no gate', async () => {
    const store = new CountingStore();
    const limiter = new SeriesLimiter(store, limits(0), log);
    const c = converter(['a', 'b']);
    expect(await limiter.convert(ctx, c.convert, () => undefined)).toEqual({ admitted: ['a', 'b'], refusal: undefined });
    expect(c.runs).toHaveLength(1);
    expect(store.asked).toEqual([]);
  });

  it('converts again without the refused series, discarding the first result', async () => {
    const limiter = new SeriesLimiter(new CountingStore(), limits(2), log);
    const discarded: unknown[] = [];
    const c = converter(['a', 'b', 'c']);
    const out = await limiter.convert(ctx, c.convert, (first) => discarded.push(first));
    expect(out.admitted).toEqual(['a', 'b']);
    expect(out.refusal).toMatch(/^tenant t is at its limit of 2 active series \(limits\.max_active_series; a series stays active 1h after its last data point\)/);
    expect(c.runs).toHaveLength(2);
    expect(discarded).toEqual([c.runs[0]]);
  });

  it('asks the store about a series it admitted lately only once, and counts series per dataset', async () => {
    const store = new CountingStore();
    const limiter = new SeriesLimiter(store, limits(10), log);
    for (let i = 0; i < 3; i++) await limiter.convert(ctx, converter(['a', 'b']).convert, () => undefined);
    expect(store.asked).toEqual(['default:a', 'default:b']);
    await limiter.convert({ ...ctx, dataset: 'other' }, converter(['a']).convert, () => undefined);
    expect(store.asked).toEqual(['default:a', 'default:b', 'other:a']);
    expect(await store.count('t', 3_600_000)).toBe(3);
  });

  it('admits every series while the store is unreachable', async () => {
    // What the Redis store's admit() does while Redis is down.
    const unreachable: ActiveSeriesStore = { admit: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379')), count: async () => 0, close: async () => undefined };
    const limiter = new SeriesLimiter(unreachable, limits(1), log);
    const c = converter(['a', 'b', 'c']);
    expect((await limiter.convert(ctx, c.convert, () => undefined)).admitted).toEqual(['a', 'b', 'c']);
    expect(c.runs).toHaveLength(1);
  });
});
