import { describe, expect, it } from 'vitest';
import { parseAlertTemplate, STALE_NAN, type InstantResult, type RuleGroup } from '@floe/query';
import { emptyGroupState, evaluateGroup, restoreGroupState, type EvaluationContext, type GroupState, type Labels } from './group-evaluation.ts';

const M = 60_000;

/** A query whose answer per expression and time the test sets. */
function context(answers: (expr: string, t: number) => InstantResult): EvaluationContext {
  return {
    query: async (expr, t) => answers(expr, t),
    expand: async (template, labels, value) => template.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, k: string) => labels[k] ?? '').replace('{{ $value }}', String(value)),
    intervalMs: M,
    resendDelayMs: M,
  };
}
const vector = (...samples: Array<[Labels, number]>): InstantResult => ({ resultType: 'vector', result: samples.map(([labels, v]) => ({ labels, t: 0, v })) });

const alertGroup = (forMs: number, keepFiringForMs = 0): RuleGroup => ({
  name: 'g',
  labels: {},
  rules: [{ kind: 'alerting', alert: 'HighErrors', expr: 'errors > 1', forMs, keepFiringForMs, labels: { severity: 'page', where: '{{ $labels.instance }}' }, annotations: { summary: 'errors at {{ $value }}' } }],
});

async function run(group: RuleGroup, steps: Array<[number, InstantResult]>, state: GroupState = emptyGroupState(group)) {
  const out = [];
  for (const [t, answer] of steps) {
    const r = await evaluateGroup(group, t, state, context(() => answer));
    state = r.state;
    out.push(r);
  }
  return out;
}

describe('recording rules', () => {
  const group: RuleGroup = {
    name: 'rec',
    labels: {},
    rules: [{ kind: 'recording', record: 'job:errors:rate5m', expr: 'sum by (job) (rate(errors[5m]))', labels: { team: 'sre', job: 'renamed', drop: '' } }],
  };

  it('writes the result under the record name with the rule labels over the series labels', async () => {
    const [r] = await run(group, [[10 * M, vector([{ job: 'api', drop: 'x', instance: 'a' }, 0.5])]]);
    expect(r!.samples).toEqual([{ labels: { __name__: 'job:errors:rate5m', job: 'renamed', team: 'sre', instance: 'a' }, t: 10 * M, v: 0.5 }]);
    expect(r!.state.rules[0]).toMatchObject({ health: 'ok', lastError: '', lastEvaluation: 10 * M });
  });

  it('keeps a label named __proto__ as an ordinary label', async () => {
    const rule: RuleGroup = { name: 'p', labels: {}, rules: [{ kind: 'recording', record: 'r', expr: 'x', labels: Object.fromEntries([['__proto__', 'from-rule']]) }] };
    const [r] = await run(rule, [[M, vector([Object.fromEntries([['__proto__', 'from-series'], ['job', 'a']]), 1])]]);
    const labels = r!.samples[0]!.labels;
    expect(Object.getOwnPropertyDescriptor(labels, '__proto__')?.value).toBe('from-rule');
    expect(Object.keys(labels).sort()).toEqual(['__name__', '__proto__', 'job']);
  });

  it('takes a scalar as one sample without labels', async () => {
    const [r] = await run({ ...group, rules: [{ kind: 'recording', record: 'answer', expr: '42', labels: {} }] }, [[M, { resultType: 'scalar', result: [M, 42] }]]);
    expect(r!.samples).toEqual([{ labels: { __name__: 'answer' }, t: M, v: 42 }]);
  });

  it('ends series that went away with a staleness marker', async () => {
    const [, second] = await run(group, [
      [M, vector([{ instance: 'a' }, 1], [{ instance: 'b' }, 2])],
      [2 * M, vector([{ instance: 'a' }, 3])],
    ]);
    expect(second!.samples).toHaveLength(2);
    expect(second!.samples[0]).toEqual({ labels: { __name__: 'job:errors:rate5m', job: 'renamed', team: 'sre', instance: 'a' }, t: 2 * M, v: 3 });
    const stale = second!.samples[1]!;
    expect(stale.labels).toEqual({ __name__: 'job:errors:rate5m', job: 'renamed', team: 'sre', instance: 'b' });
    expect(Object.is(stale.v, STALE_NAN) || (Number.isNaN(stale.v) && new BigUint64Array(new Float64Array([stale.v]).buffer)[0] === 0x7ff0000000000002n)).toBe(true);
  });

  it('hands each rule what the earlier rules wrote at this evaluation, staleness markers included', async () => {
    const chained: RuleGroup = {
      name: 'chain',
      labels: {},
      rules: [
        { kind: 'recording', record: 'first', expr: 'a', labels: {} },
        { kind: 'recording', record: 'second', expr: 'first', labels: {} },
        { kind: 'alerting', alert: 'Third', expr: 'second > 0', forMs: 0, keepFiringForMs: 0, labels: {}, annotations: {} },
      ],
    };
    const seen: Array<[string, string[]]> = [];
    const ctx = context(() => vector([{ instance: 'x' }, 1]));
    const recordingCtx: EvaluationContext = {
      ...ctx,
      query: async (expr, t, fresh) => {
        seen.push([expr, fresh.map((s) => `${s.labels.__name__}@${s.t}`)]);
        return ctx.query(expr, t, fresh);
      },
    };
    const prev = (await evaluateGroup(chained, M, emptyGroupState(chained), context(() => vector([{ instance: 'gone' }, 1])))).state;
    await evaluateGroup(chained, 2 * M, prev, recordingCtx);
    expect(seen).toEqual([
      ['a', []],
      // The first rule's sample and the staleness marker of its series that went away.
      ['first', [`first@${2 * M}`, `first@${2 * M}`]],
      ['second > 0', [`first@${2 * M}`, `first@${2 * M}`, `second@${2 * M}`, `second@${2 * M}`]],
    ]);
  });

  it('reports labelset collisions and the group limit as the rule’s error, writing nothing', async () => {
    const [r] = await run(group, [[M, vector([{ job: 'a' }, 1], [{ job: 'b' }, 2])]]);
    expect(r!.samples).toEqual([]);
    expect(r!.state.rules[0]).toMatchObject({ health: 'err', lastError: 'vector contains metrics with the same labelset after applying rule labels' });
    const [limited] = await run({ ...group, limit: 1, rules: [{ kind: 'recording', record: 'x', expr: 'y', labels: {} }] }, [[M, vector([{ a: '1' }, 1], [{ a: '2' }, 2])]]);
    expect(limited!.state.rules[0]).toMatchObject({ health: 'err', lastError: 'exceeded limit of 1 with 2 series' });
  });

  it('reports a failed query and keeps its last series (no staleness markers on failure)', async () => {
    let fail = false;
    const ctx = context(() => {
      if (fail) throw new Error('query timed out');
      return vector([{ instance: 'a' }, 1]);
    });
    const first = await evaluateGroup(group, M, emptyGroupState(group), ctx);
    fail = true;
    const second = await evaluateGroup(group, 2 * M, first.state, ctx);
    expect(second.samples).toEqual([]);
    expect(second.state.rules[0]).toMatchObject({ health: 'err', lastError: 'query timed out', series: first.state.rules[0]!.series });
  });
});

describe('alerting rules', () => {
  const firing = vector([{ __name__: 'errors', instance: 'a' }, 5]);
  const none = vector();

  it('goes pending, then firing after `for`, then resolved; writes ALERTS and ALERTS_FOR_STATE', async () => {
    const [p, stillPending, fired, resolved] = await run(alertGroup(2 * M), [
      [M, firing],
      [2 * M, firing],
      [3 * M, firing],
      [4 * M, none],
    ]);
    const labels = { alertname: 'HighErrors', instance: 'a', severity: 'page', where: 'a' };
    expect(p!.state.rules[0]!.alerts).toEqual([{ labels, annotations: { summary: 'errors at 5' }, state: 'pending', value: 5, activeAt: M }]);
    expect(p!.samples).toEqual([
      { labels: { ...labels, __name__: 'ALERTS', alertstate: 'pending' }, t: M, v: 1 },
      { labels: { ...labels, __name__: 'ALERTS_FOR_STATE' }, t: M, v: 60 },
    ]);
    expect(p!.due).toEqual([]);
    expect(stillPending!.state.rules[0]!.alerts[0]!.state).toBe('pending');
    expect(fired!.state.rules[0]!.alerts[0]).toMatchObject({ state: 'firing', activeAt: M, firedAt: 3 * M });
    expect(fired!.due).toEqual([{ labels, annotations: { summary: 'errors at 5' }, startsAt: 3 * M, endsAt: 3 * M + 4 * M }]);
    // The pending ALERTS series ends when the firing one starts.
    expect(fired!.samples.map((s) => [s.labels.__name__, s.labels.alertstate, Number.isNaN(s.v) ? 'stale' : s.v])).toEqual([
      ['ALERTS', 'firing', 1],
      ['ALERTS_FOR_STATE', undefined, 60],
      ['ALERTS', 'pending', 'stale'],
    ]);
    expect(resolved!.state.rules[0]!.alerts[0]).toMatchObject({ state: 'inactive', resolvedAt: 4 * M });
    expect(resolved!.due).toEqual([{ labels, annotations: { summary: 'errors at 5' }, startsAt: 3 * M, endsAt: 4 * M }]);
    expect(resolved!.samples.every((s) => Number.isNaN(s.v))).toBe(true);
  });

  it('expands templates whose `query` runs at the evaluation time, once per rule for all its alerts', async () => {
    const group: RuleGroup = {
      name: 'q',
      labels: {},
      rules: [
        { kind: 'recording', record: 'fleet:size', expr: 'count(up)', labels: {} },
        {
          kind: 'alerting',
          alert: 'HighErrors',
          expr: 'errors > 1',
          forMs: 0,
          keepFiringForMs: 0,
          labels: {},
          annotations: { summary: '{{ $labels.instance }} of {{ query "fleet:size" | first | value }} at {{ with query "time()" }}{{ . | first | value }}{{ end }}' },
        },
      ],
    };
    const calls: Array<[string, number, number]> = [];
    const ctx: EvaluationContext = {
      ...context(() => none),
      query: async (expr, t, fresh) => {
        calls.push([expr, t, fresh.length]);
        if (expr === 'count(up)') return vector([{}, 7]);
        if (expr === 'errors > 1') return vector([{ __name__: 'errors', instance: 'a' }, 5], [{ __name__: 'errors', instance: 'b' }, 6]);
        if (expr === 'time()') return { resultType: 'scalar', result: [t, t / 1000] };
        // The template's query reads the recording rule's fresh sample, as the rule's own query would.
        if (expr === 'fleet:size') return vector([{ __name__: 'fleet:size' }, fresh.find((x) => x.labels.__name__ === 'fleet:size')!.v]);
        throw new Error(expr);
      },
      expand: (template, labels, value, query) => parseAlertTemplate(template).expandWithQueries({ labels, value, externalLabels: {}, externalURL: '' }, query),
    };
    const r = await evaluateGroup(group, 2 * M, emptyGroupState(group), ctx);
    expect(r.state.rules[1]!.alerts.map((a) => a.annotations.summary)).toEqual(['a of 7 at 120', 'b of 7 at 120']);
    expect(calls).toEqual([
      ['count(up)', 2 * M, 0],
      ['errors > 1', 2 * M, 1],
      ['fleet:size', 2 * M, 1],
      ['time()', 2 * M, 1],
    ]);
  });

  it('fires at once without `for`, and drops a pending alert whose series went away', async () => {
    const [now] = await run(alertGroup(0), [[M, firing]]);
    expect(now!.state.rules[0]!.alerts[0]).toMatchObject({ state: 'firing', firedAt: M });
    const [, gone] = await run(alertGroup(5 * M), [
      [M, firing],
      [2 * M, none],
    ]);
    expect(gone!.state.rules[0]!.alerts).toEqual([]);
    expect(gone!.due).toEqual([]);
  });

  it('re-sends a firing alert only after the resend delay', async () => {
    const steps = await run(alertGroup(0), [
      [M, firing],
      [M + 30_000, firing],
      [2 * M + 30_000, firing],
    ]);
    expect(steps.map((s) => s.due.length)).toEqual([1, 0, 1]);
  });

  it('keeps firing for keep_firing_for after the condition cleared', async () => {
    const steps = await run(alertGroup(0, 2 * M), [
      [M, firing],
      [2 * M, none],
      [3 * M, none],
      [4 * M, none],
    ]);
    expect(steps.map((s) => s.state.rules[0]!.alerts[0]!.state)).toEqual(['firing', 'firing', 'firing', 'inactive']);
    expect(steps[1]!.state.rules[0]!.alerts[0]!.keepFiringSince).toBe(2 * M);
  });

  it('forgets a resolved alert 15 minutes after it resolved', async () => {
    const steps = await run(alertGroup(0), [
      [M, firing],
      [2 * M, none],
      [17 * M, none],
      [18 * M, none],
    ]);
    expect(steps.map((s) => s.state.rules[0]!.alerts.length)).toEqual([1, 1, 1, 0]);
  });

  it('restores alerts from a recent saved state and starts over after the outage tolerance', async () => {
    const [fired] = await run(alertGroup(0), [[M, firing]]);
    const saved = JSON.parse(JSON.stringify(fired!.state)) as GroupState;
    expect(restoreGroupState(alertGroup(0), saved, 2 * M, 60 * M).rules[0]!.alerts).toHaveLength(1);
    expect(restoreGroupState(alertGroup(0), saved, 62 * M, 60 * M).rules[0]!.alerts).toEqual([]);
    // A rule renamed at that position does not inherit the state.
    const renamed: RuleGroup = { ...alertGroup(0), rules: [{ ...(alertGroup(0).rules[0] as Extract<RuleGroup['rules'][number], { kind: 'alerting' }>), alert: 'Other' }] };
    expect(restoreGroupState(renamed, saved, 2 * M, 60 * M).rules[0]).toMatchObject({ name: 'Other', alerts: [], health: 'unknown' });
  });
});
