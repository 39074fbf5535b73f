import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import type { LogsQuery, TracesQuery } from './schema.ts';
import { logSelectOf, metricGridOf, profileSelectionOf, rangeOf, spanFieldOf, traceSearchOf } from './to-ir.ts';
import { topFunctions } from './run.ts';

const range = { start: '2026-01-01T00:00:00Z', end: '1767229200000000000' };
const S = 1_767_225_600_000_000_000n;

const failure = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return { kind: (err as FloeError).kind, message: (err as FloeError).message };
  }
  return undefined;
};

describe('Query IR JSON → IR', () => {
  it('reads RFC 3339 and unix nanoseconds into a half-open range', () => {
    expect(rangeOf(range)).toEqual({ startNs: S, endNs: S + 3_600_000_000_000n });
  });

  it('maps a log selection: matchers, line and label filters, one row past the limit', () => {
    const q: LogsQuery = {
      source: 'logs',
      range,
      streams: [{ label: 'service_name', op: '=', value: 'checkout' }],
      filters: [
        { type: 'line', op: 'contains', value: 'error' },
        { type: 'label', label: 'http.status_code', op: '>=', value: 500 },
        { type: 'label', label: 'user', op: '=~', value: 'a.*' },
      ],
      limit: 10,
    };
    expect(logSelectOf(q)).toEqual({
      kind: 'log_select',
      table: 'logs',
      range: { startNs: S, endNs: S + 3_600_000_000_000n },
      streams: [{ label: 'service_name', op: '=', value: 'checkout' }],
      filters: [
        { kind: 'line', line: { op: 'contains', values: ['error'] } },
        { kind: 'labels', predicate: { kind: 'compare', label: 'http.status_code', op: '>=', value: 500 } },
        { kind: 'labels', predicate: { kind: 'match', match: { label: 'user', op: '=~', value: 'a.*' } } },
      ],
      direction: 'backward',
      limit: 11,
    });
  });

  it('maps trace conditions to typed span fields and values', () => {
    const q: TracesQuery = {
      source: 'traces',
      range,
      conditions: [
        { field: 'resource.service.name', value: 'shop' },
        { field: 'status', value: 'error' },
        { field: 'span.http.status_code', value: 500 },
        { field: '.ratio', value: 1, type: 'float' },
        { field: 'resource.cache.hit', value: false },
      ],
      min_duration: '10ms',
    };
    expect(traceSearchOf(q)).toEqual({
      table: 'traces',
      range: { startNs: S, endNs: S + 3_600_000_000_000n },
      conditions: [
        { field: { kind: 'service' }, value: { type: 'string', value: 'shop' } },
        { field: { kind: 'status' }, value: { type: 'keyword', value: 'error' } },
        { field: { kind: 'attribute', scope: 'span', key: 'http.status_code' }, value: { type: 'int', value: 500n } },
        { field: { kind: 'attribute', scope: 'any', key: 'ratio' }, value: { type: 'float', value: 1 } },
        { field: { kind: 'attribute', scope: 'resource', key: 'cache.hit' }, value: { type: 'bool', value: false } },
      ],
      minDurationNs: 10_000_000n,
      limit: 21,
    });
  });

  it.each([
    ['end before start', () => rangeOf({ start: range.end, end: range.start }), 'bad_data', 'body.range.end'],
    ['unparsable time', () => rangeOf({ start: 'yesterday', end: range.end }), 'bad_data', 'body.range.start'],
    ['number with a match operator', () => logSelectOf({ source: 'logs', range, filters: [{ type: 'label', label: 'x', op: '=~', value: 5 }] }), 'bad_data', 'body.filters[0].op'],
    ['string with a numeric operator', () => logSelectOf({ source: 'logs', range, filters: [{ type: 'label', label: 'x', op: '>', value: '5' }] }), 'bad_data', 'body.filters[0].value'],
    ['status outside its keywords', () => traceSearchOf({ source: 'traces', range, conditions: [{ field: 'status', value: 'bad' }] }), 'bad_data', 'body.conditions[0].value'],
    ['an unknown field spelling', () => spanFieldOf('http.method', 'conditions[0].field'), 'bad_data', 'body.conditions[0].field'],
    ['an intrinsic the IR lacks: 501', () => spanFieldOf('duration', 'conditions[0].field'), 'not_implemented', 'body.conditions[0].field'],
    ['event attributes: 501', () => spanFieldOf('event.x', 'conditions[0].field'), 'not_implemented', 'body.conditions[0].field'],
    ['a profile selector without a type', () => profileSelectionOf({ source: 'profiles', range, selector: '{service_name="a"}' }), 'bad_data', 'body.selector'],
    ['a zero step', () => metricGridOf({ source: 'metrics', range, promql: 'up', step: '0s' }), 'bad_data', 'body.step'],
    ['an end past int64 nanoseconds', () => rangeOf({ start: range.start, end: '9999-12-31T23:59:59Z' }), 'bad_data', 'body.range.end'],
    ['a start before int64 nanoseconds', () => rangeOf({ start: '-9999999999999999999', end: range.end }), 'bad_data', 'body.range.start'],
    ['an unbalanced stream regex', () => logSelectOf({ source: 'logs', range, streams: [{ label: 'a', op: '=~', value: '(' }] }), 'bad_data', 'body.streams[0].value'],
    ['a line regex with a backreference', () => logSelectOf({ source: 'logs', range, filters: [{ type: 'line', op: 'contains', value: '(' }, { type: 'line', op: 'not_match', value: '(a)\\1' }] }), 'bad_data', 'body.filters[1].value'],
    ['a label regex with lookahead', () => logSelectOf({ source: 'logs', range, filters: [{ type: 'label', label: 'x', op: '!~', value: '(?=a)' }] }), 'bad_data', 'body.filters[0].value'],
  ])('%s → %s naming the field', (_name, f, kind, field) => {
    const e = failure(f);
    expect(e?.kind).toBe(kind);
    expect(e?.message).toContain(field);
  });

  it('grids PromQL in milliseconds over [start, end)', () => {
    expect(metricGridOf({ source: 'metrics', range, promql: 'up', step: '1m' })).toEqual({ startMs: 1_767_225_600_000, endMs: 1_767_229_199_999, stepMs: 60_000 });
  });

  it('ranks profile functions by self, counting a recursive frame once per stack', () => {
    expect(topFunctions([{ stack: ['leaf', 'mid', 'mid', 'main'], value: 5 }, { stack: ['mid', 'main'], value: 2 }])).toEqual([
      { name: 'leaf', self: 5, total: 5 },
      { name: 'mid', self: 2, total: 7 },
      { name: 'main', self: 0, total: 7 },
    ]);
  });
});
