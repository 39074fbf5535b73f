import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { addTool, windowInput, type ToolContext } from '../tool-kit.ts';
import { logLabelNames } from './logs.ts';
import { metricLabelNames } from './metrics.ts';
import { profileLabelNames } from './profiles.ts';
import { traceTagScopes } from './traces.ts';

/**
 * One discovery tool across the four signals (spec 1, profile query rule 6: "attribute discovery
 * with signal profiles"), so an agent can ask "what can I filter on?" without knowing which API
 * serves which signal. Names come back spelled as that signal's query language writes them.
 */

const SIGNALS = ['logs', 'metrics', 'traces', 'profiles'] as const;
type Signal = (typeof SIGNALS)[number];

async function attributesOf(c: ToolContext, signal: Signal, args: { start?: string | undefined; end?: string | undefined }): Promise<string[]> {
  switch (signal) {
    case 'logs':
      return logLabelNames(c, args);
    case 'metrics':
      return metricLabelNames(c, args);
    case 'profiles':
      return profileLabelNames(c, args);
    case 'traces': {
      // TraceQL spelling: resource.<key>, span.<key>, intrinsics bare.
      const { scopes } = await traceTagScopes(c, args);
      return scopes.flatMap((s) => (s.name === 'intrinsic' ? s.tags : s.tags.map((t) => `${s.name}.${t}`)));
    }
  }
}

export function registerDiscoveryTools(server: McpServer, ctx: ToolContext): void {
  addTool(server, ctx, {
    name: 'list_attributes',
    title: 'List attributes of a signal',
    description:
      'List the attribute (label) names that can be filtered on for one signal in a time window (default: the last hour): logs → LogQL label names; metrics → PromQL label names; traces → TraceQL names (resource.service.name, span.http.route, intrinsics such as duration); profiles → profile selector label names (service_name…). Start here before writing a query.',
    input: { signal: z.enum(SIGNALS).describe('Which signal: logs, metrics, traces or profiles.'), ...windowInput() },
    output: { signal: z.enum(SIGNALS), attributes: z.array(z.string()) },
    lists: [['attributes']],
    async run(args, c) {
      return { signal: args.signal, attributes: await attributesOf(c, args.signal, args) };
    },
  });
}
