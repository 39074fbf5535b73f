import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { answerInvalidParams } from './request-params.ts';
import { createAgentToolsServer } from './server.ts';

export interface StdioOptions {
  /** Router URL; default env FLOE_URL, then http://127.0.0.1:3000 (the CLI's defaults). */
  url?: string;
  /** API key; default env FLOE_API_KEY. */
  apiKey?: string;
  /** Tenant; default env FLOE_TENANT. */
  tenant?: string;
  /** Dataset; default env FLOE_DATASET (the tenant's default dataset when unset). */
  dataset?: string;
  maxPayloadBytes?: number;
  /** Longest one router call may take (default: the client's DEFAULT_TIMEOUT_MS). */
  timeoutMs?: number;
}

/**
 * The agent tools over stdio, for MCP clients that start a local process (`floe mcp`). The
 * caller's credentials come from options or the CLI's environment variables, and every tool call
 * goes to the router over HTTP like any other client. Resolves once connected; the process then
 * lives as long as its stdin.
 */
export async function runStdio(opts: StdioOptions = {}): Promise<McpServer> {
  const apiKey = opts.apiKey ?? process.env.FLOE_API_KEY;
  const server = createAgentToolsServer({
    routerUrl: opts.url ?? process.env.FLOE_URL ?? 'http://127.0.0.1:3000',
    credentials: { authorization: apiKey ? `Bearer ${apiKey}` : undefined, tenant: opts.tenant ?? process.env.FLOE_TENANT, dataset: opts.dataset ?? process.env.FLOE_DATASET },
    maxPayloadBytes: opts.maxPayloadBytes,
    timeoutMs: opts.timeoutMs,
  });
  const transport = new StdioServerTransport();
  await server.connect(transport);
  answerInvalidParams(transport);
  return server;
}
