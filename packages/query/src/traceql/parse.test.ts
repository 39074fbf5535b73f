import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { parseTraceQL } from './parse.ts';

/** Spec 1 "TraceQL subset": what parses, to what, and which refusals are 400 and which 501. */

const refusal = (q: string): { kind: string; message: string } => {
  try {
    parseTraceQL(q);
  } catch (err) {
    expect(err).toBeInstanceOf(FloeError);
    return { kind: (err as FloeError).kind, message: (err as FloeError).message };
  }
  throw new Error(`${q} parsed`);
};

describe('parseTraceQL: the subset', () => {
  it('reads {} as no conditions', () => {
    expect(parseTraceQL('{}')).toEqual([]);
    expect(parseTraceQL('  { }  ')).toEqual([]);
  });

  it('reads = matchers joined by && in order, each field and value type', () => {
    expect(
      parseTraceQL('{ .http.method = "GET" && span.http.status_code = 200 && resource.k8s.ns = "prod" && .ratio = 0.5 && span.cache.hit = true && name = "GET /" && status = error && kind = server }'),
    ).toEqual([
      { field: { kind: 'attribute', scope: 'any', key: 'http.method' }, value: { type: 'string', value: 'GET' } },
      { field: { kind: 'attribute', scope: 'span', key: 'http.status_code' }, value: { type: 'int', value: 200n } },
      { field: { kind: 'attribute', scope: 'resource', key: 'k8s.ns' }, value: { type: 'string', value: 'prod' } },
      { field: { kind: 'attribute', scope: 'any', key: 'ratio' }, value: { type: 'float', value: 0.5 } },
      { field: { kind: 'attribute', scope: 'span', key: 'cache.hit' }, value: { type: 'bool', value: true } },
      { field: { kind: 'name' }, value: { type: 'string', value: 'GET /' } },
      { field: { kind: 'status' }, value: { type: 'keyword', value: 'error' } },
      { field: { kind: 'kind' }, value: { type: 'keyword', value: 'server' } },
    ]);
  });

  it('reads service name as resource.service.name or .service.name, and span.service.name as a span attribute', () => {
    const service = [{ field: { kind: 'service' }, value: { type: 'string', value: 'api' } }];
    expect(parseTraceQL('{ resource.service.name = "api" }')).toEqual(service);
    expect(parseTraceQL('{ .service.name = "api" }')).toEqual(service);
    expect(parseTraceQL('{ span.service.name = "api" }')).toEqual([{ field: { kind: 'attribute', scope: 'span', key: 'service.name' }, value: { type: 'string', value: 'api' } }]);
  });

  it('takes escapes, raw strings, quoted keys, negative numbers, parentheses and a value on the left', () => {
    expect(parseTraceQL('{ .q = "a\\"b\\\\c" && .r = `x\\y` && span."odd key" = -3 && (.f = -1.5) && "v" = .w }')).toEqual([
      { field: { kind: 'attribute', scope: 'any', key: 'q' }, value: { type: 'string', value: 'a"b\\c' } },
      { field: { kind: 'attribute', scope: 'any', key: 'r' }, value: { type: 'string', value: 'x\\y' } },
      { field: { kind: 'attribute', scope: 'span', key: 'odd key' }, value: { type: 'int', value: -3n } },
      { field: { kind: 'attribute', scope: 'any', key: 'f' }, value: { type: 'float', value: -1.5 } },
      { field: { kind: 'attribute', scope: 'any', key: 'w' }, value: { type: 'string', value: 'v' } },
    ]);
  });

  it('gives a minus to its number, not to the rest of the && chain', () => {
    expect(parseTraceQL('{ .a = -3 && .b = 1 && .c = "x" }')).toEqual([
      { field: { kind: 'attribute', scope: 'any', key: 'a' }, value: { type: 'int', value: -3n } },
      { field: { kind: 'attribute', scope: 'any', key: 'b' }, value: { type: 'int', value: 1n } },
      { field: { kind: 'attribute', scope: 'any', key: 'c' }, value: { type: 'string', value: 'x' } },
    ]);
    expect(() => parseTraceQL('{ .a = -3 || .b = 1 }')).toThrow(/\|\| \(or\) is not supported/);
  });

  it('accepts span:name, span:status and span:kind as their intrinsics', () => {
    expect(parseTraceQL('{ span:name = "a" && span:status = ok && span:kind = client }').map((c) => c.field.kind)).toEqual(['name', 'status', 'kind']);
  });
});

describe('parseTraceQL: refusals', () => {
  it.each([
    ['hello', 'bare words'],
    ['', 'empty'],
    ['{ .a }', 'a matcher without operator'],
    ['{ nonsense = 3 }', 'an unknown intrinsic'],
    ['{ .env = prod }', 'a bare word that is no keyword'],
    ['{ .a = "x" && }', 'a dangling &&'],
    ['{ .a = "x"', 'an unclosed spanset'],
    ['{ status = 3 }', 'status against a number'],
    ['{ status = server }', 'status against a kind'],
    ['{ kind = "server" }', 'kind against a string'],
    ['{ name = 3 }', 'name against a number'],
    ['{ .a = error }', 'an attribute against a keyword'],
    ['{ span.a = $var }', 'a template variable left in'],
    ['{ .a = 99999999999999999999 }', 'an integer out of range'],
  ])('%s is bad_data (%s)', (q) => {
    const r = refusal(q);
    expect(r.kind).toBe('bad_data');
    expect(r.message).toMatch(/parse error at line 1, col \d+|empty query/);
  });

  it.each([
    ['{ .a != "x" }', 'not-equal'],
    ['{ name =~ "a.*" }', 'regex'],
    ['{ .a !~ "a.*" }', 'negated regex'],
    ['{ span.status_code >= 500 }', 'ordered comparison'],
    ['{ .a = 1 || .b = 2 }', 'or'],
    ['{ duration > 100ms }', 'duration comparison'],
    ['{ .d = 5ms }', 'a duration value'],
    ['{ !(.a = 1) }', 'negation'],
    ['{ rootServiceName = "x" }', 'another intrinsic'],
    ['{ statusMessage = "x" }', 'another intrinsic'],
    ['{ event.name = "x" }', 'the event scope'],
    ['{ parent.x = "a" }', 'the parent scope'],
    ['{ .a = .b }', 'two fields'],
    ['{ 1 = 1 }', 'two values'],
    ['{ .a = 1 + 2 }', 'arithmetic'],
    ['{ .a = nil }', 'nil'],
    ['{ true }', 'a bare value'],
    ['{ .a = "x" } | select(.b)', 'a pipeline'],
    ['{ .a = "x" } >> { .b = 1 }', 'a structural operator'],
    ['{ .a = "x" } && { .b = 1 }', 'a spanset operator'],
    ['{ kind = server } | count() > 2', 'an aggregate'],
    ['{} | rate()', 'metrics'],
  ])('%s is not_implemented (%s)', (q) => {
    const r = refusal(q);
    expect(r.kind).toBe('not_implemented');
    expect(r.message).toContain('supported: one spanset of = matchers joined by &&');
  });
});
