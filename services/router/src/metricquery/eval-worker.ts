// The PromQL evaluation thread (eval-thread.ts): parses the query again, answers each selector
// with the series the router read for it (selectors in the parser's order), and evaluates.
import { parentPort } from 'node:worker_threads';
import { isFloeError } from '@floe/errors';
import { evalInstant, evalRange, parsePromQL, promEvalTimedOut, PromAnnotations, promSelectors, type PromVectorSelector as VectorSelector, type RawSeries } from '@floe/query';
import { unpackSelections, type EvalReply, type EvalRequest } from './eval-thread.ts';

parentPort!.on('message', (req: EvalRequest) => {
  let reply: EvalReply;
  try {
    const expr = parsePromQL(req.query);
    const series = unpackSelections(req.selections);
    const bySelector = new Map<VectorSelector, readonly RawSeries[]>(promSelectors(expr).map((s, i) => [s, series[i] ?? []]));
    const source = (s: VectorSelector) => bySelector.get(s) ?? [];
    const annotations = new PromAnnotations();
    // performance.now() counts from each thread's own start: the deadline travels against timeOrigin.
    const deadline = req.deadlineAt === undefined ? undefined : req.deadlineAt - performance.timeOrigin;
    // A request that waited past its deadline behind another was answered already: not evaluated.
    if (deadline !== undefined && performance.now() > deadline) throw promEvalTimedOut();
    const opts = { ...req.opts, annotations, deadline };
    const result = req.kind === 'instant' ? evalInstant(expr, req.startMs, source, opts) : evalRange(expr, req.startMs, req.endMs, req.stepMs, source, opts);
    reply = { id: req.id, result, annotations: annotations.snapshot() };
  } catch (err) {
    reply = { id: req.id, error: isFloeError(err) ? { kind: err.kind, message: err.message, code: err.code } : { kind: 'internal', message: err instanceof Error ? err.message : String(err) } };
  }
  parentPort!.postMessage(reply);
});
