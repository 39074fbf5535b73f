import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { expectShape, sourceContextShape } from '@floe/client';
import { routerPost, seg } from '../router-client.ts';
import { addTool, tenantOf, type ToolContext } from '../tool-kit.ts';

/**
 * The source lines around a stack frame, from the tenant's linked source-control repositories
 * (spec 2, source-context rules). The router answers 200 either way; an unavailable frame comes
 * back as `status: unavailable` with a reason the agent can act on (no_installation: nothing is
 * linked; not_found: wrong path or repository), not as a tool error.
 */
export function registerSourceContextTool(server: McpServer, ctx: ToolContext): void {
  addTool(server, ctx, {
    name: 'source_context',
    title: 'Source code around a stack frame',
    description:
      'Read the source lines around a stack frame (file path and line from a span event, log or profile) from the GitHub repositories linked to the tenant. Without repository the first 25 linked repositories are tried and the one that had the file is named; without ref the default branch is read. Answers status available with numbered lines and a link, or status unavailable with a reason (not_configured, no_installation, not_found, not_a_file, too_large, undecodable, line_out_of_range, scm_error).',
    input: {
      path: z.string().min(1).max(4096).describe('File path inside the repository, such as src/server/handler.ts.'),
      line: z.number().int().optional().describe('1-based line of the frame; the window is centred on it.'),
      repository: z.string().min(1).max(512).optional().describe('owner/name or a repository URL; default: probe the linked repositories.'),
      ref: z.string().min(1).max(255).optional().describe('Branch, tag or commit; default: the default branch.'),
      context_lines: z.number().int().min(0).max(100).optional().describe('Lines shown on each side of line (default 5).'),
    },
    output: {
      status: z.enum(['available', 'unavailable']),
      reason: z.string().optional(),
      repository: z.string().optional(),
      ref: z.string().nullable().optional(),
      url: z.string().optional(),
      lines: z.array(z.object({ number: z.number(), text: z.string() })).optional(),
    },
    lists: [['lines']],
    run: async (args, c) => {
      const body = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined));
      const route = `api/v1/tenants/${seg(tenantOf(c))}/source-context`;
      const answer = await routerPost<{ status: string }>(c.router, route, { status: 'string' }, body);
      // What else it holds depends on its status.
      return expectShape<Record<string, unknown>>(answer, sourceContextShape(answer.status), route);
    },
  });
}
