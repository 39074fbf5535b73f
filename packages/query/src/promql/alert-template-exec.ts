/**
 * Executes a parsed alert template the way Go's text/template executes one: a dot, a stack of
 * variables, pipelines whose previous value becomes the last argument of the next command, and
 * control blocks that scope the variables they declare.
 *
 * Templates come from tenants, so execution is bounded: output, every string a function returns,
 * range iterations and the number of evaluation steps are all capped, and exceeding a cap is an
 * execution error like any other.
 */

import { argString, commandString, type Arg, type BlockNode, type Command, type Node, type Pipe } from './alert-template-parse.ts';
import type { TemplateFunc } from './alert-template-funcs.ts';
import { TMap, TStruct, formatValue, goTypeName, isTrue, utf8Length, type TValue } from './alert-template-values.ts';

export const MAX_OUTPUT_BYTES = 64 * 1024;
export const MAX_RANGE_ITERATIONS = 10_000;
/** Nodes and commands evaluated in one expansion; generous for any real template, small enough to finish in milliseconds. */
export const MAX_STEPS = 1_000_000;

export class TemplateExecError extends Error {}

/** Thrown by {{break}} and {{continue}} and caught by the innermost range. */
class BreakSignal {}
class ContinueSignal {}

const MISSING = Symbol('missing');
type Final = TValue | typeof MISSING;

interface Variable {
  name: string;
  value: TValue;
}

export class Executor {
  readonly #text: string;
  readonly #funcs: ReadonlyMap<string, TemplateFunc>;
  readonly #vars: Variable[];
  #out = '';
  #outBytes = 0;
  #iterations = 0;
  #steps = 0;
  /** The node being evaluated, for the error's position and context. */
  #at: { pos: number; context: string } = { pos: 0, context: '' };

  constructor(text: string, funcs: ReadonlyMap<string, TemplateFunc>, dot: TValue, vars: Record<string, TValue>) {
    this.#text = text;
    this.#funcs = funcs;
    this.#vars = [{ name: '$', value: dot }, ...Object.entries(vars).map(([name, value]) => ({ name, value }))];
  }

  run(nodes: Node[], dot: TValue): string {
    this.#walk(dot, nodes);
    return this.#out;
  }

  #errorf(message: string): never {
    const before = this.#text.slice(0, this.#at.pos);
    const line = before.split('\n').length;
    const col = this.#at.pos - (before.lastIndexOf('\n') + 1) + 1;
    throw new TemplateExecError(`template: ${line}:${col}: executing at <${this.#at.context}>: ${message}`);
  }

  #setAt(pos: number, context: string): void {
    this.#at = { pos, context };
  }

  #step(): void {
    if (++this.#steps > MAX_STEPS) this.#errorf(`template needs more than ${MAX_STEPS} evaluation steps`);
  }

  #write(s: string): void {
    this.#outBytes += utf8Length(s);
    if (this.#outBytes > MAX_OUTPUT_BYTES) this.#errorf(`output exceeds ${MAX_OUTPUT_BYTES} bytes`);
    this.#out += s;
  }

  // Variables ------------------------------------------------------------------------------------

  #push(name: string, value: TValue): void {
    this.#vars.push({ name, value });
  }

  #mark(): number {
    return this.#vars.length;
  }

  #pop(mark: number): void {
    this.#vars.length = mark;
  }

  #lookup(name: string): Variable {
    for (let i = this.#vars.length - 1; i >= 0; i--) if (this.#vars[i]!.name === name) return this.#vars[i]!;
    this.#errorf(`undefined variable: ${name}`);
  }

  // Nodes ----------------------------------------------------------------------------------------

  #walk(dot: TValue, nodes: readonly Node[]): void {
    for (const node of nodes) {
      this.#step();
      switch (node.kind) {
        case 'text':
          this.#write(node.text);
          break;
        case 'action': {
          const value = this.#evalPipeline(dot, node.pipe);
          if (node.pipe.decl.length === 0) {
            this.#setAt(node.pos, node.pipe.cmds.map(commandString).join(' | '));
            // A missing value prints as Go's "<no value>".
            this.#write(value === null ? '<no value>' : formatValue(value));
          }
          break;
        }
        case 'if':
        case 'with': {
          const mark = this.#mark();
          const value = this.#evalPipeline(dot, node.pipe);
          if (isTrue(value)) this.#walk(node.kind === 'with' ? value : dot, node.list);
          else if (node.elseList) this.#walk(dot, node.elseList);
          this.#pop(mark);
          break;
        }
        case 'range':
          this.#range(dot, node);
          break;
        case 'break':
          throw new BreakSignal();
        case 'continue':
          throw new ContinueSignal();
      }
    }
  }

  #range(dot: TValue, node: BlockNode): void {
    const mark = this.#mark();
    const value = this.#evalPipeline(dot, node.pipe);
    const decl = node.pipe.decl;
    const one = (key: TValue, elem: TValue): boolean => {
      if (++this.#iterations > MAX_RANGE_ITERATIONS) this.#errorf(`range iterations exceed ${MAX_RANGE_ITERATIONS}`);
      // The pipeline pushed its variables; each iteration overwrites them: element last, key first.
      if (decl.length > 0) {
        if (node.pipe.isAssign) {
          if (decl.length === 1) this.#lookup(decl[0]!).value = elem;
          else {
            this.#lookup(decl[0]!).value = key;
            this.#lookup(decl[1]!).value = elem;
          }
        } else {
          this.#vars[this.#vars.length - 1]!.value = elem;
          if (decl.length > 1) this.#vars[this.#vars.length - 2]!.value = key;
        }
      }
      const iterMark = this.#mark();
      try {
        this.#walk(elem, node.list);
      } catch (signal) {
        if (signal instanceof BreakSignal) return false;
        if (!(signal instanceof ContinueSignal)) throw signal;
      } finally {
        this.#pop(iterMark);
      }
      return true;
    };
    let ran = false;
    if (value instanceof TMap) {
      for (const k of value.sortedKeys()) {
        ran = true;
        if (!one(k, value.entries.get(k)!)) break;
      }
    } else if (Array.isArray(value)) {
      const list = value as readonly TValue[];
      for (let i = 0; i < list.length; i++) {
        ran = true;
        if (!one(BigInt(i), list[i]!)) break;
      }
    } else if (typeof value === 'bigint') {
      // Go 1.22 ranges over an integer n as 0…n-1.
      if (decl.length > 1) {
        this.#setAt(node.pipe.pos, argString({ kind: 'pipe', pos: node.pipe.pos, pipe: node.pipe }));
        this.#errorf(`can't use ${value} to iterate over more than one variable`);
      }
      for (let i = 0n; i < value; i++) {
        ran = true;
        if (!one(i, i)) break;
      }
    } else if (value !== null) {
      this.#setAt(node.pipe.pos, argString({ kind: 'pipe', pos: node.pipe.pos, pipe: node.pipe }));
      this.#errorf(`range can't iterate over ${formatValue(value)}`);
    }
    if (!ran && node.elseList) this.#walk(dot, node.elseList);
    this.#pop(mark);
  }

  // Pipelines and commands -------------------------------------------------------------------------

  #evalPipeline(dot: TValue, pipe: Pipe): TValue {
    let value: Final = MISSING;
    for (const cmd of pipe.cmds) value = this.#evalCommand(dot, cmd, value);
    const result = value === MISSING ? null : value;
    for (const name of pipe.decl) {
      if (pipe.isAssign) this.#lookup(name).value = result;
      else this.#push(name, result);
    }
    return result;
  }

  #evalCommand(dot: TValue, cmd: Command, final: Final): TValue {
    this.#step();
    const first = cmd.args[0]!;
    this.#setAt(first.pos, commandString(cmd));
    switch (first.kind) {
      case 'field':
        return this.#evalFieldChain(dot, first.idents, cmd.args, final);
      case 'chain': {
        if (first.node.kind === 'nil') this.#errorf(`indirection through explicit nil in ${argString(first)}`);
        const receiver = this.#evalArg(dot, first.node, 'any');
        this.#setAt(first.pos, commandString(cmd));
        return this.#evalFieldChain(receiver, first.idents, cmd.args, final);
      }
      case 'identifier':
        return this.#evalFunction(dot, first.name, cmd, final);
      case 'variable': {
        const value = this.#lookup(first.name).value;
        if (first.idents.length === 0) {
          this.#notAFunction(cmd.args, final);
          return value;
        }
        return this.#evalFieldChain(value, first.idents, cmd.args, final);
      }
      case 'pipe':
        this.#notAFunction(cmd.args, final);
        return this.#evalPipeline(dot, first.pipe);
    }
    this.#notAFunction(cmd.args, final);
    switch (first.kind) {
      case 'bool':
      case 'number':
      case 'string':
        return first.value;
      case 'dot':
        return dot;
      case 'nil':
        this.#errorf('nil is not a command');
    }
  }

  #notAFunction(args: readonly Arg[], final: Final): void {
    if (args.length > 1 || final !== MISSING) this.#errorf(`can't give argument to non-function ${argString(args[0]!)}`);
  }

  /** `.a.b.c` on receiver; arguments only make sense for methods, which these values don't have. */
  #evalFieldChain(receiver: TValue, idents: readonly string[], args: readonly Arg[], final: Final): TValue {
    let v = receiver;
    idents.forEach((name, i) => {
      const last = i === idents.length - 1;
      v = this.#evalField(name, v, last && (args.length > 1 || final !== MISSING));
    });
    return v;
  }

  #evalField(name: string, receiver: TValue, hasArgs: boolean): TValue {
    if (receiver === null) this.#errorf(`nil data; no entry for key "${name}"`);
    if (receiver instanceof TMap) {
      if (hasArgs) this.#errorf(`${name} is not a method but has arguments`);
      return receiver.entries.get(name) ?? '';
    }
    if (receiver instanceof TStruct && receiver.fields.has(name)) {
      if (hasArgs) this.#errorf(`${name} has arguments but cannot be invoked as function`);
      return receiver.fields.get(name)!;
    }
    this.#errorf(`can't evaluate field ${name} in type ${goTypeName(receiver)}`);
  }

  #evalFunction(dot: TValue, name: string, cmd: Command, final: Final): TValue {
    const f = this.#funcs.get(name);
    if (!f) this.#errorf(`"${name}" is not a defined function`);
    const args = cmd.args.slice(1);
    const n = args.length + (final === MISSING ? 0 : 1);
    const fixed = f.params.length;
    if (f.variadic !== undefined ? n < fixed : n !== fixed) {
      this.#errorf(`wrong number of args for ${name}: want ${f.variadic !== undefined ? 'at least ' : ''}${fixed} got ${n}`);
    }
    const typeAt = (i: number) => f.params[i] ?? f.variadic ?? 'any';
    if (name === 'and' || name === 'or') {
      // Short-circuit: the first argument that decides the result is returned, unevaluated ones are skipped.
      let v: TValue = null;
      for (const a of args) {
        v = this.#evalArg(dot, a, 'any');
        if (isTrue(v) === (name === 'or')) return v;
      }
      return final === MISSING ? v : final;
    }
    const values = args.map((a, i) => this.#evalArg(dot, a, typeAt(i)));
    if (final !== MISSING) values.push(this.#checkType(final, typeAt(values.length)));
    this.#setAt(cmd.pos, commandString(cmd));
    let result: TValue;
    try {
      result = f.call(values);
    } catch (err) {
      if (err instanceof TemplateExecError) throw err;
      this.#errorf(`error calling ${name}: ${(err as Error).message}`);
    }
    // A function can build a string far longer than its inputs (printf widths, reReplaceAll);
    // capping every result keeps variables from growing past what could ever be printed.
    if (typeof result === 'string' && result.length > MAX_OUTPUT_BYTES / 3 && utf8Length(result) > MAX_OUTPUT_BYTES) {
      this.#errorf(`result of ${name} exceeds ${MAX_OUTPUT_BYTES} bytes`);
    }
    return result;
  }

  #checkType(v: TValue, type: 'any' | 'string'): TValue {
    if (type === 'string' && typeof v !== 'string') this.#errorf(`wrong type for value; expected string; got ${goTypeName(v)}`);
    return v;
  }

  /** An argument: literals as they are, fields/variables/pipelines evaluated, a bare function name called with no arguments. */
  #evalArg(dot: TValue, a: Arg, type: 'any' | 'string'): TValue {
    this.#step();
    switch (a.kind) {
      case 'dot':
        return this.#checkType(dot, type);
      case 'nil':
        if (type === 'string') this.#errorf('cannot assign nil to string');
        return null;
      case 'field':
        return this.#checkType(this.#evalFieldChain(dot, a.idents, [a], MISSING), type);
      case 'variable': {
        const v = this.#lookup(a.name).value;
        return this.#checkType(a.idents.length === 0 ? v : this.#evalFieldChain(v, a.idents, [a], MISSING), type);
      }
      case 'pipe':
        return this.#checkType(this.#evalPipeline(dot, a.pipe), type);
      case 'identifier':
        return this.#checkType(this.#evalFunction(dot, a.name, { pos: a.pos, args: [a] }, MISSING), type);
      case 'chain': {
        if (a.node.kind === 'nil') this.#errorf(`indirection through explicit nil in ${argString(a)}`);
        const receiver = this.#evalArg(dot, a.node, 'any');
        return this.#checkType(this.#evalFieldChain(receiver, a.idents, [a], MISSING), type);
      }
      case 'bool':
      case 'number':
        if (type === 'string') this.#errorf(`expected string; found ${argString(a)}`);
        return a.value;
      case 'string':
        return a.value;
    }
  }
}
