import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FLOE_BIN, NODE_BIN, runFloeCli } from '../src/index.ts';

/**
 * The `floe` CLI and the agent tools over stdio (`floe mcp`) against a router that is not what it
 * should be: one that never answers, stalls mid-answer, hangs up, answers HTML, an empty 200, a
 * bare null, an error envelope of the wrong types, or hundreds of megabytes. Each command must end
 * with exit 1 and one line saying what the router did (never a stack trace, never a hang), and an
 * agent's cancelled or overdue tool call must let go of its router request.
 *
 * The "router" is a plain HTTP server in this process whose first path segment picks the
 * behaviour (the client keeps a base URL's path prefix).
 */

interface Hostile {
  url: string;
  /** Resolves when a request under `/<mode>/` arrives; its promise `closed` when its connection goes. */
  arrived(mode: string): Promise<{ closed: Promise<void> }>;
  close(): Promise<void>;
}

async function startHostileRouter(): Promise<Hostile> {
  const waiting = new Map<string, (r: { closed: Promise<void> }) => void>();
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const mode = req.url!.split('/')[1]!;
    req.resume();
    open.add(res);
    const closed = new Promise<void>((resolve) => res.on('close', () => (open.delete(res), resolve())));
    waiting.get(mode)?.({ closed });
    waiting.delete(mode);
    const json = { 'content-type': 'application/json' };
    switch (mode) {
      case 'hang':
        return;
      case 'stall':
        res.writeHead(200, json).write('{"tenants":[');
        return;
      case 'hangup':
        res.writeHead(200, json).write('{"tenants":[');
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      case 'html':
        res.writeHead(502, { 'content-type': 'text/html; charset=utf-8' }).end('<html><body><h1>502 Bad Gateway</h1></body></html>');
        return;
      case 'empty':
        res.writeHead(200, json).end();
        return;
      case 'null':
        res.writeHead(200, json).end('null');
        return;
      case 'wrong-shape':
        // A 200 of JSON that is not what the route answers: a proxy's, or another version's.
        res.writeHead(200, json).end(req.url!.includes('/traces/') ? '{"batches":[{"scopeSpans":[{"spans":[{"spanID":7}]}]}]}' : '{"status":"success","data":5}');
        return;
      case 'odd-envelope':
        res.writeHead(500, json).end('{"status":"error","errorType":7,"error":{"detail":"x"}}');
        return;
      case 'huge': {
        // Streamed (no Content-Length) until the client stops reading: 1 GiB would be sent.
        res.writeHead(200, json).write('{"tenants":[],"padding":"');
        const chunk = Buffer.alloc(1 << 20, 'x');
        let sent = 0;
        const pump = () => {
          while (sent < 1024 && !res.destroyed) {
            sent++;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end('"}');
        };
        pump();
        return;
      }
      default:
        res.writeHead(404, json).end('{"status":"error","errorType":"not_found","error":"no such endpoint"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrived: (mode) => new Promise((resolve) => waiting.set(mode, resolve)),
    close: async () => {
      for (const res of open) res.socket?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** No "    at fn (file:line)" frames: the user gets one sentence, not Node's internals. */
const expectNoStack = (stderr: string) => expect(stderr).not.toMatch(/^\s+at .+[:(]/m);

describe('hostile router: the CLI', () => {
  let router: Hostile;
  beforeAll(async () => {
    router = await startHostileRouter();
  });
  afterAll(async () => router?.close());

  const floe = (mode: string, args: string[], env: Record<string, string> = {}) =>
    runFloeCli([...args, '--url', `${router.url}/${mode}/`, '--api-key', 'k'], { FLOE_TENANT: 'acme', ...env });

  it('gives up on a router that never answers after --request-timeout (or FLOE_REQUEST_TIMEOUT), exit 1', async () => {
    const r = await floe('hang', ['tenant', 'list', '--request-timeout', '300']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`floe tenant list: no answer from ${router.url}/hang/ within 300 ms\n`);
    // The PromQL verbs' own --timeout is the evaluation timeout they send; the request deadline is apart.
    const q = await floe('hang', ['metrics', 'query', 'up', '--timeout', '10s'], { FLOE_REQUEST_TIMEOUT: '300' });
    expect(q.code).toBe(1);
    expect(q.stderr).toBe(`floe metrics query: no answer from ${router.url}/hang/ within 300 ms\n`);
  });

  it('gives up on an answer that starts and then stalls', async () => {
    const r = await floe('stall', ['logs', 'labels', '--request-timeout', '300']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`floe logs labels: no answer from ${router.url}/stall/ within 300 ms\n`);
  });

  it('refuses a --request-timeout that is not a positive number (usage, exit 2)', async () => {
    const r = await floe('hang', ['tenant', 'list', '--request-timeout', 'soon']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('floe tenant list: --request-timeout must be a positive number of milliseconds, not "soon"\n');
    const sql = await runFloeCli(['sql', 'SELECT 1', '--url', '127.0.0.1:1', '--api-key', 'k', '--tenant', 'acme', '--timeout', 'soon']);
    expect(sql.code).toBe(2);
    expect(sql.stderr).toBe('floe sql: --timeout must be a positive number of milliseconds, not "soon"\n');
  });

  it('says the router hung up mid-answer', async () => {
    const r = await floe('hangup', ['tenant', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`floe tenant list: ${router.url}/hangup/ closed the connection before its answer (HTTP 200) was complete\n`);
  });

  it('names the media type of an HTML error page', async () => {
    const r = await floe('html', ['tenant', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('floe tenant list: router answered 502 with a body that is not JSON (text/html) (HTTP 502 internal)\n');
  });

  it('says what the router sent when a 200 carries no JSON object', async () => {
    const empty = await floe('empty', ['tenant', 'list']);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toBe('floe: unexpected answer from /api/v1/tenants: HTTP 200 with an empty body\n');
    const bare = await floe('null', ['dataset', 'list']);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toBe('floe: unexpected answer from /api/v1/tenants/acme/datasets: expected an object or a list, got null\n');
  });

  it('prints only the string fields of an error envelope', async () => {
    const r = await floe('odd-envelope', ['tenant', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('floe tenant list: router answered 500 (HTTP 500 internal)\n');
  });

  it('stops reading an answer past 256 MiB and says so, for parsed and printed answers alike', async () => {
    for (const args of [['tenant', 'list'], ['logs', 'labels']]) {
      const r = await floe('huge', args);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`floe ${args.join(' ')}: the answer (HTTP 200) is larger than 256 MiB; narrow the request (HTTP 200 too_large)\n`);
      expectNoStack(r.stderr);
    }
  });
});

describe('hostile router: the agent tools over stdio (floe mcp)', () => {
  let router: Hostile;
  const clients: Client[] = [];
  beforeAll(async () => {
    router = await startHostileRouter();
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await router?.close();
  });

  const connect = async (mode: string, extra: string[] = []) => {
    const transport = new StdioClientTransport({
      command: NODE_BIN,
      args: [FLOE_BIN, 'mcp', '--url', `${router.url}/${mode}/`, '--api-key', 'k', '--tenant', 'acme', ...extra],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'hostile-e2e', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return client;
  };

  it('a tool call the agent cancels (notifications/cancelled) abandons its router request', async () => {
    const client = await connect('hang');
    const ac = new AbortController();
    const request = router.arrived('hang');
    const call = client.callTool({ name: 'log_labels', arguments: {} }, undefined, { signal: ac.signal });
    const { closed } = await request;
    ac.abort('the user moved on');
    await expect(call).rejects.toThrow('the user moved on');
    // Without the cancellation reaching it, the request would stay open until the client deadline.
    await closed;
  });

  it('a tool call whose router never answers ends at --request-timeout as a tool error', async () => {
    const client = await connect('hang', ['--request-timeout', '300']);
    const r = (await client.callTool({ name: 'logql_query', arguments: { query: '{a="b"}' } })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(r.content).toEqual([{ type: 'text', text: `timeout: no answer from ${router.url}/hang/ within 300 ms` }]);
  });

  it('a router answer of another shape is a tool error naming the path and the field, not a TypeError inside the tool', async () => {
    const client = await connect('wrong-shape');
    const labels = (await client.callTool({ name: 'log_labels', arguments: {} })) as CallToolResult;
    expect(labels.isError).toBe(true);
    expect(labels.content).toEqual([{ type: 'text', text: 'internal (HTTP 200): unexpected answer from /logquery/api/v1/labels: data: expected a list, got 5' }]);
    const range = (await client.callTool({ name: 'promql_query_range', arguments: { query: 'up' } })) as CallToolResult;
    expect(range.content).toEqual([{ type: 'text', text: 'internal (HTTP 200): unexpected answer from /metricquery/api/v1/query_range: data: expected an object, got 5' }]);
    const trace = (await client.callTool({ name: 'get_trace', arguments: { trace_id: 'ab' } })) as CallToolResult;
    expect(trace.isError).toBe(true);
    expect(trace.content).toEqual([
      { type: 'text', text: 'internal (HTTP 200): unexpected answer from /tracequery/api/traces/ab: batches[0].scopeSpans[0].spans[0].spanID: expected a string or null, got 7' },
    ]);
  });

  it('a router answer past the size cap is a tool error, not hundreds of MB parsed', async () => {
    const client = await connect('huge');
    const r = (await client.callTool({ name: 'log_labels', arguments: {} })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(r.content).toEqual([{ type: 'text', text: 'too_large (HTTP 200): the answer (HTTP 200) is larger than 256 MiB; narrow the request' }]);
  });
});
