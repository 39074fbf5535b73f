import { parser } from '@grafana/lezer-traceql';
import { FloeError } from '@floe/errors';
import type { SpanCondition, SpanField, SpanValue } from '../ir/traces.ts';
import { positionOf } from '../logql/errors.ts';
import { unquote } from '../logql/strings.ts';
import { firstErrorNode, parseWithinStack } from '../syntax-tree.ts';

/**
 * TraceQL text → the conditions of one spanset, through the official `@grafana/lezer-traceql`
 * grammar. Spec 1 "TraceQL subset": one spanset of equality matchers joined by `&&` (`{}` selects
 * every span); intrinsics name, status and kind; service name as resource.service.name or
 * .service.name; attributes span.<key>, resource.<key> or unscoped .<key>; values double-quoted
 * strings, numbers, true/false and bare identifiers for status and kind.
 *
 * Two kinds of refusal, as the spec tells them apart:
 * - not TraceQL (the grammar rejects it, a matcher without operator, a value of the wrong type
 *   for its field): bad_data, 400, `parse error at line L, col C: …`;
 * - valid TraceQL outside the subset (!=, regexes, ordered comparisons, ||, negation, duration
 *   comparisons, other intrinsics and scopes, pipelines, spanset operators, metrics, hints):
 *   not_implemented, 501.
 */

type Node = ReturnType<typeof parser.parse>['topNode'];

/** Tempo's default max query size is far larger; 64 KiB is ample for a spanset of matchers. */
export const MAX_TRACEQL_LENGTH = 64 * 1024;

export function parseTraceQL(query: string): SpanCondition[] {
  if (query.trim() === '') throw traceqlSyntaxError(query, 0, 'empty query');
  if (query.length > MAX_TRACEQL_LENGTH) throw new FloeError('bad_data', `query longer than ${MAX_TRACEQL_LENGTH} characters`, { code: 'FLOE_ERR_TRACEQL_PARSE' });
  const tree = parseWithinStack(() => parser.parse(query), () => traceqlSyntaxError(query, 0, 'the query is nested too deeply'));
  const error = firstErrorNode(tree.topNode);
  if (error) {
    const skipped = query.slice(error.from, error.to).trim();
    throw traceqlSyntaxError(query, error.from, skipped ? `unexpected ${JSON.stringify(skipped.slice(0, 40))}` : 'unexpected end of query');
  }
  const top = tree.topNode;
  const expr = onlyChild(top);
  if (!expr || expr.name !== 'SpansetPipelineExpression') throw outsideSubset(query, top.from, 'anything but one spanset filter');
  const pipeline = onlyChild(expr);
  if (!pipeline || pipeline.name !== 'SpansetPipeline') throw outsideSubset(query, expr.from, 'spanset operators and pipelines');
  const filter = onlyChild(pipeline);
  if (!filter || filter.name !== 'SpansetFilter') throw outsideSubset(query, pipeline.from, 'anything but one spanset filter');
  const body = filter.firstChild;
  if (!body) return [];
  return new Conditions(query).of(body);
}

export function traceqlSyntaxError(src: string, offset: number, reason: string): FloeError {
  const position = positionOf(src, offset);
  return new FloeError('bad_data', `parse error at line ${position.line}, col ${position.column}: ${reason}`, { code: 'FLOE_ERR_TRACEQL_PARSE', position });
}

function outsideSubset(src: string, offset: number, what: string): FloeError {
  const position = positionOf(src, offset);
  return new FloeError('not_implemented', `TraceQL ${what} is not supported (line ${position.line}, col ${position.column}); supported: one spanset of = matchers joined by &&`, {
    code: 'FLOE_ERR_TRACEQL_UNSUPPORTED',
    position,
  });
}

/** Intrinsics of the subset, by every spelling Tempo accepts for them. */
const INTRINSICS: Record<string, SpanField> = {
  name: { kind: 'name' },
  'span:name': { kind: 'name' },
  status: { kind: 'status' },
  'span:status': { kind: 'status' },
  kind: { kind: 'kind' },
  'span:kind': { kind: 'kind' },
};

export const STATUS_KEYWORDS = ['error', 'ok', 'unset'] as const;
export const KIND_KEYWORDS = ['client', 'consumer', 'internal', 'producer', 'server', 'unspecified'] as const;

class Conditions {
  private readonly src: string;

  constructor(src: string) {
    this.src = src;
  }

  private text(n: Node): string {
    return this.src.slice(n.from, n.to);
  }

  /** The `&&`-joined comparisons of a FieldExpression, left to right. */
  of(n: Node): SpanCondition[] {
    const kids = children(n);
    if (kids.length === 3 && kids[1]!.name === 'And') return [...this.of(kids[0]!), ...this.of(kids[2]!)];
    if (kids.length === 3 && kids[1]!.name === 'Or') throw outsideSubset(this.src, kids[1]!.from, '|| (or)');
    if (kids.length === 3 && kids[1]!.name === 'FieldOp') {
      const spilled = this.negationSpill(kids[2]!);
      if (spilled) return [this.comparison(kids[0]!, kids[1]!, kids[2]!, spilled.value), ...spilled.rest.flatMap((r) => this.of(r))];
      return [this.comparison(kids[0]!, kids[1]!, kids[2]!)];
    }
    if (kids.length === 1 && kids[0]!.name === 'FieldExpression') {
      const prefix = this.src.slice(n.from, kids[0]!.from).trim();
      if (prefix === '(') return this.of(kids[0]!);
      if (prefix === '!') throw outsideSubset(this.src, n.from, 'negation (!)');
    }
    if (kids.length === 1 && (kids[0]!.name === 'AttributeField' || kids[0]!.name === 'IntrinsicField')) {
      throw traceqlSyntaxError(this.src, n.from, `${JSON.stringify(this.text(n))} is a field, not a condition: expecting a matcher such as ${this.text(n)} = "value"`);
    }
    throw outsideSubset(this.src, n.from, `the expression ${JSON.stringify(this.text(n).slice(0, 40))}`);
  }

  /**
   * The grammar gives unary minus a lower precedence than `&&`, so `.a = -3 && .b = 1` parses as
   * `.a = -(3 && .b = 1)`. Such a right side is read as Tempo reads it: the minus belongs to the
   * first operand, the other operands are conditions of their own.
   */
  private negationSpill(n: Node): { value: Node; rest: Node[] } | undefined {
    const inner = onlyChild(n);
    if (inner?.name !== 'FieldExpression' || this.src.slice(n.from, inner.from).trim() !== '-') return undefined;
    const operands = this.andOperands(inner);
    if (operands.length < 2) return undefined;
    return { value: operands[0]!, rest: operands.slice(1) };
  }

  private andOperands(n: Node): Node[] {
    const kids = children(n);
    if (kids.length === 3 && kids[1]!.name === 'And') return [...this.andOperands(kids[0]!), ...this.andOperands(kids[2]!)];
    if (kids.length === 3 && kids[1]!.name === 'Or') throw outsideSubset(this.src, kids[1]!.from, '|| (or)');
    return [n];
  }

  /** `left op right`; `negated` is the literal of a value whose minus the grammar put further out (negationSpill). */
  private comparison(left: Node, op: Node, right: Node, negated?: Node): SpanCondition {
    const operator = this.text(op);
    if (negated) {
      if (operator !== '=') throw outsideSubset(this.src, op.from, `the operator ${operator}`);
      if (!isStatic(negated) || isStatic(left)) throw outsideSubset(this.src, right.from, `the value ${JSON.stringify(this.text(right).slice(0, 40))}`);
      const field = this.field(left);
      const value = this.value(negated, true);
      checkType(this.src, right.from, field, value);
      return { field, value };
    }
    const [fieldSide, valueSide] = isStatic(left) && !isStatic(right) ? [right, left] : [left, right];
    if (operator !== '=') {
      if (['+', '-', '*', '/', '%', '^'].includes(operator)) throw outsideSubset(this.src, op.from, 'arithmetic');
      throw outsideSubset(this.src, op.from, `the operator ${operator}`);
    }
    if (isStatic(fieldSide)) throw outsideSubset(this.src, fieldSide.from, 'comparing two values');
    if (!isStatic(valueSide)) throw outsideSubset(this.src, valueSide.from, 'comparing two fields');
    const field = this.field(fieldSide);
    const value = this.value(valueSide);
    checkType(this.src, valueSide.from, field, value);
    return { field, value };
  }

  private field(n: Node): SpanField {
    const leaf = onlyChild(n);
    if (!leaf) throw outsideSubset(this.src, n.from, `the field expression ${JSON.stringify(this.text(n).slice(0, 40))}`);
    if (leaf.name === 'FieldExpression') {
      if (this.src.slice(n.from, leaf.from).trim() === '(') return this.field(leaf);
      throw outsideSubset(this.src, n.from, `the field expression ${JSON.stringify(this.text(n).slice(0, 40))}`);
    }
    if (leaf.name === 'IntrinsicField') {
      const name = this.text(leaf);
      const intrinsic = INTRINSICS[name];
      if (!intrinsic) throw outsideSubset(this.src, leaf.from, `the intrinsic ${name}`);
      return intrinsic;
    }
    if (leaf.name !== 'AttributeField') throw outsideSubset(this.src, n.from, `the field ${JSON.stringify(this.text(n).slice(0, 40))}`);
    const scopeNode = leaf.firstChild!;
    const identifier = leaf.getChild('Identifier');
    if (!identifier) throw traceqlSyntaxError(this.src, leaf.from, 'expecting an attribute name');
    const rawKey = this.text(identifier);
    const key = rawKey.startsWith('"') ? unquote(this.src, identifier.from, rawKey) : rawKey;
    if (key === '') throw traceqlSyntaxError(this.src, identifier.from, 'empty attribute name');
    const scope = scopeNode.name === 'Identifier' ? 'any' : scopeNode.name === 'Span' ? 'span' : scopeNode.name === 'Resource' ? 'resource' : undefined;
    if (!scope) throw outsideSubset(this.src, scopeNode.from, `the attribute scope ${this.text(scopeNode)}`);
    if (key === 'service.name' && scope !== 'span') return { kind: 'service' };
    return { kind: 'attribute', scope, key };
  }

  private value(n: Node, negate = false): SpanValue {
    let node = n;
    let negative = negate;
    // Unary minus wraps the literal in one more FieldExpression, the sign being an anonymous token.
    const inner = onlyChild(node);
    if (inner?.name === 'FieldExpression') {
      const prefix = this.src.slice(node.from, inner.from).trim();
      if (prefix !== '-' || negative) throw outsideSubset(this.src, node.from, `the value ${JSON.stringify(this.text(node).slice(0, 40))}`);
      negative = true;
      node = inner;
    }
    const literal = node.firstChild!;
    const typed = literal.firstChild;
    const text = this.text(literal);
    if (!typed) {
      if (negative) throw traceqlSyntaxError(this.src, n.from, `cannot negate ${text}`);
      if (text === 'true' || text === 'false') return { type: 'bool', value: text === 'true' };
      if (text === 'nil') throw outsideSubset(this.src, literal.from, 'nil');
      return { type: 'keyword', value: text };
    }
    switch (typed.name) {
      case 'String':
        if (negative) throw traceqlSyntaxError(this.src, n.from, 'cannot negate a string');
        return { type: 'string', value: unquote(this.src, typed.from, text) };
      case 'Integer': {
        const v = BigInt(text) * (negative ? -1n : 1n);
        if (v > 2n ** 63n - 1n || v < -(2n ** 63n)) throw traceqlSyntaxError(this.src, typed.from, `integer ${text} out of range`);
        return { type: 'int', value: v };
      }
      case 'Float': {
        const v = Number(text) * (negative ? -1 : 1);
        if (!Number.isFinite(v)) throw traceqlSyntaxError(this.src, typed.from, `number ${text} out of range`);
        return { type: 'float', value: v };
      }
      case 'Duration':
        throw outsideSubset(this.src, typed.from, 'duration comparisons');
      case 'TemplateVariable':
        throw traceqlSyntaxError(this.src, typed.from, `template variable ${text} was not replaced by a value`);
      default:
        throw outsideSubset(this.src, typed.from, `the value ${JSON.stringify(text.slice(0, 40))}`);
    }
  }
}

/** The node's one child; undefined when it has none or several (lezer hands out a new object per access, so nodes compare by position, never identity). */
function onlyChild(n: Node): Node | undefined {
  const first = n.firstChild;
  return first && !first.nextSibling ? first : undefined;
}

function children(n: Node): Node[] {
  const out: Node[] = [];
  for (let c = n.firstChild; c; c = c.nextSibling) out.push(c);
  return out;
}

/** A value side: Static, or a negated Static (`-3`). */
function isStatic(n: Node): boolean {
  const c = onlyChild(n);
  if (!c) return false;
  return c.name === 'Static' || (c.name === 'FieldExpression' && isStatic(c));
}

/** Tempo refuses a comparison whose types cannot meet; so does the subset, as bad_data. */
function checkType(src: string, offset: number, field: SpanField, value: SpanValue): void {
  const fail = (what: string) => {
    throw traceqlSyntaxError(src, offset, what);
  };
  switch (field.kind) {
    case 'status':
      if (value.type !== 'keyword' || !(STATUS_KEYWORDS as readonly string[]).includes(value.value)) fail(`status compares with ${STATUS_KEYWORDS.join(', ')}`);
      return;
    case 'kind':
      if (value.type !== 'keyword' || !(KIND_KEYWORDS as readonly string[]).includes(value.value)) fail(`kind compares with ${KIND_KEYWORDS.join(', ')}`);
      return;
    case 'name':
    case 'service':
      if (value.type !== 'string') fail(`${field.kind === 'name' ? 'name' : 'service.name'} compares with a quoted string`);
      return;
    case 'attribute':
      if (value.type === 'keyword') fail(`${JSON.stringify(value.value)} is a status or kind keyword; quote a string value`);
      return;
  }
}
