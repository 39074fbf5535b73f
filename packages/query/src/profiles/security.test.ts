import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProfileSelection } from './ir.ts';
import {
  planProfileLabelNames,
  planProfileLabelValues,
  planProfileSeries,
  planProfileSeriesPoints,
  planProfileStacks,
  planProfileTimeline,
  planProfileTypes,
  planProfilesByTrace,
  type ProfilePlan,
} from './plan.ts';
import { parseProfileSelector } from './selector.ts';
import { PROFILES, openProfilesDb, type ProfilesDb } from './test-db.ts';

/**
 * The profile translator's security suite (STYLE habit 5): hostile text in every place a request
 * can put it (label values, label names, the profile type, the label-values label) becomes a
 * parameter, never SQL text; every plan reads the one unqualified `profiles` view the querier
 * binds to the caller's tenant, with no OR that could widen it; and each hostile plan runs, finds
 * nothing, and leaves the table as it was.
 */
const S = 1_000_000_000n;
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const RANGE = { startNs: 0n, endNs: 10_000n * S };

const HOSTILE = [
  `x' OR 1=1 --`,
  `'); DROP TABLE profiles; --`,
  `' UNION SELECT * FROM duckdb_tables() --`,
  `' || (SELECT * FROM read_parquet('/etc/passwd')) || '`,
  `back\\slash' /* comment */`,
  `other_tenant.default.profiles`,
];

let db: ProfilesDb;
beforeAll(async () => {
  db = await openProfilesDb([{ t: 1n * S, service: 'api', type: CPU, samples: [{ stack: ['main'], value: 1 }] }]);
});
afterAll(() => db.close());

const quoted = (s: string) => JSON.stringify(s);

/** Every plan of a selection, with `label` as the label-values label, the series label and the group-by label. */
function plansOf(sel: ProfileSelection, label = 'service_name'): ProfilePlan[] {
  return [
    planProfileStacks({ kind: 'profile_stacks', selection: sel }, PROFILES),
    planProfileTimeline({ kind: 'profile_timeline', selection: sel, stepNs: 10n * S }, PROFILES),
    planProfileTypes({ kind: 'profile_types', selection: sel }, PROFILES),
    planProfileLabelNames({ kind: 'profile_label_names', selection: sel }, PROFILES),
    planProfileLabelValues({ kind: 'profile_label_values', selection: sel, label }, PROFILES),
    planProfileSeries({ kind: 'profile_series', selection: sel, labels: [label], limit: 10 }, PROFILES),
    planProfileSeriesPoints({ kind: 'profile_series_points', selection: sel, groupBy: [label], stepNs: 10n * S, aggregation: 'avg' }, PROFILES),
  ];
}

async function expectHarmless(plan: ProfilePlan, hostile: string) {
  expect(plan.sql).not.toContain(hostile);
  // Only the caller's view is named: no qualified names, no table functions, no second statement.
  const sources = [...plan.sql.matchAll(/FROM\s+([^\s(][^\s]*)/g)].map((m) => m[1]);
  expect(sources.length).toBeGreaterThan(0);
  expect(new Set(sources)).toEqual(new Set(['"profiles"']));
  expect(plan.sql).not.toMatch(/read_parquet|duckdb_|;|\bUNION\b|\bOR\b/);
  await db.run(plan);
  const left = await db.run(planProfileTypes({ kind: 'profile_types', selection: { range: RANGE, profileType: undefined, matchers: [] } }, PROFILES));
  expect(left).toEqual([{ id: CPU }]);
}

describe('hostile text stays a parameter', () => {
  it.each(HOSTILE)('in a label value: %s', async (hostile) => {
    const sel: ProfileSelection = { range: RANGE, ...parseProfileSelector(`${CPU}{service_name=${quoted(hostile)}, env!=${quoted(hostile)}}`) };
    for (const plan of plansOf(sel)) {
      await expectHarmless(plan, hostile);
      expect(plan.params).toContain(hostile);
    }
    expect(await db.run(plansOf(sel)[0]!)).toEqual([]);
  });

  it('in a regex', async () => {
    const hostile = `.*' UNION SELECT * FROM duckdb_tables() --`;
    const sel: ProfileSelection = { range: RANGE, ...parseProfileSelector(`${CPU}{env=~${quoted(hostile)}, service_name!~${quoted(hostile)}}`) };
    for (const plan of plansOf(sel)) await expectHarmless(plan, hostile);
  });

  it.each(HOSTILE)('in a label name: %s', async (hostile) => {
    const sel: ProfileSelection = { range: RANGE, ...parseProfileSelector(`${CPU}{${quoted(hostile)}="v"}`) };
    for (const plan of plansOf(sel, hostile)) await expectHarmless(plan, hostile);
    expect(await db.run(planProfileLabelValues({ kind: 'profile_label_values', selection: { range: RANGE, profileType: undefined, matchers: [] }, label: hostile }, PROFILES))).toEqual([]);
  });

  it.each(HOSTILE.filter((h) => !/[\s{}()"'`,=]/.test(h)))('in the profile type: %s', async (hostile) => {
    const sel: ProfileSelection = { range: RANGE, ...parseProfileSelector(`{__name__=${quoted(`a:b:c:${hostile}:e`)}}`) };
    for (const plan of plansOf(sel)) await expectHarmless(plan, hostile);
  });

  it('in a trace id the planner is handed', async () => {
    const hostile = `' OR '1'='1`;
    const plan = planProfilesByTrace({ kind: 'profiles_by_trace', traceId: hostile, range: undefined, limit: 10 }, PROFILES);
    expect(plan.sql).not.toContain(hostile);
    expect(await db.run(plan)).toEqual([]);
  });
});
