import { FloeError, isErrorKind } from '@floe/errors';
import {
  checkPromSubquerySteps,
  checkRangeSteps,
  evalInstant,
  evalRange,
  promEvalTimedOut,
  promRangeStepCount,
  promSelectors,
  promSubquerySteps,
  selectorWindows,
  type EvalOptions,
  type InstantResult,
  type PromAnnotationSnapshot,
  type PromExpr,
  type PromVectorSelector,
  type RangeResult,
  type RawSeries,
  type SelectorWindow,
  type SeriesSource,
} from '@floe/query';
import { RequestThread } from '@floe/storage';

/**
 * Where a PromQL evaluation runs. It is synchronous: on the event loop, a heavy one (a fine
 * subquery, a range over many series) would hold every other request of the router, of every
 * tenant, until it ends or its deadline passes. Evaluations up to about 5 million values (points
 * read, series × steps, subquery steps × series: about 100 ms here, 20 ns a value) run inline,
 * which is faster; larger ones run on a thread of their own, with the series the router read
 * moved to it, and the event loop stays free. The thread costs a large one about half again its
 * time (10,000 series × 1,441 steps: 430 ms inline, 650–850 ms there, 90 ms of it the packing).
 */
const INLINE_WORK = 5_000_000;

/** A series sent to the thread: its samples are `length` entries from `at` of the packed arrays. */
export interface PackedSeries {
  labels: RawSeries['labels'];
  at: number;
  length: number;
  stale: boolean;
}

/**
 * Every selector's series with their samples packed end to end in two (three with staleness
 * markers) arrays that move to the thread without a copy: the series' own arrays are often views
 * of large Arrow buffers, which a structured clone would copy whole, number by number or buffer by
 * buffer. One memcpy per series here instead.
 */
export interface PackedSelections {
  /** Per selector (parser's order), its series. */
  series: PackedSeries[][];
  t: Float64Array<ArrayBuffer>;
  v: Float64Array<ArrayBuffer>;
  /** 1 where a sample is a staleness marker (only series with `stale` read it). */
  stale: Uint8Array<ArrayBuffer>;
}

export function packSelections(selections: ReadonlyArray<readonly RawSeries[]>): PackedSelections {
  let total = 0;
  for (const list of selections) for (const s of list) total += s.t.length;
  const t = new Float64Array(total);
  const v = new Float64Array(total);
  const stale = new Uint8Array(total);
  let at = 0;
  const series = selections.map((list) =>
    list.map((s) => {
      const length = s.t.length;
      t.set(s.t, at);
      v.set(s.v, at);
      if (s.stale) for (let i = 0; i < length; i++) stale[at + i] = s.stale[i] ? 1 : 0;
      const packed = { labels: s.labels, at, length, stale: s.stale !== undefined };
      at += length;
      return packed;
    }),
  );
  return { series, t, v, stale };
}

/** The thread's side: views of the packed arrays, no copy. */
export function unpackSelections(p: PackedSelections): RawSeries[][] {
  return p.series.map((list) =>
    list.map((s) => ({
      labels: s.labels,
      t: p.t.subarray(s.at, s.at + s.length),
      v: p.v.subarray(s.at, s.at + s.length),
      ...(s.stale ? { stale: p.stale.subarray(s.at, s.at + s.length) } : {}),
    })),
  );
}

export type EvalRequest = {
  id: number;
  query: string;
  /** The series of each selector, in the parser's order of the query's selectors. */
  selections: PackedSelections;
  opts: Omit<EvalOptions, 'annotations' | 'deadline'>;
  /** The deadline as performance.timeOrigin + performance.now() (each thread's now starts at its own start). */
  deadlineAt: number | undefined;
} & ({ kind: 'instant'; startMs: number } | { kind: 'range'; startMs: number; endMs: number; stepMs: number });

export type EvalReply = { id: number; result: InstantResult | RangeResult; annotations: PromAnnotationSnapshot; error?: undefined } | { id: number; error: { kind: string; message: string; code?: string } };

const WORKER = new URL('./eval-worker.ts', import.meta.url);
let threads: Array<RequestThread<EvalRequest, EvalReply>> = [];

/**
 * How many evaluation threads heavy queries share (router.promql_threads): a request goes to the
 * least busy, so one tenant's heavy query does not queue every other one behind it. Threads start
 * on first use. Set at the router's start; in one process every router shares them.
 */
export function setPromEvalThreads(count: number): void {
  for (const t of threads.slice(count)) t.close();
  threads = Array.from({ length: count }, (_, i) => threads[i] ?? new RequestThread<EvalRequest, EvalReply>(WORKER, 'the PromQL evaluation thread'));
}
setPromEvalThreads(2);

function leastBusy(): RequestThread<EvalRequest, EvalReply> {
  return threads.reduce((a, b) => (b.pending < a.pending ? b : a));
}

/** Reads the series of the given selector windows (the querier, perhaps with fresh samples laid over). */
export type SeriesReader = (windows: SelectorWindow[]) => Promise<SeriesSource>;

/**
 * The instant query `query` (parsed as `expr`) at `timeMs`: refused before any read when its
 * subquery steps alone pass the sample budget, then evaluated inline when small, else on the
 * evaluation thread.
 */
export async function evaluateInstant(query: string, expr: PromExpr, timeMs: number, readSeries: SeriesReader, opts: EvalOptions): Promise<InstantResult> {
  checkPromSubquerySteps(expr, 1, opts);
  const read = readAll(expr, await readSeries(selectorWindows(expr, opts)));
  if (work(expr, read.series, 1, opts) < INLINE_WORK) return evalInstant(expr, timeMs, read.source, opts);
  return (await onThread({ kind: 'instant', startMs: timeMs }, query, read.series, opts)) as InstantResult;
}

/** The range query `query` (parsed as `expr`): refused before any read as an instant one, then inline when small, else on the evaluation thread. */
export async function evaluateRange(query: string, expr: PromExpr, startMs: number, endMs: number, stepMs: number, readSeries: SeriesReader, opts: EvalOptions): Promise<RangeResult> {
  checkRangeSteps(startMs, endMs, stepMs);
  const steps = promRangeStepCount(startMs, endMs, stepMs);
  checkPromSubquerySteps(expr, steps, opts);
  const read = readAll(expr, await readSeries(selectorWindows(expr, opts)));
  if (work(expr, read.series, steps, opts) < INLINE_WORK) return evalRange(expr, startMs, endMs, stepMs, read.source, opts);
  return (await onThread({ kind: 'range', startMs, endMs, stepMs }, query, read.series, opts)) as RangeResult;
}

function beforeDeadline<T>(p: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(promEvalTimedOut()), Math.max(0, deadline - performance.now()));
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Each selector's series, read once (the source may lay fresh samples over stored ones), and a source answering from them. */
function readAll(expr: PromExpr, source: SeriesSource): { series: Array<readonly RawSeries[]>; source: SeriesSource } {
  const selectors = promSelectors(expr);
  const series = selectors.map((s) => source(s));
  const read = new Map<PromVectorSelector, readonly RawSeries[]>(selectors.map((s, i) => [s, series[i]!]));
  return { series, source: (s) => read.get(s) ?? source(s) };
}

/** About how many values the evaluation visits: the points read, each series at each step, each subquery step. */
function work(expr: PromExpr, series: ReadonlyArray<readonly RawSeries[]>, steps: number, opts: EvalOptions): number {
  let points = 0;
  let count = 0;
  for (const list of series) {
    count += list.length;
    for (const s of list) points += s.t.length;
  }
  return points + steps * count + promSubquerySteps(expr, steps, opts.defaultSubqueryStepMs) * Math.max(1, count);
}

async function onThread(what: { kind: 'instant'; startMs: number } | { kind: 'range'; startMs: number; endMs: number; stepMs: number }, query: string, series: Array<readonly RawSeries[]>, opts: EvalOptions): Promise<InstantResult | RangeResult> {
  const { annotations, deadline, ...plain } = opts;
  const selections = packSelections(series);
  const deadlineAt = deadline === undefined ? undefined : performance.timeOrigin + deadline;
  const sent = leastBusy().request({ ...what, query, selections, opts: plain, deadlineAt }, [selections.t.buffer, selections.v.buffer, selections.stale.buffer]);
  // Answered at the deadline also while the request waits behind another on its thread (which
  // drops it unevaluated when it gets to it, and stops an evaluation at the same deadline).
  const reply = deadline === undefined ? await sent : await beforeDeadline(sent, deadline);
  if (reply.error) {
    // A fault of the evaluator stays a plain error: answered as a 500 whose detail is only logged.
    if (reply.error.kind === 'internal' || !isErrorKind(reply.error.kind)) throw new Error(`PromQL evaluation thread: ${reply.error.message}`);
    throw new FloeError(reply.error.kind, reply.error.message, reply.error.code === undefined ? {} : { code: reply.error.code });
  }
  annotations?.absorb(reply.annotations);
  return reply.result;
}
