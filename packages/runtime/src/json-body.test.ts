import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { MAX_JSON_BODY_DEPTH, parseJsonBody } from './json-body.ts';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('parseJsonBody', () => {
  it('parses JSON up to MAX_JSON_BODY_DEPTH levels and refuses deeper with a 400', () => {
    expect(parseJsonBody('{"a":[1,{"b":null}]}')).toEqual({ a: [1, { b: null }] });
    expect(parseJsonBody('')).toBeUndefined();
    expect(() => parseJsonBody(nested(MAX_JSON_BODY_DEPTH))).not.toThrow();
    for (const depth of [MAX_JSON_BODY_DEPTH + 1, 5000]) {
      expect(() => parseJsonBody(nested(depth))).toThrow(expect.objectContaining({ kind: 'bad_data', message: `body nests arrays and objects deeper than ${MAX_JSON_BODY_DEPTH} levels` }));
    }
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ s: '['.repeat(1000), t: 'say \\"[[[\\" {' });
    expect(parseJsonBody(text)).toEqual(JSON.parse(text));
  });

  it('answers what is not JSON with a 400, and passes a reviver\'s FloeError through', () => {
    expect(() => parseJsonBody('{"a":')).toThrow(expect.objectContaining({ kind: 'bad_data', message: 'body is not valid JSON' }));
    const refuse = () => {
      throw new FloeError('bad_data', 'no');
    };
    expect(() => parseJsonBody('{"a":1}', refuse)).toThrow(expect.objectContaining({ message: 'no' }));
  });
});
