import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { seg } from '../router-client.ts';
import { TIME_HELP, tempoWindow, timeArg, windowArgs } from '../time.ts';
import { addTool, get, traceIdInput, windowInput, type ToolContext } from '../tool-kit.ts';
import { TRACE_BATCHES, flattenTrace, type ResourceSpansJson } from '../trace-spans.ts';

/** Trace tools over the Tempo-compatible API at /tracequery (spec 1, "Trace query API"). */

const TRACE = '/tracequery/api';

type TagScopes = { scopes: Array<{ name: string; tags: string[] }> };

export function registerTraceTools(server: McpServer, ctx: ToolContext): void {
  addTool(server, ctx, {
    name: 'traceql_search',
    title: 'TraceQL search',
    description:
      'Find traces with a TraceQL query in a time window (default: the last hour), such as { resource.service.name = "checkout" && status = error } or { span.http.status_code >= 500 && duration > 1s }. Returns per trace its traceID, root service and span name, start, durationMs and the matching spans (spanSets). Use trace_tags / list_attributes with signal traces to find attribute names, and get_trace for every span of one trace.',
    input: {
      q: z.string().optional().describe('TraceQL query; default {} (every trace).'),
      ...windowInput(),
      limit: z.number().int().min(1).max(1000).optional().describe('Most traces returned; default 20.'),
      spss: z.number().int().min(1).max(100_000).optional().describe('Most matching spans shown per trace; default all.'),
      min_duration: z.string().optional().describe('Only traces at least this long, such as 100ms, 2s, 1m.'),
      max_duration: z.string().optional().describe('Only traces at most this long.'),
    },
    output: { traces: z.array(z.unknown()) },
    lists: [['traces'], ['traces', '*', 'spanSets', '*', 'spans']],
    async run(args, c) {
      const w = tempoWindow(windowArgs(args));
      const body = await get<{ traces: Array<Record<string, unknown>> }>(c, `${TRACE}/search`, { traces: [{}] }, {
        q: args.q ?? '{}',
        start: w.start,
        end: w.end,
        limit: args.limit === undefined ? undefined : String(args.limit),
        spss: args.spss === undefined ? undefined : String(args.spss),
        minDuration: args.min_duration,
        maxDuration: args.max_duration,
      });
      // spanSet is the deprecated copy of spanSets[0]: sending it twice only spends the agent's context.
      return { traces: body.traces.map(({ spanSet: _copy, ...t }) => t) };
    },
  });

  addTool(server, ctx, {
    name: 'get_trace',
    title: 'Get a trace',
    description:
      'Fetch every span of one trace by id: spanID, parentSpanID, name, serviceName, kind, status (ok / error / unset), startTimeUnixNano, durationNanos, attributes, events (exceptions included) and resourceIndex into `resources`. Spans are in start-time order. start/end are optional and only narrow the search.',
    input: {
      trace_id: traceIdInput,
      start: z.string().optional().describe(`Optional: the trace started after this time (${TIME_HELP}); only narrows the search.`),
      end: z.string().optional().describe(`Optional: the trace ended before this time; only narrows the search.`),
    },
    output: { traceID: z.string(), spanCount: z.number(), resources: z.array(z.record(z.string(), z.unknown())), spans: z.array(z.unknown()) },
    lists: [['spans']],
    async run(args, c) {
      const now = Date.now();
      // Whole seconds, widened outwards so the bounds never cut the trace.
      const start = args.start === undefined ? undefined : String(Math.floor(timeArg('start', args.start, now, now) / 1000));
      const end = args.end === undefined ? undefined : String(Math.ceil(timeArg('end', args.end, now, now) / 1000));
      const body = await get<{ batches?: ResourceSpansJson[] }>(c, `${TRACE}/traces/${seg(args.trace_id)}`, TRACE_BATCHES, { start, end });
      const { resources, spans } = flattenTrace(body.batches ?? []);
      return { traceID: args.trace_id.toLowerCase().padStart(32, '0'), spanCount: spans.length, resources, spans };
    },
  });

  addTool(server, ctx, {
    name: 'trace_tags',
    title: 'Trace attribute names',
    description:
      'List the span and resource attribute names seen in a time window (default: the last hour), grouped by scope (resource, span, intrinsic). In TraceQL write them as resource.<name>, span.<name> or bare intrinsics (name, status, duration, kind).',
    input: { scope: z.enum(['resource', 'span', 'intrinsic']).optional().describe('Only this scope; default all.'), ...windowInput() },
    output: { scopes: z.array(z.object({ name: z.string(), tags: z.array(z.string()) })) },
    lists: [['scopes', '*', 'tags']],
    async run(args, c) {
      return traceTagScopes(c, args);
    },
  });

  addTool(server, ctx, {
    name: 'trace_tag_values',
    title: 'Trace attribute values',
    description: 'List the values of one trace attribute in a time window (default: the last hour), each with its type. Name the attribute in TraceQL spelling: resource.service.name, span.http.route, or an intrinsic such as name or status.',
    input: {
      tag: z.string().min(1).describe('Attribute, such as resource.service.name or span.http.method.'),
      q: z.string().optional().describe('Optional TraceQL query narrowing the spans whose values are listed, such as { resource.service.name = "api" }.'),
      ...windowInput(),
    },
    output: { tag: z.string(), tagValues: z.array(z.object({ type: z.string(), value: z.string() })) },
    lists: [['tagValues']],
    async run(args, c) {
      const w = tempoWindow(windowArgs(args));
      const body = await get<{ tagValues: Array<{ type: string; value: string }> }>(c, `${TRACE}/v2/search/tag/${seg(args.tag)}/values`, { tagValues: [{ type: 'string', value: 'string' }] }, { q: args.q, start: w.start, end: w.end });
      return { tag: args.tag, tagValues: body.tagValues };
    },
  });
}

/** Attribute names per scope (shared with list_attributes). */
export async function traceTagScopes(c: ToolContext, args: { scope?: string | undefined; start?: string | undefined; end?: string | undefined }): Promise<TagScopes> {
  const w = tempoWindow(windowArgs(args));
  const body = await get<TagScopes>(c, `${TRACE}/v2/search/tags`, { scopes: [{ name: 'string', tags: ['string'] }] }, { scope: args.scope, start: w.start, end: w.end });
  return { scopes: body.scopes };
}
