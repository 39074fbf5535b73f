import { describe, expect, it } from 'vitest';
import { mergeCustomFields, nonBlank, parseCustomFields, parseDate, parseEstimateText, parseTags } from './values.ts';

describe('nonBlank', () => {
  it('trims', () => {
    expect(nonBlank('name', '  Apple Pay \n')).toBe('Apple Pay');
  });
  it.each(['', ' ', ' \t\n\u00a0\u2003 '])('refuses %j', (v) => {
    expect(() => nonBlank('name', v)).toThrow(expect.objectContaining({ kind: 'bad_data', message: 'name must not be empty' }));
  });
});

describe('parseTags', () => {
  it.each([
    [['ux', 'payments'], ['ux', 'payments']],
    ['ux, payments ,ux', ['ux', 'payments']],
    [' ', []],
    [[' a ', 'a', ''], ['a']],
  ])('reads %j', (input, expected) => {
    expect(parseTags(input)).toEqual(expected);
  });

  it.each([[[1, 2]], [{}], [Array.from({ length: 51 }, (_, i) => `t${i}`)], [['x'.repeat(101)]]])('refuses %j', (input) => {
    expect(() => parseTags(input)).toThrow(expect.objectContaining({ kind: 'bad_data' }));
  });
});

describe('custom fields', () => {
  it('reads a patch where null removes a key', () => {
    const patch = parseCustomFields({ impact: 'high', effort: 3, beta: true, regions: ['eu', 1], gone: null });
    expect(mergeCustomFields({ gone: 'x', kept: 'y' }, patch)).toEqual({ kept: 'y', impact: 'high', effort: 3, beta: true, regions: ['eu', 1] });
  });

  it('keeps a field whatever its key, __proto__ included', () => {
    const merged = mergeCustomFields({ kept: 'y' }, parseCustomFields(JSON.parse('{"__proto__": ["eu"], "constructor": 1}')));
    expect(JSON.stringify(merged)).toBe('{"kept":"y","__proto__":["eu"],"constructor":1}');
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.keys(mergeCustomFields(merged, new Map([['__proto__', null]])))).toEqual(['kept', 'constructor']);
  });
  it.each([[[]], ['x'], [{ 'a b': 1 }], [{ nested: { a: 1 } }], [{ list: [{}] }], [{ n: Number.NaN }], [{ long: 'x'.repeat(10_001) }]])('refuses %j', (input) => {
    expect(() => parseCustomFields(input)).toThrow(expect.objectContaining({ kind: 'bad_data' }));
  });
});

describe('parseEstimateText', () => {
  it.each([
    ['90', 90],
    ['90m', 90],
    ['2h', 120],
    ['1d', 480],
    ['2d 4h 30m', 2 * 480 + 4 * 60 + 30],
    ['1.5h', 90],
    ['3p', 3],
    [' 2D4H ', 1200],
  ])('reads %j as %d', (text, minutes) => {
    expect(parseEstimateText(text)).toBe(minutes);
  });

  it.each(['', 'soon', '2w', '2d x', 'h', '-1h', '3p 2h'])('refuses %j', (text) => {
    expect(parseEstimateText(text)).toBeUndefined();
  });
});

describe('parseDate', () => {
  it.each([['2024-02-29'], ['0001-01-01'], ['9999-12-31']])('keeps %s', (v) => {
    expect(parseDate('due_date', v)).toBe(v);
  });

  it('keeps null (clears the date)', () => {
    expect(parseDate('due_date', null)).toBeNull();
  });

  it.each(['0000-01-01', '2023-02-29', '2025-02-30', '2025-13-01', '2025-1-1', '2025-01-01T00:00:00Z'])('refuses %s', (v) => {
    expect(() => parseDate('due_date', v)).toThrow('due_date must be a date YYYY-MM-DD');
  });
});
