import { describe, expect, it } from 'vitest';
import { duplicateKey, parseManagementJson } from './json-body.ts';

describe('duplicateKey', () => {
  it.each([
    ['{"a":1,"a":2}', 'body.a'],
    ['{"a":{"b":[1,{"c":"x","c":"y"}]}}', 'body.a.b[1].c'],
    ['[{"k":1},{"k":2,"k":3}]', 'body[1].k'],
    ['{"\\u0061":1,"a":2}', 'body.a'],
    [' { "a" : 1 , "a" : 2 } ', 'body.a'],
  ])('finds the key given twice in %s', (text, at) => {
    expect(duplicateKey(text, 'body')).toBe(at);
  });

  it.each([
    '{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}',
    '{"a":"}{\\"a\\":1,","b":"\\\\","c":"[\\"a\\"]"}',
    '{"A":1,"a":2}',
    '{}',
    '[]',
    '"a"',
    '[1,-2.5e3,true,false,null,{}]',
  ])('finds none in %s', (text) => {
    expect(duplicateKey(text, 'body')).toBeUndefined();
  });

  it('parseManagementJson refuses a duplicate after the JSON checks, and takes an empty body as none', () => {
    expect(() => parseManagementJson('{"a":1,"a":2}')).toThrow(expect.objectContaining({ kind: 'bad_data', message: 'body.a is given more than once' }));
    expect(() => parseManagementJson('{"a":1,"a":')).toThrow(expect.objectContaining({ message: 'body is not valid JSON' }));
    expect(parseManagementJson('')).toBeUndefined();
    expect(parseManagementJson('{"a":[1,{"b":2}]}')).toEqual({ a: [1, { b: 2 }] });
  });
});
