import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTraceQL } from '../traceql/parse.ts';
import type { SpanField, TraceSearch } from '../ir/traces.ts';
import { planTraceSearch, planTraceTagNames, planTraceTagValues, traceSearchResults } from './traces.ts';
import { TRACES, openTracesDb, type SpanRow, type TracesDb } from './traces-test-db.ts';

/**
 * The trace search and tag plans run on DuckDB over a `traces` table of the real schema, checked
 * against hand-worked answers: which traces, in which order, with which spans and counts.
 */
const A = 'a'.repeat(32);
const B = 'b'.repeat(32);
const C = 'c'.repeat(32);
const ROWS: SpanRow[] = [
  {
    traceId: A, spanId: 'a1', name: 'GET /checkout', kind: 'server', status: 'ok', service: 'frontend', startNs: 1000n, durationNs: 900n,
    span: { str: { 'http.method': 'GET' }, int: { 'http.status_code': 200 } }, resource: { str: { 'service.name': 'frontend', env: 'prod' } },
  },
  {
    traceId: A, spanId: 'a2', parentSpanId: 'a1', name: 'charge', kind: 'client', status: 'error', service: 'payments', startNs: 1100n, durationNs: 300n,
    span: { str: { 'http.method': 'POST' }, int: { 'http.status_code': 500 }, bool: { retry: true } }, resource: { str: { 'service.name': 'payments', env: 'prod' } },
  },
  { traceId: A, spanId: 'a3', parentSpanId: 'a1', name: 'charge', status: 'error', service: 'payments', startNs: 1500n, durationNs: 100n, span: { int: { 'http.status_code': 503 }, double: { ratio: 0.5 } } },
  {
    traceId: B, spanId: 'b1', name: 'GET /home', kind: 'server', service: 'frontend', startNs: 5000n, durationNs: 50n,
    span: { str: { 'http.method': 'GET' }, double: { 'http.status_code': 200 } }, resource: { str: { env: 'stage' } },
  },
  // A trace whose root span is not in the table (yet).
  { traceId: C, spanId: 'c2', parentSpanId: 'c1', name: 'charge', status: 'error', service: 'payments', startNs: 9000n, durationNs: 10n },
];

let db: TracesDb;
beforeAll(async () => {
  db = await openTracesDb(ROWS);
});
afterAll(() => db.close());

const range = { startNs: 0n, endNs: 100_000n };

interface Found {
  trace: string;
  root: [unknown, unknown];
  start: number;
  durationNs: number;
  matched: number;
  spans: string[];
}

async function search(q: string, extra: Partial<TraceSearch> = {}): Promise<Found[]> {
  const rows = await db.run(planTraceSearch({ table: 'traces', range, conditions: parseTraceQL(q), limit: 20, ...extra }, TRACES));
  const out: Found[] = [];
  for (const r of rows) {
    let t = out.at(-1);
    if (!t || t.trace !== r.trace_id) {
      t = { trace: String(r.trace_id), root: [r.root_service, r.root_name], start: Number(r.trace_start), durationNs: Number(r.trace_end) - Number(r.trace_start), matched: Number(r.matched), spans: [] };
      out.push(t);
    }
    t.spans.push(String(r.span_id));
  }
  return out;
}

describe('planTraceSearch', () => {
  it('{} finds every trace, newest first, with its bounds, root span and matching spans', async () => {
    expect(await search('{}')).toEqual([
      { trace: C, root: [null, null], start: 9000, durationNs: 10, matched: 1, spans: ['c2'] },
      { trace: B, root: ['frontend', 'GET /home'], start: 5000, durationNs: 50, matched: 1, spans: ['b1'] },
      { trace: A, root: ['frontend', 'GET /checkout'], start: 1000, durationNs: 900, matched: 3, spans: ['a1', 'a2', 'a3'] },
    ]);
  });

  it('keeps the traces with a matching span; the root and bounds still come from all their spans', async () => {
    expect(await search('{ status = error }')).toEqual([
      { trace: C, root: [null, null], start: 9000, durationNs: 10, matched: 1, spans: ['c2'] },
      { trace: A, root: ['frontend', 'GET /checkout'], start: 1000, durationNs: 900, matched: 2, spans: ['a2', 'a3'] },
    ]);
    expect((await search('{ name = "charge" && kind = client }')).map((t) => [t.trace, t.spans])).toEqual([[A, ['a2']]]);
  });

  it('spansPerSpanSet caps the spans shown, not the matched count', async () => {
    expect((await search('{ status = error }', { spansPerSpanSet: 1 })).map((t) => [t.trace, t.matched, t.spans])).toEqual([
      [C, 1, ['c2']],
      [A, 2, ['a2']],
    ]);
  });

  it('a number matches integer and floating-point attributes of that value; a string or boolean only its own type', async () => {
    const traces = async (q: string) => (await search(q)).map((t) => [t.trace, t.spans]);
    expect(await traces('{ .http.status_code = 200 }')).toEqual([[B, ['b1']], [A, ['a1']]]);
    expect(await traces('{ span.http.status_code = 200.0 }')).toEqual([[B, ['b1']], [A, ['a1']]]);
    expect(await traces('{ .http.status_code = "200" }')).toEqual([]);
    expect(await traces('{ .ratio = 0.5 }')).toEqual([[A, ['a3']]]);
    expect(await traces('{ .retry = true }')).toEqual([[A, ['a2']]]);
    expect(await traces('{ .retry = false }')).toEqual([]);
  });

  it('scopes: resource.x reads the resource, span.x the span, .x either', async () => {
    const traces = async (q: string) => (await search(q)).map((t) => [t.trace, t.spans]);
    expect(await traces('{ resource.env = "prod" }')).toEqual([[A, ['a1', 'a2']]]);
    expect(await traces('{ .env = "prod" }')).toEqual([[A, ['a1', 'a2']]]);
    expect(await traces('{ span.env = "prod" }')).toEqual([]);
    expect(await traces('{ resource.service.name = "payments" }')).toEqual([[C, ['c2']], [A, ['a2', 'a3']]]);
    expect(await traces('{ .http.method = "GET" && resource.env = "stage" }')).toEqual([[B, ['b1']]]);
  });

  it('returns the queried attributes and the service of each span', async () => {
    const rows = await db.run(planTraceSearch({ table: 'traces', range, conditions: parseTraceQL('{ .http.status_code = 200 && .service.name = "frontend" }'), limit: 20 }, TRACES));
    expect(rows.map((r) => [r.span_id, r.service, r.attr0_int, r.attr0_double])).toEqual([
      ['b1', 'frontend', null, 200],
      ['a1', 'frontend', 200n, null],
    ]);
    // Only the maps a number can equal are read: not the strings, not the booleans.
    expect(Object.keys(rows[0]!).filter((k) => k.startsWith('attr'))).toEqual(['attr0_int', 'attr0_double']);
  });

  it('reads the rows into found traces with typed attributes', async () => {
    const ir: TraceSearch = { table: 'traces', range, conditions: parseTraceQL('{ .http.status_code = 200 && resource.service.name = "frontend" }'), limit: 20 };
    expect(traceSearchResults(ir, await db.run(planTraceSearch(ir, TRACES)))).toEqual([
      {
        traceId: B, rootServiceName: 'frontend', rootTraceName: 'GET /home', startNs: 5000n, durationNs: 50n, matched: 1,
        spans: [{ spanId: 'b1', name: 'GET /home', startNs: 5000n, durationNs: 50n, attributes: [{ key: 'service.name', value: { type: 'string', value: 'frontend' } }, { key: 'http.status_code', value: { type: 'float', value: 200 } }] }],
      },
      {
        traceId: A, rootServiceName: 'frontend', rootTraceName: 'GET /checkout', startNs: 1000n, durationNs: 900n, matched: 1,
        spans: [{ spanId: 'a1', name: 'GET /checkout', startNs: 1000n, durationNs: 900n, attributes: [{ key: 'service.name', value: { type: 'string', value: 'frontend' } }, { key: 'http.status_code', value: { type: 'int', value: 200n } }] }],
      },
    ]);
    const orphan: TraceSearch = { table: 'traces', range, conditions: parseTraceQL('{ .nothing = "here" } '), limit: 20 };
    expect(traceSearchResults(orphan, await db.run(planTraceSearch(orphan, TRACES)))).toEqual([]);
    const rootless: TraceSearch = { table: 'traces', range: { startNs: 8000n, endNs: 10_000n }, conditions: [], limit: 20 };
    const [c] = traceSearchResults(rootless, await db.run(planTraceSearch(rootless, TRACES)));
    expect(c).toEqual({ traceId: C, rootServiceName: '<root span not yet received>', startNs: 9000n, durationNs: 10n, matched: 1, spans: [{ spanId: 'c2', name: 'charge', startNs: 9000n, durationNs: 10n, attributes: [] }] });
  });

  it('duration bounds apply to the whole trace; limit keeps the newest', async () => {
    expect((await search('{}', { minDurationNs: 500n })).map((t) => t.trace)).toEqual([A]);
    expect((await search('{}', { maxDurationNs: 50n })).map((t) => t.trace)).toEqual([C, B]);
    expect((await search('{}', { minDurationNs: 20n, maxDurationNs: 100n })).map((t) => t.trace)).toEqual([B]);
    expect((await search('{}', { limit: 1 })).map((t) => t.trace)).toEqual([C]);
    expect((await search('{ status = error }', { limit: 1, minDurationNs: 100n })).map((t) => t.trace)).toEqual([A]);
  });

  it('the window bounds span starts; values are parameters, never SQL', async () => {
    expect((await search('{}', { range: { startNs: 0n, endNs: 2000n } })).map((t) => [t.trace, t.spans])).toEqual([[A, ['a1', 'a2', 'a3']]]);
    expect(await search(`{ .http.method = "x' OR '1'='1" }`)).toEqual([]);
    expect(await search(`{ span."x'] OR 1=1 --" = "GET" }`)).toEqual([]);
    const plan = planTraceSearch({ table: 'traces', range, conditions: parseTraceQL(`{ .k = "'; DROP TABLE traces; --" }`), limit: 20 }, TRACES);
    expect(plan.sql).not.toContain('DROP');
    expect(plan.params).toContain("'; DROP TABLE traces; --");
    expect(plan.hints).toEqual({ start_ns: '0', end_ns: '99999' });
  });
});

describe('planTraceTagNames / planTraceTagValues', () => {
  it('lists the attribute keys of the sampled spans per scope', async () => {
    const rows = await db.run(planTraceTagNames({ table: 'traces', range, conditions: [], sampleLimit: 1000 }, TRACES));
    expect(rows.map((r) => [r.scope, r.name])).toEqual([
      ['resource', 'env'],
      ['resource', 'service.name'],
      ['span', 'http.method'],
      ['span', 'http.status_code'],
      ['span', 'ratio'],
      ['span', 'retry'],
    ]);
    const newest = await db.run(planTraceTagNames({ table: 'traces', range, conditions: [], sampleLimit: 2 }, TRACES));
    expect(newest.map((r) => r.name)).toEqual(['env', 'http.method', 'http.status_code']);
  });

  it('lists only the keys of spans that meet the conditions (a tag request\'s q)', async () => {
    const rows = await db.run(planTraceTagNames({ table: 'traces', range, conditions: parseTraceQL('{ name = "GET /home" }'), sampleLimit: 1000 }, TRACES));
    expect(rows.map((r) => [r.scope, r.name])).toEqual([
      ['resource', 'env'],
      ['span', 'http.method'],
      ['span', 'http.status_code'],
    ]);
  });

  const values = async (field: SpanField, extra: { conditions?: string; sampleLimit?: number; limit?: number; rootOnly?: boolean } = {}) =>
    (
      await db.run(
        planTraceTagValues({ table: 'traces', range, field, rootOnly: extra.rootOnly, conditions: extra.conditions ? parseTraceQL(extra.conditions) : [], sampleLimit: extra.sampleLimit ?? 1000, limit: extra.limit ?? 1000 }, TRACES),
      )
    ).map((r) => [r.type, r.value]);

  it('lists typed values of an attribute, an intrinsic or the service, deduplicated and sorted', async () => {
    expect(await values({ kind: 'attribute', scope: 'any', key: 'http.status_code' })).toEqual([
      ['int', '200'],
      ['float', '200.0'],
      ['int', '500'],
      ['int', '503'],
    ]);
    expect(await values({ kind: 'attribute', scope: 'any', key: 'env' })).toEqual([['string', 'prod'], ['string', 'stage']]);
    expect(await values({ kind: 'status' })).toEqual([['keyword', 'error'], ['keyword', 'ok'], ['keyword', 'unset']]);
    expect(await values({ kind: 'kind' })).toEqual([['keyword', 'client'], ['keyword', 'internal'], ['keyword', 'server']]);
    expect(await values({ kind: 'service' })).toEqual([['string', 'frontend'], ['string', 'payments']]);
    expect(await values({ kind: 'attribute', scope: 'any', key: 'nope' })).toEqual([]);
  });

  it('honours the conditions, the sample and the limit', async () => {
    expect(await values({ kind: 'status' }, { conditions: '{ resource.service.name = "payments" }' })).toEqual([['keyword', 'error']]);
    expect(await values({ kind: 'name' }, { sampleLimit: 1 })).toEqual([['string', 'charge']]);
    expect(await values({ kind: 'name' }, { limit: 2 })).toEqual([['string', 'GET /checkout'], ['string', 'GET /home']]);
  });

  it('lists the root spans\' services and names (rootServiceName, rootName)', async () => {
    expect(await values({ kind: 'service' }, { rootOnly: true })).toEqual([['string', 'frontend']]);
    expect(await values({ kind: 'name' }, { rootOnly: true })).toEqual([['string', 'GET /checkout'], ['string', 'GET /home']]);
  });
});
