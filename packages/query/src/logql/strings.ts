import { re2RegExp, re2Source } from '../re2.ts';
import { syntaxError } from './errors.ts';

/**
 * LogQL string literals follow Go: "double-quoted" with Go escapes (strconv.Unquote), `backtick`
 * raw strings. Single quotes are read like double quotes. A NUL character is refused: values travel
 * to DuckDB as parameters, and a C string would end there, silently widening a filter.
 */
export function unquote(src: string, offset: number, raw: string): string {
  const q = raw[0];
  if (q === '`') {
    if (raw.length < 2 || !raw.endsWith('`')) throw syntaxError(src, offset, 'unterminated raw string');
    return noNul(src, offset, raw.slice(1, -1));
  }
  if (q !== '"' && q !== "'") throw syntaxError(src, offset, `expecting a quoted string, got ${JSON.stringify(raw.slice(0, 24))}`);
  const bytes: number[] = [];
  const pushText = (s: string) => bytes.push(...Buffer.from(s, 'utf8'));
  let i = 1;
  for (;;) {
    if (i >= raw.length) throw syntaxError(src, offset, 'unterminated string (missing closing quote)');
    const c = raw[i]!;
    if (c === q) {
      if (i !== raw.length - 1) throw syntaxError(src, offset + i + 1, 'unexpected text after a string');
      break;
    }
    if (c !== '\\') {
      const cp = raw.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      pushText(ch);
      i += ch.length;
      continue;
    }
    const e = raw[i + 1];
    const simple: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, '"': 34, "'": 39 };
    if (e !== undefined && e in simple) {
      bytes.push(simple[e]!);
      i += 2;
      continue;
    }
    const hex = (len: number) => {
      const h = raw.slice(i + 2, i + 2 + len);
      if (h.length !== len || !/^[0-9a-fA-F]+$/.test(h)) throw badEscape(src, offset + i, raw.slice(i, i + 2 + len));
      return parseInt(h, 16);
    };
    if (e === 'x') {
      bytes.push(hex(2));
      i += 4;
    } else if (e === 'u' || e === 'U') {
      const len = e === 'u' ? 4 : 8;
      const cp = hex(len);
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw badEscape(src, offset + i, raw.slice(i, i + 2 + len));
      pushText(String.fromCodePoint(cp));
      i += 2 + len;
    } else if (e !== undefined && /[0-7]/.test(e)) {
      const o = raw.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(o) || parseInt(o, 8) > 255) throw badEscape(src, offset + i, raw.slice(i, i + 4));
      bytes.push(parseInt(o, 8));
      i += 4;
    } else {
      throw badEscape(src, offset + i, raw.slice(i, i + 2));
    }
  }
  return noNul(src, offset, Buffer.from(bytes).toString('utf8'));
}

function badEscape(src: string, offset: number, seq: string) {
  return syntaxError(src, offset, `invalid escape sequence ${JSON.stringify(seq)} in a quoted string (write a backslash as \\\\, or use a backtick string)`);
}

function noNul(src: string, offset: number, s: string): string {
  if (s.includes('\0')) throw syntaxError(src, offset, 'strings may not contain NUL characters');
  return s;
}

/**
 * JavaScript RegExp source with the RE2 pattern's meaning (re2.ts: meant for the `u` flag). Filters
 * themselves run in DuckDB, which uses RE2; this serves the checks made before, such as whether a
 * matcher accepts an absent label.
 */
export function toJsRegexSource(pattern: string): string {
  return re2Source(pattern);
}

/**
 * Refuses what RE2 (DuckDB's regex engine, and Loki's) would refuse, with the position of the
 * string: unbalanced groups and classes, dangling quantifiers, lookaround, backreferences.
 */
export function checkRegex(src: string, offset: number, pattern: string): void {
  try {
    re2RegExp(pattern);
  } catch (err) {
    throw syntaxError(src, offset, `invalid regular expression ${JSON.stringify(pattern)}: ${(err as Error).message}`);
  }
}
