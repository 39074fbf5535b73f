import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, deleteRuleGroups, listRuleGroups, migrate, openDb, putRuleGroup, type Db } from '@floe/meta';
import { FreshSampleIndex, parseRuleGroup, ruleGroupToJson, type InstantResult } from '@floe/query';
import { silentLogger } from '@floe/telemetry';
import type { GroupState, OutputSample } from './group-evaluation.ts';
import { Ruler } from './ruler.ts';

/**
 * The scheduler against a real (in-memory PGlite) metadata DB: one of two rulers evaluates (the
 * lease), the other takes over once the first stops; groups run on their interval; results reach
 * the writer; the state is saved, and a new evaluator restores a pending alert instead of starting
 * its `for` over; a replaced or deleted group's series end with staleness markers. Queries are answered by the
 * test (the query engines are tested elsewhere).
 */
describe('ruler scheduler', () => {
  let db: Db;
  const written: Array<{ tenant: string; samples: readonly OutputSample[] }> = [];
  /** The metric names laid over storage for each query of `up` (the ruler's recent writes). */
  const freshNames: string[][] = [];
  const value = 5;

  const ruler = () =>
    new Ruler({
      db,
      log: silentLogger(),
      queries: {
        promql: async (_tenant, _dataset, expr, t, fresh): Promise<InstantResult> => {
          if (expr === 'up') freshNames.push(fresh.flatMap((layer) => (layer instanceof FreshSampleIndex ? layer.samples : layer)).map((s) => s.labels.__name__!));
          if (expr === 'up') return { resultType: 'vector', result: [{ labels: { __name__: 'up', job: 'api' }, t, v: value }] };
          if (expr === 'up > 1') return { resultType: 'vector', result: value > 1 ? [{ labels: { job: 'api' }, t, v: value }] : [] };
          throw new Error(`unexpected expression ${expr}`);
        },
        logql: async () => ({ resultType: 'vector', result: [] }),
      },
      expand: async (template) => template,
      writer: { write: async (tenant, _dataset, samples) => void written.push({ tenant, samples }) },
      evaluationIntervalMs: 1000,
      pollIntervalMs: 100,
      queryOffsetMs: 0,
      resendDelayMs: 60_000,
      forOutageToleranceMs: 3_600_000,
      externalLabels: {},
      externalUrl: 'http://floe.test',
    });
  const until = async (what: string, check: () => boolean | Promise<boolean>, ms = 10_000) => {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const savedState = async () => (await listRuleGroups(db, { tenantId: 'acme' }))[0]?.state as GroupState | null;

  beforeAll(async () => {
    db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
    await migrate(db);
    await createTenant(db, { id: 'acme', displayName: 'Acme' });
    const group = parseRuleGroup('name: g\ninterval: 1s\nrules:\n  - record: job:up:max\n    expr: up\n  - alert: Up\n    expr: up > 1\n    for: 1h\n', { language: 'promql' });
    await putRuleGroup(db, { tenantId: 'acme', datasetId: 'default', language: 'promql', namespace: 'ns', name: 'g' }, ruleGroupToJson(group), 10);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('evaluates on one ruler only, hands over when it stops, and restores a pending alert from the saved state', async () => {
    const a = ruler();
    const b = ruler();
    a.start();
    await until('a to lead', () => a.leader);
    b.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(b.leader).toBe(false);

    await until('two evaluations written', () => written.length >= 2);
    expect(written[0]!.tenant).toBe('acme');
    expect(written[0]!.samples.map((s) => s.labels)).toEqual([
      { __name__: 'job:up:max', job: 'api' },
      { __name__: 'ALERTS', alertname: 'Up', alertstate: 'pending', job: 'api' },
      { __name__: 'ALERTS_FOR_STATE', alertname: 'Up', job: 'api' },
    ]);
    // Evaluations fall on whole seconds (the group's interval, shifted by its offset) a second apart.
    const [t1, t2] = [written[0]!.samples[0]!.t, written[1]!.samples[0]!.t];
    expect(t2 - t1).toBe(1000);
    // The second evaluation's queries were given what the first one wrote, which storage may not show yet.
    expect(freshNames[0]).toEqual([]);
    expect(freshNames[1]).toEqual(['job:up:max', 'ALERTS', 'ALERTS_FOR_STATE']);

    await until('the state saved', async () => (await savedState())?.rules[1]?.alerts[0]?.state === 'pending');
    const activeAt = (await savedState())!.rules[1]!.alerts[0]!.activeAt;

    await a.stop();
    await until('b to take over', () => b.leader, 5_000);
    const before = written.length;
    await until('b to evaluate', () => written.length > before);
    // b restored the pending alert: its activeAt is a's, not the time b started evaluating.
    await until('b to save its state', async () => ((await savedState())?.lastEvaluation ?? 0) > written[before - 1]!.samples[0]!.t);
    expect((await savedState())!.rules[1]!.alerts[0]).toMatchObject({ state: 'pending', activeAt });

    // A replaced group is read again at the next poll: its old series end, the new rule runs.
    const before2 = written.length;
    const replaced = parseRuleGroup('name: g\ninterval: 1s\nrules:\n  - record: job:up:renamed\n    expr: up\n', { language: 'promql' });
    await putRuleGroup(db, { tenantId: 'acme', datasetId: 'default', language: 'promql', namespace: 'ns', name: 'g' }, ruleGroupToJson(replaced), 10);
    await until('the replaced rule’s results', () => written.slice(before2).some((w) => w.samples.some((x) => x.labels.__name__ === 'job:up:renamed' && x.v === 5)));
    const ended = written.slice(before2).flatMap((w) => w.samples.filter((x) => Number.isNaN(x.v)).map((x) => x.labels.__name__));
    expect(ended.sort()).toEqual(['ALERTS', 'ALERTS_FOR_STATE', 'job:up:max']);

    // Deleting the group ends its series at once with staleness markers.
    const sent = written.length;
    await deleteRuleGroups(db, { tenantId: 'acme', namespace: 'ns', name: 'g' });
    await until('the staleness markers', () => written.slice(sent).some((w) => w.samples.every((x) => Number.isNaN(x.v))));
    const stale = written.slice(sent).find((w) => w.samples.every((x) => Number.isNaN(x.v)))!;
    expect(stale.samples.map((x) => x.labels.__name__)).toEqual(['job:up:renamed']);
    await b.stop();
  });
});
