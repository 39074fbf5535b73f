import { describe, expect, it } from 'vitest';
import { unstorableValue } from './storable-text.ts';

describe('unstorableValue', () => {
  it('passes text PostgreSQL stores as sent: any Unicode, surrogate pairs, confusables, SQL metacharacters', () => {
    expect(unstorableValue({ a: ['ok', 'é😀', 'аcme', "x'; DROP TABLE t; --", { b: 1, c: null, d: true }] }, 'body')).toBeUndefined();
    expect(unstorableValue(undefined, 'body')).toBeUndefined();
  });

  it.each([
    [{ display_name: 'a\u0000b' }, 'body.display_name contains a NUL character (U+0000)'],
    [{ settings: { x: ['ok', '\ud800'] } }, 'body.settings.x[1] contains a lone UTF-16 surrogate (not valid Unicode)'],
    [{ settings: { x: 'a\udc00' } }, 'body.settings.x contains a lone UTF-16 surrogate (not valid Unicode)'],
    [{ settings: { 'k\u0000': 1 } }, 'a key of body.settings contains a NUL character (U+0000)'],
    [JSON.parse('{"attributes":[{"examples":[1, 1e400]}]}'), 'body.attributes[0].examples[1] is a number beyond what a double holds'],
    [JSON.parse('{"settings":{"__proto__":{"limits":{}}}}'), 'body.settings has the key "__proto__", which is not allowed'],
  ])('%j: %s', (value, message) => {
    expect(unstorableValue(value, 'body')).toBe(message);
  });
});
