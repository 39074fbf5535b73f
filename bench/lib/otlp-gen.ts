import { randomBytes } from 'node:crypto';
import { ExportLogsServiceRequestSchema, ExportTraceServiceRequestSchema, create, toBinary } from '@floe/proto';

/**
 * Realistic OTLP request bodies for benchmarks: what an application's SDK batch processor
 * exports (one resource, one scope, a batch of records or spans). Every body carries a 16-byte
 * MARKER wherever a trace id goes, so a request can be made unique cheaply (MarkedTemplate)
 * without re-encoding: no two bodies of a run are byte-identical, and Floe's resend dedup stays out.
 */
export const MARKER = Buffer.alloc(16, 0xab);

const SERVICES = ['checkout', 'cart', 'payment', 'search', 'catalog', 'auth', 'shipping', 'email'];
const ROUTES = ['/api/v1/items/{id}', '/api/v1/cart', '/api/v1/checkout', '/api/v1/search', '/api/v1/users/{id}', '/healthz'];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE'];

type AnyValue = { value: { case: 'stringValue'; value: string } | { case: 'intValue'; value: bigint } | { case: 'doubleValue'; value: number } | { case: 'boolValue'; value: boolean } };
const str = (value: string): AnyValue => ({ value: { case: 'stringValue', value } });
const int = (value: number): AnyValue => ({ value: { case: 'intValue', value: BigInt(value) } });
const dbl = (value: number): AnyValue => ({ value: { case: 'doubleValue', value } });
const bool = (value: boolean): AnyValue => ({ value: { case: 'boolValue', value } });
const kv = (key: string, value: AnyValue) => ({ key, value });

const resourceOf = (service: number) => ({
  attributes: [
    kv('service.name', str(SERVICES[service % SERVICES.length]!)),
    kv('service.version', str(`1.${service % 5}.${service % 3}`)),
    kv('service.instance.id', str(`${SERVICES[service % SERVICES.length]}-${(service * 2654435761) % 0xffffff}`)),
    kv('host.name', str(`node-${service % 12}.prod.example.internal`)),
    kv('deployment.environment', str('production')),
    kv('telemetry.sdk.language', str('nodejs')),
  ],
});

/**
 * An application log batch: mostly request logs, some cache / db / auth lines, a few warnings and
 * errors with stack traces. `seq` numbers the batches of a service, so later batches carry other
 * ids, paths and durations.
 */
export function logsBody(records: number, service: number, seq = 0, nowNs = BigInt(Date.now()) * 1_000_000n): Buffer {
  const logRecords = Array.from({ length: records }, (_, i) => {
    const n = service * 100_003 + seq * records + i;
    const method = METHODS[n % METHODS.length]!;
    const route = ROUTES[(n >> 2) % ROUTES.length]!;
    const path = route.replace('{id}', String((n * 7919) % 100_000));
    const status = n % 53 === 0 ? 500 : n % 17 === 0 ? 404 : n % 5 === 0 ? 201 : 200;
    const ms = ((n * 37) % 25_000) / 10 + 0.3;
    const kind = n % 10;
    let severityNumber = 9;
    let severityText = 'INFO';
    let body: string;
    const attributes = [kv('code.function', str(kind < 6 ? 'handleRequest' : kind < 8 ? 'CacheClient.get' : 'Repository.query')), kv('thread.id', int(n % 16))];
    if (status === 500) {
      severityNumber = 17;
      severityText = 'ERROR';
      body = `${method} ${path} failed: Error: connect ECONNREFUSED 10.0.${n % 4}.${n % 250}:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16)\n    at Pool.connect (/app/node_modules/pg-pool/index.js:45:11)\n    at Repository.query (/app/src/repository.ts:88:20)`;
      attributes.push(kv('exception.type', str('Error')), kv('http.request.method', str(method)), kv('http.route', str(route)), kv('http.response.status_code', int(status)));
    } else if (kind < 6) {
      if (status === 404) {
        severityNumber = 13;
        severityText = 'WARN';
      }
      body = `${method} ${path} ${status} ${ms} ms - ${(n * 131) % 20_000} bytes`;
      attributes.push(
        kv('http.request.method', str(method)),
        kv('http.route', str(route)),
        kv('http.response.status_code', int(status)),
        kv('http.server.duration_ms', dbl(ms)),
        kv('user.id', str(`user-${(n * 104_729) % 50_000}`)),
      );
    } else if (kind < 8) {
      const hit = n % 3 !== 0;
      severityNumber = 5;
      severityText = 'DEBUG';
      body = `cache ${hit ? 'hit' : 'miss'} for key item:${(n * 7919) % 100_000}${hit ? '' : ', loading from database'}`;
      attributes.push(kv('cache.hit', bool(hit)), kv('cache.key', str(`item:${(n * 7919) % 100_000}`)));
    } else {
      body = `query SELECT * FROM items WHERE id = $1 took ${ms} ms (${n % 20} rows)`;
      attributes.push(kv('db.system', str('postgresql')), kv('db.operation', str('SELECT')), kv('db.rows', int(n % 20)), kv('db.duration_ms', dbl(ms)));
    }
    const withTrace = kind < 6 || status === 500;
    const t = nowNs + BigInt(i) * 1_000_000n;
    return {
      timeUnixNano: t,
      observedTimeUnixNano: t + 150_000n,
      severityNumber,
      severityText,
      body: str(body),
      attributes,
      flags: withTrace ? 1 : 0,
      traceId: withTrace ? MARKER : new Uint8Array(0),
      spanId: withTrace ? randomBytes(8) : new Uint8Array(0),
    };
  });
  const req = create(ExportLogsServiceRequestSchema, {
    resourceLogs: [{ resource: resourceOf(service), scopeLogs: [{ scope: { name: '@example/logger', version: '2.3.1' }, logRecords }] }],
  });
  return Buffer.from(toBinary(ExportLogsServiceRequestSchema, req));
}

/** An SDK span batch: `spans / 10` traces of 10 spans (one server span, nine internal / client children). */
export function spansBody(spans: number, service: number, seq = 0, nowNs = BigInt(Date.now()) * 1_000_000n): Buffer {
  let rootId = new Uint8Array(0);
  const list = Array.from({ length: spans }, (_, i) => {
    const n = service * 100_003 + seq * spans + i;
    const root = i % 10 === 0;
    const method = METHODS[n % METHODS.length]!;
    const route = ROUTES[(n >> 2) % ROUTES.length]!;
    const start = nowNs + BigInt(i) * 1_000_000n;
    const dur = BigInt(50_000 + ((n * 7919) % 5_000_000));
    const status = root && n % 53 === 0 ? 500 : 200;
    const attributes = root
      ? [kv('http.request.method', str(method)), kv('http.route', str(route)), kv('http.response.status_code', int(status)), kv('url.path', str(route.replace('{id}', String(n % 100_000)))), kv('user.id', str(`user-${(n * 104_729) % 50_000}`))]
      : i % 3 === 0
        ? [kv('db.system', str('postgresql')), kv('db.operation', str('SELECT')), kv('db.rows', int(n % 20))]
        : [kv('cache.hit', bool(n % 3 !== 0)), kv('cache.key', str(`item:${(n * 7919) % 100_000}`))];
    const spanId = randomBytes(8);
    if (root) rootId = spanId;
    return {
      traceId: MARKER,
      spanId,
      parentSpanId: root ? new Uint8Array(0) : rootId,
      name: root ? `${method} ${route}` : i % 3 === 0 ? 'SELECT items' : 'cache.get',
      kind: root ? 2 : i % 3 === 0 ? 3 : 1,
      startTimeUnixNano: start,
      endTimeUnixNano: start + dur,
      attributes,
      status: { code: status === 500 ? 2 : 0, message: status === 500 ? 'internal error' : '' },
    };
  });
  const req = create(ExportTraceServiceRequestSchema, {
    resourceSpans: [{ resource: resourceOf(service), scopeSpans: [{ scope: { name: '@opentelemetry/instrumentation-http', version: '0.301.0' }, spans: list }] }],
  });
  return Buffer.from(toBinary(ExportTraceServiceRequestSchema, req));
}

/** Where MARKER sits in a body. */
function markerOffsets(body: Buffer): number[] {
  const out: number[] = [];
  for (let i = body.indexOf(MARKER); i >= 0; i = body.indexOf(MARKER, i + 16)) out.push(i);
  return out;
}

/** bench/ingest-traces' body: one resource, `count` spans of MARKER's trace with five typed attributes each. */
export function ingestTracesBody(count: number): Buffer {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = Array.from({ length: count }, (_, i) => ({
    traceId: MARKER,
    spanId: randomBytes(8),
    parentSpanId: i === 0 ? new Uint8Array(0) : randomBytes(8),
    name: `GET /api/v1/items/${i % 20}`,
    kind: 2,
    startTimeUnixNano: now + BigInt(i) * 1000n,
    endTimeUnixNano: now + BigInt(i) * 1000n + 250_000n,
    attributes: [
      { key: 'http.method', value: { value: { case: 'stringValue' as const, value: 'GET' } } },
      { key: 'http.route', value: { value: { case: 'stringValue' as const, value: `/api/v1/items/${i % 20}` } } },
      { key: 'http.status_code', value: { value: { case: 'intValue' as const, value: 200n } } },
      { key: 'user.id', value: { value: { case: 'stringValue' as const, value: `user-${i * 7919}` } } },
      { key: 'cache.hit', value: { value: { case: 'boolValue' as const, value: i % 3 === 0 } } },
    ],
    status: { code: 1, message: '' },
  }));
  const req = create(ExportTraceServiceRequestSchema, {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: 'bench-svc' } } }, { key: 'host.name', value: { value: { case: 'stringValue', value: 'bench-host-1' } } }] },
        scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans }],
      },
    ],
  });
  return Buffer.from(toBinary(ExportTraceServiceRequestSchema, req));
}

/**
 * Copies of a template with a fresh random trace id in place of MARKER; `traceEvery` > 0 gives
 * each run of that many marker slots its own id (10 spans per trace), 0 one id for the body.
 */
export class MarkedTemplate {
  readonly body: Buffer;
  readonly offsets: number[];
  readonly items: number;
  readonly traceEvery: number;

  constructor(body: Buffer, items: number, traceEvery = 0) {
    this.body = body;
    this.offsets = markerOffsets(body);
    this.items = items;
    this.traceEvery = traceEvery;
  }

  next(): Buffer {
    const out = Buffer.from(this.body);
    let id = randomBytes(16);
    this.offsets.forEach((o, k) => {
      if (this.traceEvery > 0 && k > 0 && k % this.traceEvery === 0) id = randomBytes(16);
      id.copy(out, o);
    });
    return out;
  }
}
