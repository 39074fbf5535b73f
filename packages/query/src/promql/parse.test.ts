import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { parsePromDuration, parsePromQL, typeOf } from './parse.ts';
import { formatPromQL } from './format.ts';

const err = (q: string): FloeError => {
  try {
    parsePromQL(q);
  } catch (e) {
    return e as FloeError;
  }
  throw new Error(`parsed: ${q}`);
};

describe('parsePromQL', () => {
  it('builds selectors with matchers, ranges, offset and @', () => {
    const e = parsePromQL('rate(http_requests_total{job="api", code=~"5.."}[5m] offset 1m @ 100)');
    expect(e.type).toBe('call');
    if (e.type !== 'call') return;
    const m = e.args[0]!;
    expect(m.type).toBe('matrix');
    if (m.type !== 'matrix') return;
    expect(m.rangeMs).toBe(300_000);
    expect(m.selector.offsetMs).toBe(60_000);
    expect(m.selector.at).toEqual({ kind: 'time', ms: 100_000 });
    expect(m.selector.matchers).toEqual([
      { name: '__name__', op: '=', value: 'http_requests_total' },
      { name: 'job', op: '=', value: 'api' },
      { name: 'code', op: '=~', value: '5..' },
    ]);
  });

  it('keeps precedence, matching clauses and bool', () => {
    const e = parsePromQL('a + b * c > bool on(x) group_left(y) d');
    expect(formatPromQL(e)).toBe('a + b * c > bool on (x) group_left (y) d');
    if (e.type !== 'binary') throw new Error('binary');
    expect(e.matching).toEqual({ card: 'many-to-one', on: true, labels: ['x'], include: ['y'] });
    expect(e.lhs.type).toBe('binary');
    expect(typeOf(parsePromQL('1 + 2'))).toBe('scalar');
  });

  it('reads unary minus before ^ as Prometheus does', () => {
    const e = parsePromQL('-2 ^ 2');
    expect(e.type).toBe('unary');
  });

  it('takes an @ time an int64 of milliseconds holds (past the stored range as its end), and refuses others', () => {
    expect(parsePromQL('x @ 1e12')).toMatchObject({ type: 'selector', at: { kind: 'time', ms: 9_223_372_036_854 } });
    expect(parsePromQL('x @ -1e12')).toMatchObject({ type: 'selector', at: { kind: 'time', ms: -9_223_372_036_854 } });
    expect(parsePromQL('x @ 1700000000.5')).toMatchObject({ type: 'selector', at: { kind: 'time', ms: 1_700_000_000_500 } });
    for (const q of ['x @ 1e308', 'x[5m] @ -1e308', 'x @ 9.3e15']) expect(() => parsePromQL(q), q).toThrow(/timestamp out of bounds for @ modifier/);
  });

  it('parses subqueries, aggregations with modifiers after the body, and @ start()', () => {
    const e = parsePromQL('max_over_time(sum(rate(x[1m])) without (a)[10m:30s] @ start())');
    if (e.type !== 'call' || e.args[0]!.type !== 'subquery') throw new Error('subquery');
    expect(e.args[0]!.stepMs).toBe(30_000);
    expect(e.args[0]!.at).toEqual({ kind: 'start' });
  });

  it('binds a trailing offset or @ to the operand it follows, as Prometheus does', () => {
    const e = parsePromQL('k_total - k_total offset 15s');
    if (e.type !== 'binary' || e.lhs.type !== 'selector' || e.rhs.type !== 'selector') throw new Error('binary of selectors');
    expect([e.lhs.offsetMs, e.rhs.offsetMs]).toEqual([0, 15_000]);
    const at = parsePromQL('a * b + c @ 100');
    if (at.type !== 'binary' || at.rhs.type !== 'selector' || at.lhs.type !== 'binary') throw new Error('binary');
    expect(at.rhs.at).toEqual({ kind: 'time', ms: 100_000 });
    expect(at.lhs.rhs.type === 'selector' && at.lhs.rhs.at).toBe(undefined);
    const neg = parsePromQL('-x offset 1m');
    if (neg.type !== 'unary' || neg.expr.type !== 'selector') throw new Error('unary');
    expect(neg.expr.offsetMs).toBe(60_000);
    // A parenthesised expression takes no modifier.
    expect(err('(a - b) offset 1m').message).toMatch(/must follow a vector selector/);
  });

  it('refuses syntax errors with a position', () => {
    const e = err('sum(rate(x[5m])');
    expect(e.kind).toBe('bad_data');
    expect(e.message).toMatch(/^parse error at line 1, col \d+: /);
    expect(e.position?.line).toBe(1);
    expect(err('foo{a=}').message).toMatch(/col 7/);
  });

  it('refuses what Prometheus refuses after parsing', () => {
    expect(err('1 > 2').message).toMatch(/BOOL modifier/);
    expect(err('{a=""}').message).toMatch(/non-empty matcher/);
    expect(err('rate(x)').message).toMatch(/expected type range vector/);
    expect(err('sum(x[5m])').message).toMatch(/expected type instant vector/);
    expect(err('x and 1').message).toMatch(/set operator/);
    expect(err('nosuchfn(x)').kind).toBe('bad_data');
    expect(err('x{a=~"("}').message).toMatch(/invalid regular expression/);
  });

  const matcherValue = (q: string, label: string) => {
    const e = parsePromQL(q);
    if (e.type !== 'selector') throw new Error('selector');
    return e.matchers.find((m) => m.name === label)?.value;
  };

  it('reads strings as Go does: \\x and octal escapes are UTF-8 bytes', () => {
    expect(matcherValue('x{a="caf\\xc3\\xa9"}', 'a')).toBe('café');
    expect(matcherValue('x{a="caf\\303\\251"}', 'a')).toBe('café');
    expect(matcherValue("x{a='\\u00e9\\U0001F600\\t'}", 'a')).toBe('é😀\t');
    expect(matcherValue('x{a=`raw\\n`}', 'a')).toBe('raw\\n');
  });

  it('refuses NUL and bad escapes in strings, under the PromQL error code', () => {
    for (const q of ['x{a="\\x00"}', 'x{a="\\000"}', 'x{a="\\u0000"}', 'x{a="\\q"}', 'x{a="\\xZZ"}']) {
      const e = err(q);
      expect(e.kind, q).toBe('bad_data');
      expect(e.code, q).toBe('FLOE_ERR_PROMQL_PARSE');
      expect(e.message, q).toMatch(/^parse error at line 1, col \d+: /);
    }
    expect(err('x{a="\\x00"}').message).toMatch(/NUL/);
  });

  it('accepts RE2 regexes Prometheus accepts', () => {
    expect(matcherValue('foo{a=~"(?i)bar"}', 'a')).toBe('(?i)bar');
    expect(matcherValue('foo{a=~"\\\\Q.\\\\E[[:alpha:]]"}', 'a')).toBe('\\Q.\\E[[:alpha:]]');
    expect(err('foo{a=~"a(?=b)"}').message).toMatch(/invalid regular expression/);
    // (?i) does not make an empty-matching selector selective.
    expect(err('{a=~"(?i).*"}').message).toMatch(/non-empty matcher/);
  });

  it('reads durations with units in order, each once, or as seconds', () => {
    expect(parsePromDuration('1h30m')).toBe(5_400_000);
    expect(parsePromDuration('250ms')).toBe(250);
    expect(parsePromDuration('1.5')).toBe(1500);
    expect(parsePromDuration('1e3')).toBe(1_000_000);
    for (const bad of ['1s1h', '1m1m', '', '1e400', '99999999999999999y']) {
      expect(parsePromDuration(bad), bad).toBeUndefined();
    }
    for (const q of ['rate(x[1s1h])', 'rate(x[1m1m])']) expect(err(q).kind, q).toBe('bad_data');
  });
});
