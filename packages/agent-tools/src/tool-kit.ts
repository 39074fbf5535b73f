import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { fitPayload, type ListPath } from './payload-cap.ts';
import type { Shape } from '@floe/client';
import { ApiError, routerGet, type QueryParams, type RouterConnection } from './router-client.ts';
import { TIME_HELP, ToolInputError } from './time.ts';

/**
 * What every tool shares: how it calls the router, the payload cap on its answer, its output as
 * JSON text plus structuredContent, and router refusals as tool errors (`isError: true` with the
 * router's message) that the agent can read and act on, never as transport errors.
 */

export interface ToolContext {
  router: RouterConnection;
  maxPayloadBytes: number;
}

/** GET a router route with the caller's credentials; `expect` is what the tool reads of the answer (routerGet). */
export const get = <T>(ctx: ToolContext, path: string, expect: Shape, query?: QueryParams) => routerGet<T>(ctx.router, path, expect, query);

export interface ToolSpec<S extends z.ZodRawShape> {
  name: string;
  title: string;
  /** What the tool answers and when to use it, written for the agent choosing among tools. */
  description: string;
  input: S;
  /** Fields of the answer besides `truncated`, for the advertised output schema (more may appear). */
  output: z.ZodRawShape;
  /** Lists the payload cap may trim, in the order it trims them (payload-cap.ts); per answer when its shape varies. */
  lists: readonly ListPath[] | ((answer: Record<string, unknown>) => readonly ListPath[]);
  run: (args: z.infer<z.ZodObject<S>>, ctx: ToolContext) => Promise<Record<string, unknown>>;
  /**
   * Absent: the tool only reads. Present: it changes the tenant's state, and the MCP annotations
   * say so, since clients use them to decide which calls need the user's consent first.
   * destructive: it removes something; idempotent: repeating the call changes nothing more.
   */
  writes?: { destructive: boolean; idempotent: boolean };
}

const TRUNCATED = z.boolean().describe('true when the answer exceeded the payload cap and lists were cut short: narrow the query (shorter window, stricter selector, lower limit) to see everything');

export function addTool<S extends z.ZodRawShape>(server: McpServer, ctx: ToolContext, spec: ToolSpec<S>): void {
  const handler = async (args: z.infer<z.ZodObject<S>>, extra: { signal: AbortSignal }): Promise<CallToolResult> => {
    try {
      const answer = await spec.run(args, { ...ctx, router: { ...ctx.router, signal: extra.signal } });
      const doc = fitPayload(answer, typeof spec.lists === 'function' ? spec.lists(answer) : spec.lists, ctx.maxPayloadBytes);
      return { content: [{ type: 'text', text: JSON.stringify(doc) }], structuredContent: doc };
    } catch (err) {
      return toolError(err);
    }
  };
  server.registerTool(
    spec.name,
    {
      title: spec.title,
      description: spec.description,
      inputSchema: spec.input,
      // Loose: the router's answers may carry fields beyond those named here.
      outputSchema: z.looseObject({ ...spec.output, truncated: TRUNCATED }),
      annotations: spec.writes
        ? { title: spec.title, readOnlyHint: false, destructiveHint: spec.writes.destructive, idempotentHint: spec.writes.idempotent, openWorldHint: false }
        : { title: spec.title, readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    handler as never,
  );
}

/** A failed call as the agent sees it: the router's errorType and message, or our own refusal of an argument. */
export function toolError(err: unknown): CallToolResult {
  let text: string;
  if (err instanceof ApiError) text = err.status > 0 ? `${err.errorType} (HTTP ${err.status}): ${err.message}` : `${err.errorType}: ${err.message}`;
  else if (err instanceof ToolInputError) text = `bad_data: ${err.message}`;
  else text = `internal: ${err instanceof Error ? err.message : String(err)}`;
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * The tenant the connection acts for, for routes that name it in the path. Over /mcp the router
 * has resolved it (X-Tenant-ID or the key's own tenant); over stdio it is FLOE_TENANT.
 */
export function tenantOf(c: ToolContext): string {
  const tenant = c.router.credentials.tenant;
  if (!tenant) throw new ToolInputError('the connection names no tenant (send X-Tenant-ID)');
  return tenant;
}

/** The optional start/end pair of most tools. */
export const windowInput = (lookback = '1 hour') => ({
  start: z.string().optional().describe(`Start of the time window: ${TIME_HELP}. Default: ${lookback} before end.`),
  end: z.string().optional().describe(`End of the time window: ${TIME_HELP}. Default: now.`),
});

export const traceIdInput = z.string().regex(/^[0-9a-fA-F]{1,32}$/, 'a trace id is up to 32 hex digits').describe('Trace id: 32 hex digits (shorter ids are left-padded with zeros).');
