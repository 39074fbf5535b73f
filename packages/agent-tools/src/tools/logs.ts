import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Shape } from '@floe/client';
import { z } from 'zod';
import { seg } from '../router-client.ts';
import { DURATION_HELP, durationArg, lokiTime, stepSeconds, windowArgs } from '../time.ts';
import { addTool, get, windowInput, type ToolContext } from '../tool-kit.ts';

/** A Loki label names or values answer, as the tools read it. */
const NAMES: Shape = { data: ['string'] };

/** Log tools over the Loki-compatible API at /logquery/api/v1 (spec 1, "Log query API"). */

type Enveloped<T> = { status: string; data: T };

const LOG = '/logquery/api/v1';
const selectorInput = z.string().optional().describe('Optional LogQL stream selector, such as {service_name="checkout"}, to discover only within matching streams.');

export function registerLogTools(server: McpServer, ctx: ToolContext): void {
  addTool(server, ctx, {
    name: 'logql_query',
    title: 'LogQL range query',
    description:
      'Run a LogQL query over a time window. A log query ({service_name="api"} |= "error" | json) returns streams: each has its labels (`stream`) and `values` as [unix-nanosecond timestamp string, log line] pairs, newest first by default. A metric query (sum by (level) (count_over_time({service_name="api"}[5m]))) returns a matrix of [unix seconds, "value"] points every `step`. Use log_labels / log_label_values (or list_attributes with signal logs) first to find the label names. Label names may contain dots (k8s.pod.name).',
    input: {
      query: z.string().min(1).describe('LogQL query.'),
      ...windowInput(),
      limit: z.number().int().min(1).max(5000).optional().describe('Most log lines returned (log queries); default 100.'),
      direction: z.enum(['backward', 'forward']).optional().describe('backward (default): newest lines first; forward: oldest first.'),
      step: z.string().optional().describe(`Resolution of a metric query: ${DURATION_HELP}. Default: the window over 250 points.`),
    },
    output: { resultType: z.string(), result: z.array(z.unknown()) },
    // Lines are cut evenly across streams first, then whole streams.
    lists: [['result', '*', 'values'], ['result']],
    async run(args, c) {
      const w = windowArgs(args);
      const body = await get<Enveloped<{ resultType: string; result: unknown[] }>>(c, `${LOG}/query_range`, { data: { resultType: 'string', result: ['any'] } }, {
        query: args.query,
        start: lokiTime(w.startMs),
        end: lokiTime(w.endMs),
        limit: String(args.limit ?? 100),
        direction: args.direction,
        step: args.step === undefined ? undefined : stepSeconds(durationArg('step', args.step)),
      });
      return { resultType: body.data.resultType, result: body.data.result };
    },
  });

  addTool(server, ctx, {
    name: 'log_labels',
    title: 'Log label names',
    description: 'List the label names of the log streams in a time window (default: the last hour), such as service_name, level, k8s.pod.name. Use them in LogQL stream selectors and filters.',
    input: { ...windowInput(), query: selectorInput },
    output: { labels: z.array(z.string()) },
    lists: [['labels']],
    async run(args, c) {
      return { labels: await logLabelNames(c, args) };
    },
  });

  addTool(server, ctx, {
    name: 'log_label_values',
    title: 'Log label values',
    description: 'List the values of one log label in a time window (default: the last hour), for example every service_name that logged.',
    input: { label: z.string().min(1).describe('Label name, as log_labels lists it.'), ...windowInput(), query: selectorInput },
    output: { label: z.string(), values: z.array(z.string()) },
    lists: [['values']],
    async run(args, c) {
      const w = windowArgs(args);
      const body = await get<Enveloped<string[]>>(c, `${LOG}/label/${seg(args.label)}/values`, NAMES, { start: lokiTime(w.startMs), end: lokiTime(w.endMs), query: args.query });
      return { label: args.label, values: body.data };
    },
  });
}

/** Label names of the log streams in a window (shared with list_attributes). */
export async function logLabelNames(c: ToolContext, args: { start?: string | undefined; end?: string | undefined; query?: string | undefined }): Promise<string[]> {
  const w = windowArgs(args);
  const body = await get<Enveloped<string[]>>(c, `${LOG}/labels`, NAMES, { start: lokiTime(w.startMs), end: lokiTime(w.endMs), query: args.query });
  return body.data;
}
