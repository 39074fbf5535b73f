import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TimeRange } from '../ir/logs.ts';
import { mergedStacksOf } from './flamebearer.ts';
import type { ProfileSelection } from './ir.ts';
import {
  planProfileLabelNames,
  planProfileLabelValues,
  planProfileSeries,
  planProfileSeriesPoints,
  planProfileStacks,
  planProfileStats,
  planProfileTimeline,
  planProfileTypes,
  planProfilesByTrace,
} from './plan.ts';
import { parseProfileSelector } from './selector.ts';
import { labelSetsOf, seriesOf } from './series.ts';
import { profileSummaryOf } from './summary.ts';
import { PROFILES, openProfilesDb, withLabelColumns, type ProfileRow, type ProfilesDb } from './test-db.ts';

/**
 * The printed plans, run on DuckDB over a `profiles` table of the real schema holding JSON as the
 * acceptor writes it: merging per stack, selector semantics (types, service_name, attributes of
 * both scopes, regexes), the timeline, discovery and trace lookups, row by row against
 * hand-computed expectations.
 */
const S = 1_000_000_000n;
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const HEAP = 'memory:alloc_space:bytes:space:bytes';
const T1 = '0af7651916cd43dd8448eb211c80319c';
const T2 = '5b8aa5a2d2c872e8321cf37308d69df2';

const ROWS: ProfileRow[] = [
  {
    t: 1000n * S, service: 'api', type: CPU, id: 'aa'.repeat(16), traceId: T1, spanId: '1111111111111111',
    samples: [{ stack: ['c', 'b', 'a'], value: 3, trace_id: T1, span_id: '1111111111111111' }, { stack: ['b', 'a'], value: 2 }],
    attrs: { str: { 'thread.name': 'main' } }, resource: { str: { 'service.name': 'api', env: 'prod' }, bool: { 'k8s.ready': true } },
  },
  {
    t: 1010n * S, service: 'api', type: CPU, traceId: T2, spanId: '2222222222222222',
    samples: [{ stack: ['c', 'b', 'a'], value: 5, trace_id: T2, span_id: '2222222222222222' }, { stack: ['d', 'a'], value: 1, trace_id: T1, span_id: '3333333333333333' }],
    attrs: { int: { 'thread.id': 7 } }, resource: { str: { 'service.name': 'api', env: 'stage' } },
  },
  { t: 1020n * S, service: 'web', type: CPU, samples: [{ stack: ['x'], value: 10 }], resource: { str: { 'service.name': 'web' } } },
  { t: 1005n * S, service: 'api', type: HEAP, samples: [{ stack: ['b', 'a'], value: 4096 }], resource: { str: { 'service.name': 'api', env: 'prod' } } },
  { t: 5000n * S, service: 'api', type: CPU, samples: [{ stack: ['z'], value: 99 }], resource: { str: { 'service.name': 'api' } } },
];

const WINDOW: TimeRange = { startNs: 1000n * S, endNs: 1060n * S };

let db: ProfilesDb;
beforeAll(async () => {
  db = await openProfilesDb(ROWS);
});
afterAll(() => db.close());

const selection = (selector: string | undefined, range = WINDOW): ProfileSelection => ({ range, ...(selector === undefined ? { profileType: undefined, matchers: [] } : parseProfileSelector(selector)) });

const stacksOf = async (selector: string, range = WINDOW) => {
  const rows = await db.run(planProfileStacks({ kind: 'profile_stacks', selection: selection(selector, range) }, PROFILES));
  return mergedStacksOf(rows).sort((a, b) => b.value - a.value || a.stack.join().localeCompare(b.stack.join()));
};

describe('planProfileStacks: every matching profile merged per stack', () => {
  it.each([
    [`${CPU}{service_name="api"}`, [{ stack: ['c', 'b', 'a'], value: 8 }, { stack: ['b', 'a'], value: 2 }, { stack: ['d', 'a'], value: 1 }]],
    ['process_cpu:cpu:nanoseconds{service_name="api"}', [{ stack: ['c', 'b', 'a'], value: 8 }, { stack: ['b', 'a'], value: 2 }, { stack: ['d', 'a'], value: 1 }]],
    [CPU, [{ stack: ['x'], value: 10 }, { stack: ['c', 'b', 'a'], value: 8 }, { stack: ['b', 'a'], value: 2 }, { stack: ['d', 'a'], value: 1 }]],
    [`${CPU}{service_name=~"a.*", env!="stage"}`, [{ stack: ['c', 'b', 'a'], value: 3 }, { stack: ['b', 'a'], value: 2 }]],
    [`${CPU}{"thread.id"="7"}`, [{ stack: ['c', 'b', 'a'], value: 5 }, { stack: ['d', 'a'], value: 1 }]],
    [`${CPU}{"k8s.ready"="true"}`, [{ stack: ['c', 'b', 'a'], value: 3 }, { stack: ['b', 'a'], value: 2 }]],
    // Prometheus semantics: an absent label is "".
    [`${CPU}{env=""}`, [{ stack: ['x'], value: 10 }]],
    [`${CPU}{env!~"prod|stage"}`, [{ stack: ['x'], value: 10 }]],
    [HEAP, [{ stack: ['b', 'a'], value: 4096 }]],
    [`${CPU}{service_name="nobody"}`, []],
  ])('%s', async (selector, expected) => {
    expect(await stacksOf(selector)).toEqual(expected);
  });

  it('reads only the time range (half-open)', async () => {
    expect(await stacksOf(CPU, { startNs: 1020n * S, endNs: 1021n * S })).toEqual([{ stack: ['x'], value: 10 }]);
    expect(await stacksOf(CPU, { startNs: 1000n * S + 1n, endNs: 1020n * S })).toEqual([{ stack: ['c', 'b', 'a'], value: 5 }, { stack: ['d', 'a'], value: 1 }]);
  });

  it('prints values as parameters, the type column bare, and the range as hints', () => {
    const plan = planProfileStacks({ kind: 'profile_stacks', selection: selection(`${CPU}{service_name="api"}`) }, PROFILES);
    expect(plan.sql).toContain('"profile_type" = $3');
    expect(plan.sql).toContain('"service_name" = $4');
    expect(plan.params).toEqual([String(1000n * S), String(1060n * S), CPU, 'api']);
    expect(plan.hints).toEqual({ start_ns: String(1000n * S), end_ns: String(1060n * S - 1n) });
  });
});

describe('planProfileStacks: profile id and stack trace selectors', () => {
  const stacks = async (extra: { profileIds?: string[]; stackFilter?: { callSite?: string[]; keepLeaves?: number } }, selector = `${CPU}{service_name="api"}`) =>
    mergedStacksOf(await db.run(planProfileStacks({ kind: 'profile_stacks', selection: selection(selector), ...extra }, PROFILES))).sort((a, b) => b.value - a.value || a.stack.join().localeCompare(b.stack.join()));

  it('profile ids keep only those profiles', async () => {
    expect(await stacks({ profileIds: ['aa'.repeat(16)] })).toEqual([{ stack: ['c', 'b', 'a'], value: 3 }, { stack: ['b', 'a'], value: 2 }]);
    expect(await stacks({ profileIds: ['bb'.repeat(16)] })).toEqual([]);
    expect(() => planProfileStacks({ kind: 'profile_stacks', selection: selection(CPU), profileIds: [] }, PROFILES)).toThrow(/names no profile/);
  });

  it('a call site keeps the stacks under it, root first', async () => {
    expect(await stacks({ stackFilter: { callSite: ['a', 'b'] } })).toEqual([{ stack: ['c', 'b', 'a'], value: 8 }, { stack: ['b', 'a'], value: 2 }]);
    expect(await stacks({ stackFilter: { callSite: ['a'] } })).toHaveLength(3);
    expect(await stacks({ stackFilter: { callSite: ['b'] } })).toEqual([]);
    expect(await stacks({ stackFilter: { callSite: ['a', 'b', 'c', 'd'] } })).toEqual([]);
  });

  it('keeping leaf frames merges the stacks that then agree', async () => {
    expect(await stacks({ stackFilter: { keepLeaves: 1 } })).toEqual([{ stack: ['c'], value: 8 }, { stack: ['b'], value: 2 }, { stack: ['d'], value: 1 }]);
    expect(await stacks({ stackFilter: { keepLeaves: 1 } }, `${HEAP}`)).toEqual([{ stack: ['b'], value: 4096 }]);
    expect(() => planProfileStacks({ kind: 'profile_stacks', selection: selection(CPU), stackFilter: { keepLeaves: 0 } }, PROFILES)).toThrow(/keep_locations/);
  });

  it('frames are parameters', () => {
    const plan = planProfileStacks({ kind: 'profile_stacks', selection: selection(CPU), stackFilter: { callSite: ["x'] OR 1=1 --"] } }, PROFILES);
    expect(plan.sql).not.toContain('OR 1=1');
    expect(plan.params).toContain("x'] OR 1=1 --");
  });
});

describe('materialized label columns', () => {
  const LABELS = { label_env: 'env', label_thread_id: 'thread.id' };
  const TABLE = withLabelColumns(LABELS);
  let labelled: ProfilesDb;
  beforeAll(async () => {
    labelled = await openProfilesDb(ROWS, LABELS);
  });
  afterAll(() => labelled.close());

  it.each([`${CPU}{env="prod"}`, `${CPU}{env!="prod"}`, `${CPU}{env=~"st.*"}`, `${CPU}{env=""}`, `${CPU}{"thread.id"="7"}`, `${CPU}{service_name="api", env!~"prod"}`])(
    '%s reads the column and answers as the maps do',
    async (selector) => {
      const plan = planProfileStacks({ kind: 'profile_stacks', selection: selection(selector) }, TABLE);
      expect(plan.sql).toMatch(/"label_(env|thread_id)"/);
      expect(plan.sql).not.toContain('resource_attr_str');
      // Merged stacks come in DuckDB's aggregation order, which varies from run to run: compared sorted.
      const sorted = (rows: Array<Record<string, unknown>>) => mergedStacksOf(rows).sort((a, b) => a.stack.join().localeCompare(b.stack.join()));
      const viaColumn = sorted(await labelled.run(plan));
      const viaMaps = sorted(await db.run(planProfileStacks({ kind: 'profile_stacks', selection: selection(selector) }, PROFILES)));
      expect(viaColumn).toEqual(viaMaps);
    },
  );

  it('equality keeps the bare column (statistics prune); grouping reads the column too', async () => {
    expect(planProfileStacks({ kind: 'profile_stacks', selection: selection(`${CPU}{env="prod"}`) }, TABLE).sql).toContain('"label_env" = $');
    const plan = planProfileSeriesPoints({ kind: 'profile_series_points', selection: selection(CPU), groupBy: ['env'], stepNs: 10n * S, aggregation: 'sum' }, TABLE);
    expect(plan.sql).toContain('coalesce("label_env", \'\')');
    expect(await labelled.run(plan)).toEqual(await db.run(planProfileSeriesPoints({ kind: 'profile_series_points', selection: selection(CPU), groupBy: ['env'], stepNs: 10n * S, aggregation: 'sum' }, PROFILES)));
  });
});

describe('planProfileTimeline', () => {
  it('sums total values per step slot from the range start', async () => {
    const rows = await db.run(planProfileTimeline({ kind: 'profile_timeline', selection: selection(CPU), stepNs: 10n * S }, PROFILES));
    expect(rows).toEqual([
      { slot: 0n, value: 5n },
      { slot: 1n, value: 6n },
      { slot: 2n, value: 10n },
    ]);
  });

  it('averages a slot\'s profiles with aggregation avg, and groups by a label (render\'s groupBy)', async () => {
    const timeline = (extra: { aggregation?: 'sum' | 'avg'; groupBy?: string }) => db.run(planProfileTimeline({ kind: 'profile_timeline', selection: selection(CPU), stepNs: 20n * S, ...extra }, PROFILES));
    // The 1000 s and 1010 s profiles (5 and 6) share the first 20 s slot.
    expect(await timeline({ aggregation: 'avg' })).toEqual([{ slot: 0n, value: 5.5 }, { slot: 1n, value: 10 }]);
    expect(await timeline({ groupBy: 'service_name' })).toEqual([
      { l0: 'api', slot: 0n, value: 11n },
      { l0: 'web', slot: 1n, value: 10n },
    ]);
  });
});

describe('discovery', () => {
  it('profile types of the window, optionally filtered', async () => {
    const types = async (sel: string | undefined, range = WINDOW) => (await db.run(planProfileTypes({ kind: 'profile_types', selection: selection(sel, range) }, PROFILES))).map((r) => r.id);
    expect(await types(undefined)).toEqual([HEAP, CPU]);
    expect(await types('{service_name="web"}')).toEqual([CPU]);
    expect(await types('{__name__="memory"}')).toEqual([HEAP]);
    expect(await types(undefined, { startNs: 0n, endNs: 1n })).toEqual([]);
  });

  it('label names: __name__, __profile_type__, service_name and attribute keys of both scopes', async () => {
    const rows = await db.run(planProfileLabelNames({ kind: 'profile_label_names', selection: selection(undefined) }, PROFILES));
    expect(rows.map((r) => r.name)).toEqual(['__name__', '__profile_type__', 'env', 'k8s.ready', 'service_name', 'thread.id', 'thread.name']);
    const web = await db.run(planProfileLabelNames({ kind: 'profile_label_names', selection: selection('{service_name="web"}') }, PROFILES));
    expect(web.map((r) => r.name)).toEqual(['__name__', '__profile_type__', 'service_name']);
  });

  it.each([
    ['service_name', undefined, ['api', 'web']],
    ['__name__', undefined, ['memory', 'process_cpu']],
    ['__profile_type__', undefined, [HEAP, CPU]],
    ['env', undefined, ['prod', 'stage']],
    ['env', HEAP, ['prod']],
    ['thread.id', undefined, ['7']],
    ['k8s.ready', undefined, ['true']],
    ['no.such.label', undefined, []],
  ])('label values of %s (selector %s)', async (label, sel, expected) => {
    const rows = await db.run(planProfileLabelValues({ kind: 'profile_label_values', selection: selection(sel), label }, PROFILES));
    expect(rows.map((r) => r.value)).toEqual(expected);
  });
});

describe('planProfileSeriesPoints (SelectSeries)', () => {
  const points = async (sel: string, groupBy: string[], stepS: bigint, aggregation: 'sum' | 'avg' = 'sum') =>
    db.run(planProfileSeriesPoints({ kind: 'profile_series_points', selection: selection(sel), groupBy, stepNs: stepS * S, aggregation }, PROFILES));

  it('sums totals per group and step, each profile in the step ending at or after it', async () => {
    expect(await points(CPU, ['service_name'], 10n)).toEqual([
      { l0: 'api', slot: 0n, value: 5 },
      { l0: 'api', slot: 1n, value: 6 },
      { l0: 'web', slot: 2n, value: 10 },
    ]);
    // 1010 s and 1020 s both fall in (1000 s, 1020 s].
    expect(await points(CPU, [], 20n)).toEqual([
      { slot: 0n, value: 5 },
      { slot: 1n, value: 16 },
    ]);
    expect(await points(CPU, [], 20n, 'avg')).toEqual([
      { slot: 0n, value: 5 },
      { slot: 1n, value: 8 },
    ]);
  });

  it('groups by attributes ("" where absent) and several labels; the selector applies', async () => {
    expect(await points(CPU, ['env'], 10n)).toEqual([
      { l0: '', slot: 2n, value: 10 },
      { l0: 'prod', slot: 0n, value: 5 },
      { l0: 'stage', slot: 1n, value: 6 },
    ]);
    expect(await points(`${CPU}{service_name="api"}`, ['service_name', 'thread.id'], 60n)).toEqual([
      { l0: 'api', l1: '', slot: 0n, value: 5 },
      { l0: 'api', l1: '7', slot: 1n, value: 6 },
    ]);
  });

  it('a call site counts only the samples under it, and a profile with none not at all', async () => {
    const rows = await db.run(planProfileSeriesPoints({ kind: 'profile_series_points', selection: selection(CPU), groupBy: ['service_name'], stepNs: 10n * S, aggregation: 'sum', callSite: ['a', 'b'] }, PROFILES));
    expect(rows).toEqual([
      { l0: 'api', slot: 0n, value: 5 },
      { l0: 'api', slot: 1n, value: 5 },
    ]);
    const avg = await db.run(planProfileSeriesPoints({ kind: 'profile_series_points', selection: selection(CPU), groupBy: [], stepNs: 60n * S, aggregation: 'avg', callSite: ['a'] }, PROFILES));
    expect(avg).toEqual([{ slot: 0n, value: 5 }, { slot: 1n, value: 6 }]);
  });

  it('exemplars: the largest profile of each point, or of those linked to a span', async () => {
    const X = (exemplars: 'individual' | 'span') => db.run(planProfileSeriesPoints({ kind: 'profile_series_points', selection: selection(CPU), groupBy: [], stepNs: 20n * S, aggregation: 'sum', exemplars }, PROFILES));
    const individual = await X('individual');
    expect(individual).toEqual([
      { slot: 0n, value: 5, ex_profile_id: 'aa'.repeat(16), ex_value: 5n, ex_time: 1000n * S, ex_span_id: '1111111111111111', ex_trace_id: T1 },
      // The point's profiles have no id: nothing to open, no exemplar.
      { slot: 1n, value: 16, ex_profile_id: null, ex_value: null, ex_time: null, ex_span_id: null, ex_trace_id: null },
    ]);
    const span = await X('span');
    expect(span[0]).toEqual(individual[0]);
    expect(span[1]).toEqual(individual[1]);
    // Where the largest profile is linked to no span, the two kinds part.
    const mixed = await openProfilesDb([
      { t: 2000n * S, service: 'api', type: CPU, id: 'a1'.repeat(16), samples: [{ stack: ['x'], value: 10 }], resource: { str: { 'service.name': 'api' } } },
      { t: 2001n * S, service: 'api', type: CPU, id: 'b2'.repeat(16), spanId: '3333333333333333', traceId: T1, samples: [{ stack: ['y'], value: 4 }], resource: { str: { 'service.name': 'api' } } },
    ]);
    try {
      const at = (exemplars: 'individual' | 'span') =>
        mixed.run(planProfileSeriesPoints({ kind: 'profile_series_points', selection: selection(CPU, { startNs: 1999n * S, endNs: 2010n * S }), groupBy: [], stepNs: 60n * S, aggregation: 'sum', exemplars }, PROFILES));
      expect((await at('individual')).map((r) => [r.ex_profile_id, r.ex_value])).toEqual([['a1'.repeat(16), 10n]]);
      expect((await at('span')).map((r) => [r.ex_profile_id, r.ex_value, r.ex_span_id])).toEqual([['b2'.repeat(16), 4n, '3333333333333333']]);
    } finally {
      mixed.close();
    }
    expect(seriesOf(individual, [], WINDOW, 20n * S)[0]!.points).toEqual([
      { timestampMs: 1_000_000, value: 5, exemplar: { profileId: 'aa'.repeat(16), timestampMs: 1_000_000, value: 5n, spanId: '1111111111111111', traceId: T1 } },
      { timestampMs: 1_020_000, value: 16 },
    ]);
  });

  it('seriesOf: one series per group, points stamped with the step end in unix ms, top-N by sum', async () => {
    const stepNs = 10n * S;
    const rows = await points(CPU, ['env'], 10n);
    expect(seriesOf(rows, ['env'], WINDOW, stepNs)).toEqual([
      { labels: [], points: [{ timestampMs: 1_020_000, value: 10 }] },
      { labels: [{ name: 'env', value: 'prod' }], points: [{ timestampMs: 1_000_000, value: 5 }] },
      { labels: [{ name: 'env', value: 'stage' }], points: [{ timestampMs: 1_010_000, value: 6 }] },
    ]);
    expect(seriesOf(rows, ['env'], WINDOW, stepNs, 2).map((s) => s.labels)).toEqual([[], [{ name: 'env', value: 'stage' }]]);
    expect(seriesOf([], [], WINDOW, stepNs)).toEqual([]);
  });

  it('prints the labels and the step as parameters', () => {
    const plan = planProfileSeriesPoints({ kind: 'profile_series_points', selection: selection(CPU), groupBy: ['x"; DROP TABLE profiles; --'], stepNs: 10n * S, aggregation: 'sum' }, PROFILES);
    expect(plan.sql).not.toContain('DROP');
    expect(plan.params).toContain('x"; DROP TABLE profiles; --');
    expect(plan.params).toContain(String(10n * S));
  });
});

describe('planProfileSeries (Series) and planProfileStats', () => {
  const series = async (sel: string | undefined, labels: string[], limit = 100) => db.run(planProfileSeries({ kind: 'profile_series', selection: selection(sel), labels, limit }, PROFILES));

  it('distinct label value tuples of the window, in value order, at most limit', async () => {
    expect(await series(undefined, ['service_name', '__profile_type__'])).toEqual([
      { l0: 'api', l1: HEAP },
      { l0: 'api', l1: CPU },
      { l0: 'web', l1: CPU },
    ]);
    expect(await series(undefined, ['service_name', '__profile_type__'], 1)).toHaveLength(1);
    const env = await series(CPU, ['env']);
    expect(env).toEqual([{ l0: '' }, { l0: 'prod' }, { l0: 'stage' }]);
    expect(labelSetsOf(env, ['env'])).toEqual([[{ name: 'env', value: 'prod' }], [{ name: 'env', value: 'stage' }]]);
  });

  it('stats: count and oldest/newest time over every partition', async () => {
    expect(await db.run(planProfileStats({ kind: 'profile_stats' }, PROFILES))).toEqual([{ profiles: 5n, oldest_ns: 1000n * S, newest_ns: 5000n * S }]);
    const empty = await openProfilesDb([]);
    try {
      expect(await empty.run(planProfileStats({ kind: 'profile_stats' }, PROFILES))).toEqual([{ profiles: 0n, oldest_ns: null, newest_ns: null }]);
    } finally {
      empty.close();
    }
  });
});

describe('planProfilesByTrace', () => {
  it('finds profiles whose row or any sample links the trace', async () => {
    const rows = await db.run(planProfilesByTrace({ kind: 'profiles_by_trace', traceId: T1, range: undefined, limit: 100 }, PROFILES));
    expect(rows.map((r) => profileSummaryOf(r, T1))).toEqual([
      {
        'profile.id': 'aa'.repeat(16),
        'profile.type': CPU,
        'sample.type': 'cpu',
        'sample.unit': 'nanoseconds',
        'service.name': 'api',
        timestamp: '1970-01-01T00:16:40.000000000Z',
        time_unix_nano: String(1000n * S),
        duration: 10_000_000_000,
        'trace.id': T1,
        'span.id': '1111111111111111',
        value: 5,
        linked_value: 3,
      },
      expect.objectContaining({ 'profile.id': null, time_unix_nano: String(1010n * S), 'span.id': null, value: 6, linked_value: 1 }),
    ]);
  });

  it('honours the range and the limit; an unknown trace finds nothing', async () => {
    const run = (traceId: string, range: TimeRange | undefined, limit: number) => db.run(planProfilesByTrace({ kind: 'profiles_by_trace', traceId, range, limit }, PROFILES));
    expect(await run(T1, { startNs: 1005n * S, endNs: 2000n * S }, 100)).toHaveLength(1);
    expect(await run(T1, undefined, 1)).toHaveLength(1);
    expect(await run('f'.repeat(32), undefined, 100)).toEqual([]);
  });
});
