import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import type { Expr } from './ast.ts';
import { maskDistinctStages } from './distinct.ts';
import { maskDottedNames } from './dotted.ts';
import { MAX_SYNTAX_DEPTH, parseLogQL } from './parse.ts';

/** The AST without spans, for compact expectations. */
const shape = (e: Expr) => JSON.parse(JSON.stringify(e, (k, v) => (k === 'span' ? undefined : v))) as unknown;

function parseError(q: string): FloeError {
  try {
    parseLogQL(q);
  } catch (err) {
    expect(err).toBeInstanceOf(FloeError);
    return err as FloeError;
  }
  throw new Error(`expected ${q} to fail`);
}

describe('distinct stages (accepted, rows passed through)', () => {
  it.each([
    ['{a="b"} | distinct x', '{a="b"}'],
    ['{a="b"} | json | distinct k8s.pod.name, level |= "err"', '{a="b"} | json |= "err"'],
    ['count_over_time({a="b"} |distinct x,y [5m])', 'count_over_time({a="b"} [5m])'],
    ['{a="b"} |= "| distinct x" | distinct x', '{a="b"} |= "| distinct x"'],
  ])('%j parses as %j', (q, without) => {
    // The same tree but for the spans, which keep pointing into each query's own text.
    const unspanned = (text: string) => JSON.parse(JSON.stringify(parseLogQL(text), (k, v: unknown) => (k === 'span' ? undefined : v)));
    expect(unspanned(q)).toEqual(unspanned(without));
  });
  it('keeps every position in the original text', () => {
    expect(maskDistinctStages('{a="b"} | distinct x,\n y | json')).toBe('{a="b"}              \n   | json');
  });
});

describe('maskDottedNames', () => {
  it.each([
    ['{k8s.pod.name="a.b"}', '{k8s_pod_name="a.b"}'],
    ['{a="x"} | http.status_code >= 1.5', '{a="x"} | http_status_code >= 1.5'],
    ['{a="x"} |= `k8s.pod` # note.with.dots', '{a="x"} |= `k8s.pod` # note.with.dots'],
    ["{a='it\\'s.x'} | b.c=\"d\\\".e\"", "{a='it\\'s.x'} | b_c=\"d\\\".e\""],
    ['sum by (k8s.ns) (rate({a="b"}[1m]))', 'sum by (k8s_ns) (rate({a="b"}[1m]))'],
    // A masked name must not turn into one of the grammar's keywords.
    ['{a="b"} | count_over.time="x"', '{a="b"} | count_over:time="x"'],
  ])('%s', (q, masked) => {
    expect(maskDottedNames(q)).toBe(masked);
    expect(maskDottedNames(q)).toHaveLength(q.length);
  });
});

describe('parseLogQL: deep nesting', () => {
  const chain = (n: number, op: string) => Array.from({ length: n }, () => '1').join(op);
  it('takes chains and parentheses real queries use, and refuses a tree past MAX_SYNTAX_DEPTH with a 400, not a stack overflow', () => {
    expect(parseLogQL(chain(200, '^'))).toMatchObject({ kind: 'binary', op: '^' });
    expect(parseLogQL(`${'('.repeat(200)}1${')'.repeat(200)}`)).toBeDefined();
    for (const text of [chain(1000, '^'), chain(30_000, '^'), chain(1000, ' * '), `${'('.repeat(MAX_SYNTAX_DEPTH + 1)}1${')'.repeat(MAX_SYNTAX_DEPTH + 1)}`]) {
      expect(() => parseLogQL(text), text.slice(0, 20)).toThrow(expect.objectContaining({ kind: 'bad_data' }));
    }
    expect(() => parseLogQL(chain(1000, '^'))).toThrow(/the query is nested too deeply/);
  });
});

describe('parseLogQL: log queries', () => {
  it.each<[string, unknown]>([
    [
      '{service_name="checkout", level!="debug", env=~"prod|stage", pod!~"canary-.*"}',
      {
        kind: 'log',
        selector: {
          matchers: [
            { label: 'service_name', op: '=', value: 'checkout' },
            { label: 'level', op: '!=', value: 'debug' },
            { label: 'env', op: '=~', value: 'prod|stage' },
            { label: 'pod', op: '!~', value: 'canary-.*' },
          ],
        },
        pipeline: [],
      },
    ],
    [
      '{k8s.pod.name="web-1"} | http.status_code >= 400',
      {
        kind: 'log',
        selector: { matchers: [{ label: 'k8s.pod.name', op: '=', value: 'web-1' }] },
        pipeline: [{ kind: 'label_filter', expr: { kind: 'number', label: 'http.status_code', op: '>=', value: 400 } }],
      },
    ],
    [
      '{app="a"} |= "x" != `y\\z` |~ "(?i)err" !~ "ok" |= "p" or "q"',
      {
        kind: 'log',
        selector: { matchers: [{ label: 'app', op: '=', value: 'a' }] },
        pipeline: [
          { kind: 'line_filter', op: '|=', values: ['x'], ip: false },
          { kind: 'line_filter', op: '!=', values: ['y\\z'], ip: false },
          { kind: 'line_filter', op: '|~', values: ['(?i)err'], ip: false },
          { kind: 'line_filter', op: '!~', values: ['ok'], ip: false },
          { kind: 'line_filter', op: '|=', values: ['p', 'q'], ip: false },
        ],
      },
    ],
    [
      '{app="a"} | json | a > 1 and b="c", c=~"d" or e <= -2.5',
      {
        kind: 'log',
        selector: { matchers: [{ label: 'app', op: '=', value: 'a' }] },
        pipeline: [
          { kind: 'parser', parser: 'json', extractions: [], flags: [] },
          {
            kind: 'label_filter',
            expr: {
              kind: 'or',
              left: {
                kind: 'and',
                left: {
                  kind: 'and',
                  left: { kind: 'number', label: 'a', op: '>', value: 1 },
                  right: { kind: 'matcher', matcher: { label: 'b', op: '=', value: 'c' } },
                },
                right: { kind: 'matcher', matcher: { label: 'c', op: '=~', value: 'd' } },
              },
              right: { kind: 'number', label: 'e', op: '<=', value: -2.5 },
            },
          },
        ],
      },
    ],
    [
      '{app="a"} | logfmt --strict a, b="c.d" | line_format "{{.a}}" | label_format x=y, z="{{.a}}" | decolorize | drop __error__, u="v" | keep a | regexp `(?P<n>\\d+)` | pattern "<_> <x>" | unpack',
      {
        kind: 'log',
        selector: { matchers: [{ label: 'app', op: '=', value: 'a' }] },
        pipeline: [
          { kind: 'parser', parser: 'logfmt', extractions: [{ label: 'a' }, { label: 'b', expression: 'c.d' }], flags: ['--strict'] },
          { kind: 'line_format', template: '{{.a}}' },
          { kind: 'label_format', assignments: [{ label: 'x', value: 'y', template: false }, { label: 'z', value: '{{.a}}', template: true }] },
          { kind: 'decolorize' },
          { kind: 'drop', labels: [{ label: '__error__' }, { label: 'u', matcher: { label: 'u', op: '=', value: 'v' } }] },
          { kind: 'keep', labels: [{ label: 'a' }] },
          { kind: 'parser', parser: 'regexp', expression: '(?P<n>\\d+)', extractions: [], flags: [] },
          { kind: 'parser', parser: 'pattern', expression: '<_> <x>', extractions: [], flags: [] },
          { kind: 'parser', parser: 'unpack', extractions: [], flags: [] },
        ],
      },
    ],
    // Go string escapes and a parenthesised selector.
    ['({a="tab\\there \\"q\\" \\u00e9 \\x41"})', { kind: 'log', selector: { matchers: [{ label: 'a', op: '=', value: 'tab\there "q" é A' }] }, pipeline: [] }],
  ])('%s', (q, want) => {
    expect(shape(parseLogQL(q))).toEqual(want);
  });

  it('keeps source positions of the original text, dotted names included', () => {
    const q = '{k8s.pod.name="x"}\n  | http.route="/a"';
    const e = parseLogQL(q);
    if (e.kind !== 'log') throw new Error('log expected');
    expect(e.selector.span).toEqual({ from: 0, to: 18 });
    expect(e.selector.matchers[0]!.span).toEqual({ from: 1, to: 17 });
    const stage = e.pipeline[0]!;
    expect(stage.span).toEqual({ from: 21, to: 38 });
    expect(q.slice(stage.span.from, stage.span.to)).toBe('| http.route="/a"');
  });
});

describe('parseLogQL: metric queries parse into the AST', () => {
  it('range and vector aggregations with grouping, offset and unwrap', () => {
    expect(shape(parseLogQL('sum by (level, k8s.ns) (count_over_time({a="b"} |= "x" [5m] offset 1h))'))).toEqual({
      kind: 'vector_aggregation',
      op: 'sum',
      grouping: { without: false, labels: ['level', 'k8s.ns'] },
      expr: {
        kind: 'range_aggregation',
        op: 'count_over_time',
        log: { kind: 'log', selector: { matchers: [{ label: 'a', op: '=', value: 'b' }] }, pipeline: [{ kind: 'line_filter', op: '|=', values: ['x'], ip: false }] },
        rangeMs: 300_000,
        offsetMs: 3_600_000,
      },
    });
    expect(shape(parseLogQL('quantile_over_time(0.99, {a="b"} | json | unwrap duration(d) | __error__="" [1m]) by (x)'))).toMatchObject({
      kind: 'range_aggregation',
      op: 'quantile_over_time',
      param: 0.99,
      unwrap: { label: 'd', conversion: 'duration', filters: [{ kind: 'matcher', matcher: { label: '__error__', op: '=', value: '' } }] },
      grouping: { without: false, labels: ['x'] },
    });
  });

  it('binary operators re-associate by Prometheus precedence (the grammar ranks + above *)', () => {
    const e = shape(parseLogQL('1 + 2 * 3 ^ 2 ^ 1 > bool 4 or vector(1)'));
    expect(e).toEqual({
      kind: 'binary',
      op: 'or',
      bool: false,
      left: {
        kind: 'binary',
        op: '>',
        bool: true,
        left: {
          kind: 'binary',
          op: '+',
          bool: false,
          left: { kind: 'number', value: 1 },
          right: {
            kind: 'binary',
            op: '*',
            bool: false,
            left: { kind: 'number', value: 2 },
            right: { kind: 'binary', op: '^', bool: false, left: { kind: 'number', value: 3 }, right: { kind: 'binary', op: '^', bool: false, left: { kind: 'number', value: 2 }, right: { kind: 'number', value: 1 } } },
          },
        },
        right: { kind: 'number', value: 4 },
      },
      right: { kind: 'vector', value: 1 },
    });
    // Parentheses are kept as written.
    expect(shape(parseLogQL('(1 + 2) * 3'))).toMatchObject({ op: '*', left: { op: '+' }, right: { value: 3 } });
  });

  it('vector matching modifiers', () => {
    expect(shape(parseLogQL('sum(rate({a="b"}[1m])) / on (x) group_left (y) sum(rate({a="c"}[1m]))'))).toMatchObject({
      kind: 'binary',
      op: '/',
      matching: { on: true, labels: ['x'], group: 'left', include: ['y'] },
    });
  });
});

describe('parseLogQL: errors are bad_data with line and column', () => {
  it.each([
    ['', 1, 1, /empty query/],
    ['   ', 1, 1, /empty query/],
    ['{a=b}', 1, 4, /unexpected "b", expecting a quoted string/],
    ['{}', 1, 2, /at least one label matcher/],
    ['{a="b" |= "x"', 1, 8, /unexpected "\|=", expecting "," or "}"/],
    ['{a="b"}\n| json\n| x > ', 3, 7, /unexpected end of query/],
    ['{a="b"} | x="\\d"', 1, 14, /invalid escape sequence "\\\\d"/],
    ['{a="b', 1, 4, /unterminated string/],
    ['{a="b"} |= `x', 1, 12, /unterminated string/],
    ["{a='b'}", 1, 4, /unexpected "'"/],
    ['{a=~"(("}', 1, 5, /invalid regular expression "\(\(": Unterminated group/],
    ['{a="b"} |~ "a(?=b)"', 1, 12, /lookahead and lookbehind are not supported/],
    ['{a="b"} |~ "(a)\\\\1"', 1, 12, /backreferences are not supported/],
    ['{a=""}', 1, 1, /at least one regexp or equality matcher that does not have an empty-compatible value/],
    ['{a=~".*", b!="x"}', 1, 1, /empty-compatible/],
    ['{a="\\x00"}', 1, 4, /NUL/],
    ['{a="b"} | distinct', 1, 19, /unexpected/],
    ['sum(rate({a="b"}[5x]))', 1, 18, /unexpected/],
  ])('%j → line %i, col %i', (q, line, column, message) => {
    const err = parseError(q);
    expect(err.kind).toBe('bad_data');
    expect(err.position).toMatchObject({ line, column });
    expect(err.message).toMatch(message);
    expect(err.message).toMatch(new RegExp(`^parse error at line ${line}, col ${column}: `));
  });
});
