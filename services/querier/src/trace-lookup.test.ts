import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableRows } from '@floe/flight';
import { emptyColumnsDdl, rebuildTrace, tracesTable, type SpanRow } from '@floe/schema';
import { silentLogger } from '@floe/telemetry';
import { createTrustedRunner, type TrustedRunner } from './sandbox/index.ts';
import { openTracesFixture, type TracesFixture } from './test-support.ts';
import { TraceLookup } from './trace-lookup.ts';

const TRACE_A = 'a1'.repeat(16);
const TRACE_B = 'b2'.repeat(16);
const TRACE_C = 'c3'.repeat(16);
const HOUR = 480_000;
const BASE = BigInt(HOUR) * 3_600_000_000_000n;
const BIG = 2n ** 60n + 7n; // beyond 2^53: must survive the JSON of id blocks

function span(traceId: string, n: number, service: string): string {
  const start = BASE + BigInt(n) * 1_000_000n;
  return JSON.stringify({
    trace_id: traceId,
    span_id: (n + 1).toString(16).padStart(16, '0'),
    parent_span_id: n % 3 === 0 ? '' : n.toString(16).padStart(16, '0'),
    trace_state: 'k=v',
    name: `op-${n}`,
    kind: n % 2 ? 'client' : 'server',
    start_time_unix_nano: start.toString(),
    end_time_unix_nano: (start + 5000n).toString(),
    duration_nano: '5000',
    status_code: n % 4 === 0 ? 'error' : 'ok',
    status_message: n % 4 === 0 ? 'boom' : '',
    service_name: service,
    scope_name: 'scope',
    scope_version: '2',
    flags: 1,
    span_attr_str: { 'http.route': `/r/${n}`, 'quote"tab\t': 'line\nbreak' },
    span_attr_int: { big: BIG.toString(), small: n },
    span_attr_double: { ratio: n / 4 },
    span_attr_bool: { hit: n % 2 === 0 },
    resource_attr_str: { 'service.name': service },
    resource_attr_int: { 'host.cpus': 8 },
    resource_attr_double: {},
    resource_attr_bool: {},
    events_json: JSON.stringify([{ timeUnixNano: start.toString(), name: 'exception', attributes: [{ key: 'exception.message', value: { stringValue: 'x' } }] }]),
    links_json: null,
    dropped_counts: null,
  });
}

let fixture: TracesFixture;
let trusted: TrustedRunner;
let lookup: TraceLookup;
let indexedFile: string;

const append = async (tenant: string, lines: string[], idBlocks: boolean): Promise<string> => fixture.store.localPath(await fixture.append(tenant, lines, HOUR, { idBlocks }))!;

beforeAll(async () => {
  fixture = await openTracesFixture('trace-lookup');
  trusted = createTrustedRunner();
  // acme: a compacted file with id blocks (A, B) and a fresh flush file without (A, C).
  indexedFile = await append('acme', [span(TRACE_A, 0, 'front'), span(TRACE_B, 1, 'front'), span(TRACE_A, 2, 'cart'), span(TRACE_A, 3, 'db'), span(TRACE_B, 4, 'db')], true);
  await append('acme', [span(TRACE_A, 5, 'cart'), span(TRACE_A, 6, 'front'), span(TRACE_C, 7, 'db')], false);
  // Another tenant with the same trace id.
  await append('other', [span(TRACE_A, 9, 'intruder')], true);
  lookup = new TraceLookup(fixture.resolver, fixture.store, (o) => trusted.run(o), silentLogger());
});

afterAll(async () => {
  trusted?.close();
  await fixture?.close();
});

const spansOf = (res: Awaited<ReturnType<TraceLookup['find']>>) => res.trace!.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
const find = (traceId: string, tenant = 'acme', range: { startNs?: bigint; endNs?: bigint } = {}) =>
  lookup.find({ tenant, dataset: 'default', traceId, timeoutMs: 10_000, ...range });

describe('trace by id through id blocks', () => {
  it('joins the spans of an indexed file and an unindexed one', async () => {
    const res = await find(TRACE_A);
    expect(spansOf(res).map((s) => s.name).sort()).toEqual(['op-0', 'op-2', 'op-3', 'op-5', 'op-6']);
    expect(res.metrics!.backendReads).toBe(1n);
    expect(res.metrics!.inspectedBytes).toBeGreaterThan(0n);
    // One resource per service, whichever file its spans came from.
    expect(res.trace!.resourceSpans).toHaveLength(3);
  });

  it('answers exactly what DuckDB reads from the same file, 64-bit integers included', async () => {
    const res = await find(TRACE_B);
    const scanned = await trusted.run({
      views: [{ name: 'traces', files: [indexedFile], emptySchemaSql: emptyColumnsDdl(tracesTable) }],
      sql: 'SELECT * FROM traces WHERE trace_id = $1',
      params: [TRACE_B],
      timeoutMs: 10_000,
    });
    const expected = rebuildTrace(tableRows<SpanRow>(scanned.table));
    expect(res.trace!.resourceSpans).toEqual(expected);
    const attrs = spansOf(res)[0]!.attributes;
    expect(attrs.find((a) => a.key === 'big')!.value!.value).toEqual({ case: 'intValue', value: BIG });
    expect(attrs.find((a) => a.key === 'quote"tab\t')!.value!.value).toEqual({ case: 'stringValue', value: 'line\nbreak' });
    expect(spansOf(res)[0]!.events[0]!.name).toBe('exception');
  });

  it('finds a trace held only by an unindexed file, and nothing for an unknown id', async () => {
    expect(spansOf(await find(TRACE_C)).map((s) => s.name)).toEqual(['op-7']);
    const none = await find('d4'.repeat(16));
    expect(none.trace!.resourceSpans).toEqual([]);
  });

  it('stays inside the tenant and the hours asked for', async () => {
    expect(spansOf(await find(TRACE_A, 'other')).map((s) => s.name)).toEqual(['op-9']);
    expect((await find(TRACE_A, 'nobody')).trace!.resourceSpans).toEqual([]);
    const later = BASE + 3_600_000_000_000n;
    expect((await find(TRACE_A, 'acme', { startNs: later, endNs: later + 10n })).trace!.resourceSpans).toEqual([]);
  });
});
