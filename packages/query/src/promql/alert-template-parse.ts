/**
 * Lexer and parser for the Go text/template subset alert templates use. Both follow Go's
 * text/template/parse closely — the same tokens, the same grammar, and error messages worded as
 * Go words them — so a template that parses in Prometheus parses here and one that fails names
 * the same problem. Left out on purpose: {{define}}, {{template}} and {{block}} (an alert
 * template is one field's text), and custom delimiters.
 */

import { fromUtf8, utf8Bytes } from './alert-template-values.ts';
import { goQuote } from './go-strconv.ts';

// ---------------------------------------------------------------------------------------------
// AST

export type Arg =
  | { kind: 'field'; pos: number; idents: string[] }
  | { kind: 'variable'; pos: number; name: string; idents: string[] }
  | { kind: 'chain'; pos: number; node: Arg; idents: string[] }
  | { kind: 'identifier'; pos: number; name: string }
  | { kind: 'dot'; pos: number }
  | { kind: 'nil'; pos: number }
  | { kind: 'bool'; pos: number; value: boolean }
  | { kind: 'number'; pos: number; value: number | bigint; text: string }
  | { kind: 'string'; pos: number; value: string; text: string }
  | { kind: 'pipe'; pos: number; pipe: Pipe };

export interface Command {
  pos: number;
  args: Arg[];
}

export interface Pipe {
  pos: number;
  /** Variables the pipeline declares (`:=`) or assigns (`=`); two for `range $k, $v := …`. */
  decl: string[];
  isAssign: boolean;
  cmds: Command[];
}

/** if, with and range: a pipeline, a body, and an optional else body (which holds the nested block of `else if`). */
export interface BlockNode {
  kind: 'if' | 'with' | 'range';
  pos: number;
  pipe: Pipe;
  list: Node[];
  elseList: Node[] | undefined;
}

export type Node =
  | { kind: 'text'; pos: number; text: string }
  | { kind: 'action'; pos: number; pipe: Pipe }
  | BlockNode
  | { kind: 'break' | 'continue'; pos: number };

export function argString(a: Arg): string {
  switch (a.kind) {
    case 'field':
      return a.idents.map((i) => `.${i}`).join('');
    case 'variable':
      return [a.name, ...a.idents].join('.');
    case 'chain': {
      const inner = a.node.kind === 'pipe' ? `(${argString(a.node)})` : argString(a.node);
      return inner + a.idents.map((i) => `.${i}`).join('');
    }
    case 'identifier':
      return a.name;
    case 'dot':
      return '.';
    case 'nil':
      return 'nil';
    case 'bool':
      return String(a.value);
    case 'number':
    case 'string':
      return a.text;
    case 'pipe':
      return pipeString(a.pipe);
  }
}

export const commandString = (c: Command): string => c.args.map((a) => (a.kind === 'pipe' ? `(${argString(a)})` : argString(a))).join(' ');

export function pipeString(p: Pipe): string {
  const decl = p.decl.length > 0 ? `${p.decl.join(', ')} ${p.isAssign ? '=' : ':='} ` : '';
  return decl + p.cmds.map(commandString).join(' | ');
}

// ---------------------------------------------------------------------------------------------
// Lexer

type TokenType =
  | 'text' | 'leftDelim' | 'rightDelim' | 'space' | 'field' | 'variable' | 'identifier' | 'keyword'
  | 'bool' | 'nil' | 'dot' | 'number' | 'charConstant' | 'string' | 'rawString' | 'char'
  | 'pipe' | 'leftParen' | 'rightParen' | 'assign' | 'declare' | 'eof' | 'error';

interface Token {
  type: TokenType;
  val: string;
  pos: number;
}

const KEYWORDS = new Set(['block', 'break', 'continue', 'define', 'else', 'end', 'if', 'range', 'template', 'with']);
const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\r' || c === '\n';
const isAlphaNumeric = (c: string | undefined) => c !== undefined && (c === '_' || /^[\p{L}\p{Nd}]$/u.test(c));
const describeRune = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} '${c}'`;

/** Tokenises the whole text up front; a lexical error becomes an `error` token where Go's lexer would stop, so the parser reports whichever problem comes first. */
function lex(input: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  let start = 0;
  const parens: number[] = []; // positions of open left parens
  const emit = (type: TokenType, val = input.slice(start, pos)) => {
    tokens.push({ type, val, pos: start });
    start = pos;
  };
  const fail = (message: string, at = start): Token[] => {
    tokens.push({ type: 'error', val: message, pos: at });
    return tokens;
  };
  const skipSpace = () => {
    while (isSpace(input[pos])) pos++;
    start = pos;
  };
  // ` -}}`: a space, the trim marker, and the closing delimiter.
  const atRightTrim = (p: number) => isSpace(input[p]) && input[p + 1] === '-' && input.startsWith('}}', p + 2);
  const atTerminator = () => {
    const c = input[pos];
    return c === undefined || isSpace(c) || '.,|:)('.includes(c) || c === '}';
  };

  for (;;) {
    // Text up to the next action.
    const open = input.indexOf('{{', pos);
    if (open < 0) {
      pos = input.length;
      if (pos > start) emit('text');
      tokens.push({ type: 'eof', val: '', pos });
      return tokens;
    }
    const trimLeft = input[open + 2] === '-' && isSpace(input[open + 3]);
    let text = input.slice(start, open);
    if (trimLeft) text = text.replace(/[ \t\r\n]+$/, '');
    if (text.length > 0) tokens.push({ type: 'text', val: text, pos: start });
    start = open;
    pos = open + 2 + (trimLeft ? 2 : 0);

    if (input.startsWith('/*', pos)) {
      const close = input.indexOf('*/', pos + 2);
      if (close < 0) return fail('unclosed comment');
      pos = close + 2;
      const trim = atRightTrim(pos);
      if (!trim && !input.startsWith('}}', pos)) return fail('comment ends before closing delimiter');
      pos += trim ? 4 : 2;
      start = pos;
      if (trim) skipSpace();
      continue;
    }

    emit('leftDelim', '{{');
    start = pos;
    // Inside the action.
    for (;;) {
      const trimRight = atRightTrim(pos);
      if (trimRight || input.startsWith('}}', pos)) {
        if (parens.length > 0) return fail('unclosed left paren', parens.at(-1));
        if (trimRight) {
          pos++;
          start = pos;
        }
        pos += trimRight ? 3 : 2;
        emit('rightDelim', '}}');
        if (trimRight) skipSpace();
        break;
      }
      const c = input[pos];
      if (c === undefined) return fail('unclosed action');
      if (isSpace(c)) {
        while (isSpace(input[pos]) && !atRightTrim(pos)) pos++;
        emit('space');
      } else if (c === '=') {
        pos++;
        emit('assign');
      } else if (c === ':') {
        if (input[pos + 1] !== '=') return fail('expected :=');
        pos += 2;
        emit('declare');
      } else if (c === '|') {
        pos++;
        emit('pipe');
      } else if (c === '"' || c === "'") {
        pos++;
        for (;;) {
          let d = input[pos];
          if (d === '\\') d = input[++pos] === undefined || input[pos] === '\n' ? undefined : '\\';
          if (d === undefined || d === '\n') return fail(c === '"' ? 'unterminated quoted string' : 'unterminated character constant');
          pos++;
          if (d === c) break;
        }
        emit(c === '"' ? 'string' : 'charConstant');
      } else if (c === '`') {
        const close = input.indexOf('`', pos + 1);
        if (close < 0) return fail('unterminated raw quoted string');
        pos = close + 1;
        emit('rawString');
      } else if (c === '$' || (c === '.' && !/[0-9]/.test(input[pos + 1] ?? ''))) {
        pos++;
        if (c === '.' && atTerminator()) {
          emit('dot');
          continue;
        }
        while (isAlphaNumeric(input[pos])) pos++;
        if (!atTerminator()) return fail(`bad character ${describeRune(input[pos]!)}`);
        emit(c === '$' ? 'variable' : 'field');
      } else if (c === '+' || c === '-' || c === '.' || (c >= '0' && c <= '9')) {
        const m = /^[+-]?(?:0[xX][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][+-]?[0-9_]+)?|0[oO][0-7_]*|0[bB][01_]*|[0-9_]*\.?[0-9_]*(?:[eE][+-]?[0-9_]+)?)i?/.exec(input.slice(pos))!;
        pos += m[0].length;
        if (isAlphaNumeric(input[pos]) || m[0].replace(/^[+-]/, '') === '') {
          while (isAlphaNumeric(input[pos])) pos++;
          return fail(`bad number syntax: "${input.slice(start, pos)}"`);
        }
        emit('number');
      } else if (isAlphaNumeric(c)) {
        while (isAlphaNumeric(input[pos])) pos++;
        if (!atTerminator()) return fail(`bad character ${describeRune(input[pos]!)}`);
        const word = input.slice(start, pos);
        emit(KEYWORDS.has(word) ? 'keyword' : word === 'true' || word === 'false' ? 'bool' : word === 'nil' ? 'nil' : 'identifier');
      } else if (c === '(') {
        parens.push(pos);
        pos++;
        emit('leftParen');
      } else if (c === ')') {
        pos++;
        if (parens.pop() === undefined) return fail('unexpected right paren');
        emit('rightParen');
      } else if (c >= ' ' && c <= '~') {
        // Go emits other printable ASCII as a char token (`,` is one) and lets the parser object.
        pos++;
        emit('char');
      } else {
        return fail(`unrecognized character in action: ${describeRune(String.fromCodePoint(input.codePointAt(pos)!))}`);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Literals

/** strconv.Unquote for "…" and '…' literals; escapes like \xff make bytes, which are decoded as UTF-8. */
function unquote(text: string): string | undefined {
  const body = text.slice(1, -1);
  const bytes: number[] = [];
  const quote = text[0]!;
  for (let i = 0; i < body.length; ) {
    const c = body[i]!;
    if (c !== '\\') {
      if (c === quote) return undefined;
      const cp = body.codePointAt(i)!;
      const s = String.fromCodePoint(cp);
      bytes.push(...utf8Bytes(s));
      i += s.length;
      continue;
    }
    const e = body[i + 1];
    i += 2;
    const simple: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92 };
    if (e !== undefined && e in simple) bytes.push(simple[e]!);
    else if (e === quote) bytes.push(quote.charCodeAt(0));
    else if (e === 'x' || e === 'u' || e === 'U') {
      const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(i, i + n);
      if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) return undefined;
      i += n;
      const v = Number.parseInt(hex, 16);
      if (e === 'x') bytes.push(v);
      else if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return undefined;
      else bytes.push(...utf8Bytes(String.fromCodePoint(v)));
    } else if (e !== undefined && e >= '0' && e <= '7') {
      const oct = body.slice(i - 1, i + 2);
      if (!/^[0-7]{3}$/.test(oct) || Number.parseInt(oct, 8) > 255) return undefined;
      i += 2;
      bytes.push(Number.parseInt(oct, 8));
    } else return undefined;
  }
  return fromUtf8(Uint8Array.from(bytes));
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * A number literal as Go's template reads it: an int when written as an integer (decimal, 0x, 0o,
 * 0b or a leading 0 for octal) and it fits in int64, a float64 when it has a point or exponent.
 * Go's untyped-constant rules make `1.0` a float and `1` an int, which matters for printing and
 * for printf's %d.
 */
function parseNumberLiteral(text: string): number | bigint | undefined {
  if (text.endsWith('i')) return undefined; // complex numbers have no use in alert templates
  const clean = text.replace(/_/g, '');
  const neg = clean.startsWith('-');
  const body = clean.replace(/^[+-]/, '');
  let int: bigint | undefined;
  if (/^0[xX][0-9a-fA-F]+$/.test(body) || /^0[bB][01]+$/.test(body) || /^0[oO][0-7]+$/.test(body)) int = BigInt(body.toLowerCase());
  else if (/^0[0-7]+$/.test(body)) int = BigInt(`0o${body.slice(1)}`);
  else if (/^\d+$/.test(body)) int = BigInt(body);
  if (int !== undefined) {
    if (neg) int = -int;
    if (int >= INT64_MIN && int <= INT64_MAX) return int;
    return Number(int);
  }
  if (/^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(body)) {
    const v = Number(body);
    return neg ? -v : v;
  }
  return undefined; // hex floats: valid Go, never seen in an alert template
}

// ---------------------------------------------------------------------------------------------
// Parser

export type FunctionCheck = (name: string) => string | undefined;

/** Deeper nesting of parentheses or control blocks than this is refused, so recursion stays shallow. */
const MAX_DEPTH = 100;

export class TemplateSyntaxError extends Error {}

/**
 * Parses a template into its node list. checkFunction returns an error message for a function
 * name that may not be called (unknown, or a Prometheus function Floe does not provide).
 * predefined names the variables in scope from the start, as Prometheus's `{{$labels := .Labels}}`
 * prelude defines them.
 */
export function parseTemplate(text: string, checkFunction: FunctionCheck, predefined: readonly string[]): Node[] {
  return new Parser(text, checkFunction, predefined).parse();
}

class Parser {
  readonly #text: string;
  readonly #tokens: Token[];
  readonly #check: FunctionCheck;
  #i = 0;
  #vars: string[];
  #rangeDepth = 0;
  #depth = 0;
  /** Where the last {{end}} or {{else}} keyword was, for reporting one that has no block. */
  #markerPos = 0;

  constructor(text: string, check: FunctionCheck, predefined: readonly string[]) {
    this.#text = text;
    this.#tokens = lex(text);
    this.#check = check;
    this.#vars = ['$', ...predefined];
  }

  parse(): Node[] {
    const list: Node[] = [];
    while (this.#peek().type !== 'eof') {
      const n = this.#textOrAction();
      if (typeof n === 'string') this.#errorf(`unexpected {{${n === 'end' ? 'end' : 'else'}}}`, this.#markerPos);
      list.push(n);
    }
    return list;
  }

  #errorAt(pos: number, message: string): never {
    const before = this.#text.slice(0, pos);
    const line = before.split('\n').length;
    const col = pos - (before.lastIndexOf('\n') + 1) + 1;
    throw new TemplateSyntaxError(`template: ${line}:${col}: ${message}`);
  }

  #errorf(message: string, pos = this.#current().pos): never {
    this.#errorAt(pos, message);
  }

  #current(): Token {
    return this.#tokens[Math.max(this.#i - 1, 0)]!;
  }

  #next(): Token {
    const t = this.#tokens[this.#i]!;
    if (t.type === 'error') this.#errorAt(t.pos, t.val);
    if (t.type !== 'eof') this.#i++;
    return t;
  }

  #peek(): Token {
    const t = this.#tokens[this.#i]!;
    if (t.type === 'error') this.#errorAt(t.pos, t.val);
    return t;
  }

  #nextNonSpace(): Token {
    let t = this.#next();
    while (t.type === 'space') t = this.#next();
    return t;
  }

  #peekNonSpace(): Token {
    while (this.#peek().type === 'space') this.#i++;
    return this.#peek();
  }

  #backup(): void {
    this.#i--;
  }

  /** Go's rendering of a token in "unexpected …" messages. */
  #describe(t: Token): string {
    if (t.type === 'eof') return 'EOF';
    if (t.type === 'keyword') return `<${t.val}>`;
    if (t.type === 'rightDelim' || t.type === 'leftDelim') return `"${t.val}"`;
    if (t.type === 'space') return 'space';
    return t.val.length > 10 ? `"${t.val.slice(0, 10)}"...` : JSON.stringify(t.val);
  }

  #unexpected(t: Token, context: string): never {
    this.#errorf(`unexpected ${this.#describe(t)} in ${context}`, t.pos);
  }

  #expect(type: TokenType, context: string): Token {
    const t = this.#nextNonSpace();
    if (t.type !== type) this.#unexpected(t, context);
    return t;
  }

  #enter(pos: number): void {
    if (++this.#depth > MAX_DEPTH) this.#errorf(`nesting deeper than ${MAX_DEPTH} levels`, pos);
  }

  /** Returns a node, or 'end'/'else' for those actions so the enclosing block can see them. */
  #textOrAction(): Node | 'end' | 'else' | 'elseChain' {
    const t = this.#nextNonSpace();
    if (t.type === 'text') return { kind: 'text', pos: t.pos, text: t.val };
    if (t.type === 'leftDelim') return this.#action();
    this.#unexpected(t, 'input');
  }

  #action(): Node | 'end' | 'else' | 'elseChain' {
    const t = this.#nextNonSpace();
    if (t.type === 'keyword') {
      this.#markerPos = t.pos;
      switch (t.val) {
        case 'if':
        case 'with':
        case 'range':
          return this.#control(t.val, t.pos);
        case 'end':
          this.#expect('rightDelim', 'end');
          return 'end';
        case 'else': {
          // `{{else if …}}` and `{{else with …}}` chain into a nested block; the caller decides whether that fits.
          const p = this.#peekNonSpace();
          if (p.type === 'keyword' && (p.val === 'if' || p.val === 'with')) return 'elseChain';
          this.#expect('rightDelim', 'else');
          return 'else';
        }
        case 'break':
        case 'continue':
          if (this.#rangeDepth === 0) this.#errorf(`{{${t.val}}} outside {{range}}`, t.pos);
          this.#expect('rightDelim', `{{${t.val}}}`);
          return { kind: t.val, pos: t.pos };
        default:
          // define, template, block: named templates have no place in a single alert field.
          this.#errorf(`{{${t.val}}} is not supported in alert templates`, t.pos);
      }
    }
    this.#backup();
    const pos = this.#peek().pos;
    return { kind: 'action', pos, pipe: this.#pipeline('command', 'rightDelim') };
  }

  #control(kind: 'if' | 'with' | 'range', pos: number): Node {
    this.#enter(pos);
    const mark = this.#vars.length;
    const pipe = this.#pipeline(kind, 'rightDelim');
    if (kind === 'range') this.#rangeDepth++;
    const [list, next] = this.#itemList();
    if (kind === 'range') this.#rangeDepth--;
    let elseList: Node[] | undefined;
    if (next === 'elseChain') {
      const k = this.#nextNonSpace(); // the `if` or `with` after else
      if (k.val !== kind) this.#unexpected(k, 'else');
      elseList = [this.#control(kind, k.pos)];
    } else if (next === 'else') {
      const [els, end] = this.#itemList();
      if (end !== 'end') this.#errorf(`expected end; found {{else}}`, this.#markerPos);
      elseList = els;
    }
    this.#vars.length = mark;
    this.#depth--;
    return { kind, pos, pipe, list, elseList };
  }

  #itemList(): [Node[], 'end' | 'else' | 'elseChain'] {
    const list: Node[] = [];
    while (this.#peekNonSpace().type !== 'eof') {
      const n = this.#textOrAction();
      if (typeof n === 'string') return [list, n];
      list.push(n);
    }
    this.#errorf('unexpected EOF', this.#peek().pos);
  }

  #pipeline(context: string, end: 'rightDelim' | 'rightParen'): Pipe {
    const pipe: Pipe = { pos: this.#peekNonSpace().pos, decl: [], isAssign: false, cmds: [] };
    // Declarations: `$x :=`, `$x =`, and in range `$k, $v :=`.
    for (;;) {
      const v = this.#peekNonSpace();
      if (v.type !== 'variable') break;
      const save = this.#i;
      this.#next();
      const after = this.#peekNonSpace();
      if (after.type === 'assign' || after.type === 'declare') {
        this.#next();
        pipe.isAssign = after.type === 'assign';
        if (pipe.isAssign && !this.#vars.includes(v.val)) this.#errorf(`undefined variable "${v.val}"`, v.pos);
        pipe.decl.push(v.val);
        this.#vars.push(v.val);
        break;
      }
      if (after.type === 'char' && after.val === ',') {
        this.#next();
        pipe.decl.push(v.val);
        this.#vars.push(v.val);
        if (context === 'range' && pipe.decl.length < 2) {
          if (this.#peekNonSpace().type === 'variable') continue;
          this.#errorf('range can only initialize variables');
        }
        this.#errorf(`too many declarations in ${context}`);
      }
      this.#i = save; // not a declaration: the variable starts the first command
      break;
    }
    for (;;) {
      const t = this.#nextNonSpace();
      if (t.type === end) break;
      switch (t.type) {
        case 'bool':
        case 'charConstant':
        case 'dot':
        case 'field':
        case 'identifier':
        case 'number':
        case 'nil':
        case 'rawString':
        case 'string':
        case 'variable':
        case 'leftParen':
          this.#backup();
          pipe.cmds.push(this.#command());
          break;
        default:
          this.#unexpected(t, context);
      }
    }
    if (pipe.cmds.length === 0) this.#errorf(`missing value for ${context}`);
    pipe.cmds.slice(1).forEach((c, i) => {
      if (['bool', 'dot', 'nil', 'number', 'string'].includes(c.args[0]!.kind)) this.#errorf(`non executable command in pipeline stage ${i + 2}`, c.pos);
    });
    return pipe;
  }

  #command(): Command {
    const cmd: Command = { pos: this.#peekNonSpace().pos, args: [] };
    for (;;) {
      this.#peekNonSpace();
      const operand = this.#operand();
      if (operand) cmd.args.push(operand);
      const t = this.#next();
      if (t.type === 'space') continue;
      if (t.type === 'rightDelim' || t.type === 'rightParen') this.#backup();
      else if (t.type !== 'pipe') this.#unexpected(t, 'operand');
      break;
    }
    if (cmd.args.length === 0) this.#errorf('empty command');
    return cmd;
  }

  #operand(): Arg | undefined {
    const node = this.#term();
    if (!node || this.#peek().type !== 'field') return node;
    const idents: string[] = [];
    while (this.#peek().type === 'field') idents.push(this.#next().val.slice(1));
    switch (node.kind) {
      case 'field':
        return { ...node, idents: [...node.idents, ...idents] };
      case 'variable':
        return { ...node, idents: [...node.idents, ...idents] };
      case 'bool':
      case 'string':
      case 'number':
      case 'nil':
      case 'dot':
        this.#errorf(`unexpected . after term ${goQuote(argString(node))}`);
      default:
        return { kind: 'chain', pos: node.pos, node, idents };
    }
  }

  #term(): Arg | undefined {
    const t = this.#nextNonSpace();
    switch (t.type) {
      case 'identifier': {
        const problem = this.#check(t.val);
        if (problem !== undefined) this.#errorf(problem, t.pos);
        return { kind: 'identifier', pos: t.pos, name: t.val };
      }
      case 'dot':
        return { kind: 'dot', pos: t.pos };
      case 'nil':
        return { kind: 'nil', pos: t.pos };
      case 'variable':
        if (!this.#vars.includes(t.val)) this.#errorf(`undefined variable "${t.val}"`, t.pos);
        return { kind: 'variable', pos: t.pos, name: t.val, idents: [] };
      case 'field':
        return { kind: 'field', pos: t.pos, idents: [t.val.slice(1)] };
      case 'bool':
        return { kind: 'bool', pos: t.pos, value: t.val === 'true' };
      case 'number': {
        const value = parseNumberLiteral(t.val);
        if (value === undefined) this.#errorf(`bad number syntax: "${t.val}"`, t.pos);
        return { kind: 'number', pos: t.pos, value, text: t.val };
      }
      case 'charConstant': {
        const s = unquote(t.val);
        if (s === undefined || [...s].length !== 1) this.#errorf(`malformed character constant: ${t.val}`, t.pos);
        return { kind: 'number', pos: t.pos, value: BigInt(s.codePointAt(0)!), text: t.val };
      }
      case 'string': {
        const value = unquote(t.val);
        if (value === undefined) this.#errorf(`invalid syntax in string ${t.val}`, t.pos);
        return { kind: 'string', pos: t.pos, value, text: t.val };
      }
      case 'rawString':
        // Go drops carriage returns from raw strings.
        return { kind: 'string', pos: t.pos, value: t.val.slice(1, -1).replace(/\r/g, ''), text: t.val };
      case 'leftParen': {
        this.#enter(t.pos);
        const pipe = this.#pipeline('parenthesized pipeline', 'rightParen');
        this.#depth--;
        return { kind: 'pipe', pos: t.pos, pipe };
      }
    }
    this.#backup();
    return undefined;
  }
}
