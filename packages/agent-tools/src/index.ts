/**
 * Floe's agent tools: an MCP server whose tools answer an agent's questions about a tenant's
 * telemetry by calling the router's public query APIs (LogQL, PromQL, TraceQL, profiles) with the
 * caller's own credentials (STYLE habit 14; spec 1 "agent tools that reach the same queries").
 * Auth, per-tenant limits, validation and the error envelope are therefore the APIs' own: a
 * router refusal reaches the agent as a tool error carrying the router's message. Beside the
 * queries, source_context and the scm_* tools reach the source-control routes the same way.
 *
 * Each tool shapes the API's answer for reading (flat span lists, top functions instead of a
 * flamegraph layout) and caps it: an answer over the payload cap is trimmed to fit and says
 * `truncated: true` (payload-cap.ts). Served three ways: `createAgentToolsServer` (any MCP
 * transport), `agentToolsPlugin` (Streamable HTTP at POST /mcp, mounted by the router) and
 * `runStdio` (for `floe mcp`).
 */
export { createAgentToolsServer } from './server.ts';
export type { AgentToolsOptions } from './server.ts';
export { agentToolsPlugin, listenUrl } from './fastify-plugin.ts';
export type { AgentToolsPluginOptions } from './fastify-plugin.ts';
export { runStdio } from './stdio.ts';
export type { StdioOptions } from './stdio.ts';
export { DEFAULT_MAX_PAYLOAD_BYTES, fitPayload } from './payload-cap.ts';
export type { Capped, ListPath } from './payload-cap.ts';
export type { RouterCredentials } from './router-client.ts';
