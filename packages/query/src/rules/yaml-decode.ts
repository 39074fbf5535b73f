import { FloeError } from '@floe/errors';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Alias, type Document } from 'yaml';
import { parseWithinStack } from '../syntax-tree.ts';
import { MAX_RULES_PER_GROUP } from './model.ts';
import { RULES_ERROR_CODE, rulesError, type Position, type Problem } from './problems.ts';

/**
 * Rule-file YAML → raw groups and rules: strings as written, not yet checked. This is the half of
 * Prometheus's rulefmt.Parse that is Go's yaml.v3 decoding with KnownFields(true), so its refusals
 * are worded like yaml.v3's (`line 3: field foo not found in type rulefmt.RuleGroup`, `line 6:
 * cannot unmarshal !!map into string`) and, as there, any of them stops the file before the rules
 * are checked. It walks the YAML syntax tree rather than a converted JS value because yaml.v3
 * decodes a plain scalar into a string field as written: `version: 1.10` is the label value
 * "1.10", not the number 1.1.
 */

export interface RawRule {
  at: Position;
  record: string;
  alert: string;
  expr: string;
  for: string | undefined;
  keepFiringFor: string | undefined;
  labels: [string, string][];
  annotations: [string, string][];
}

export interface RawGroup {
  at: Position;
  name: string;
  interval: string | undefined;
  queryOffset: string | undefined;
  limit: number | undefined;
  labels: [string, string][];
  rules: RawRule[];
}

/** Every visit of a YAML value counts, so aliases re-used many times cannot expand without bound. */
const MAX_YAML_VALUES = 500_000;
/** `<<` merges nest this deep at most (a merge of a map that merges itself would never end). */
const MAX_MERGE_DEPTH = 8;

const GROUPS_FIELDS = ['groups'];
const GROUP_FIELDS = ['name', 'interval', 'query_offset', 'limit', 'labels', 'rules'];
const RULE_FIELDS = ['record', 'alert', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations'];

/** A document nested past the stack (`rules: [[[[…`): the author's mistake, said as such. */
const tooDeep = () => rulesError([{ message: 'yaml: the document nests too deeply' }]);

export function decodeRuleFile(text: string): RawGroup[] {
  return parseWithinStack(() => {
    const d = new Decoder(text);
    const fields = d.fields(d.root(), 'rulefmt.RuleGroups', GROUPS_FIELDS);
    const groups = d.items(fields?.get('groups'), '[]rulefmt.RuleGroup').map((g) => d.group(g));
    d.finish();
    return groups;
  }, tooDeep);
}

/** One group, the body of the ruler API's `POST /config/v1/rules/{namespace}`. */
export function decodeRuleGroup(text: string): RawGroup {
  return parseWithinStack(() => {
    const d = new Decoder(text);
    const root = d.root();
    if (root === null) throw rulesError([{ message: 'empty rule group: expected a YAML mapping with name and rules' }]);
    const group = d.group(root);
    d.finish();
    return group;
  }, tooDeep);
}

type Entry = { key: string; keyNode: unknown; value: unknown };

class Decoder {
  readonly #doc: Document;
  readonly #lines = new LineCounter();
  readonly #problems: Problem[] = [];
  #budget = MAX_YAML_VALUES;
  readonly #aliases = new Map<Alias, unknown>();

  constructor(text: string) {
    this.#doc = parseDocument(text, { lineCounter: this.#lines, prettyErrors: false, uniqueKeys: true });
    const syntax = this.#doc.errors.map((e): Problem => {
      const at = this.#at(e.pos[0]);
      // yaml.v3 reads only a file's first document; a second one is refused rather than ignored.
      // The yaml library reports its own stack overflow (`rules: [[[[…`) as a syntax error.
      const what =
        e.code === 'MULTIPLE_DOCS'
          ? 'a rule file is one YAML document, this has more'
          : /call stack/i.test(e.message)
            ? 'the document nests too deeply'
            : e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      return { message: `yaml: line ${at.line}, col ${at.column}: ${what}`, at };
    });
    if (syntax.length > 0) throw rulesError(syntax);
  }

  root(): unknown {
    return this.#doc.contents;
  }

  finish(): void {
    if (this.#problems.length > 0) throw rulesError(this.#problems);
  }

  group(node: unknown): RawGroup {
    const f = this.fields(node, 'rulefmt.RuleGroup', GROUP_FIELDS);
    const name = this.string(f?.get('name')) ?? '';
    const ruleNodes = this.items(f?.get('rules'), '[]rulefmt.RuleNode');
    // Checked before the rules are decoded, so an oversized group costs no more than its count.
    if (ruleNodes.length > MAX_RULES_PER_GROUP) {
      this.#problems.push({ message: `group ${JSON.stringify(name)}: too many rules: ${ruleNodes.length} (at most ${MAX_RULES_PER_GROUP} in one group)`, at: this.#nodeAt(node) });
    }
    return {
      at: this.#nodeAt(node),
      name,
      interval: this.string(f?.get('interval')) ?? undefined,
      queryOffset: this.string(f?.get('query_offset')) ?? undefined,
      limit: this.int(f?.get('limit')),
      labels: this.stringMap(f?.get('labels')),
      rules: ruleNodes.length > MAX_RULES_PER_GROUP ? [] : ruleNodes.map((r) => this.rule(r)),
    };
  }

  rule(node: unknown): RawRule {
    const f = this.fields(node, 'rulefmt.RuleNode', RULE_FIELDS);
    return {
      at: this.#nodeAt(node),
      record: this.string(f?.get('record')) ?? '',
      alert: this.string(f?.get('alert')) ?? '',
      expr: this.string(f?.get('expr')) ?? '',
      for: this.string(f?.get('for')) ?? undefined,
      keepFiringFor: this.string(f?.get('keep_firing_for')) ?? undefined,
      labels: this.stringMap(f?.get('labels')),
      annotations: this.stringMap(f?.get('annotations')),
    };
  }

  /** A mapping's fields by name; a name not in `known` is refused as yaml.v3's KnownFields does. */
  fields(node: unknown, type: string, known: readonly string[]): Map<string, unknown> | undefined {
    const entries = this.#entries(node, type, 0);
    if (entries === undefined) return undefined;
    const out = new Map<string, unknown>();
    for (const e of entries) {
      if (known.includes(e.key)) out.set(e.key, e.value);
      else this.#fail(e.keyNode, `field ${e.key} not found in type ${type}`);
    }
    return out;
  }

  /** A sequence's items; null (`rules:` with nothing after it) is empty, as in yaml.v3. */
  items(node: unknown, type: string): unknown[] {
    const n = this.#deref(node);
    if (n === null) return [];
    if (!isSeq(n)) {
      this.#fail(n, `cannot unmarshal ${tagOf(n)} into ${type}`);
      return [];
    }
    return n.items;
  }

  /**
   * A scalar as yaml.v3 decodes it into a Go string: a plain scalar as written, a quoted or block
   * one by its value. Null for YAML null (Go's zero value, so the field counts as unset), undefined
   * (after recording the problem) for a mapping or sequence.
   */
  string(node: unknown): string | null | undefined {
    const n = this.#deref(node);
    if (n === null) return null;
    if (!isScalar(n)) {
      this.#fail(n, `cannot unmarshal ${tagOf(n)} into string`);
      return undefined;
    }
    if (n.type === 'PLAIN' && typeof n.source === 'string') return n.source;
    return typeof n.value === 'string' ? n.value : String(n.value);
  }

  /** An integer (`limit`): a quoted "5" is a string and refused, as yaml.v3 refuses it. */
  int(node: unknown): number | undefined {
    const n = this.#deref(node);
    if (n === null) return undefined;
    if (isScalar(n) && typeof n.value === 'number' && Number.isSafeInteger(n.value)) return n.value;
    this.#fail(n, `cannot unmarshal ${tagOf(n)}${isScalar(n) ? ` \`${scalarText(n)}\`` : ''} into int`);
    return undefined;
  }

  /** labels / annotations: name → value, in the order written (merged entries after). */
  stringMap(node: unknown): [string, string][] {
    const out: [string, string][] = [];
    for (const e of this.#entries(node, 'map[string]string', 0) ?? []) {
      const v = this.string(e.value);
      if (v !== undefined) out.push([e.key, v ?? '']);
    }
    return out;
  }

  /**
   * A mapping's entries, `<<` merge keys expanded as yaml.v3 expands them: a key written in the
   * mapping wins over a merged one, and among merged mappings the first wins. Null is no entries.
   */
  #entries(node: unknown, type: string, depth: number): Entry[] | undefined {
    const n = this.#deref(node);
    if (n === null) return [];
    if (!isMap(n)) {
      this.#fail(n, `cannot unmarshal ${tagOf(n)} into ${type}`);
      return undefined;
    }
    const own: Entry[] = [];
    const merged: Entry[] = [];
    for (const pair of n.items) {
      const k = pair.key;
      if (isScalar(k) && k.type === 'PLAIN' && k.source === '<<') {
        if (depth >= MAX_MERGE_DEPTH) {
          this.#fail(k, `map merge nested deeper than ${MAX_MERGE_DEPTH}`);
          continue;
        }
        const src = this.#deref(pair.value);
        for (const m of isSeq(src) ? src.items : [src]) {
          const d = this.#deref(m);
          if (!isMap(d)) this.#fail(d ?? k, 'map merge requires map or sequence of maps as the value');
          else merged.push(...(this.#entries(d, type, depth + 1) ?? []));
        }
        continue;
      }
      const key = this.string(k);
      if (key !== undefined) own.push({ key: key ?? '', keyNode: k, value: pair.value });
    }
    const seen = new Set(own.map((e) => e.key));
    for (const e of merged) {
      if (seen.has(e.key)) continue;
      seen.add(e.key);
      own.push(e);
    }
    return own;
  }

  /** An alias as the node it names; null for YAML's absent values. Counts toward MAX_YAML_VALUES. */
  #deref(node: unknown): unknown {
    if (--this.#budget < 0) {
      throw new FloeError('bad_data', `rule file has more than ${MAX_YAML_VALUES} YAML values once its aliases are expanded`, { code: RULES_ERROR_CODE });
    }
    let n = node;
    if (isAlias(node)) {
      // yaml's resolve() searches the document for the anchor each time; an alias is resolved once.
      n = this.#aliases.get(node);
      if (n === undefined) this.#aliases.set(node, (n = node.resolve(this.#doc) ?? null));
    }
    // A null scalar (`rules:` with nothing after it, `~`) is Go's zero value, as if absent.
    return n === undefined || n === null || (isScalar(n) && n.value === null) ? null : n;
  }

  #fail(node: unknown, message: string): void {
    const at = this.#nodeAt(node);
    this.#problems.push({ message: `yaml: line ${at.line}: ${message}`, at });
  }

  #nodeAt(node: unknown): Position {
    const range = (node as { range?: [number, number, number] } | null)?.range;
    return this.#at(range?.[0] ?? 0);
  }

  #at(offset: number): Position {
    const p = this.#lines.linePos(offset);
    return { line: p.line, column: p.col };
  }
}

/** yaml.v3's name for a node's kind in its "cannot unmarshal" errors. */
function tagOf(n: unknown): string {
  if (isMap(n)) return '!!map';
  if (isSeq(n)) return '!!seq';
  if (!isScalar(n)) return '!!null';
  const v = n.value;
  if (typeof v === 'string') return '!!str';
  if (typeof v === 'boolean') return '!!bool';
  if (typeof v === 'number' || typeof v === 'bigint') return Number.isInteger(v) && !/[.eEn]/.test(scalarText(n)) ? '!!int' : '!!float';
  return v === null ? '!!null' : '!!str';
}

function scalarText(n: { source?: string | undefined; value: unknown }): string {
  return n.source ?? String(n.value);
}
