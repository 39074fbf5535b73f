import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { optional, type Shape } from '@floe/client';
import { z } from 'zod';
import type { ListPath } from '../payload-cap.ts';
import { seg } from '../router-client.ts';
import { DURATION_HELP, TIME_HELP, durationArg, promTime, stepSeconds, timeArg, windowArgs } from '../time.ts';
import { addTool, get, windowInput, type ToolContext } from '../tool-kit.ts';

/** Metric tools over the Prometheus-compatible API at /metricquery/api/v1 (spec 1, "Metric query API"). */

type PromBody<T> = { status: string; data: T; warnings?: string[]; infos?: string[] };
type PromResult = { resultType: string; result: unknown };
// What the tools read of the answers (checked before they read it).
const PROM_RESULT: Shape = { data: { resultType: 'string', result: 'any' }, warnings: optional(['string']), infos: optional(['string']) };
const PROM_NAMES: Shape = { data: ['string'] };

const PROM = '/metricquery/api/v1';
/** Prometheus's own guard against huge ranges is 11,000 points; 250 is what Grafana asks by default. */
const DEFAULT_POINTS = 250;

const matchInput = z.array(z.string().min(1)).optional().describe('Series selectors, such as up{job="api"} or {__name__=~"http_.*"}; a series matching any of them counts. Default: every series.');

/** A scalar's or string's result is a [time, value] pair, never trimmed; vectors and matrices are lists. */
const promLists = (answer: Record<string, unknown>): readonly ListPath[] =>
  answer.resultType === 'vector' || answer.resultType === 'matrix' ? [['result', '*', 'values'], ['result']] : [];

const promAnswer = (body: PromBody<PromResult>) => ({
  resultType: body.data.resultType,
  result: body.data.result,
  ...(body.warnings ? { warnings: body.warnings } : {}),
  ...(body.infos ? { infos: body.infos } : {}),
});

export function registerMetricTools(server: McpServer, ctx: ToolContext): void {
  addTool(server, ctx, {
    name: 'promql_query',
    title: 'PromQL instant query',
    description:
      'Evaluate a PromQL expression at one instant (default: now). Returns Prometheus\'s result: a vector of {metric: labels, value: [unix seconds, "value"]}, a scalar [unix seconds, "value"], or a matrix for a range selector. Use metric_label_values with label __name__ to find metric names, metric_labels for label names.',
    input: {
      query: z.string().min(1).describe('PromQL expression, such as sum by (service_name) (rate(http_server_duration_count[5m])).'),
      time: z.string().optional().describe(`Evaluation time: ${TIME_HELP}. Default: now.`),
    },
    output: { resultType: z.string(), result: z.unknown() },
    lists: promLists,
    async run(args, c) {
      const now = Date.now();
      const body = await get<PromBody<PromResult>>(c, `${PROM}/query`, PROM_RESULT, { query: args.query, time: promTime(timeArg('time', args.time, now, now)) });
      return promAnswer(body);
    },
  });

  addTool(server, ctx, {
    name: 'promql_query_range',
    title: 'PromQL range query',
    description: 'Evaluate a PromQL expression at every step of a time window (default: the last hour). Returns a matrix: per series {metric: labels, values: [[unix seconds, "value"], …]}.',
    input: {
      query: z.string().min(1).describe('PromQL expression.'),
      ...windowInput(),
      step: z.string().optional().describe(`Resolution: ${DURATION_HELP}. Default: the window over ${DEFAULT_POINTS} points (at least 1s).`),
    },
    output: { resultType: z.string(), result: z.unknown() },
    lists: promLists,
    async run(args, c) {
      const w = windowArgs(args);
      const stepMs = args.step === undefined ? Math.max(1000, Math.ceil((w.endMs - w.startMs) / DEFAULT_POINTS / 1000) * 1000) : durationArg('step', args.step);
      const body = await get<PromBody<PromResult>>(c, `${PROM}/query_range`, PROM_RESULT, { query: args.query, start: promTime(w.startMs), end: promTime(w.endMs), step: stepSeconds(stepMs) });
      return promAnswer(body);
    },
  });

  addTool(server, ctx, {
    name: 'metric_labels',
    title: 'Metric label names',
    description: 'List the label names of the metric series in a time window (default: the last hour), optionally only of series matching selectors. __name__ is the metric name.',
    input: { match: matchInput, ...windowInput() },
    output: { labels: z.array(z.string()) },
    lists: [['labels']],
    async run(args, c) {
      return { labels: await metricLabelNames(c, args) };
    },
  });

  addTool(server, ctx, {
    name: 'metric_label_values',
    title: 'Metric label values',
    description: 'List the values of one metric label in a time window (default: the last hour). With label __name__ this lists the metric names.',
    input: { label: z.string().min(1).describe('Label name; __name__ for metric names.'), match: matchInput, ...windowInput() },
    output: { label: z.string(), values: z.array(z.string()) },
    lists: [['values']],
    async run(args, c) {
      const w = windowArgs(args);
      const body = await get<PromBody<string[]>>(c, `${PROM}/label/${seg(args.label)}/values`, PROM_NAMES, { 'match[]': args.match, start: promTime(w.startMs), end: promTime(w.endMs) });
      return { label: args.label, values: body.data };
    },
  });

  addTool(server, ctx, {
    name: 'metric_series',
    title: 'Metric series',
    description: 'List the label sets of the metric series matching one or more selectors in a time window (default: the last hour).',
    input: {
      match: z.array(z.string().min(1)).min(1).describe('Series selectors, such as http_server_duration_count{service_name="api"}; at least one.'),
      ...windowInput(),
      limit: z.number().int().min(1).optional().describe('Most series returned.'),
    },
    output: { series: z.array(z.record(z.string(), z.string())) },
    lists: [['series']],
    async run(args, c) {
      const w = windowArgs(args);
      const body = await get<PromBody<Array<Record<string, string>>>>(c, `${PROM}/series`, { data: [{}] }, { 'match[]': args.match, start: promTime(w.startMs), end: promTime(w.endMs), limit: args.limit === undefined ? undefined : String(args.limit) });
      return { series: body.data };
    },
  });
}

/** Label names of the metric series in a window (shared with list_attributes). */
export async function metricLabelNames(c: ToolContext, args: { match?: string[] | undefined; start?: string | undefined; end?: string | undefined }): Promise<string[]> {
  const w = windowArgs(args);
  const body = await get<PromBody<string[]>>(c, `${PROM}/labels`, PROM_NAMES, { 'match[]': args.match, start: promTime(w.startMs), end: promTime(w.endMs) });
  return body.data;
}
