/**
 * The values an alert template computes with, and how Go's fmt prints them.
 *
 * Go's templates are dynamically typed over Go values; the handful of Go types a Prometheus alert
 * template can meet are mapped onto JavaScript ones so that printing and comparison can follow Go:
 * a float64 is a `number`, an int (integer literals, `len`, byte indexes) a `bigint` — Go prints
 * and compares the two differently — and the label sets, the data struct and `toTime`'s
 * `*time.Time` get small classes of their own.
 */

import { goQuote } from './go-strconv.ts';

export class TMap {
  /** A Go map[string]string; missing keys read as "" (Prometheus executes with missingkey=zero). */
  readonly entries: ReadonlyMap<string, string>;
  constructor(entries: ReadonlyMap<string, string>) {
    this.entries = entries;
  }
  sortedKeys(): string[] {
    return [...this.entries.keys()].sort(compareGoStrings);
  }
}

export class TStruct {
  /** A Go struct; fields print in declaration order, which is the map's insertion order. */
  readonly fields: ReadonlyMap<string, TValue>;
  constructor(fields: ReadonlyMap<string, TValue>) {
    this.fields = fields;
  }
}

export class TTime {
  /** A UTC instant with millisecond precision, as Prometheus's model.Time carries it. */
  readonly ms: number;
  constructor(ms: number) {
    this.ms = ms;
  }
}

export type TValue = string | number | bigint | boolean | null | TMap | TStruct | TTime | readonly TValue[];

/** Go compares strings bytewise (UTF-8), which is code point order; UTF-16 order differs only around surrogates. */
export function compareGoStrings(a: string, b: string): number {
  if (a === b) return 0;
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0)!;
    const cy = y.value.codePointAt(0)!;
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

/** The Go type name used in error messages, as `%T` would print it. */
export function goTypeName(v: TValue): string {
  if (v === null) return '<nil>';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'number':
      return 'float64';
    case 'bigint':
      return 'int';
    case 'boolean':
      return 'bool';
  }
  if (v instanceof TMap) return 'map[string]string';
  if (v instanceof TStruct) return 'struct';
  if (v instanceof TTime) return '*time.Time';
  return '[]interface {}';
}

/** Go's truth for if/with/and/or/not: zero values and empty containers are false; NaN is true (NaN != 0). */
export function isTrue(v: TValue): boolean {
  if (v === null) return false;
  switch (typeof v) {
    case 'string':
      return v.length > 0;
    case 'number':
      return v !== 0;
    case 'bigint':
      return v !== 0n;
    case 'boolean':
      return v;
  }
  if (v instanceof TMap) return v.entries.size > 0;
  if (v instanceof TStruct || v instanceof TTime) return true;
  return (v as readonly TValue[]).length > 0;
}

export const utf8Length = (s: string): number => Buffer.byteLength(s, 'utf8');

const encoder = new TextEncoder();
export const utf8Bytes = (s: string): Uint8Array => encoder.encode(s);
export const fromUtf8 = (b: Uint8Array): string => new TextDecoder('utf-8', { fatal: false }).decode(b);

// ---------------------------------------------------------------------------------------------
// Floats, the way Go's strconv formats them. Digits are worked out exactly (a double is an exact
// binary fraction, so its full decimal expansion is finite) and rounded half-to-even as strconv
// does, because JavaScript's toFixed/toPrecision round ties away from zero and would print
// `%.0f` of 2.5 as "3" where Go prints "2".

/** Decimal digits without leading or trailing zeros; the value is 0.d × 10^dp. Zero has d = "". */
interface Digits {
  d: string;
  dp: number;
}

function exactDigits(x: number): Digits {
  if (x === 0) return { d: '', dp: 0 };
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const expBits = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let e: number;
  if (expBits === 0) e = -1074;
  else {
    mant |= 1n << 52n;
    e = expBits - 1075;
  }
  let s: string;
  let dp: number;
  if (e >= 0) {
    s = (mant << BigInt(e)).toString();
    dp = s.length;
  } else {
    // mant × 2^e = mant × 5^-e / 10^-e
    s = (mant * 5n ** BigInt(-e)).toString();
    dp = s.length + e;
  }
  return { d: s.replace(/0+$/, ''), dp };
}

/** The shortest digits that read back as x, which JavaScript's number-to-string also produces. */
function shortestDigits(x: number): Digits {
  if (x === 0) return { d: '', dp: 0 };
  const [mant, exp] = x.toExponential().split('e') as [string, string];
  return { d: mant.replace('.', '').replace(/0+$/, ''), dp: Number(exp) + 1 };
}

/** Round to nd digits, half to even, as strconv's decimal.Round does. */
function roundDigits(g: Digits, nd: number): Digits {
  const { d, dp } = g;
  if (nd < 0 || nd >= d.length) return g;
  const next = d.charCodeAt(nd) - 48;
  const halfway = next === 5 && nd + 1 === d.length;
  const up = halfway ? nd > 0 && (d.charCodeAt(nd - 1) - 48) % 2 === 1 : next >= 5;
  if (!up) return { d: d.slice(0, nd).replace(/0+$/, ''), dp };
  let i = nd - 1;
  while (i >= 0 && d[i] === '9') i--;
  if (i < 0) return { d: '1', dp: dp + 1 };
  return { d: d.slice(0, i) + String.fromCharCode(d.charCodeAt(i) + 1), dp };
}

function fmtE(g: Digits, prec: number, ch: string): string {
  let out = g.d.length === 0 ? '0' : g.d[0]!;
  if (prec > 0) {
    out += '.';
    const frac = g.d.slice(1, prec + 1);
    out += frac + '0'.repeat(prec - frac.length);
  }
  const exp = g.d.length === 0 ? 0 : g.dp - 1;
  const abs = Math.abs(exp);
  return `${out}${ch}${exp < 0 ? '-' : '+'}${abs < 10 ? '0' : ''}${abs}`;
}

function fmtF(g: Digits, prec: number): string {
  let out: string;
  if (g.dp > 0) {
    const int = g.d.slice(0, g.dp);
    out = int + '0'.repeat(g.dp - int.length);
  } else out = '0';
  if (prec > 0) {
    out += '.';
    for (let i = 1; i <= prec; i++) {
      const j = g.dp + i - 1;
      out += j >= 0 && j < g.d.length ? g.d[j] : '0';
    }
  }
  return out;
}

/**
 * strconv.FormatFloat(x, fmt, prec, 64): fmt is e, E, f, g or G; prec -1 means the shortest digits
 * that round-trip. `%v` of a float64 is formatFloat(x, 'g', -1): exponent form when the exponent is
 * below -4 or at least 6 (shortest formatting decides with precision 6, whatever the digit count).
 */
export function formatFloat(x: number, fmt: 'e' | 'E' | 'f' | 'g' | 'G', prec: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return '+Inf';
  if (x === -Infinity) return '-Inf';
  const neg = x < 0 || Object.is(x, -0);
  const abs = Math.abs(x);
  const shortest = prec < 0;
  let g: Digits;
  if (shortest) {
    g = shortestDigits(abs);
    if (fmt === 'e' || fmt === 'E') prec = Math.max(g.d.length - 1, 0);
    else if (fmt === 'f') prec = Math.max(g.d.length - g.dp, 0);
    else prec = g.d.length;
  } else {
    g = exactDigits(abs);
    if (fmt === 'e' || fmt === 'E') g = roundDigits(g, prec + 1);
    else if (fmt === 'f') g = roundDigits(g, g.dp + prec);
    else {
      if (prec === 0) prec = 1;
      g = roundDigits(g, prec);
    }
  }
  let body: string;
  if (fmt === 'e' || fmt === 'E') body = fmtE(g, prec, fmt);
  else if (fmt === 'f') body = fmtF(g, prec);
  else {
    let eprec = prec;
    if (eprec > g.d.length && g.d.length >= g.dp) eprec = g.d.length;
    if (shortest) eprec = 6;
    const exp = g.dp - 1;
    if (exp < -4 || exp >= eprec) body = fmtE(g, Math.min(prec, g.d.length) - 1, fmt === 'g' ? 'e' : 'E');
    else body = fmtF(g, Math.max((prec > g.dp ? g.d.length : prec) - g.dp, 0));
  }
  return neg ? `-${body}` : body;
}

/** `%.4g`, which every humanize function uses. */
export const g4 = (x: number): string => formatFloat(x, 'g', 4);


// ---------------------------------------------------------------------------------------------
// Printing values as fmt's %v does.

/** Go's time.Time.String() for a UTC instant: "2006-01-02 15:04:05.999999999 +0000 UTC". */
export function formatTime(ms: number): string {
  const d = new Date(ms);
  const p2 = (n: number) => String(n).padStart(2, '0');
  const frac = ((ms % 1000) + 1000) % 1000;
  const fracText = frac === 0 ? '' : `.${String(frac).padStart(3, '0').replace(/0+$/, '')}`;
  return `${String(d.getUTCFullYear()).padStart(4, '0')}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}${fracText} +0000 UTC`;
}

/** fmt's %v of one value. */
export function formatValue(v: TValue): string {
  if (v === null) return '<nil>';
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
      return formatFloat(v, 'g', -1);
    case 'bigint':
    case 'boolean':
      return String(v);
  }
  if (v instanceof TMap) return `map[${v.sortedKeys().map((k) => `${k}:${v.entries.get(k)!}`).join(' ')}]`;
  if (v instanceof TStruct) return `{${[...v.fields.values()].map(formatValue).join(' ')}}`;
  if (v instanceof TTime) return formatTime(v.ms);
  return `[${(v as readonly TValue[]).map(formatValue).join(' ')}]`;
}

/** fmt.Sprint: operands concatenated, with a space between two operands when neither is a string. */
export function sprint(args: readonly TValue[]): string {
  let out = '';
  args.forEach((a, i) => {
    if (i > 0 && typeof a !== 'string' && typeof args[i - 1] !== 'string') out += ' ';
    out += formatValue(a);
  });
  return out;
}

export const sprintln = (args: readonly TValue[]): string => `${args.map(formatValue).join(' ')}\n`;



// ---------------------------------------------------------------------------------------------
// printf: Go's fmt verbs for the kinds of value a template has.

interface Spec {
  minus: boolean;
  plus: boolean;
  space: boolean;
  zero: boolean;
  sharp: boolean;
  width: number | undefined;
  prec: number | undefined;
  verb: string;
}

/** fmt's limit on width and precision; beyond it Go reports BADWIDTH/BADPREC rather than allocate. */
const MAX_WIDTH = 1_000_000;

function pad(s: string, spec: Spec, zeroOk = true): string {
  const width = spec.width ?? 0;
  const n = [...s].length;
  if (n >= width) return s;
  const fill = (spec.zero && zeroOk && !spec.minus ? '0' : ' ').repeat(width - n);
  return spec.minus ? s + fill : fill + s;
}

/** Pads a signed number: zeros go between the sign and the digits. */
function padNumber(sign: string, digits: string, spec: Spec, zeroOk = true): string {
  if (spec.zero && zeroOk && !spec.minus && spec.width !== undefined) {
    const want = spec.width - sign.length;
    if (digits.length < want) digits = '0'.repeat(want - digits.length) + digits;
    return sign + digits;
  }
  return pad(sign + digits, spec, false);
}

const badVerb = (spec: Spec, v: TValue) => (v === null ? `%!${spec.verb}(<nil>)` : `%!${spec.verb}(${goTypeName(v)}=${formatValue(v)})`);

function fmtFloatVerb(x: number, spec: Spec): string {
  const verb = spec.verb === 'v' ? 'g' : spec.verb === 'F' ? 'f' : (spec.verb as 'e' | 'E' | 'f' | 'g' | 'G');
  const prec = spec.prec ?? (verb === 'g' || verb === 'G' ? -1 : 6);
  const s = formatFloat(x, verb, prec);
  const negative = s.startsWith('-');
  const body = negative || s.startsWith('+') ? s.slice(1) : s;
  // strconv signs negatives and +Inf; the + and space flags sign everything else, NaN included.
  let sign = negative ? '-' : s.startsWith('+') ? '+' : '';
  if (!negative && (spec.plus || spec.space)) sign = spec.plus ? '+' : ' ';
  // Infinities and NaN are not padded with zeros: they don't look like numbers.
  return padNumber(sign, body, spec, body !== 'Inf' && body !== 'NaN');
}

function fmtIntVerb(n: bigint, spec: Spec): string {
  const neg = n < 0n;
  const abs = neg ? -n : n;
  const sign = neg ? '-' : spec.plus ? '+' : spec.space ? ' ' : '';
  switch (spec.verb) {
    case 'c':
      return pad(abs > 0x10ffffn ? '\ufffd' : String.fromCodePoint(Number(n < 0n ? 0xfffd : n)), spec);
    case 'q':
      return pad(goQuote(n < 0n || n > 0x10ffffn ? '\ufffd' : String.fromCodePoint(Number(n)), spec.plus, "'"), spec);
    case 'U':
      return pad(`U+${abs.toString(16).toUpperCase().padStart(4, '0')}`, spec);
  }
  const base = { d: 10, v: 10, b: 2, o: 8, O: 8, x: 16, X: 16 }[spec.verb];
  if (base === undefined) return badVerb(spec, n);
  let digits = abs.toString(base);
  if (spec.verb === 'X') digits = digits.toUpperCase();
  if (spec.prec !== undefined) {
    digits = spec.prec === 0 && abs === 0n ? '' : digits.padStart(spec.prec, '0');
  }
  let prefix = '';
  if (spec.verb === 'O') prefix = '0o';
  else if (spec.sharp) prefix = spec.verb === 'x' ? '0x' : spec.verb === 'X' ? '0X' : spec.verb === 'o' && !digits.startsWith('0') ? '0' : spec.verb === 'b' ? '0b' : '';
  return padNumber(sign + prefix, digits, spec, spec.prec === undefined);
}

function fmtStringVerb(s: string, spec: Spec): string {
  if (spec.prec !== undefined && spec.verb !== 'x' && spec.verb !== 'X') s = [...s].slice(0, spec.prec).join('');
  switch (spec.verb) {
    case 's':
    case 'v':
      return pad(s, spec);
    case 'q':
      return pad(goQuote(s, spec.plus), spec);
    case 'x':
    case 'X': {
      let bytes = utf8Bytes(s);
      if (spec.prec !== undefined) bytes = bytes.slice(0, spec.prec);
      const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0'));
      const joined = hex.join(spec.space ? ' ' : '');
      return pad(spec.verb === 'X' ? joined.toUpperCase() : joined, spec);
    }
  }
  return badVerb(spec, s);
}

function fmtOne(v: TValue, spec: Spec): string {
  if (spec.verb === 'T') return pad(goTypeName(v), spec);
  if (v === null) return spec.verb === 'v' ? pad('<nil>', spec) : badVerb(spec, v);
  switch (typeof v) {
    case 'string':
      return fmtStringVerb(v, spec);
    case 'number':
      return 'eEfFgGv'.includes(spec.verb) ? fmtFloatVerb(v, spec) : badVerb(spec, v);
    case 'bigint':
      return fmtIntVerb(v, spec);
    case 'boolean':
      return spec.verb === 't' || spec.verb === 'v' ? pad(String(v), spec) : badVerb(spec, v);
  }
  // Maps, the data struct, times and lists: Go would apply the verb element-wise; their %v is
  // what templates print in practice, so every verb that makes sense for text gets that.
  return spec.verb === 'v' || spec.verb === 's' ? pad(formatValue(v), spec) : badVerb(spec, v);
}

/** fmt.Sprintf with Go's verbs and flags (no explicit argument indexes), and Go's in-band error notes. */
export function sprintf(format: string, args: readonly TValue[]): string {
  let out = '';
  let argi = 0;
  let i = 0;
  while (i < format.length) {
    const pct = format.indexOf('%', i);
    if (pct < 0) {
      out += format.slice(i);
      break;
    }
    out += format.slice(i, pct);
    i = pct + 1;
    const spec: Spec = { minus: false, plus: false, space: false, zero: false, sharp: false, width: undefined, prec: undefined, verb: '' };
    for (; i < format.length; i++) {
      const c = format[i];
      if (c === '-') {
        spec.minus = true;
        spec.zero = false;
      } else if (c === '+') spec.plus = true;
      else if (c === ' ') spec.space = true;
      else if (c === '#') spec.sharp = true;
      else if (c === '0') spec.zero = !spec.minus;
      else break;
    }
    let bad = '';
    // Width and precision: digits, or `*` taking an int argument.
    const number = (): number | undefined | 'bad' => {
      if (format[i] === '*') {
        i++;
        const a = args[argi++];
        if (typeof a !== 'bigint' || a > BigInt(MAX_WIDTH) || a < -BigInt(MAX_WIDTH)) return 'bad';
        return Number(a);
      }
      const m = /^\d+/.exec(format.slice(i));
      if (!m) return undefined;
      i += m[0].length;
      const n = Number(m[0]);
      return n > MAX_WIDTH ? 'bad' : n;
    };
    const w = number();
    if (w === 'bad') bad += '%!(BADWIDTH)';
    else if (w !== undefined && w < 0) {
      spec.minus = true; // a negative `*` width means left-justify
      spec.zero = false;
      spec.width = -w;
    } else spec.width = w;
    if (format[i] === '.') {
      i++;
      const p = number();
      if (p === 'bad' || (p !== undefined && p < 0)) bad += '%!(BADPREC)';
      else spec.prec = p ?? 0;
    }
    out += bad;
    if (i >= format.length) {
      out += '%!(NOVERB)';
      break;
    }
    const verb = String.fromCodePoint(format.codePointAt(i)!);
    i += verb.length;
    spec.verb = verb;
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (argi >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    out += fmtOne(args[argi++]!, spec);
  }
  if (argi < args.length) {
    out += `%!(EXTRA ${args
      .slice(argi)
      .map((a) => (a === null ? '<nil>' : `${goTypeName(a)}=${formatValue(a)}`))
      .join(', ')})`;
  }
  return out;
}
