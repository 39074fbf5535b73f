import type { AddressInfo } from 'node:net';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { RouterCredentials } from './router-client.ts';
import { answerInvalidParams, repeatedRequestId } from './request-params.ts';
import { createAgentToolsServer } from './server.ts';
import { headerValue } from '@floe/runtime';

export interface AgentToolsPluginOptions {
  /** The router's own base URL; a function when it is known only once the server listens (port 0). */
  routerUrl: string | (() => string);
  maxPayloadBytes?: number;
  /** The credentials the tools forward (default: the request's Authorization, X-Tenant-ID and X-Dataset-ID as they came). */
  credentials?: (req: FastifyRequest) => RouterCredentials;
}

/** The incoming request's credentials, forwarded as they came: the query APIs authenticate them again. */
const credentialsOf = (req: FastifyRequest): RouterCredentials => ({ authorization: headerValue(req.headers, 'authorization'), tenant: headerValue(req.headers, 'x-tenant-id'), dataset: headerValue(req.headers, 'x-dataset-id') });

/**
 * MCP's Streamable HTTP transport at POST /mcp, stateless: every request gets its own server and
 * transport bound to the caller's credentials, so nothing of one caller outlives its request or
 * reaches another. Answers are plain JSON (no SSE stream), since no tool streams progress.
 * GET (a server-to-client stream) and DELETE (ending a session) have no meaning without
 * sessions: 405, which MCP clients expect from a stateless server; PUT and PATCH mean nothing to
 * MCP: 405 as well, rather than a 404 that would say there is no /mcp. The body is the shared
 * error envelope (errors has no kind of its own for 405: bad_data, the caller's mistake).
 *
 * Authentication is the enclosing scope's (the router registers its auth plugin around this one,
 * so a wrong key is a 401 before any MCP message is read).
 */
export const agentToolsPlugin: FastifyPluginAsync<AgentToolsPluginOptions> = async (app, opts) => {
  app.post('/mcp', async (req, reply) => {
    const repeated = repeatedRequestId(req.body);
    if (repeated !== undefined) {
      // As the SDK's transport refuses a batch it will not run (too long, two initialize requests).
      return reply.code(400).type('application/json').send({ jsonrpc: '2.0', id: null, error: { code: ErrorCode.InvalidRequest, message: `Invalid Request: the batch has more than one request with id ${JSON.stringify(repeated)}` } });
    }
    const routerUrl = typeof opts.routerUrl === 'function' ? opts.routerUrl() : opts.routerUrl;
    const server = createAgentToolsServer({ routerUrl, credentials: (opts.credentials ?? credentialsOf)(req), maxPayloadBytes: opts.maxPayloadBytes });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    // The transport writes the response itself.
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      answerInvalidParams(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (err) {
      req.log.error({ err }, 'MCP request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null }));
    }
  });
  const notAllowed = async (_req: FastifyRequest, reply: FastifyReply) =>
    reply.code(405).header('allow', 'POST').type('application/json').send({ status: 'error', errorType: 'bad_data', error: 'the MCP endpoint is stateless: use POST /mcp' });
  app.route({ method: ['GET', 'DELETE', 'PUT', 'PATCH'], url: '/mcp', handler: notAllowed });
};

/**
 * A URL that reaches a server from the same host: its listen address, with a wildcard address
 * (0.0.0.0, ::) replaced by loopback. For the router's own calls to itself.
 */
export function listenUrl(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') throw new Error('agent tools: the router is not listening on a TCP port yet');
  const host = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '[::1]' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}
