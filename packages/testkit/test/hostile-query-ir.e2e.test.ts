import { connect as connectHttp2, constants as h2, type ClientHttp2Session } from 'node:http2';
import { connect as connectTcp } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TempoSearchRequestSchema, create, toBinary } from '@floe/proto';
import { emitLogRecords, protoLogExporter, startFloe, waitFor, type FloeUnderTest } from '../src/index.ts';

/**
 * An adversarial pass over the native Query IR (POST /api/v1/query), Tempo's streaming search
 * over gRPC and the router's port shared by HTTP/1.1 and HTTP/2, on the embedded Floe: hostile
 * bodies get a 400 naming the field (or the documented 413/501), never a 500 or an engine's
 * message; malformed gRPC calls get a gRPC status, not INTERNAL; and abusive HTTP/2 clients
 * (bad prefaces, oversized headers, rapid resets, streams that never finish) cost only their own
 * connection while other clients are served.
 */
describe('hostile Query IR bodies', () => {
  let floe: FloeUnderTest;
  let key: string;
  let otherKey: string;
  const tenant = 'hostileir';
  const other = 'hostileother';
  const startMs = Date.now() - 10 * 60_000;
  const range = () => ({ start: new Date(startMs - 60_000).toISOString(), end: new Date(Date.now() + 60_000).toISOString() });
  const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

  const query = async (body: unknown, apiKey = key, asTenant = tenant) => {
    const res = await fetch(`${floe.routerUrl}/api/v1/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'x-tenant-id': asTenant, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const lines = async (apiKey = key, asTenant = tenant) => (await query({ source: 'logs', range: range(), streams: [{ label: 'service_name', op: '=~', value: '.+' }] }, apiKey, asTenant)).body.rows?.map((r: { line: string }) => r.line);

  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded' });
    key = (await floe.bootstrap(tenant)).api_key;
    otherKey = (await floe.bootstrap(other)).api_key;
    const records = [{ timeUnixNano: BigInt(startMs) * 1_000_000n, severityNumber: 9, severityText: 'INFO', body: 'secret line', attributes: {} }];
    await emitLogRecords(protoLogExporter(floe.otlpHttpUrl, { apiKey: key, tenant }), { 'service.name': 'hsvc' }, { name: 'floe-e2e-hostile-ir', version: '1.0.0' }, records);
    await waitFor('the log line queryable', async () => ((await lines())?.length === 1 ? true : undefined), 30_000, 200);
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const refused: Array<[string, unknown, number, string, string]> = [
    // Times past int64 nanoseconds reached SQL (DuckDB's conversion error, the SQL text included) or matched nothing silently.
    ['an end in the year 9999', { source: 'logs', range: { start: '2026-01-01T00:00:00Z', end: '9999-12-31T23:59:59Z' } }, 400, 'bad_data', 'body.range.end is out of range'],
    ['a start of 20 digits past int64', { source: 'logs', range: { start: '99999999999999999999', end: '99999999999999999999.5' } }, 400, 'bad_data', 'body.range.start is out of range'],
    ['fractional seconds past int64', { source: 'traces', range: { start: '1', end: '99999999999999999999999999999999.5' } }, 400, 'bad_data', 'body.range.end is out of range'],
    ['a start before int64', { source: 'profiles', range: { start: '-9999999999999999999', end: '1' }, selector: `${CPU}{}` }, 400, 'bad_data', 'body.range.start is out of range'],
    // RFC 3339 fields past their range were rolled over by Date.UTC (Feb 31 read as Mar 3, +99:99 as an offset), misreading the window.
    ['February 31st', { source: 'logs', range: { start: '2026-02-31T00:00:00Z', end: '2026-03-05T00:00:00Z' } }, 400, 'bad_data', 'invalid body.range.start: cannot parse'],
    ['an hour of 25 and an offset of +99:99', { source: 'traces', range: { start: '2026-01-01T25:00:00Z', end: '2026-01-03T00:00:00+99:99' } }, 400, 'bad_data', 'invalid body.range.start: cannot parse'],
    // Regexes RE2 refuses answered with the engine's message, naming no field.
    ['an unbalanced stream regex', { source: 'logs', range: range(), streams: [{ label: 'service_name', op: '=~', value: '(' }] }, 400, 'bad_data', 'body.streams[0].value is not a valid RE2 regular expression'],
    ['a line regex with a backreference', { source: 'logs', range: range(), filters: [{ type: 'line', op: 'match', value: '(a)\\1' }] }, 400, 'bad_data', 'body.filters[0].value is not a valid RE2 regular expression'],
    ['a label regex with lookahead', { source: 'logs', range: range(), filters: [{ type: 'line', op: 'contains', value: '(' }, { type: 'label', label: 'x', op: '!~', value: '(?=a)' }] }, 400, 'bad_data', 'body.filters[1].value is not a valid RE2 regular expression'],
    // Shapes, types and limits: the schema names the field.
    ['wrong types everywhere', { source: 'logs', range: range(), streams: 'x', filters: {} }, 400, 'bad_data', 'body.streams must be array'],
    ['range values of the wrong type', { source: 'logs', range: { start: 1, end: true } }, 400, 'bad_data', 'body.range.start must be string'],
    ['a source that is an array', { source: ['logs'], range: range() }, 400, 'bad_data', 'body.source must be string'],
    ['a body that is an array', [1, 2, 3], 400, 'bad_data', 'body must be object'],
    ['a body that is null', 'null', 400, 'bad_data', 'body must be object'],
    ['limit 0', { source: 'logs', range: range(), limit: 0 }, 400, 'bad_data', 'body.limit must be >= 1'],
    ['a negative limit', { source: 'traces', range: range(), limit: -1 }, 400, 'bad_data', 'body.limit must be >= 1'],
    ['a huge limit', { source: 'profiles', range: range(), selector: `${CPU}{}`, limit: 1e300 }, 400, 'bad_data', 'body.limit must be <= 10000'],
    ['a limit as a string', { source: 'logs', range: range(), limit: '10' }, 400, 'bad_data', 'body.limit must be integer'],
    ['a label value of 1e400 (Infinity)', '{"source":"logs","range":{"start":"1","end":"2"},"filters":[{"type":"label","label":"x","op":">","value":1e400}]}', 400, 'bad_data', 'body.filters[0].value'],
    ['an int attribute past 2^53', '{"source":"traces","range":{"start":"1","end":"2"},"conditions":[{"field":"span.x","value":9007199254740993}]}', 400, 'bad_data', 'body.conditions[0].value is not a safe integer'],
    ['65 conditions', { source: 'traces', range: range(), conditions: Array.from({ length: 65 }, (_, i) => ({ field: `span.a${i}`, value: i })) }, 400, 'bad_data', 'body.conditions must NOT have more than 64 items'],
    ['__proto__ in the body', '{"source":"logs","range":{"start":"1","end":"2"},"__proto__":{"limit":0}}', 400, 'bad_data', '__proto__'],
    ['a deeply nested unknown field', `{"source":"logs","range":{"start":"1","end":"2"},"x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, 400, 'bad_data', 'body nests arrays and objects deeper than'],
    ['a body over the limit', { source: 'logs', range: range(), filters: Array.from({ length: 10_000 }, () => ({ type: 'line', op: 'contains', value: 'x' })) }, 413, 'too_large', 'request body too large'],
    ['a field of quotes and brackets', { source: 'traces', range: range(), conditions: [{ field: 'span.a', value: 1 }, { field: `"]'; --`, value: 'x' }] }, 400, 'bad_data', 'body.conditions[1].field must be name, status, kind'],
    ['a field that is only a scope', { source: 'traces', range: range(), conditions: [{ field: 'span.', value: 1 }] }, 400, 'bad_data', 'body.conditions[0].field'],
    ['PromQL with NUL', { source: 'metrics', range: range(), promql: 'up{a="\u0000"}', step: '1m' }, 400, 'bad_data', 'strings may not contain NUL'],
    ['PromQL at a 1ms step over a century', { source: 'metrics', range: { start: '0', end: '4000000000' }, promql: 'up', step: '1ms' }, 400, 'bad_data', 'exceeded maximum resolution'],
    ['a profile selector with NUL', { source: 'profiles', range: range(), selector: `${CPU}{service_name="\u0000"}` }, 400, 'bad_data', 'body.selector'],
    ['a trace duration condition', { source: 'traces', range: range(), conditions: [{ field: 'duration', value: '5ms' }] }, 501, 'not_implemented', 'body.conditions[0].field'],
  ];
  it.each(refused)('%s → %i naming the field', async (_name, body, status, errorType, message) => {
    const res = await query(body);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ status: 'error', errorType, error: expect.stringContaining(message) });
    expect(res.body.error).not.toMatch(/CAST|SELECT|Conversion Error|Invalid Input Error/);
  });

  it('runs values of NUL, lone surrogates and SQL text as plain values, and a catastrophic regex in linear time', async () => {
    const hostile: unknown[] = [
      { source: 'logs', range: range(), streams: [{ label: 'service_name', op: '=', value: 'a\u0000b' }], filters: [{ type: 'line', op: 'contains', value: '\u0000' }] },
      '{"source":"logs","range":{"start":"1","end":"2"},"streams":[{"label":"\\ud800","op":"=","value":"\\udc00"}]}',
      { source: 'logs', range: range(), streams: [{ label: "x'); DROP TABLE logs;--", op: '=', value: "' OR 1=1 --" }], filters: [{ type: 'label', label: 'a"b[0].c', op: '!=', value: 'x' }] },
      { source: 'traces', range: range(), conditions: [{ field: "span.a'\"[]`;--", value: "x' OR '1'='1" }, { field: 'resource.\u0000', value: 1 }] },
      { source: 'logs', range: range(), filters: [{ type: 'line', op: 'match', value: '(a+)+$' }, { type: 'label', label: 'x', op: '=~', value: '(a|a)*b' }] },
    ];
    for (const body of hostile) {
      const res = await query(body);
      expect(res.status).toBe(200);
      expect(res.body.truncated).toBe(false);
      expect(res.body.rows ?? res.body.traces).toEqual([]);
    }
    expect(await lines()).toEqual(['secret line']);
  });

  it("keeps another tenant out, whatever the body", async () => {
    expect(await lines(otherKey, other)).toEqual([]);
    const wide = { source: 'logs', range: { start: '0', end: '9223372036854775807' }, streams: [{ label: 'service_name', op: '=~', value: '.*' }], limit: 5000 };
    const res = await query(wide, otherKey, other);
    expect(res).toMatchObject({ status: 200, body: { rows: [] } });
    const named = await query(wide, otherKey, tenant);
    expect(named).toMatchObject({ status: 403, body: { status: 'error', errorType: 'forbidden' } });
  });
});

describe('hostile gRPC calls and HTTP/2 clients on the router port', () => {
  let floe: FloeUnderTest;
  let key: string;
  const tenant = 'hostileh2';
  beforeAll(async () => {
    floe = await startFloe({ mode: 'embedded', planning: true });
    key = (await floe.bootstrap(tenant)).api_key;
    await floe.bootstrap('hostileh2other');
  }, 120_000);
  afterAll(async () => {
    await floe?.stop();
  });

  const ready = async () => (await fetch(`${floe.routerUrl}/ready`)).status;
  const framed = (message: Uint8Array, flag = 0, length = message.length) => {
    const b = Buffer.alloc(5 + message.length);
    b[0] = flag;
    b.writeUInt32BE(length, 1);
    b.set(message, 5);
    return b;
  };
  const searchMessage = () => toBinary(TempoSearchRequestSchema, create(TempoSearchRequestSchema, { Query: '{}', Limit: 5 }));
  interface CallResult {
    httpStatus?: number;
    grpcStatus?: string;
    grpcMessage?: string;
    rstCode?: number;
  }
  /** One Search call by hand, so the bytes on the wire are whatever the test says. */
  const call = (session: ClientHttp2Session, body: Buffer, headers: Record<string, string> = {}) =>
    new Promise<CallResult>((resolve) => {
      const s = session.request({ ':method': 'POST', ':path': '/tempopb.StreamingQuerier/Search', 'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${key}`, 'x-scope-orgid': tenant, ...headers });
      const out: CallResult = {};
      const status = (h: Record<string, unknown>) => {
        if (h['grpc-status'] !== undefined) {
          out.grpcStatus = String(h['grpc-status']);
          out.grpcMessage = decodeURIComponent(String(h['grpc-message'] ?? ''));
        }
      };
      s.on('response', (h) => {
        out.httpStatus = Number(h[':status']);
        status(h);
      });
      s.on('trailers', status);
      s.on('error', () => undefined);
      s.resume();
      s.on('close', () => resolve({ ...out, ...(s.rstCode ? { rstCode: s.rstCode } : {}) }));
      s.end(body);
    });
  const session = () => {
    const s = connectHttp2(floe.routerUrl);
    s.on('error', () => undefined);
    return s;
  };
  /** An HTTP/2 client that did nothing unusual is answered. */
  const healthy = async () => {
    const s = session();
    try {
      expect(await call(s, framed(searchMessage()))).toEqual({ httpStatus: 200, grpcStatus: '0', grpcMessage: '' });
    } finally {
      s.close();
    }
    expect(await ready()).toBe(200);
  };

  it('answers a message that is not a SearchRequest with INVALID_ARGUMENT, not INTERNAL', async () => {
    const s = session();
    try {
      for (const message of [[0xff, 0xff, 0xff, 0xff, 0x0f], [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x41], [0x0d, 1, 2, 3]]) {
        expect(await call(s, framed(Buffer.from(message)))).toMatchObject({ httpStatus: 200, grpcStatus: '3', grpcMessage: expect.stringContaining('not a tempopb.SearchRequest') });
      }
      for (const body of [framed(searchMessage(), 0, 999), framed(searchMessage(), 1), Buffer.alloc(0), Buffer.concat([framed(searchMessage()), framed(searchMessage())])]) {
        expect(await call(s, body)).toMatchObject({ grpcStatus: '3', grpcMessage: expect.stringContaining('length-prefixed gRPC message') });
      }
    } finally {
      s.close();
    }
  });

  it('answers a request over the body limit with RESOURCE_EXHAUSTED in the trailers, not an HTTP 413 a gRPC client cannot read', async () => {
    const s = session();
    try {
      expect(await call(s, framed(Buffer.alloc(6 * 1024 * 1024, 0x41)))).toMatchObject({ httpStatus: 200, grpcStatus: '8', grpcMessage: 'request body too large' });
    } finally {
      s.destroy();
    }
    await healthy();
  });

  it('refuses missing or foreign credentials with the gRPC status of the HTTP API', async () => {
    const s = session();
    try {
      expect(await call(s, framed(searchMessage()), { authorization: '' })).toMatchObject({ grpcStatus: '16' });
      expect(await call(s, framed(searchMessage()), { authorization: 'Bearer nope' })).toMatchObject({ grpcStatus: '16' });
      expect(await call(s, framed(searchMessage()), { 'x-scope-orgid': 'hostileh2other' })).toMatchObject({ grpcStatus: '7' });
      expect(await call(s, framed(searchMessage()), { 'grpc-encoding': 'gzip' })).toMatchObject({ grpcStatus: '12' });
    } finally {
      s.close();
    }
  });

  it('answers many concurrent calls on one connection, and calls the client cancels cost nothing after', async () => {
    const s = session();
    try {
      const results = await Promise.all(Array.from({ length: 300 }, () => call(s, framed(searchMessage()))));
      expect(results.filter((r) => r.grpcStatus === '0')).toHaveLength(300);
      for (let i = 0; i < 50; i++) {
        const cancelled = s.request({ ':method': 'POST', ':path': '/tempopb.StreamingQuerier/Search', 'content-type': 'application/grpc', authorization: `Bearer ${key}`, 'x-scope-orgid': tenant });
        cancelled.on('error', () => undefined);
        cancelled.end(framed(searchMessage()));
        cancelled.close(h2.NGHTTP2_CANCEL);
      }
      expect(await call(s, framed(searchMessage()))).toMatchObject({ grpcStatus: '0' });
    } finally {
      s.close();
    }
    await healthy();
  });

  it('answers every route over HTTP/2, the planning API forwarded without the pseudo-headers', async () => {
    const s = session();
    const request = (path: string, method = 'GET', body?: string) =>
      new Promise<{ status?: number; body: string }>((resolve) => {
        const r = s.request({ ':path': path, ':method': method, authorization: `Bearer ${key}`, 'x-tenant-id': tenant, ...(body ? { 'content-type': 'application/json' } : {}) });
        const out: { status?: number; body: string } = { body: '' };
        r.on('response', (h) => (out.status = Number(h[':status'])));
        r.on('data', (d: Buffer) => (out.body += d.toString()));
        r.on('error', () => undefined);
        r.on('close', () => resolve(out));
        r.end(body);
      });
    try {
      const created = await request('/api/v1/products', 'POST', JSON.stringify({ product: { name: 'Over h2', reference_prefix: 'HTWO' } }));
      expect(created.status).toBe(201);
      expect(JSON.parse(created.body).product).toMatchObject({ name: 'Over h2', reference_prefix: 'HTWO' });
      const listed = await request('/api/v1/products');
      expect(listed.status).toBe(200);
      expect(JSON.parse(listed.body).products.map((p: { name: string }) => p.name)).toContain('Over h2');
      expect(await request('/logquery/loki/api/v1/labels')).toEqual({ status: 200, body: '{"status":"success","data":[]}' });
    } finally {
      s.close();
    }
  });

  /** Raw bytes on a new connection; what came back before the server closed it (or 3 s passed). */
  const raw = (bytes: Buffer | string) =>
    new Promise<string>((resolve) => {
      const sock = connectTcp(Number(new URL(floe.routerUrl).port), '127.0.0.1');
      let got = Buffer.alloc(0);
      const timer = setTimeout(() => sock.destroy(), 3000);
      sock.on('data', (d) => (got = Buffer.concat([got, d])));
      sock.on('error', () => undefined);
      sock.on('close', () => {
        clearTimeout(timer);
        resolve(got.toString('latin1'));
      });
      sock.write(bytes);
    });

  it('answers a broken preface as a malformed HTTP/1.1 request, and closes an HTTP/2 session that sends garbage', async () => {
    expect(await raw('PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 [^]*"errorType":"bad_data"/);
    // GOAWAY (frame type 7) after the server's SETTINGS.
    expect(await raw(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.alloc(100, 0xff)]))).toContain('\u0007\u0000\u0000\u0000\u0000\u0000');
    // An h2c upgrade is not taken: the request is answered over HTTP/1.1.
    expect(await raw('GET /ready HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 OK[^]*ready/);
    await healthy();
  });

  it('refuses oversized header blocks on their own connection only', async () => {
    const s = session();
    const status = (headers: Record<string, string>) =>
      new Promise<number | undefined>((resolve) => {
        const r = s.request({ ':path': '/ready', ...headers });
        let got: number | undefined;
        r.on('response', (h) => (got = Number(h[':status'])));
        r.on('error', () => undefined);
        r.resume();
        r.on('close', () => resolve(got));
        r.end();
      });
    try {
      expect(await status({ 'x-big': 'a'.repeat(200_000) })).toBeUndefined();
    } finally {
      s.destroy();
    }
    await healthy();
  });

  it('stays responsive to other clients through a rapid-reset flood and a client whose requests never finish', async () => {
    // Each request reset as soon as sent; without a check that its client is still there, each
    // started a query nobody would read, and the tenant's querier queue (1000) filled.
    const floods: Array<{ headers: Record<string, string>; body?: Buffer }> = [
      { headers: { ':path': '/tracequery/api/search?q=%7B%7D', 'x-tenant-id': tenant } },
      { headers: { ':method': 'POST', ':path': '/tempopb.StreamingQuerier/Search', 'content-type': 'application/grpc', 'x-scope-orgid': tenant }, body: framed(searchMessage()) },
    ];
    for (const { headers, body } of floods) {
      const flood = session();
      let goaway: number | undefined;
      flood.on('goaway', (code) => (goaway = code));
      for (let i = 0; i < 20_000 && !flood.destroyed && !flood.closed; i++) {
        const s = flood.request({ authorization: `Bearer ${key}`, ...headers });
        s.on('error', () => undefined);
        if (body) s.end(body);
        s.close(h2.NGHTTP2_CANCEL);
        if (i % 500 === 0) await new Promise((r) => setImmediate(r));
      }
      await waitFor('the flooding session told to go away', async () => (goaway !== undefined ? true : undefined), 10_000, 50);
      flood.destroy();
      await healthy();
    }

    const slow = session();
    try {
      for (let i = 0; i < 200; i++) {
        const s = slow.request({ ':method': 'POST', ':path': '/api/v1/query', authorization: `Bearer ${key}`, 'x-tenant-id': tenant, 'content-type': 'application/json' });
        s.on('error', () => undefined);
        s.write('{');
      }
      await healthy();
    } finally {
      slow.destroy();
    }
  });
});
