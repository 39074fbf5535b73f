/**
 * Go's strconv functions that Prometheus's texts and numbers go through, where JavaScript's own
 * differ: Quote (%q in error and annotation texts, and the template functions') and ParseFloat
 * (a bucket's `le` label in histogram_quantile, a bucket whose bound does not parse is left out;
 * string arguments of the template functions). ParseFloat, unlike Number(), takes no surrounding
 * whitespace, no 0b/0o prefixes or bare 0x integers, `inf`, `infinity` and `nan` in any case (a
 * sign before inf only), hexadecimal mantissas only with a binary exponent (0x1.8p3), and makes a
 * magnitude beyond float64 an error rather than Infinity.
 */

const isGoPrintable = (ch: string) => /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(ch);

/** strconv.Quote (or QuoteToASCII when ascii is set). */
export function goQuote(s: string, ascii = false, quote = '"'): string {
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (cp < 0x80 ? cp >= 0x20 && cp < 0x7f : !ascii && isGoPrintable(ch)) out += ch;
    else if (ch === '\x07') out += '\\a';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\v') out += '\\v';
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp >= 0xd800 && cp <= 0xdfff) out += '\\ufffd'; // a lone surrogate is not a valid rune
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return out + quote;
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const HEX = /^([+-]?)0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP]([+-]?\d+)$/;
const INFINITE = /^([+-]?)(?:inf|infinity)$/i;

/** strconv.ParseFloat(s, 64); throws its error text. */
export function parseGoFloat(s: string): number {
  const inf = INFINITE.exec(s);
  if (inf) return inf[1] === '-' ? -Infinity : Infinity;
  if (/^nan$/i.test(s)) return NaN;
  let v: number;
  const hex = HEX.exec(s);
  if (DECIMAL.test(s)) v = Number(s);
  else if (hex) {
    const [whole = '', frac = ''] = hex[2]!.split('.');
    v = (hex[1] === '-' ? -1 : 1) * Number.parseInt(`${whole}${frac}` || '0', 16) * 2 ** (Number(hex[3]) - 4 * frac.length);
  } else throw new Error(`strconv.ParseFloat: parsing ${goQuote(s)}: invalid syntax`);
  if (!Number.isFinite(v)) throw new Error(`strconv.ParseFloat: parsing ${goQuote(s)}: value out of range`);
  return v;
}
