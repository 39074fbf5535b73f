import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { FLAMEBEARER, topChanges, topFunctions, type FlamebearerDocument } from '../flamegraph-summary.ts';
import { seg } from '../router-client.ts';
import { TIME_HELP, ToolInputError, pyroscopeTime, timeArg, windowArgs, type Window } from '../time.ts';
import { addTool, get, traceIdInput, windowInput, type ToolContext } from '../tool-kit.ts';

/**
 * Profile tools over the Pyroscope-compatible API at /profilequery and /api/profiles (spec 1,
 * "Profile query API", rule 6). Search and comparison answer the costliest or most changed
 * functions rather than the raw flamebearer, which is a drawing layout an agent cannot read.
 */

const PROFILE = '/profilequery';
const HOUR_MS = 3_600_000;

const selectorHelp =
  'Profile selector: a profile type id then label matchers, such as process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="checkout"}. profile_types lists the type ids; list_attributes with signal profiles lists the label names.';
const topInput = z.number().int().min(1).max(500).optional().describe('How many functions to return; default 20.');
const rankInput = z.enum(['self', 'total']).optional().describe('Rank by self (time in the function itself, default) or total (including what it calls).');
const TOP = 20;

const discoveryQuery = z.string().optional().describe('Optional selector narrowing the discovery, such as {service_name="checkout"}.');

const pyroscopeWindow = (w: Window) => ({ from: pyroscopeTime(w.startMs), until: pyroscopeTime(w.endMs) });

export function registerProfileTools(server: McpServer, ctx: ToolContext): void {
  addTool(server, ctx, {
    name: 'profile_types',
    title: 'Profile types',
    description: 'List the profile types stored in a time window (default: the last hour), such as CPU (process_cpu:cpu:nanoseconds:cpu:nanoseconds) or allocated memory. The ID of each is what profile selectors start with.',
    input: { ...windowInput(), query: discoveryQuery },
    output: { profileTypes: z.array(z.object({ ID: z.string() }).loose()) },
    lists: [['profileTypes']],
    async run(args, c) {
      return get<{ profileTypes: unknown[] }>(c, `${PROFILE}/profile-types`, { profileTypes: [{ ID: 'string' }] }, { ...pyroscopeWindow(windowArgs(args)), query: args.query });
    },
  });

  addTool(server, ctx, {
    name: 'profile_search',
    title: 'Profile search (top functions)',
    description:
      'Merge the profiles matching a selector over a time window (default: the last hour) and return the costliest functions: per function its self value (spent in the function itself), total (including callees) and their shares of the whole, in the profile type\'s units. "other" gathers call paths too small for the flamegraph\'s node cap.',
    input: { query: z.string().min(1).describe(selectorHelp), ...windowInput(), top: topInput, sort_by: rankInput },
    output: { units: z.string(), totalValue: z.number(), functionCount: z.number(), functions: z.array(z.object({ name: z.string(), self: z.number(), total: z.number() }).loose()) },
    lists: [['functions']],
    async run(args, c) {
      const doc = await get<FlamebearerDocument>(c, `${PROFILE}/render`, FLAMEBEARER, { query: args.query, ...pyroscopeWindow(windowArgs(args)) });
      return { query: args.query, ...topFunctions(doc, args.sort_by ?? 'self', args.top ?? TOP) };
    },
  });

  addTool(server, ctx, {
    name: 'profile_compare',
    title: 'Profile comparison (top changes)',
    description:
      'Compare the profiles of a selector between two time windows (left: before, right: after) and return the functions whose cost changed most: left and right self and total values, their differences, and the change of each function\'s share of its window in percentage points (fair when the windows differ in length). Default windows: right is the last hour, left the hour before it. right_query compares a different selector of the same profile type (for example another version or host).',
    input: {
      query: z.string().min(1).describe(selectorHelp),
      right_query: z.string().optional().describe('Selector of the right side; default the same query.'),
      left_start: z.string().optional().describe(`Start of the left (baseline) window: ${TIME_HELP}.`),
      left_end: z.string().optional().describe('End of the left window; default right_start.'),
      right_start: z.string().optional().describe('Start of the right (comparison) window; default 1 hour before right_end.'),
      right_end: z.string().optional().describe('End of the right window; default now.'),
      top: topInput,
      sort_by: rankInput,
    },
    output: { units: z.string(), leftTotal: z.number(), rightTotal: z.number(), changedCount: z.number(), changes: z.array(z.object({ name: z.string() }).loose()) },
    lists: [['changes']],
    async run(args, c) {
      const now = Date.now();
      const rightEnd = timeArg('right_end', args.right_end, now, now);
      const right = { startMs: timeArg('right_start', args.right_start, now, rightEnd - HOUR_MS), endMs: rightEnd };
      const leftEnd = timeArg('left_end', args.left_end, now, right.startMs);
      const left = { startMs: timeArg('left_start', args.left_start, now, leftEnd - HOUR_MS), endMs: leftEnd };
      if (left.endMs < left.startMs || right.endMs < right.startMs) throw new ToolInputError('invalid windows: each window\'s end must not be before its start');
      const doc = await get<FlamebearerDocument>(c, `${PROFILE}/render-diff`, FLAMEBEARER, {
        leftQuery: args.query,
        rightQuery: args.right_query ?? args.query,
        leftFrom: pyroscopeTime(left.startMs),
        leftUntil: pyroscopeTime(left.endMs),
        rightFrom: pyroscopeTime(right.startMs),
        rightUntil: pyroscopeTime(right.endMs),
      });
      const window = (w: Window) => ({ start: new Date(w.startMs).toISOString(), end: new Date(w.endMs).toISOString() });
      return { left: window(left), right: window(right), ...topChanges(doc, args.sort_by ?? 'self', args.top ?? TOP) };
    },
  });

  addTool(server, ctx, {
    name: 'profiles_for_trace',
    title: 'Profiles of a trace',
    description:
      'List the profiles linked to a trace (profilers that record span ids): per profile its id, type, service, time, duration, total value and the value of the samples linked to this trace and span. Use it after get_trace or traceql_search to see where a slow trace spent CPU.',
    input: {
      trace_id: traceIdInput,
      start: z.string().optional().describe(`Optional: only profiles after this time (${TIME_HELP}); default any time.`),
      end: z.string().optional().describe('Optional: only profiles before this time; default any time.'),
      limit: z.number().int().min(1).max(10_000).optional().describe('Most profiles returned; default 1000.'),
    },
    output: { traceID: z.string(), profiles: z.array(z.record(z.string(), z.unknown())) },
    lists: [['profiles']],
    async run(args, c) {
      const now = Date.now();
      const time = (name: string, v: string | undefined) => (v === undefined ? undefined : pyroscopeTime(timeArg(name, v, now, now)));
      return get<{ traceID: string; profiles: unknown[] }>(c, `/api/profiles/trace/${seg(args.trace_id)}`, { traceID: 'string', profiles: [{}] }, {
        from: time('start', args.start),
        until: time('end', args.end),
        limit: args.limit === undefined ? undefined : String(args.limit),
      });
    },
  });
}

/** Label names of the profiles in a window (shared with list_attributes). */
export async function profileLabelNames(c: ToolContext, args: { start?: string | undefined; end?: string | undefined }): Promise<string[]> {
  return get<string[]>(c, `${PROFILE}/label-names`, ['string'], pyroscopeWindow(windowArgs(args)));
}
