import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { agentToolsPlugin, listenUrl } from './fastify-plugin.ts';

/**
 * The JSON-RPC edges of POST /mcp, over a real HTTP server with the plugin mounted as the router
 * mounts it (without the router's auth, which its own suite covers). No case here reaches a tool's
 * router call, so the router URL points nowhere.
 */

type Answer = { jsonrpc: '2.0'; id: string | number | null; result?: { content?: { type: string; text: string }[]; isError?: boolean; tools?: unknown[] }; error?: { code: number; message: string } };

describe('POST /mcp: JSON-RPC edges', () => {
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    app = Fastify();
    await app.register(agentToolsPlugin, { routerUrl: 'http://127.0.0.1:9', credentials: () => ({ tenant: 't' }) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = `${listenUrl(app.server.address())}/mcp`;
  });
  afterAll(() => app.close());

  const post = async (message: unknown) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(message) });
    return { status: res.status, body: (await res.json()) as Answer | Answer[] };
  };
  const call = (id: number, params?: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', ...(params === undefined ? {} : { params }) });
  const byId = (answers: Answer | Answer[]) => new Map((Array.isArray(answers) ? answers : [answers]).map((a) => [a.id, a]));

  it('a request with bad params gets the same invalid-params error (-32602) in a batch as alone', async () => {
    for (const params of [undefined, {}, { name: 7 }, { name: 'get_trace', arguments: 'trace' }]) {
      const alone = await post(call(1, params));
      expect(alone.status).toBe(200);
      expect(alone.body, JSON.stringify(params)).toMatchObject({ id: 1, error: { code: -32602, message: expect.stringMatching(/^Invalid params: /) } });

      const batch = await post([call(1, params), { jsonrpc: '2.0', id: 2, method: 'tools/list' }]);
      expect(batch.status).toBe(200);
      const answers = byId(batch.body);
      expect(answers.size).toBe(2);
      expect(answers.get(1), JSON.stringify(params)).toEqual(alone.body);
      // The good request of the batch is answered as usual.
      expect(answers.get(2)?.result?.tools?.length).toBeGreaterThan(0);
    }
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'])('tools/call of %s answers as for any unknown tool', async (name) => {
    const unknown = (await post(call(3, { name: 'no_such_tool', arguments: {} }))).body as Answer;
    expect(unknown.result?.isError).toBe(true);
    const text = unknown.result!.content![0]!.text;
    expect(text).toContain('no_such_tool');
    const got = await post(call(3, { name, arguments: {} }));
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ ...unknown, result: { ...unknown.result, content: [{ type: 'text', text: text.replace('no_such_tool', name) }] } });
  });

  it('refuses a batch that repeats a request id (-32600, naming the id) rather than answering one of them', async () => {
    for (const id of [5, 'five']) {
      const got = await post([
        { jsonrpc: '2.0', id: 4, method: 'tools/list' },
        { jsonrpc: '2.0', id, method: 'tools/list' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } },
      ]);
      expect(got.status).toBe(400);
      expect(got.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: `Invalid Request: the batch has more than one request with id ${JSON.stringify(id)}` } });
    }
    // The same id as a number and as a string are two ids (JSON-RPC compares them as given).
    const distinct = await post([
      { jsonrpc: '2.0', id: 6, method: 'tools/list' },
      { jsonrpc: '2.0', id: '6', method: 'tools/list' },
    ]);
    expect(distinct.status).toBe(200);
    expect([...byId(distinct.body).keys()].sort()).toEqual([6, '6'].sort());
  });

  it.each(['GET', 'PUT', 'PATCH', 'DELETE'])('%s /mcp is 405 with Allow: POST in the error envelope', async (method) => {
    const res = await fetch(url, { method, ...(method === 'PUT' || method === 'PATCH' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(await res.json()).toEqual({ status: 'error', errorType: 'bad_data', error: 'the MCP endpoint is stateless: use POST /mcp' });
  });
});
