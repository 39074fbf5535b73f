import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { DEFAULT_MAX_PAYLOAD_BYTES } from './payload-cap.ts';
import type { RouterCredentials } from './router-client.ts';
import type { ToolContext } from './tool-kit.ts';
import { registerDiscoveryTools } from './tools/discovery.ts';
import { registerLogTools } from './tools/logs.ts';
import { registerMetricTools } from './tools/metrics.ts';
import { registerProfileTools } from './tools/profiles.ts';
import { registerScmInstallationTools } from './tools/scm-installations.ts';
import { registerSourceContextTool } from './tools/source-context.ts';
import { registerTraceTools } from './tools/traces.ts';

export interface AgentToolsOptions {
  /** Base URL of the router whose query APIs the tools call. */
  routerUrl: string;
  /** The caller's credentials, forwarded to every call: the tools see exactly what the caller may see. */
  credentials: RouterCredentials;
  /** The payload cap of every tool's answer, bytes of JSON (default DEFAULT_MAX_PAYLOAD_BYTES). */
  maxPayloadBytes?: number;
  /** Longest one router call may take (default: the client's DEFAULT_TIMEOUT_MS). */
  timeoutMs?: number;
}

const INSTRUCTIONS =
  'Floe stores OpenTelemetry logs, metrics, traces and profiles of one tenant. Discover before querying: list_attributes (per signal), log_label_values, metric_label_values, trace_tag_values, profile_types. Query with logql_query, promql_query / promql_query_range, traceql_search then get_trace, profile_search / profile_compare, profiles_for_trace. Times accept RFC 3339, unix seconds or now-1h; windows default to the last hour. An answer with truncated: true was cut to fit the payload cap: narrow the query. source_context reads the code around a stack frame from the linked GitHub repositories; scm_list, scm_link, scm_remove and scm_attach manage those links.';

/** One MCP server whose tools query the router as the given caller (one per caller: credentials are fixed). */
export function createAgentToolsServer(opts: AgentToolsOptions): McpServer {
  const server = new McpServer({ name: 'floe', version: '0.1.0' }, { instructions: INSTRUCTIONS });
  withoutInheritedTools(server);
  const ctx: ToolContext = { router: { url: opts.routerUrl, credentials: opts.credentials, timeoutMs: opts.timeoutMs }, maxPayloadBytes: opts.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES };
  registerDiscoveryTools(server, ctx);
  registerLogTools(server, ctx);
  registerMetricTools(server, ctx);
  registerTraceTools(server, ctx);
  registerProfileTools(server, ctx);
  registerSourceContextTool(server, ctx);
  registerScmInstallationTools(server, ctx);
  return server;
}

/**
 * The SDK finds a called tool by indexing a plain object with the name the client sent, so
 * `__proto__`, `constructor` or `toString` found Object.prototype's members and were answered as
 * a disabled tool rather than an unknown one. A registry without a prototype holds only the tools
 * registered in it. The registry is the SDK's private field: if a release renames it, this throws
 * when the first server is created (every test does), rather than quietly dropping the guard.
 */
function withoutInheritedTools(server: McpServer): void {
  const registry: unknown = (server as unknown as { _registeredTools?: unknown })._registeredTools;
  if (typeof registry !== 'object' || registry === null || Object.keys(registry).length > 0) throw new Error('agent tools: the MCP SDK keeps its tools elsewhere than _registeredTools; update withoutInheritedTools');
  Object.setPrototypeOf(registry, null);
}
