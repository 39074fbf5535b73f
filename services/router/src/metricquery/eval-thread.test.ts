import { describe, expect, it } from 'vitest';
import { evalInstant, evalRange, parsePromQL, PromAnnotations, type EvalOptions, type PromVectorSelector, type RawSeries } from '@floe/query';
import { evaluateInstant, evaluateRange, packSelections, setPromEvalThreads, unpackSelections } from './eval-thread.ts';

/** `n` series of gauge `name` (job i), a point every 15 s over an hour. */
function gauges(name: string, n: number): RawSeries[] {
  const t = Array.from({ length: 241 }, (_, i) => i * 15_000);
  return Array.from({ length: n }, (_, j) => ({ labels: { __name__: name, job: `j${j}` }, t, v: t.map((x, i) => (i * (j + 1)) % 97) }));
}

const opts = (startMs: number, endMs: number, more: Partial<EvalOptions> = {}): EvalOptions => ({ startMs, endMs, lookbackMs: 300_000, defaultSubqueryStepMs: 60_000, ...more });

describe('PromQL evaluation off the event loop', () => {
  const series = gauges('load', 12_000);
  const source = (s: PromVectorSelector) => (s.name === 'load' ? series : []);
  const read = async () => source;

  it('answers a large range query on the thread exactly as inline evaluation does, annotations included', async () => {
    const query = 'sum by (job) (rate(load[5m])) > 0';
    const expr = parsePromQL(query);
    const onThread = new PromAnnotations();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const got = await evaluateRange(query, expr, 0, 3_600_000, 15_000, read, opts(0, 3_600_000, { annotations: onThread })).finally(() => clearInterval(ticker));
    // A timer fired before the answer: it was not evaluated inline (which would hold the loop).
    expect(ticks).toBeGreaterThan(0);
    const inline = new PromAnnotations();
    const want = evalRange(parsePromQL(query), 0, 3_600_000, 15_000, source, opts(0, 3_600_000, { annotations: inline }));
    expect(got.result.length).toBeGreaterThan(100);
    expect(got).toEqual(want);
    expect(onThread.asStrings(query)).toEqual(inline.asStrings(query));
    expect(onThread.asStrings(query).infos).toEqual(['PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "load" (1:20)']);
  });

  it('answers a small query inline, the same', async () => {
    const query = 'max(load)';
    const got = await evaluateInstant(query, parsePromQL(query), 600_000, read, opts(600_000, 600_000));
    expect(got).toEqual(evalInstant(parsePromQL(query), 600_000, source, opts(600_000, 600_000)));
  });

  it('keeps the event loop free while a heavy evaluation runs, and carries its errors back in kind', async () => {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    try {
      const query = 'count_over_time(vector(1)[2h:1ms])';
      const got = await evaluateInstant(query, parsePromQL(query), 7_200_000, read, opts(7_200_000, 7_200_000));
      expect(got).toEqual({ resultType: 'vector', result: [{ labels: {}, t: 7_200_000, v: 7_200_000 }] });
    } finally {
      clearInterval(ticker);
    }
    // Inline, no timer could have fired before the answer: the evaluation would hold the loop.
    expect(ticks).toBeGreaterThan(0);
    const tooMany = 'count_over_time(vector(1)[2h:1ms]) + count_over_time(load[1h])';
    await expect(evaluateInstant(tooMany, parsePromQL(tooMany), 3_600_000, read, opts(3_600_000, 3_600_000, { maxSamples: 5_000_000 }))).rejects.toMatchObject({
      name: 'FloeError',
      kind: 'execution',
      message: 'query processing would load too many samples into memory in query execution',
    });
  });

  it('refuses a query whose subquery steps alone pass the sample budget before reading any series', async () => {
    const windows: unknown[] = [];
    const counting = async (w: unknown[]) => {
      windows.push(...w);
      return source;
    };
    const tooFine = 'sum_over_time(load[1h:1ms])';
    const refused = { name: 'FloeError', kind: 'execution', message: 'query processing would load too many samples into memory in query execution' };
    await expect(evaluateInstant(tooFine, parsePromQL(tooFine), 3_600_000, counting, opts(3_600_000, 3_600_000, { maxSamples: 1_000_000 }))).rejects.toMatchObject(refused);
    // 1,800 subquery steps at each of 61 range steps: 109,800, past a budget of 100,000.
    const fine = 'sum_over_time(load[1h:2s])';
    await expect(evaluateRange(fine, parsePromQL(fine), 0, 3_600_000, 60_000, counting, opts(0, 3_600_000, { maxSamples: 100_000 }))).rejects.toMatchObject(refused);
    expect(windows).toEqual([]);
    // Under the budget the same shape reads its selector.
    const coarse = 'sum_over_time(load[1h:10m])';
    await evaluateInstant(coarse, parsePromQL(coarse), 3_600_000, counting, opts(3_600_000, 3_600_000, { maxSamples: 50_000_000 }));
    expect(windows).toHaveLength(1);
  });

  it('answers a query waiting behind another on the only thread at its deadline, not after the other ends', async () => {
    setPromEvalThreads(1);
    try {
      const settled: string[] = [];
      const heavy = 'count_over_time(vector(1)[2h:1ms])';
      const first = evaluateInstant(heavy, parsePromQL(heavy), 7_200_000, read, opts(7_200_000, 7_200_000)).then(() => settled.push('first'));
      const second = evaluateInstant(heavy, parsePromQL(heavy), 7_200_000, read, opts(7_200_000, 7_200_000, { deadline: performance.now() + 50 })).catch((e: unknown) => {
        settled.push('second');
        throw e;
      });
      await expect(second).rejects.toMatchObject({ name: 'FloeError', kind: 'timeout', message: 'query timed out in expression evaluation' });
      await first;
      expect(settled).toEqual(['second', 'first']);
    } finally {
      setPromEvalThreads(2);
    }
  });

  it('packs the selections end to end and unpacks them as they were, staleness markers included', () => {
    const a: RawSeries = { labels: { __name__: 'a' }, t: Float64Array.of(1, 2, 3), v: Float64Array.of(10, 20, 30) };
    const b: RawSeries = { labels: { __name__: 'b' }, t: [4, 5], v: [40, 50], stale: [false, true] };
    const packed = packSelections([[a], [], [b, a]]);
    expect([...packed.t]).toEqual([1, 2, 3, 4, 5, 1, 2, 3]);
    const back = unpackSelections(packed).map((list) => list.map((s) => ({ labels: s.labels, t: Array.from(s.t), v: Array.from(s.v), stale: s.stale ? Array.from(s.stale) : undefined })));
    expect(back).toEqual([
      [{ labels: { __name__: 'a' }, t: [1, 2, 3], v: [10, 20, 30], stale: undefined }],
      [],
      [
        { labels: { __name__: 'b' }, t: [4, 5], v: [40, 50], stale: [0, 1] },
        { labels: { __name__: 'a' }, t: [1, 2, 3], v: [10, 20, 30], stale: undefined },
      ],
    ]);
  });
});
