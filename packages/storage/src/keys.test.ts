import { describe, expect, it } from 'vitest';
import { InvalidKeyError } from './errors.ts';
import { compareKeys, validateKey, validatePrefix } from './keys.ts';

describe('validateKey', () => {
  it.each(['a', 'a/b/c.parquet', 'wal/000001700000000-acc-1-0000000001.wal', 'sp ace/\u00e9', '.hidden/x', 'x/.floe-tmp'])(
    'accepts %j',
    (key) => {
      expect(validateKey(key)).toBe(key);
    },
  );

  it.each([
    ['..', "'..' segment"],
    ['a/..', "'..' segment"],
    ['./a', "'.' segment"],
    ['/a', 'absolute'],
    ['C:/a', 'drive'],
    ['a\\b', 'backslash'],
    ['a\0', 'NUL'],
    ['', 'empty'],
    ['a//b', 'empty segment'],
    ['a/', 'empty segment'],
    ['.floe-probe/x', 'reserved'],
    ['x'.repeat(1025), 'longer than 1024 bytes'],
    ['\u00e9'.repeat(513), 'longer than 1024 bytes'],
  ])('rejects %j (%s)', (key, reason) => {
    expect(() => validateKey(key)).toThrow(InvalidKeyError);
    expect(() => validateKey(key)).toThrow(reason);
  });
});

describe('validatePrefix', () => {
  it.each(['', 'wal/', 'a/b', 'a/b/partial-na'])('accepts %j', (prefix) => {
    expect(validatePrefix(prefix)).toBe(prefix);
  });
  it.each(['../', 'a/../b', '/abs', 'a//', 'a\\'])('rejects %j', (prefix) => {
    expect(() => validatePrefix(prefix)).toThrow(InvalidKeyError);
  });
});

describe('compareKeys', () => {
  it('orders by UTF-8 bytes, not UTF-16 code units', () => {
    const keys = ['\u{1F600}', '\ufb01', 'b', 'B', '\u00e9', 'a/b', 'a'];
    expect([...keys].sort(compareKeys)).toEqual(['B', 'a', 'a/b', 'b', '\u00e9', '\ufb01', '\u{1F600}']);
    // The default sort puts the astral character first among the non-ASCII ones.
    expect([...keys].sort().slice(-2)).toEqual(['\u{1F600}', '\ufb01']);
  });
});
