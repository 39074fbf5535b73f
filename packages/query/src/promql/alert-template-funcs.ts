/**
 * The functions an alert template can call: Go text/template's builtins and Prometheus's template
 * functions. `query`, `externalURL` and `pathPrefix` depend on the expansion (the rule's query
 * engine, the alert's data) and are bound per expansion (boundFunctions); the rest are stateless.
 * `args` and `tmpl` serve Prometheus's console templates, which alert templates are not, and are
 * refused when the template is parsed, so a rule using them is rejected on upload instead of
 * printing an error on every alert.
 *
 * A function throws a plain Error for a failure in its own terms; the evaluator wraps it as Go
 * does ("error calling humanize: …").
 */

import { cachedRe2Search, type Re2Searcher } from '../re2.ts';
import { expandTemplate } from '../regex-template.ts';
import { parseDuration } from '../logql/durations.ts';
import {
  TMap,
  TStruct,
  TTime,
  compareGoStrings,
  formatFloat,
  formatTime,
  formatValue,
  fromUtf8,
  g4,
  goTypeName,
  isTrue,
  sprint,
  sprintf,
  sprintln,
  utf8Bytes,
  type TValue,
} from './alert-template-values.ts';
import { parseGoFloat } from './go-strconv.ts';

/** How an argument is checked before the call: Go converts to the parameter's type or fails. */
export type ParamType = 'any' | 'string';

export interface TemplateFunc {
  params: readonly ParamType[];
  /** The type of further arguments, for variadic functions. */
  variadic?: ParamType;
  call(args: TValue[]): TValue;
}

const fn = (params: readonly ParamType[], call: (args: TValue[]) => TValue, variadic?: ParamType): TemplateFunc =>
  variadic === undefined ? { params, call } : { params, call, variadic };

// ---------------------------------------------------------------------------------------------
// Comparison, as Go's eq/lt: same-kind basic values only. One deliberate difference: Go treats an
// int literal and a float64 as different kinds, so `gt $value 5` is an error there and has to be
// written `gt $value 5.0`; here both are numbers and compare numerically.

type Kind = 'bool' | 'number' | 'string' | 'nil' | 'other';

function kindOf(v: TValue): Kind {
  if (v === null) return 'nil';
  switch (typeof v) {
    case 'boolean':
      return 'bool';
    case 'number':
    case 'bigint':
      return 'number';
    case 'string':
      return 'string';
  }
  return 'other';
}

function compareNumbers(a: number | bigint, b: number | bigint): number {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  const x = Number(a);
  const y = Number(b);
  return x < y ? -1 : x > y ? 1 : x === y ? 0 : NaN;
}

function eq(a: TValue, others: TValue[]): boolean {
  if (others.length === 0) throw new Error('missing argument for comparison');
  const k1 = kindOf(a);
  for (const b of others) {
    const k2 = kindOf(b);
    let truth: boolean;
    if (k1 !== k2) {
      // Go compares nil with anything as unequal; other mixed kinds are an error.
      if (k1 !== 'nil' && k2 !== 'nil') throw new Error('incompatible types for comparison');
      truth = false;
    } else if (k1 === 'number') truth = compareNumbers(a as number | bigint, b as number | bigint) === 0;
    else if (k1 === 'other') {
      if (a instanceof TTime && b instanceof TTime) truth = a.ms === b.ms;
      else throw new Error(`non-comparable type ${formatValue(a)}: ${goTypeName(a)}`);
    } else truth = a === b;
    if (truth) return true;
  }
  return false;
}

function lt(a: TValue, b: TValue): boolean {
  const k1 = kindOf(a);
  const k2 = kindOf(b);
  if (k1 === 'nil' || k1 === 'other' || k2 === 'nil' || k2 === 'other') throw new Error('invalid type for comparison');
  if (k1 !== k2) throw new Error('incompatible types for comparison');
  if (k1 === 'bool') throw new Error('invalid type for comparison');
  if (k1 === 'number') return compareNumbers(a as number | bigint, b as number | bigint) < 0;
  return compareGoStrings(a as string, b as string) < 0;
}

const le = (a: TValue, b: TValue) => lt(a, b) || eq(a, [b]);

// ---------------------------------------------------------------------------------------------
// index, slice, len

function toIndex(v: TValue, what: string): number {
  if (typeof v === 'bigint') return Number(v);
  throw new Error(`cannot index ${what} with type ${goTypeName(v)}`);
}

function index(item: TValue, indexes: TValue[]): TValue {
  let v = item;
  for (const ix of indexes) {
    if (v === null) throw new Error('index of untyped nil');
    if (v instanceof TMap) {
      if (typeof ix !== 'string') throw new Error(`value has type ${goTypeName(ix)}; should be string`);
      v = v.entries.get(ix) ?? '';
    } else if (typeof v === 'string') {
      const bytes = utf8Bytes(v);
      const i = toIndex(ix, 'string');
      if (i < 0 || i >= bytes.length) throw new Error(`index out of range: ${i}`);
      v = BigInt(bytes[i]!);
    } else if (Array.isArray(v)) {
      const i = toIndex(ix, 'slice');
      if (i < 0 || i >= v.length) throw new Error(`index out of range: ${i}`);
      v = (v as readonly TValue[])[i]!;
    } else throw new Error(`can't index item of type ${goTypeName(v)}`);
  }
  return v;
}

function slice(item: TValue, bounds: TValue[]): TValue {
  if (bounds.length > 3) throw new Error(`too many slice indexes: ${bounds.length}`);
  const ix = bounds.map((b) => toIndex(b, 'slice'));
  if (typeof item === 'string') {
    if (ix.length === 3) throw new Error('cannot 3-index slice a string');
    const bytes = utf8Bytes(item);
    const [lo = 0, hi = bytes.length] = ix;
    if (lo < 0 || hi < lo || hi > bytes.length) throw new Error(`index out of range: ${hi > bytes.length ? hi : lo}`);
    return fromUtf8(bytes.slice(lo, hi));
  }
  if (Array.isArray(item)) {
    const list = item as readonly TValue[];
    const [lo = 0, hi = list.length] = ix;
    if (lo < 0 || hi < lo || hi > list.length) throw new Error(`index out of range: ${hi > list.length ? hi : lo}`);
    return list.slice(lo, hi);
  }
  throw new Error(`can't slice item of type ${goTypeName(item)}`);
}

function len(v: TValue): bigint {
  if (typeof v === 'string') return BigInt(utf8Bytes(v).length);
  if (v instanceof TMap) return BigInt(v.entries.size);
  if (Array.isArray(v)) return BigInt(v.length);
  throw new Error(`len of type ${goTypeName(v)}`);
}

// ---------------------------------------------------------------------------------------------
// html, js, urlquery: Go's escapers. Each formats its arguments with fmt.Sprint first.

const escaperInput = (args: TValue[]) => (args.length === 1 && typeof args[0] === 'string' ? args[0] : sprint(args));

function htmlEscape(s: string): string {
  return s.replace(/[<>&'"\0]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&#39;', '"': '&#34;', '\0': '\ufffd' })[c]!);
}

function jsEscape(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\\' || ch === "'" || ch === '"') out += `\\${ch}`;
    else if ('<>&='.includes(ch)) out += `\\u00${cp.toString(16).toUpperCase()}`;
    else if (cp < 0x20 || !/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(ch)) {
      out += cp < 0x10000 ? `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}` : ch;
    } else out += ch;
  }
  return out;
}

function queryEscape(s: string): string {
  let out = '';
  for (const b of utf8Bytes(s)) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === ' ') out += '+';
    else out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Prometheus's functions.

/** Prometheus's convertToFloat: floats and ints as they are, strings parsed, anything else refused. */
function toFloat(v: TValue): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') return parseGoFloat(v);
  throw new Error(`can't convert ${goTypeName(v)} to float`);
}

const SI_BIG = ['k', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];
const SI_SMALL = ['m', 'u', 'n', 'p', 'f', 'a', 'z', 'y'];
const BINARY = ['ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei', 'Zi', 'Yi'];

/** Scales v down by step while it is at least step (or up while below 1), returning the value and the last prefix used. */
function scaleDown(v: number, step: number, prefixes: readonly string[]): [number, string] {
  let prefix = '';
  for (const p of prefixes) {
    if (Math.abs(v) < step) break;
    prefix = p;
    v /= step;
  }
  return [v, prefix];
}

function scaleUp(v: number, prefixes: readonly string[]): [number, string] {
  let prefix = '';
  for (const p of prefixes) {
    if (Math.abs(v) >= 1) break;
    prefix = p;
    v *= 1000;
  }
  return [v, prefix];
}

export function humanize(x: TValue): string {
  const v = toFloat(x);
  if (v === 0 || !Number.isFinite(v)) return g4(v);
  const [n, p] = Math.abs(v) >= 1 ? scaleDown(v, 1000, SI_BIG) : scaleUp(v, SI_SMALL);
  return g4(n) + p;
}

export function humanize1024(x: TValue): string {
  const v = toFloat(x);
  if (Math.abs(v) <= 1 || !Number.isFinite(v)) return g4(v);
  const [n, p] = scaleDown(v, 1024, BINARY);
  return g4(n) + p;
}

export function humanizeDuration(x: TValue): string {
  let v = toFloat(x);
  if (!Number.isFinite(v)) return g4(v);
  if (v === 0) return `${g4(v)}s`;
  if (Math.abs(v) >= 1) {
    const sign = v < 0 ? '-' : '';
    v = Math.abs(v);
    // Whole seconds, as Go's int64(v); BigInt keeps huge values exact.
    const total = BigInt(Math.trunc(v));
    const seconds = total % 60n;
    const minutes = (total / 60n) % 60n;
    const hours = (total / 3600n) % 24n;
    const days = total / 86400n;
    if (days !== 0n) return `${sign}${days}d ${hours}h ${minutes}m ${seconds}s`;
    if (hours !== 0n) return `${sign}${hours}h ${minutes}m ${seconds}s`;
    if (minutes !== 0n) return `${sign}${minutes}m ${seconds}s`;
    return `${sign}${g4(v)}s`;
  }
  const [n, p] = scaleUp(v, SI_SMALL);
  return `${g4(n)}${p}s`;
}

export const humanizePercentage = (x: TValue): string => `${g4(toFloat(x) * 100)}%`;

/**
 * Prometheus's floatToTime: seconds to nanoseconds as int64, then to model.Time, which keeps
 * milliseconds (truncating toward zero as Go's integer division does).
 */
function floatToTime(v: number): TTime {
  const ns = v * 1e9;
  if (ns > 9223372036854775807 || ns < -9223372036854775808) {
    throw new Error(`${formatFloat(v, 'g', -1)} cannot be represented as a nanoseconds timestamp since it overflows int64`);
  }
  return new TTime(Number(BigInt(Math.trunc(ns)) / 1_000_000n));
}

export function humanizeTimestamp(x: TValue): string {
  const v = toFloat(x);
  if (!Number.isFinite(v)) return g4(v);
  return formatTime(floatToTime(v).ms);
}

function toTime(x: TValue): TValue {
  const v = toFloat(x);
  if (!Number.isFinite(v)) throw new Error('value is NaN or Inf');
  return floatToTime(v);
}

/**
 * Title case as Prometheus's cases.Title(…, NoLower): the first letter of every word upper-cased,
 * the rest left alone. Words are runs of letters, digits, `_` and the in-word marks `'`, `.`, `:`
 * between letters, which is how Unicode word segmentation treats "don't" and "example.com".
 */
export function title(s: string): string {
  const chars = [...s];
  let out = '';
  let inWord = false;
  chars.forEach((ch, i) => {
    const wordChar = /^[\p{L}\p{M}\p{N}_]$/u.test(ch);
    const joiner = "'.:\u00b7\u2019".includes(ch) && inWord && /^\p{L}$/u.test(chars[i + 1] ?? '');
    if (wordChar && !inWord && /^\p{L}$/u.test(ch)) out += simpleCase(ch, 'upper');
    else out += ch;
    inWord = wordChar || joiner;
  });
  return out;
}

/** Go's ToUpper/ToLower map rune by rune; JavaScript's full mappings can change the length (ß → SS), which Go's don't. */
function simpleCase(ch: string, to: 'upper' | 'lower'): string {
  const m = to === 'upper' ? ch.toUpperCase() : ch.toLowerCase();
  return [...m].length === 1 ? m : ch;
}

const mapRunes = (s: string, to: 'upper' | 'lower') => [...s].map((c) => simpleCase(c, to)).join('');

/** net.SplitHostPort, returning undefined where Go returns an error. */
function splitHostPort(hostport: string): [string, string] | undefined {
  const i = hostport.lastIndexOf(':');
  if (i < 0) return undefined;
  let host: string;
  let j = 0;
  let k = 0;
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0 || end + 1 !== i) return undefined;
    host = hostport.slice(1, end);
    j = 1;
    k = end + 1;
  } else {
    host = hostport.slice(0, i);
    if (host.includes(':')) return undefined;
  }
  if (hostport.slice(j).includes('[') || hostport.slice(k).includes(']')) return undefined;
  return [host, hostport.slice(i + 1)];
}

/** net.ParseIP succeeds: dotted IPv4 or IPv6 (possibly ending in IPv4), no zone. */
function isIP(s: string): boolean {
  const v4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
  if (v4.test(s)) return true;
  if (!s.includes(':')) return false;
  let groups = 8;
  let text = s;
  const tail = /:((?:\d+\.){3}\d+)$/.exec(s);
  if (tail) {
    if (!v4.test(tail[1]!)) return false;
    text = s.slice(0, tail.index + 1) + '0:0';
  }
  const halves = text.split('::');
  if (halves.length > 2) return false;
  const part = (h: string) => (h === '' ? [] : h.split(':'));
  const all = halves.flatMap(part);
  if (!all.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false;
  return halves.length === 2 ? all.length < groups : all.length === groups;
}

function stripDomain(hostPort: string): string {
  const split = splitHostPort(hostPort);
  const [host, port] = split ?? [hostPort, ''];
  if (isIP(host)) return hostPort;
  const name = host.split('.')[0]!;
  if (port === '') return name;
  return name.includes(':') ? `[${name}]:${port}` : `${name}:${port}`;
}

/** model.ParseDuration, in seconds. */
function parsePromDuration(s: string): number {
  if (s === '0') return 0;
  const ms = parseDuration(s);
  if (ms === undefined) throw new Error(`not a valid duration string: ${JSON.stringify(s)}`);
  return ms / 1000;
}

/**
 * regexp.ReplaceAllString: successive non-overlapping matches, with Go's rule that an empty match
 * right after a previous match is not replaced (JavaScript's replace would replace it, so
 * `reReplaceAll "a*" "-" "baaac"` would differ).
 */
function replaceAll(re: Re2Searcher, repl: string, text: string): string {
  let out = '';
  let lastMatchEnd = 0;
  let searchPos = 0;
  while (searchPos <= text.length) {
    const m = re.execFrom(text, searchPos);
    if (!m) break;
    const start = m.index;
    const end = start + m[0].length;
    out += text.slice(lastMatchEnd, start);
    if (end > lastMatchEnd || start === 0) out += expandTemplate(repl, m);
    lastMatchEnd = end;
    const width = searchPos < text.length ? String.fromCodePoint(text.codePointAt(searchPos)!).length : 1;
    searchPos = searchPos + width > end ? searchPos + width : end;
  }
  return out + text.slice(lastMatchEnd);
}

/** A template's regexp, compiled once per pattern for the process (re2.ts: linear-time matching). */
function regexp(pattern: string, caller: 'match' | 'reReplaceAll'): Re2Searcher {
  try {
    return cachedRe2Search(pattern);
  } catch (err) {
    const why = `error parsing regexp: ${(err as Error).message}`;
    // match returns Go's compile error; reReplaceAll uses MustCompile, whose panic names the pattern.
    throw new Error(caller === 'match' ? why : `regexp: Compile(${JSON.stringify(pattern)}): ${why}`);
  }
}

const s = (v: TValue | undefined) => v as string;

/** Every function a template may call, by name: stateless, so one table serves every expansion. */
export const TEMPLATE_FUNCTIONS: ReadonlyMap<string, TemplateFunc> = new Map<string, TemplateFunc>([
  // Go builtins. and/or are evaluated lazily by the evaluator; these entries give their arity.
  ['and', fn(['any'], () => null, 'any')],
  ['or', fn(['any'], () => null, 'any')],
  ['not', fn(['any'], ([a]) => !isTrue(a!))],
  ['eq', fn(['any'], ([a, ...rest]) => eq(a!, rest), 'any')],
  ['ne', fn(['any', 'any'], ([a, b]) => !eq(a!, [b!]))],
  ['lt', fn(['any', 'any'], ([a, b]) => lt(a!, b!))],
  ['le', fn(['any', 'any'], ([a, b]) => le(a!, b!))],
  ['gt', fn(['any', 'any'], ([a, b]) => !le(a!, b!))],
  ['ge', fn(['any', 'any'], ([a, b]) => !lt(a!, b!))],
  ['len', fn(['any'], ([a]) => len(a!))],
  ['index', fn(['any'], ([a, ...rest]) => index(a!, rest), 'any')],
  ['slice', fn(['any'], ([a, ...rest]) => slice(a!, rest), 'any')],
  ['print', fn([], (args) => sprint(args), 'any')],
  ['printf', fn(['string'], ([f, ...rest]) => sprintf(s(f), rest), 'any')],
  ['println', fn([], (args) => sprintln(args), 'any')],
  ['html', fn([], (args) => htmlEscape(escaperInput(args)), 'any')],
  ['js', fn([], (args) => jsEscape(escaperInput(args)), 'any')],
  ['urlquery', fn([], (args) => queryEscape(escaperInput(args)), 'any')],
  ['call', fn(['any'], ([f]) => {
    throw new Error(`non-function ${formatValue(f!)} of type ${goTypeName(f!)}`);
  }, 'any')],
  // Prometheus.
  ['humanize', fn(['any'], ([a]) => humanize(a!))],
  ['humanize1024', fn(['any'], ([a]) => humanize1024(a!))],
  ['humanizeDuration', fn(['any'], ([a]) => humanizeDuration(a!))],
  ['humanizePercentage', fn(['any'], ([a]) => humanizePercentage(a!))],
  ['humanizeTimestamp', fn(['any'], ([a]) => humanizeTimestamp(a!))],
  ['toTime', fn(['any'], ([a]) => toTime(a!))],
  ['title', fn(['string'], ([a]) => title(s(a)))],
  ['toUpper', fn(['string'], ([a]) => mapRunes(s(a), 'upper'))],
  ['toLower', fn(['string'], ([a]) => mapRunes(s(a), 'lower'))],
  ['match', fn(['string', 'string'], ([p, t]) => regexp(s(p), 'match').test(s(t)))],
  ['reReplaceAll', fn(['string', 'string', 'string'], ([p, r, t]) => replaceAll(regexp(s(p), 'reReplaceAll'), s(r), s(t)))],
  ['safeHtml', fn(['string'], ([a]) => a!)],
  ['stripPort', fn(['string'], ([a]) => splitHostPort(s(a))?.[0] ?? s(a))],
  ['stripDomain', fn(['string'], ([a]) => stripDomain(s(a)))],
  ['parseDuration', fn(['string'], ([a]) => parsePromDuration(s(a)))],
  // Prometheus's query results: `query` returns a list of samples (bound per expansion below).
  ['first', fn(['any'], ([r]) => {
    const list = queryResult(r!, 'first');
    if (list.length === 0) throw new Error('first() called on vector with no elements');
    return list[0]!;
  })],
  ['label', fn(['string', 'any'], ([l, smp]) => sampleOf(smp!, 'label').labels.entries.get(s(l)) ?? '')],
  ['value', fn(['any'], ([smp]) => sampleOf(smp!, 'value').value)],
  ['strvalue', fn(['any'], ([smp]) => sampleOf(smp!, 'strvalue').labels.entries.get('__value__') ?? '')],
  ['sortByLabel', fn(['string', 'any'], ([l, r]) => {
    const key = (v: TValue) => sampleOf(v, 'sortByLabel').labels.entries.get(s(l)) ?? '';
    // Array.prototype.sort is stable, as Prometheus's sort.Stable.
    return [...queryResult(r!, 'sortByLabel')].sort((a, b) => compareGoStrings(key(a), key(b)));
  })],
]);

/** One sample of a query result, as Prometheus's template data: `.Labels` (with __name__) and `.Value`. */
export function templateSample(labels: Readonly<Record<string, string>>, value: number): TStruct {
  return new TStruct(new Map<string, TValue>([['Labels', new TMap(new Map(Object.entries(labels)))], ['Value', value]]));
}

function sampleOf(v: TValue, caller: string): { labels: TMap; value: number } {
  const labels = v instanceof TStruct ? v.fields.get('Labels') : undefined;
  const value = v instanceof TStruct ? v.fields.get('Value') : undefined;
  if (!(labels instanceof TMap) || typeof value !== 'number') throw new Error(`${caller} needs a sample of a query result, not ${goTypeName(v)}`);
  return { labels, value };
}

function queryResult(v: TValue, caller: string): readonly TValue[] {
  if (!Array.isArray(v)) throw new Error(`${caller} needs a query result, not ${goTypeName(v as TValue)}`);
  return v as readonly TValue[];
}

/** What the expansion-bound functions answer from. */
export interface BoundData {
  externalURL: string;
  /** The samples of an instant query at the alert's evaluation; throws when the query failed. */
  query(expr: string): readonly TValue[];
}

/** Functions answered from the expansion itself; the names are known to the parser. */
const BOUND = ['query', 'externalURL', 'pathPrefix'] as const;

/** The function table of one expansion: the stateless ones and those bound to `data`. */
export function boundFunctions(data: BoundData): ReadonlyMap<string, TemplateFunc> {
  const funcs = new Map(TEMPLATE_FUNCTIONS);
  funcs.set('query', fn(['string'], ([q]) => data.query(s(q))));
  funcs.set('externalURL', fn([], () => data.externalURL));
  funcs.set('pathPrefix', fn([], () => urlPath(data.externalURL)));
  return funcs;
}

/** The path of the external URL, as Prometheus's pathPrefix (Go's URL.Path: "" when the URL has none). */
function urlPath(url: string): string {
  try {
    const path = new URL(url).pathname;
    // WHATWG URLs always have a path; Go's keeps it empty for "http://host".
    return path === '/' && !/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*\//i.test(url) ? '' : path;
  } catch {
    return '';
  }
}

/** Prometheus's console-template functions; alert templates have no template arguments or other templates. */
const UNSUPPORTED = new Set(['args', 'tmpl']);

/** For the parser: undefined when a function may be called, else the reason it may not. */
export function checkFunction(name: string): string | undefined {
  if (TEMPLATE_FUNCTIONS.has(name) || (BOUND as readonly string[]).includes(name)) return undefined;
  if (UNSUPPORTED.has(name)) return `function "${name}" serves console templates and is not available in alert templates`;
  return `function "${name}" not defined`;
}
