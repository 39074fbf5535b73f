import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createAgentToolsServer } from '@floe/agent-tools';
import {
  postProfiles,
  protoLogExporter,
  protoTraceExporter,
  sampleProfilesRequest,
  sendSampleLogs,
  sendSampleTrace,
  startFloe,
  waitFor,
  type FloeUnderTest,
  type SentLogs,
  type SentTrace,
} from '../src/index.ts';

/**
 * The agent tools (MCP) end to end: a trace, logs and a profile go in over OTLP with the real
 * OpenTelemetry SDK (the profile hand-built, as no SDK exports profiles yet), and a real MCP
 * client reads them back through the router's POST /mcp (Streamable HTTP), whose tools call the
 * router's own query APIs with the caller's credentials: discovery, each signal's query, router
 * errors as tool errors, a refused key, the payload cap, and another tenant seeing nothing.
 */

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const MS = 1_000_000;

type Structured = Record<string, unknown> & { truncated: boolean };

describe('agent tools over MCP (embedded)', () => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  let trace: SentTrace;
  let logs: SentLogs;
  let client: Client;
  let profileMs: number;
  const tenant = 'agents';
  const other = 'outsiders';
  const traceService = 'mcp-shop';
  const logService = 'mcp-logs';
  const profileService = 'mcp-profiled';

  const connect = async (apiKey: string, asTenant: string) => {
    const c = new Client({ name: 'floe-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${floe.routerUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${apiKey}`, 'x-tenant-id': asTenant } },
    });
    await c.connect(transport);
    return c;
  };
  const call = async (c: Client, name: string, args: Record<string, unknown> = {}) => (await c.callTool({ name, arguments: args })) as CallToolResult;
  /** A successful call's structured answer, checked against its text twin. */
  const ok = async (name: string, args: Record<string, unknown> = {}, c = client): Promise<Structured> => {
    const r = await call(c, name, args);
    expect(r.isError, `${name}: ${JSON.stringify(r.content)}`).toBeFalsy();
    const text = (r.content[0] as { type: 'text'; text: string }).text;
    expect(JSON.parse(text)).toEqual(r.structuredContent);
    return r.structuredContent as Structured;
  };
  const errorText = (r: CallToolResult) => {
    expect(r.isError).toBe(true);
    return (r.content[0] as { text: string }).text;
  };

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap(other)).api_key;
    const creds = { apiKey: key, tenant };
    trace = await sendSampleTrace(protoTraceExporter(floe.otlpHttpUrl, creds), traceService);
    logs = await sendSampleLogs(protoLogExporter(floe.otlpHttpUrl, creds), logService);
    profileMs = Date.now();
    const res = await postProfiles(floe.otlpHttpUrl, creds, sampleProfilesRequest(profileService, { traceId: trace.traceId, spanId: trace.spanIds[1]! }, BigInt(profileMs) * 1_000_000n));
    expect(res.status).toBe(200);
    client = await connect(key, tenant);
    await waitFor(
      'trace, logs and profile queryable through the tools',
      async () => {
        const [t, l, p] = await Promise.all([
          call(client, 'traceql_search', { q: `{ resource.service.name = "${traceService}" }` }),
          call(client, 'logql_query', { query: `{service_name="${logService}"}` }),
          call(client, 'profile_types', {}),
        ]);
        const found = (r: CallToolResult, list: string) => !r.isError && ((r.structuredContent as Record<string, unknown[]>)[list]?.length ?? 0) > 0;
        return found(t, 'traces') && found(l, 'result') && found(p, 'profileTypes') ? true : undefined;
      },
      60_000,
      250,
    );
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    await floe?.stop();
  });

  it('lists every tool with a description and an input schema', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(
      [
        'get_trace',
        'list_attributes',
        'log_label_values',
        'log_labels',
        'logql_query',
        'metric_label_values',
        'metric_labels',
        'metric_series',
        'profile_compare',
        'profile_search',
        'profile_types',
        'profiles_for_trace',
        'scm_attach',
        'scm_link',
        'scm_list',
        'scm_remove',
        'source_context',
        'promql_query',
        'promql_query_range',
        'trace_tag_values',
        'trace_tags',
        'traceql_search',
      ].sort(),
    );
    // Only these change state; MCP clients read the annotations to decide what needs the user's consent.
    const writes: Record<string, { destructiveHint: boolean; idempotentHint: boolean }> = {
      scm_link: { destructiveHint: false, idempotentHint: false },
      scm_remove: { destructiveHint: true, idempotentHint: true },
      scm_attach: { destructiveHint: false, idempotentHint: true },
    };
    for (const t of tools) {
      expect(t.description!.length, t.name).toBeGreaterThan(40);
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema?.properties, t.name).toHaveProperty('truncated');
      if (writes[t.name]) expect(t.annotations, t.name).toMatchObject({ readOnlyHint: false, ...writes[t.name] });
      else expect(t.annotations, t.name).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.scm_remove!.inputSchema.required).toEqual(['installation_id']);
    expect(byName.scm_attach!.inputSchema.required).toEqual(['installation_id']);
    expect(byName.logql_query!.inputSchema.required).toEqual(['query']);
    expect(Object.keys(byName.logql_query!.inputSchema.properties!).sort()).toEqual(['direction', 'end', 'limit', 'query', 'start', 'step']);
    expect(Object.keys(byName.traceql_search!.inputSchema.properties!).sort()).toEqual(['end', 'limit', 'max_duration', 'min_duration', 'q', 'spss', 'start']);
    expect(byName.list_attributes!.inputSchema.properties!.signal).toMatchObject({ enum: ['logs', 'metrics', 'traces', 'profiles'] });
  });

  it('traceql_search finds the trace and get_trace returns its spans', async () => {
    const found = await ok('traceql_search', { q: `{ resource.service.name = "${traceService}" && status = error }`, start: 'now-30m' });
    expect(found.truncated).toBe(false);
    const traces = found.traces as Array<Record<string, unknown>>;
    expect(traces.map((t) => t.traceID)).toEqual([trace.traceId]);
    expect(traces[0]).toMatchObject({ rootServiceName: traceService, rootTraceName: 'GET /checkout' });
    expect(traces[0]).not.toHaveProperty('spanSet');

    const got = await ok('get_trace', { trace_id: trace.traceId });
    expect(got).toMatchObject({ traceID: trace.traceId, spanCount: 3, truncated: false });
    const spans = got.spans as Array<Record<string, unknown>>;
    expect(spans.map((s) => s.spanID).sort()).toEqual([...trace.spanIds].sort());
    const root = spans.find((s) => s.name === 'GET /checkout')!;
    expect(root).toMatchObject({ serviceName: traceService, kind: 'server', attributes: { 'http.status_code': 500, 'http.route': '/checkout', 'cache.hit': false } });
    expect(root).not.toHaveProperty('parentSpanID');
    const leaf = spans.find((s) => s.name === 'SELECT carts')!;
    expect(leaf.events).toEqual([expect.objectContaining({ name: 'exception', attributes: expect.objectContaining({ 'exception.message': 'connection reset' }) })]);
    expect((got.resources as Array<Record<string, unknown>>)[leaf.resourceIndex as number]).toMatchObject({ 'service.name': traceService });
  });

  it('logql_query returns the lines, and the label tools list them', async () => {
    const answer = await ok('logql_query', { query: `{service_name="${logService}"}`, start: 'now-30m', limit: 1000, direction: 'forward' });
    expect(answer).toMatchObject({ resultType: 'streams', truncated: false });
    const streams = answer.result as Array<{ stream: Record<string, string>; values: Array<[string, string]> }>;
    expect(streams.map((s) => s.stream.service_name)).toEqual(streams.map(() => logService));
    const lines = streams.flatMap((s) => s.values);
    expect(lines.map(([, line]) => line).sort()).toEqual(logs.records.map((r) => r.body).sort());
    // Forward: oldest first within each stream.
    for (const s of streams) {
      const times = s.values.map(([t]) => BigInt(t));
      expect(times).toEqual([...times].sort((a, b) => (a < b ? -1 : 1)));
    }

    expect((await ok('log_labels')).labels).toContain('service_name');
    expect((await ok('log_label_values', { label: 'service_name' })).values).toEqual([logService]);
  });

  it('promql_query evaluates vector(1); the metric tools answer', async () => {
    const answer = await ok('promql_query', { query: 'vector(1)' });
    expect(answer.resultType).toBe('vector');
    expect(answer.result).toEqual([{ metric: {}, value: [expect.any(Number), '1'] }]);
    const scalar = await ok('promql_query', { query: '1 + 1', time: '2025-01-31T12:00:00Z' });
    expect(scalar).toMatchObject({ resultType: 'scalar', result: [1738324800, '2'], truncated: false });
    const range = await ok('promql_query_range', { query: 'vector(2)', start: 'now-10m', step: '1m' });
    const values = (range.result as Array<{ values: unknown[] }>)[0]!.values;
    expect(values.length).toBeGreaterThanOrEqual(10);
    expect(values[0]).toEqual([expect.any(Number), '2']);
    expect(await ok('metric_series', { match: ['{__name__="nothing_here"}'] })).toEqual({ series: [], truncated: false });
  });

  it('list_attributes names what each signal can filter on', async () => {
    const traces = await ok('list_attributes', { signal: 'traces' });
    expect(traces.attributes).toEqual(expect.arrayContaining(['resource.service.name', 'span.http.route', 'duration', 'status']));
    expect((await ok('list_attributes', { signal: 'logs' })).attributes).toContain('service_name');
    expect((await ok('list_attributes', { signal: 'profiles' })).attributes).toContain('service_name');
    expect(await ok('list_attributes', { signal: 'metrics' })).toEqual({ signal: 'metrics', attributes: [], truncated: false });
    expect(((await ok('trace_tag_values', { tag: 'resource.service.name' })).tagValues as unknown[])).toContainEqual({ type: 'string', value: traceService });
  });

  it('profile tools: types, top functions, a comparison and the profiles of a trace', async () => {
    const types = (await ok('profile_types')).profileTypes as Array<{ ID: string }>;
    expect(types.map((t) => t.ID)).toContain(CPU);

    const around = { start: String((profileMs - 60_000) / 1000), end: String((profileMs + 60_000) / 1000) };
    const search = await ok('profile_search', { query: `${CPU}{service_name="${profileService}"}`, ...around, top: 3 });
    // Call tree (testkit's sample): main → handleCheckout → { libc 5 ms, computeTotal → hash (self 20) → memmove (self 40) }.
    expect(search).toMatchObject({ units: 'samples', totalValue: 65 * MS, functionCount: 6, truncated: false });
    expect(search.functions).toEqual([
      { name: 'memmove', self: 40 * MS, total: 40 * MS, selfPercent: 61.54, totalPercent: 61.54 },
      { name: 'hash', self: 20 * MS, total: 60 * MS, selfPercent: 30.77, totalPercent: 92.31 },
      { name: '/usr/lib/x86_64-linux-gnu/libc.so.6', self: 5 * MS, total: 5 * MS, selfPercent: 7.69, totalPercent: 7.69 },
    ]);
    const byTotal = await ok('profile_search', { query: CPU, ...around, top: 2, sort_by: 'total' });
    expect((byTotal.functions as Array<{ name: string; total: number }>).map((f) => [f.name, f.total])).toEqual([
      ['handleCheckout', 65 * MS],
      ['main', 65 * MS],
    ]);

    // Left: an empty hour before the profile; right: around it.
    const diff = await ok('profile_compare', { query: CPU, left_start: String((profileMs - 7_200_000) / 1000), left_end: String((profileMs - 3_600_000) / 1000), right_start: around.start, right_end: around.end, top: 2 });
    expect(diff).toMatchObject({ units: 'samples', leftTotal: 0, rightTotal: 65 * MS, changedCount: 6, truncated: false });
    expect(diff.changes).toEqual([
      expect.objectContaining({ name: 'memmove', leftSelf: 0, rightSelf: 40 * MS, selfDelta: 40 * MS, selfShareDelta: 61.54 }),
      expect.objectContaining({ name: 'hash', selfDelta: 20 * MS, totalDelta: 60 * MS }),
    ]);

    const linked = await ok('profiles_for_trace', { trace_id: trace.traceId });
    expect(linked.traceID).toBe(trace.traceId);
    expect(linked.profiles).toEqual([expect.objectContaining({ 'service.name': profileService, 'trace.id': trace.traceId, 'profile.type': CPU })]);
  });

  it("router refusals are tool errors carrying the router's message", async () => {
    const badQl = errorText(await call(client, 'traceql_search', { q: '{ resource.service.name = ' }));
    // The router's own answer to the same query, through its HTTP API.
    const direct = await fetch(`${floe.routerUrl}/tracequery/api/search?q=${encodeURIComponent('{ resource.service.name = ')}`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(direct.status).toBe(400);
    const envelope = (await direct.json()) as { errorType: string; error: string };
    expect(badQl).toBe(`bad_data (HTTP 400): ${envelope.error}`);

    expect(errorText(await call(client, 'get_trace', { trace_id: 'ab'.repeat(16) }))).toBe('not_found (HTTP 404): trace not found');
    expect(errorText(await call(client, 'logql_query', { query: '{service_name="x"', start: 'now-5m' }))).toMatch(/^bad_data \(HTTP 400\): /);
    expect(errorText(await call(client, 'promql_query', { query: 'up', time: 'yesterday' }))).toMatch(/^bad_data: invalid time "yesterday"/);
    // The input schema is enforced before the tool runs.
    expect(errorText(await call(client, 'list_attributes', { signal: 'events' }))).toMatch(/signal/);
    expect(errorText(await call(client, 'scm_remove', { installation_id: 0 }))).toMatch(/installation_id/);
    // This Floe has no scm section: the source-control routes answer 404, and the tools say so.
    expect(errorText(await call(client, 'scm_list'))).toBe('not_found (HTTP 404): the source-control integration is not configured');
  });

  it('a wrong key is refused with 401 before any MCP message is read', async () => {
    await expect(connect('not-a-key', tenant)).rejects.toMatchObject({ code: 401, message: expect.stringContaining('invalid or revoked API key') });
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } };
    const res = await fetch(`${floe.routerUrl}/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer not-a-key', 'x-tenant-id': tenant, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(init),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ status: 'error' });
    // Another tenant's key naming this tenant.
    await expect(connect(otherKey, tenant)).rejects.toMatchObject({ code: 403 });
    const get = await fetch(`${floe.routerUrl}/mcp`, { headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant } });
    expect(get.status).toBe(405);
  });

  it('a malformed tools/call is a JSON-RPC invalid-params error (-32602), not an internal one', async () => {
    const post = async (message: unknown) => {
      const res = await fetch(`${floe.routerUrl}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(message),
      });
      return { status: res.status, body: (await res.json()) as { error?: { code: number; message: string }; id?: unknown } };
    };
    for (const params of [undefined, {}, { name: 7 }, { name: 'get_trace', arguments: 'trace' }]) {
      const got = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', ...(params === undefined ? {} : { params }) });
      expect(got.body, JSON.stringify(params)).toMatchObject({ id: 9, error: { code: -32602, message: expect.stringMatching(/^Invalid params/) } });
    }
    const unknownTool = await post({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } });
    expect(JSON.stringify(unknownTool.body)).toMatch(/no_such_tool/);
  });

  it("another tenant's key sees none of this tenant's data", async () => {
    const theirs = await connect(otherKey, other);
    try {
      expect((await ok('traceql_search', { start: 'now-30m' }, theirs)).traces).toEqual([]);
      expect((await ok('logql_query', { query: `{service_name="${logService}"}`, start: 'now-30m' }, theirs)).result).toEqual([]);
      expect(errorText(await call(theirs, 'get_trace', { trace_id: trace.traceId }))).toBe('not_found (HTTP 404): trace not found');
      expect((await ok('list_attributes', { signal: 'logs' }, theirs)).attributes).toEqual([]);
      expect((await ok('profile_types', {}, theirs)).profileTypes).toEqual([]);
      expect((await ok('profiles_for_trace', { trace_id: trace.traceId }, theirs)).profiles).toEqual([]);
    } finally {
      await theirs.close();
    }
  });

  /** A client of the tools with a tiny payload cap (factory option), over an in-memory transport, calling the real router. */
  const cappedClient = async (maxPayloadBytes: number) => {
    const server = createAgentToolsServer({ routerUrl: floe.routerUrl, credentials: { authorization: `Bearer ${key}`, tenant }, maxPayloadBytes });
    const c = new Client({ name: 'floe-e2e-capped', version: '1.0.0' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(serverSide), c.connect(clientSide)]);
    return c;
  };

  it('the payload cap trims lists to fit and says truncated', async () => {
    const maxPayloadBytes = 700;
    const small = await cappedClient(maxPayloadBytes);
    try {
      const full = await ok('logql_query', { query: `{service_name="${logService}"}`, start: 'now-30m', limit: 1000 });
      const capped = await ok('logql_query', { query: `{service_name="${logService}"}`, start: 'now-30m', limit: 1000 }, small);
      expect(capped.truncated).toBe(true);
      expect(Buffer.byteLength(JSON.stringify(capped))).toBeLessThanOrEqual(maxPayloadBytes);
      const count = (a: Structured) => (a.result as Array<{ values: unknown[] }>).reduce((n, s) => n + s.values.length, 0);
      expect(count(capped)).toBeGreaterThan(0);
      expect(count(capped)).toBeLessThan(count(full));
      // What is kept is the head of the full answer, unchanged.
      const firstFull = (full.result as Array<{ values: unknown[] }>)[0]!.values;
      const firstCapped = (capped.result as Array<{ values: unknown[] }>)[0]!.values;
      expect(firstCapped).toEqual(firstFull.slice(0, firstCapped.length));

      const spans = await ok('get_trace', { trace_id: trace.traceId }, small);
      expect(spans).toMatchObject({ truncated: true, spanCount: 3 });
      expect((spans.spans as unknown[]).length).toBeLessThan(3);
      expect(Buffer.byteLength(JSON.stringify(spans))).toBeLessThanOrEqual(maxPayloadBytes);
      // A small answer is untouched.
      expect(await ok('promql_query', { query: '1', time: '1700000000' }, small)).toEqual({ resultType: 'scalar', result: [1700000000, '1'], truncated: false });
    } finally {
      await small.close();
    }
  });

  it('profile search obeys the same cap (spec 1, profile query rule 6)', async () => {
    const tiny = await cappedClient(400);
    try {
      const around = { start: String((profileMs - 60_000) / 1000), end: String((profileMs + 60_000) / 1000) };
      const full = await ok('profile_search', { query: CPU, ...around, top: 6 });
      const capped = await ok('profile_search', { query: CPU, ...around, top: 6 }, tiny);
      expect(full).toMatchObject({ truncated: false, functionCount: 6 });
      expect(capped).toMatchObject({ truncated: true, functionCount: 6 });
      expect(Buffer.byteLength(JSON.stringify(capped))).toBeLessThanOrEqual(400);
      const kept = capped.functions as unknown[];
      expect(kept.length).toBeGreaterThan(0);
      expect(kept).toEqual((full.functions as unknown[]).slice(0, kept.length));
    } finally {
      await tiny.close();
    }
  });
});
