import { describe, expect, it } from 'vitest';
import { anchoredRe2, re2RegExp, re2Search, re2Source } from './re2.ts';

const full = (pattern: string, text: string) => anchoredRe2(pattern).test(text);

describe('anchoredRe2', () => {
  it('applies a flag group to the rest of its enclosing group, across its alternatives', () => {
    expect(full('(?i)bar', 'BaR')).toBe(true);
    expect(full('a(?i)b', 'aB')).toBe(true);
    expect(full('a(?i)b', 'AB')).toBe(false);
    // `a(?i)b|c` is `a(?i:b)|(?i:c)`, not `a(?i:b|c)`.
    expect(full('a(?i)b|c', 'C')).toBe(true);
    expect(full('a(?i)b|c', 'aC')).toBe(false);
    // Mid-group: the flag ends with the group.
    expect(full('(x(?i)y)z', 'xYz')).toBe(true);
    expect(full('(x(?i)y)z', 'xYZ')).toBe(false);
    expect(full('(?i)a(?-i)b', 'Ab')).toBe(true);
    expect(full('(?i)a(?-i)b', 'AB')).toBe(false);
    expect(full('(?i:a)b', 'Ab')).toBe(true);
    expect(full('(?i:a)b', 'AB')).toBe(false);
    // Unicode case folding, as RE2's: ſ is an s, K (Kelvin) a k.
    expect(full('(?i)ſ', 'S')).toBe(true);
    expect(full('(?i)\\x{212A}', 'k')).toBe(true);
    expect(full('(?i)s', 'ſ')).toBe(true);
  });

  it('reads \\Q…\\E as literal text', () => {
    expect(full('\\Qa.b*(c)\\E', 'a.b*(c)')).toBe(true);
    expect(full('\\Qa.b\\E', 'axb')).toBe(false);
    expect(full('x\\Q[y', 'x[y')).toBe(true);
    // A quantifier after \E repeats the last character, as in RE2.
    expect(full('\\Qab\\E+', 'abbb')).toBe(true);
  });

  it('maps POSIX classes to their exact ASCII ranges', () => {
    const cases: Array<[string, string, string]> = [
      ['alpha', 'aZ', '1'],
      ['digit', '0', 'a'],
      ['alnum', 'a0Z', '_'],
      ['upper', 'Q', 'q'],
      ['lower', 'q', 'Q'],
      ['space', ' \t\n\v\f\r', 'x'],
      ['blank', ' \t', '\n'],
      ['punct', '!/:@[`{~', 'a'],
      ['xdigit', '0aF', 'g'],
      ['word', 'a_0', '-'],
      ['cntrl', '\x00\x1f\x7f', ' '],
      ['print', ' ~', '\x7f'],
      ['graph', '!~', ' '],
    ];
    for (const [name, yes, no] of cases) {
      expect(full(`[[:${name}:]]+`, yes), name).toBe(true);
      expect(full(`[[:${name}:]]+`, no), name).toBe(false);
      expect(full(`[[:^${name}:]]`, no), `^${name}`).toBe(true);
    }
    expect(full('[[:alpha:]]', 'é')).toBe(false);
    expect(full('[x[:digit:]]+', 'x1')).toBe(true);
    expect(full('[^[:digit:]x]', 'x')).toBe(false);
    expect(full('[^[:^digit:]]', '7')).toBe(true);
    expect(() => anchoredRe2('[[:nope:]]')).toThrow(/invalid character class range/);
  });

  it('keeps named groups under both spellings', () => {
    expect(anchoredRe2('(?P<first>a+)-(?<second>b+)').exec('aa-b')?.groups).toEqual({ first: 'aa', second: 'b' });
    expect(() => anchoredRe2('(?P<x>a)(?P<x>b)')).toThrow(/duplicate capture group name/);
  });

  it('makes U swap greedy and lazy repetition, as RE2 does', () => {
    expect(anchoredRe2('(?U)(a+)(a*)').exec('aaa')?.slice(1)).toEqual(['a', 'aa']);
    expect(anchoredRe2('(?U)(a+?)(a*)').exec('aaa')?.slice(1)).toEqual(['aaa', '']);
    expect(anchoredRe2('(a+)(a*)').exec('aaa')?.slice(1)).toEqual(['aaa', '']);
  });

  it('lets `.` match newlines unless (?-s) says otherwise', () => {
    expect(full('a.b', 'a\nb')).toBe(true);
    expect(full('(?-s)a.b', 'a\nb')).toBe(false);
    // RE2's `.` without s stops only at \n.
    expect(full('(?-s)a.b', 'a\rb')).toBe(true);
    expect(re2RegExp('a.b').test('a\nb')).toBe(false);
  });

  it('reads anchors, Perl classes and escapes as RE2 does', () => {
    expect(full('\\Aab\\z', 'ab')).toBe(true);
    expect(re2RegExp('(?m)^b$').test('a\nb\nc')).toBe(true);
    expect(re2RegExp('^b$').test('a\nb\nc')).toBe(false);
    expect(re2RegExp('(?m)\\Ab').test('a\nb')).toBe(false);
    // \s is ASCII white space in RE2 (no \v, no NBSP).
    expect(full('\\s', '\u00a0')).toBe(false);
    expect(full('\\s', '\v')).toBe(false);
    expect(full('\\x{1F600}\\x41\\101\\.', '😀AA.')).toBe(true);
    expect(full('.', '😀')).toBe(true);
    expect(full('\\pL+\\p{Greek}', 'héllo\u03b1')).toBe(true);
    expect(full('[]a]+', ']a]')).toBe(true);
    expect(full('a{,2}', 'a{,2}')).toBe(true);
    expect(full('[\\d-z]+', '1-z')).toBe(true);
  });

  it('refuses what RE2 refuses, with its reasons', () => {
    const cases: Array<[string, RegExp]> = [
      ['(a', /Unterminated group/],
      ['a)', /unexpected \)/],
      ['a**', /invalid nested repetition operator/],
      ['*a', /missing argument to repetition operator/],
      ['a{1001}', /invalid repeat count/],
      ['(a)\\1', /backreferences are not supported/],
      ['a(?=b)', /lookahead and lookbehind are not supported/],
      ['(?<!a)b', /lookahead and lookbehind are not supported/],
      ['[z-a]', /invalid character class range/],
      ['[a', /missing closing \]/],
      ['\\e', /invalid escape sequence/],
      ['a\\', /trailing backslash/],
      ['(?x)a', /invalid or unsupported Perl syntax/],
    ];
    for (const [pattern, reason] of cases) expect(() => anchoredRe2(pattern), pattern).toThrow(reason);
  });

  it('gives source that still compiles without the u flag for plain patterns', () => {
    expect(new RegExp(`^(?:${re2Source('(?i)[[:^alpha:]x]*')})$`).test('')).toBe(true);
  });
});

describe('linear-time matching of tenants’ patterns', () => {
  // With a backtracking engine each of these takes exponential time in the text's length (some
  // seconds at 28 characters, longer than the universe at 5,000); RE2's automata take linear time.
  const text = `${'a'.repeat(5000)}b`;
  it.each(['(a|a)+', '(a+)+', '(?i)(a|A)+x?', '(.*a){20}', '(a*)*c'])('%s over 5,000 characters ends with the right answer', (pattern) => {
    expect(anchoredRe2(pattern).test(text)).toBe(false);
    expect(anchoredRe2(pattern).exec(text)).toBeNull();
    expect(re2Search(`^${pattern}$`).test(text)).toBe(false);
    expect(re2Search(`^${pattern}$`).execFrom(text, 0)).toBeNull();
  });
  it('still finds matches with their groups, by number and name', () => {
    expect(anchoredRe2('(?P<x>a+)(b)').exec(text)?.slice(1)).toEqual(['a'.repeat(5000), 'b']);
    const found = re2Search('(?P<word>[a-z]+)-(\\d+)').execFrom('x: ab-12 cd-34', 5);
    expect(found && [found.index, found[0], found.groups?.word, found[2]]).toEqual([9, 'cd-34', 'cd', '34']);
  });
});
