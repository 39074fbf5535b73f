import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import type { LogSelect } from '../ir/logs.ts';
import { lowerLogQuery, lowerStreamSelector } from './lower.ts';
import { parseLogQL } from './parse.ts';

const opts = { range: { startNs: 1n, endNs: 2n }, direction: 'backward', limit: 10 } as const;
const lower = (q: string) => lowerLogQuery(parseLogQL(q), q, opts);

function lowerError(q: string): FloeError {
  try {
    lower(q);
  } catch (err) {
    expect(err).toBeInstanceOf(FloeError);
    return err as FloeError;
  }
  throw new Error(`expected ${q} to fail`);
}

describe('lowerLogQuery', () => {
  it.each<[string, Pick<LogSelect, 'streams' | 'filters'>]>([
    ['{service="a", k8s.pod.name!~"x.+"}', { streams: [{ label: 'service', op: '=', value: 'a' }, { label: 'k8s.pod.name', op: '!~', value: 'x.+' }], filters: [] }],
    [
      '{a="b"} |= "x" or "y" != "z" |~ "r" !~ "s"',
      {
        streams: [{ label: 'a', op: '=', value: 'b' }],
        filters: [
          { kind: 'line', line: { op: 'contains', values: ['x', 'y'] } },
          { kind: 'line', line: { op: 'not_contains', values: ['z'] } },
          { kind: 'line', line: { op: 'match', values: ['r'] } },
          { kind: 'line', line: { op: 'not_match', values: ['s'] } },
        ],
      },
    ],
    // Parsers and formatters pass through; label filters after them filter; `=` on numbers is `==`.
    [
      '{a="b"} | json | logfmt | drop x | keep y | label_format z=y | decolorize | status = 200 or level=~"warn|error", user != ""',
      {
        streams: [{ label: 'a', op: '=', value: 'b' }],
        filters: [
          {
            kind: 'labels',
            predicate: {
              kind: 'or',
              left: { kind: 'compare', label: 'status', op: '==', value: 200 },
              right: {
                kind: 'and',
                left: { kind: 'match', match: { label: 'level', op: '=~', value: 'warn|error' } },
                right: { kind: 'match', match: { label: 'user', op: '!=', value: '' } },
              },
            },
          },
        ],
      },
    ],
    // No stage ever fails, so __error__ is always empty.
    [
      '{a="b"} | json | __error__="" | __error__!="" | __error__=~".+"',
      {
        streams: [{ label: 'a', op: '=', value: 'b' }],
        filters: [
          { kind: 'labels', predicate: { kind: 'const', value: true } },
          { kind: 'labels', predicate: { kind: 'const', value: false } },
          { kind: 'labels', predicate: { kind: 'const', value: false } },
        ],
      },
    ],
  ])('%s', (q, want) => {
    expect(lower(q)).toEqual({ kind: 'log_select', table: 'logs', range: opts.range, direction: 'backward', limit: 10, ...want });
  });

  it.each([
    ['sum(count_over_time({a="b"}[1m]))', 1, 1, /metric queries/],
    ['vector(1)+vector(1)', 1, 1, /metric queries/],
    ['{a="b"} |= ip("10.0.0.1")', 1, 9, /ip\(\) line filter/],
    ['{a="b"} |> "<_> x"', 1, 9, /pattern line filter \|>/],
    ['{a="b"}\n  | addr = ip("10.0.0.0/8")', 2, 5, /ip\(\) label filter/],
    ['{a="b"} | d > 10ms', 1, 11, /duration comparison d > 10ms/],
    ['{a="b"} | size >= 1KB', 1, 11, /byte-size comparison/],
    ['{a="b"} | line_format "{{.x}}" |= "y"', 1, 32, /line filter after line_format/],
  ])('%j is not_implemented (501) at line %i, col %i', (q, line, column, message) => {
    const err = lowerError(q);
    expect(err.kind).toBe('not_implemented');
    expect(err.httpStatus).toBe(501);
    expect(err.position).toMatchObject({ line, column });
    expect(err.message).toMatch(message);
  });
});

describe('lowerStreamSelector', () => {
  it('keeps the matchers and ignores a pipeline, like Loki', () => {
    const q = '{a="b", c.d=~"e"} |= "x"';
    expect(lowerStreamSelector(parseLogQL(q), q)).toEqual([
      { label: 'a', op: '=', value: 'b' },
      { label: 'c.d', op: '=~', value: 'e' },
    ]);
  });
  it('refuses a metric query with bad_data', () => {
    const q = 'rate({a="b"}[1m])';
    expect(() => lowerStreamSelector(parseLogQL(q), q)).toThrow(/expecting a log stream selector/);
  });
});
