import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { parsePromQL, typeOf } from './parse.ts';
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
});
