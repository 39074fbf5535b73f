/**
 * Go RE2 syntax, which Prometheus and Loki users write, rendered as JavaScript RegExp source with
 * the same meaning. The source is meant for the `u` flag (code points, `\p{…}`); it also compiles
 * without it for everything but `\p` classes and non-BMP characters inside brackets, so an older
 * caller that only asks whether a pattern matches "" keeps working.
 *
 * RE2 and JavaScript differ in more than spelling, so most constructs are rewritten rather than
 * passed through: `.`, `^`, `$`, `\s` and the `m`/`s`/`U` flags are resolved here from the flags in
 * force at that point (JavaScript's `.` also stops at \r and U+2028, its `\s` is Unicode-wide, and
 * it has no ungreedy mode); only case folding is left to JavaScript, as `(?i:…)` modifier groups.
 * Errors are plain Errors whose message is the reason, in RE2's words where it has them.
 *
 * Written by hand: no maintained package translates RE2 to JavaScript, and the RE2 bindings for
 * Node are native code built or downloaded at install time.
 */

import { RE2JS, type Matcher } from 're2js';

interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
  U: boolean;
}

type Range = readonly [number, number];

const DIGIT: Range[] = [[0x30, 0x39]];
const SPACE: Range[] = [[0x09, 0x0a], [0x0c, 0x0d], [0x20, 0x20]];
const WORD: Range[] = [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]];
const PERL: Record<string, Range[]> = { d: DIGIT, s: SPACE, w: WORD };

// RE2's POSIX classes are ASCII-only, exactly these ranges.
const POSIX: Record<string, Range[]> = {
  alnum: [[0x30, 0x39], [0x41, 0x5a], [0x61, 0x7a]],
  alpha: [[0x41, 0x5a], [0x61, 0x7a]],
  ascii: [[0x00, 0x7f]],
  blank: [[0x09, 0x09], [0x20, 0x20]],
  cntrl: [[0x00, 0x1f], [0x7f, 0x7f]],
  digit: DIGIT,
  graph: [[0x21, 0x7e]],
  lower: [[0x61, 0x7a]],
  print: [[0x20, 0x7e]],
  punct: [[0x21, 0x2f], [0x3a, 0x40], [0x5b, 0x60], [0x7b, 0x7e]],
  space: [[0x09, 0x0d], [0x20, 0x20]],
  upper: [[0x41, 0x5a]],
  word: WORD,
  xdigit: [[0x30, 0x39], [0x41, 0x46], [0x61, 0x66]],
};

const ANY = '[\\s\\S]';
const BEGIN_TEXT = '(?:(?<![\\s\\S]))';
const END_TEXT = '(?:(?![\\s\\S]))';
const BEGIN_LINE = '(?:(?<![^\\n]))';
const END_LINE = '(?:(?![^\\n]))';
const MAX_REPEAT = 1000;

const hex = (cp: number, width: number) => cp.toString(16).toUpperCase().padStart(width, '0');
const isWordAscii = (cp: number) => (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || cp === 0x5f;

/** One character outside brackets; escaped unless plainly literal, so nothing RE2 reads as text turns into JavaScript syntax. */
function literal(cp: number): string {
  if (isWordAscii(cp)) return String.fromCodePoint(cp);
  if (cp <= 0xff) return `\\x${hex(cp, 2)}`;
  if (cp <= 0xffff) return `\\u${hex(cp, 4)}`;
  // A surrogate pair in a group: one code point with `u`, and still one unit for a quantifier without it.
  const s = String.fromCodePoint(cp);
  return `(?:\\u${hex(s.charCodeAt(0), 4)}\\u${hex(s.charCodeAt(1), 4)})`;
}

function classChar(cp: number): string {
  if (isWordAscii(cp)) return String.fromCodePoint(cp);
  if (cp <= 0xff) return `\\x${hex(cp, 2)}`;
  if (cp <= 0xffff) return `\\u${hex(cp, 4)}`;
  return `\\u{${hex(cp, 1)}}`;
}

const classRanges = (ranges: readonly Range[]) => ranges.map(([lo, hi]) => (lo === hi ? classChar(lo) : `${classChar(lo)}-${classChar(hi)}`)).join('');

class Translator {
  readonly #p: string;
  #i = 0;
  #out = '';
  #flags: Flags;
  // One entry per open group: the flags to restore at its `)`, the case-folding it opened with, and
  // whether a `(?i)`-style flag group inside it has a JavaScript modifier group still open.
  readonly #frames: Array<{ saved: Flags; baseI: boolean; caseOpen: boolean }>;
  readonly #names = new Set<string>();
  #canRepeat = false;
  #lastRepeat = false;
  #lastRepeatAt = 0;

  constructor(pattern: string, dotAll: boolean) {
    this.#p = pattern;
    this.#flags = { i: false, m: false, s: dotAll, U: false };
    this.#frames = [{ saved: this.#flags, baseI: false, caseOpen: false }];
  }

  run(): string {
    const p = this.#p;
    while (this.#i < p.length) {
      const c = p[this.#i]!;
      switch (c) {
        case '(':
          this.#group();
          continue;
        case ')':
          this.#close();
          continue;
        case '|':
          this.#bar();
          continue;
        case '*':
        case '+':
        case '?':
          this.#repeat(c, 1);
          continue;
        case '{': {
          const m = /^\{(0|[1-9]\d*)(?:(,)(0|[1-9]\d*)?)?\}/.exec(p.slice(this.#i));
          // RE2 reads a brace that does not start a well-formed count as a literal.
          if (!m) break;
          const min = Number(m[1]);
          const max = m[2] === undefined ? min : m[3] === undefined ? -1 : Number(m[3]);
          if (min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max)) throw new Error(`invalid repeat count: \`${m[0]}\``);
          this.#repeat(m[0], m[0].length);
          continue;
        }
        case '[':
          this.#atom(this.#class());
          continue;
        case '.':
          this.#i++;
          this.#atom(this.#flags.s ? ANY : '[^\\n]');
          continue;
        case '^':
          this.#i++;
          this.#atom(this.#flags.m ? BEGIN_LINE : BEGIN_TEXT);
          continue;
        case '$':
          this.#i++;
          this.#atom(this.#flags.m ? END_LINE : END_TEXT);
          continue;
        case '\\':
          this.#escape();
          continue;
      }
      const cp = p.codePointAt(this.#i)!;
      this.#i += cp > 0xffff ? 2 : 1;
      this.#atom(this.#literal(cp));
    }
    if (this.#frames.length > 1) throw new Error('Unterminated group: missing closing )');
    if (this.#frames[0]!.caseOpen) this.#out += ')';
    return this.#out;
  }

  /**
   * A literal character. Under case folding a non-ASCII one goes in brackets: V8 (Node 24) folds
   * `(?i:ſ)` and `(?i:\u212A)` to nothing else, where `[ſ]` matches s and S as `/ſ/iu` does.
   */
  #literal(cp: number): string {
    return this.#flags.i && cp >= 0x80 ? `[${classChar(cp)}]` : literal(cp);
  }

  #atom(js: string): void {
    this.#out += js;
    this.#canRepeat = true;
    this.#lastRepeat = false;
  }

  #repeat(op: string, length: number): void {
    const p = this.#p;
    const start = this.#i;
    this.#i += length;
    let lazy = false;
    if (p[this.#i] === '?') {
      lazy = true;
      this.#i++;
    }
    if (this.#lastRepeat) throw new Error(`invalid nested repetition operator: \`${p.slice(this.#lastRepeatAt, this.#i)}\``);
    if (!this.#canRepeat) throw new Error(`missing argument to repetition operator: \`${p.slice(start, this.#i)}\``);
    // Under U, RE2 swaps what is greedy: `*` prefers fewer and `*?` prefers more, which is
    // JavaScript's `*?` and `*`; backtracking order then picks the same leftmost-first match.
    this.#out += op + (lazy !== this.#flags.U ? '?' : '');
    this.#lastRepeat = true;
    this.#lastRepeatAt = start;
  }

  #openFrame(js: string, saved: Flags, baseI: boolean): void {
    this.#out += js;
    this.#frames.push({ saved, baseI, caseOpen: false });
    this.#canRepeat = false;
    this.#lastRepeat = false;
  }

  #group(): void {
    const p = this.#p;
    const start = this.#i;
    if (p[start + 1] !== '?') {
      this.#i++;
      this.#openFrame('(', this.#flags, this.#flags.i);
      return;
    }
    const named = p.startsWith('(?P<', start) ? 4 : p.startsWith('(?<', start) && p[start + 3] !== '=' && p[start + 3] !== '!' ? 3 : 0;
    if (named) {
      const end = p.indexOf('>', start);
      if (end < 0) throw new Error(`invalid named capture: \`${p.slice(start)}\``);
      const name = p.slice(start + named, end);
      if (!/^\w+$/.test(name)) throw new Error(`invalid named capture: \`${p.slice(start, end + 1)}\``);
      // RE2 allows any word characters; a JavaScript group name is an identifier.
      if (/^\d/.test(name)) throw new Error(`invalid named capture: \`${p.slice(start, end + 1)}\` (a group name starting with a digit is not supported)`);
      if (this.#names.has(name)) throw new Error(`duplicate capture group name: \`${name}\``);
      this.#names.add(name);
      this.#i = end + 1;
      this.#openFrame(`(?<${name}>`, this.#flags, this.#flags.i);
      return;
    }
    const flags = { ...this.#flags };
    let negated = false;
    let sawFlag = false;
    let j = start + 2;
    for (; j < p.length; j++) {
      const c = p[j]!;
      if (c === 'i' || c === 'm' || c === 's' || c === 'U') {
        flags[c] = !negated;
        sawFlag = true;
      } else if (c === '-' && !negated) {
        negated = true;
        sawFlag = false;
      } else if ((c === ':' || c === ')') && !(negated && !sawFlag)) {
        this.#i = j + 1;
        if (c === ':') {
          const js = flags.i === this.#flags.i ? '(?:' : flags.i ? '(?i:' : '(?-i:';
          const saved = this.#flags;
          this.#flags = flags;
          this.#openFrame(js, saved, flags.i);
        } else {
          // The flags hold to the end of the enclosing group, across its alternatives: the
          // modifier group is closed and reopened around each `|` and closed at the group's `)`.
          const frame = this.#frames[this.#frames.length - 1]!;
          if (frame.caseOpen) this.#out += ')';
          frame.caseOpen = flags.i !== frame.baseI;
          if (frame.caseOpen) this.#out += flags.i ? '(?i:' : '(?-i:';
          this.#flags = flags;
          this.#canRepeat = false;
          this.#lastRepeat = false;
        }
        return;
      } else {
        break;
      }
    }
    const lookaround = /^\(\?(?:=|!|<=|<!)/.test(p.slice(start, start + 4));
    throw new Error(`invalid or unsupported Perl syntax: \`${p.slice(start, j + 1)}\`${lookaround ? ': lookahead and lookbehind are not supported (RE2 syntax)' : ''}`);
  }

  #close(): void {
    if (this.#frames.length === 1) throw new Error('unexpected ): unmatched parenthesis');
    const frame = this.#frames.pop()!;
    this.#i++;
    this.#out += frame.caseOpen ? '))' : ')';
    this.#flags = frame.saved;
    this.#canRepeat = true;
    this.#lastRepeat = false;
  }

  #bar(): void {
    const frame = this.#frames[this.#frames.length - 1]!;
    this.#i++;
    this.#out += frame.caseOpen ? `)|${this.#flags.i ? '(?i:' : '(?-i:'}` : '|';
    this.#canRepeat = false;
    this.#lastRepeat = false;
  }

  #escape(): void {
    const p = this.#p;
    const c = p[this.#i + 1];
    switch (c) {
      case undefined:
        throw new Error('trailing backslash at end of expression');
      case 'A':
        this.#i += 2;
        return this.#atom(BEGIN_TEXT);
      case 'z':
        this.#i += 2;
        return this.#atom(END_TEXT);
      case 'b':
      case 'B':
        // RE2's word boundary is ASCII; JavaScript's widens under `iu` unless folding is off for it.
        this.#i += 2;
        return this.#atom(`(?${this.#flags.i ? '-i' : ''}:\\${c})`);
      case 'Q': {
        const end = p.indexOf('\\E', this.#i + 2);
        const text = p.slice(this.#i + 2, end < 0 ? p.length : end);
        this.#i = end < 0 ? p.length : end + 2;
        // Each character is its own literal, as in RE2: a quantifier after \E applies to the last one.
        for (const ch of text) this.#atom(this.#literal(ch.codePointAt(0)!));
        return;
      }
      case 'd':
      case 's':
      case 'w':
        this.#i += 2;
        return this.#atom(`[${classRanges(PERL[c]!)}]`);
      case 'D':
      case 'S':
      case 'W':
        this.#i += 2;
        return this.#atom(`[^${classRanges(PERL[c.toLowerCase()]!)}]`);
      case 'p':
      case 'P':
        return this.#atom(this.#unicodeClass());
    }
    this.#atom(this.#literal(this.#escapedChar()));
  }

  /** An escape that stands for one character (RE2's parseEscape); advances past it. */
  #escapedChar(): number {
    const p = this.#p;
    const start = this.#i;
    const c = p[start + 1];
    const bad = (len: number) => new Error(`invalid escape sequence: \`${p.slice(start, start + len)}\``);
    if (c === undefined) throw new Error('trailing backslash at end of expression');
    if (c === '8' || c === '9') throw new Error(`invalid escape sequence: \`${p.slice(start, start + 2)}\`: backreferences are not supported (RE2 syntax)`);
    if (c >= '0' && c <= '7') {
      // \1-\7 alone would be a backreference, which RE2 does not have; with a second octal digit it is an octal escape.
      if (c !== '0' && !/[0-7]/.test(p[start + 2] ?? '')) throw new Error(`invalid escape sequence: \`${p.slice(start, start + 2)}\`: backreferences are not supported (RE2 syntax)`);
      const digits = /^[0-7]{1,3}/.exec(p.slice(start + 1, start + 4))![0];
      this.#i = start + 1 + digits.length;
      return parseInt(digits, 8);
    }
    if (c === 'x') {
      if (p[start + 2] === '{') {
        const end = p.indexOf('}', start + 3);
        const digits = end < 0 ? '' : p.slice(start + 3, end);
        if (!/^[0-9a-fA-F]+$/.test(digits) || parseInt(digits, 16) > 0x10ffff) throw bad(end < 0 ? p.length - start : end + 1 - start);
        this.#i = end + 1;
        return parseInt(digits, 16);
      }
      const digits = p.slice(start + 2, start + 4);
      if (!/^[0-9a-fA-F]{2}$/.test(digits)) throw bad(4);
      this.#i = start + 4;
      return parseInt(digits, 16);
    }
    const simple: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
    const cp = c.codePointAt(0)!;
    if (simple[c] !== undefined || (cp < 0x80 && !/[0-9A-Za-z]/.test(c))) {
      this.#i = start + 2;
      return simple[c] ?? cp;
    }
    throw bad(2 + (cp > 0xffff ? 1 : 0));
  }

  /** `\pL`, `\p{Greek}`, `\PL`, `\p{^Greek}` as JavaScript property escapes. */
  #unicodeClass(): string {
    const p = this.#p;
    const start = this.#i;
    let negate = p[start + 1] === 'P';
    let name: string;
    if (p[start + 2] === '{') {
      const end = p.indexOf('}', start + 3);
      if (end < 0) throw new Error(`invalid character class range: \`${p.slice(start)}\``);
      name = p.slice(start + 3, end);
      this.#i = end + 1;
    } else {
      const cp = p.codePointAt(start + 2);
      if (cp === undefined) throw new Error(`invalid character class range: \`${p.slice(start)}\``);
      name = String.fromCodePoint(cp);
      this.#i = start + 2 + name.length;
    }
    if (name.startsWith('^')) {
      negate = !negate;
      name = name.slice(1);
    }
    if (!/^[A-Za-z_]+$/.test(name)) throw new Error(`invalid character class range: \`${p.slice(start, this.#i)}\``);
    // RE2 names general categories (L, Lu, …), scripts (Greek, Latin, …) and Any.
    const property = name === 'Any' || /^[A-Z][a-z]?$/.test(name) ? name : `Script=${name}`;
    return `\\${negate ? 'P' : 'p'}{${property}}`;
  }

  /**
   * A bracket expression. RE2 lets a negated class (`\D`, `[:^alpha:]`) sit inside brackets,
   * which JavaScript cannot express without the `v` flag, so such a class becomes an
   * alternation of its parts, and a negated bracket with one a lookahead before any character.
   */
  #class(): string {
    const p = this.#p;
    const start = this.#i;
    this.#i++;
    const negate = p[this.#i] === '^';
    if (negate) this.#i++;
    const items: string[] = [];
    const negated: string[] = [];
    for (let first = true; ; first = false) {
      if (this.#i >= p.length) throw new Error(`missing closing ]: \`${p.slice(start)}\``);
      const c = p[this.#i]!;
      if (c === ']' && !first) {
        this.#i++;
        break;
      }
      if (c === '[' && p[this.#i + 1] === ':') {
        const end = p.indexOf(':]', this.#i + 2);
        if (end >= 0) {
          const text = p.slice(this.#i, end + 2);
          const not = p[this.#i + 2] === '^';
          const ranges = POSIX[p.slice(this.#i + (not ? 3 : 2), end)];
          if (!ranges) throw new Error(`invalid character class range: \`${text}\``);
          (not ? negated : items).push(classRanges(ranges));
          this.#i = end + 2;
          continue;
        }
      }
      if (c === '\\') {
        const e = p[this.#i + 1];
        if (e === 'd' || e === 's' || e === 'w' || e === 'D' || e === 'S' || e === 'W') {
          (e === e.toLowerCase() ? items : negated).push(classRanges(PERL[e.toLowerCase()]!));
          this.#i += 2;
          continue;
        }
        if (e === 'p' || e === 'P') {
          items.push(this.#unicodeClass());
          continue;
        }
      }
      const lo = this.#classChar();
      if (p[this.#i] === '-' && this.#i + 1 < p.length && p[this.#i + 1] !== ']') {
        const rangeStart = this.#i;
        this.#i++;
        const hi = this.#classChar();
        if (hi < lo) throw new Error(`invalid character class range: \`${p.slice(rangeStart - 1, this.#i)}\``);
        items.push(classRanges([[lo, hi]]));
      } else {
        items.push(classChar(lo));
      }
    }
    if (negated.length === 0) return `[${negate ? '^' : ''}${items.join('')}]`;
    const union = `(?:${[...(items.length ? [`[${items.join('')}]`] : []), ...negated.map((r) => `[^${r}]`)].join('|')})`;
    return negate ? `(?:(?!${union})${ANY})` : union;
  }

  #classChar(): number {
    const p = this.#p;
    if (p[this.#i] === '\\') return this.#escapedChar();
    const cp = p.codePointAt(this.#i)!;
    this.#i += cp > 0xffff ? 2 : 1;
    return cp;
  }
}

export interface Re2Options {
  /** Whether `.` matches a newline from the start, as `(?s)` would make it (Prometheus's matchers do). */
  dotAll?: boolean;
}

/** JavaScript RegExp source (for the `u` flag) matching what the RE2 pattern matches; throws an Error naming the problem when RE2 would refuse it. */
export function re2Source(pattern: string, options: Re2Options = {}): string {
  return new Translator(pattern, options.dotAll ?? false).run();
}

/** An unanchored RegExp for an RE2 pattern; errors carry only the reason, not JavaScript's rendering of the translated source. */
export function re2RegExp(pattern: string, options: Re2Options = {}): RegExp {
  return compile(re2Source(pattern, options));
}

/**
 * A compiled RE2 pattern that matches in time linear in the text. Label values and regexes of a
 * query are both the tenant's: a backtracking engine (JavaScript's RegExp) takes exponential time
 * on patterns such as `(a|a)+` against `aaa…b`, and would stall the process for every tenant, so
 * patterns that run over stored values run on RE2JS, a port of RE2's automata.
 */
export interface Re2Matcher {
  /** Whether the pattern matches (the whole text, for an anchored matcher). */
  test(text: string): boolean;
  /** The match with its groups (numbered and named), or null. */
  exec(text: string): RegExpExecArray | null;
}

/** An unanchored matcher that can also search from a position (Go's ReplaceAll scans so). */
export interface Re2Searcher {
  /** Whether the pattern matches anywhere in the text. */
  test(text: string): boolean;
  /** The first match starting at or after `from` (a UTF-16 index), or null. */
  execFrom(text: string, from: number): RegExpExecArray | null;
}

/** The matcher Prometheus builds for a label regex: anchored at both ends, `.` matching newlines. */
export function anchoredRe2(pattern: string): Re2Matcher {
  // The translation refuses what RE2 refuses, with RE2's words, before RE2JS compiles it. The
  // pattern is compiled alone (an unterminated \Q would swallow anchors written around it).
  re2Source(pattern, { dotAll: true });
  const re = RE2JS.compile(pattern, RE2JS.DOTALL);
  // Label values repeat (every step of a range query sees the same series), and RE2JS takes
  // ~0.2-0.5 µs a value where V8 takes a tenth of that: answers are remembered per value.
  const tested = new Map<string, boolean>();
  const found = new Map<string, RegExpExecArray | null>();
  return {
    test(text) {
      let hit = tested.get(text);
      if (hit === undefined) {
        hit = re.testExact(text);
        remember(tested, text, hit);
      }
      return hit;
    },
    exec(text) {
      let m = found.get(text);
      if (m === undefined) {
        const matcher = re.matcher(text);
        m = matcher.matches() ? execArray(re, matcher, text) : null;
        remember(found, text, m);
      }
      return m;
    },
  };
}

/**
 * Values remembered per matcher at most; past it the memory starts over. With PATTERNS_KEPT
 * matchers cached, at most ~1M entries (tens of MB) in all.
 */
const MEMO_VALUES = 4096;
const PATTERNS_KEPT = 256;
function remember<V>(memo: Map<string, V>, key: string, value: V): void {
  if (memo.size >= MEMO_VALUES) memo.clear();
  memo.set(key, value);
}

/** An unanchored matcher for an RE2 pattern (Go's regexp.MustCompile), `.` not matching newlines. */
export function re2Search(pattern: string): Re2Searcher {
  re2Source(pattern);
  const re = RE2JS.compile(pattern);
  return {
    test: (text) => re.test(text),
    execFrom(text, from) {
      const m = re.matcher(text);
      return m.find(from) ? execArray(re, m, text) : null;
    },
  };
}

/** `compile`, once per pattern for the process (the last PATTERNS_KEPT patterns); a pattern that does not compile throws each time. */
function compiledOnce<T>(compile: (pattern: string) => T): (pattern: string) => T {
  const cache = new Map<string, T>();
  return (pattern) => {
    let r = cache.get(pattern);
    if (r === undefined) {
      r = compile(pattern);
      if (cache.size >= PATTERNS_KEPT) cache.clear();
      cache.set(pattern, r);
    }
    return r;
  };
}

/** anchoredRe2 compiled once per pattern: label matchers and label_replace meet the same patterns query after query. */
export const cachedAnchoredRe2 = compiledOnce(anchoredRe2);
/** re2Search compiled once per pattern (the ruler's templates expand the same patterns per alert). */
export const cachedRe2Search = compiledOnce(re2Search);

/** The current match of `m` in RegExp.exec's shape: groups by number (undefined when unmatched) and by name. */
function execArray(re: RE2JS, m: Matcher, text: string): RegExpExecArray {
  const all: Array<string | undefined> = [];
  for (let i = 0; i <= m.groupCount(); i++) all.push(m.group(i) ?? undefined);
  const names = Object.entries(re.namedGroups());
  const groups = names.length > 0 ? Object.fromEntries(names.map(([name, i]) => [name, all[i]])) : undefined;
  return Object.assign(all, { index: m.start(), input: text, groups }) as unknown as RegExpExecArray;
}

function compile(source: string): RegExp {
  try {
    return new RegExp(source, 'u');
  } catch (err) {
    throw new Error((err as Error).message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, ''));
  }
}
