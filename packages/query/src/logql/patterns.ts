/**
 * Log patterns (Loki's /patterns, which Grafana's Logs Drilldown shows): lines grouped into
 * templates whose varying tokens read `<_>`, each with its line count per step. Written by hand
 * after the Drain algorithm (He et al., "Drain: An Online Log Parsing Approach with Fixed Depth
 * Tree", ICWS 2017), which Loki's pattern ingester also follows; no maintained JavaScript
 * implementation exists. Lines are split on spaces; a line is placed by its token count and its
 * first few tokens (a token holding a digit takes the wildcard branch, so ids and numbers do not
 * spread lines over the tree), then joins the most similar template of that leaf when enough of
 * its tokens agree, turning the disagreeing ones into `<_>`, or starts a template of its own.
 */

export const PATTERN_WILDCARD = '<_>';

export interface PatternOptions {
  /** Tokens after the length level used to place a line (Drain's depth − 2). */
  prefixTokens?: number;
  /** Share of a template's tokens a line must equal to join it. */
  similarity?: number;
  /** Children of a tree node before further tokens go to the wildcard child. */
  maxChildren?: number;
  /** Tokens of a line looked at; the rest become one trailing `<_>`. */
  maxTokens?: number;
  /** Templates kept per level; lines past it that start a new one are not counted. */
  maxTemplates?: number;
  /** Templates per leaf (lines of one length and first token), which bounds a line's comparisons likewise. */
  maxLeafTemplates?: number;
}

export interface LogPattern {
  pattern: string;
  /** The lines' detected level (`unknown` when none). */
  level: string;
  /** [unix seconds of the step's start, lines], steps in time order, only those with lines. */
  samples: Array<[number, number]>;
}

interface Template {
  tokens: string[];
  /** Lines per step start (unix seconds). */
  counts: Map<number, number>;
  total: number;
}

interface Node {
  children: Map<string, Node>;
  templates: Template[];
}

const hasDigit = (t: string) => /\d/.test(t);
const newNode = (): Node => ({ children: new Map(), templates: [] });

/** One level's tree of templates. */
class Drain {
  readonly #root = newNode();
  readonly #o: Required<PatternOptions>;
  templates = 0;

  constructor(o: Required<PatternOptions>) {
    this.#o = o;
  }

  /** The template the tokens join or start, or undefined when the level holds its most. */
  place(tokens: string[]): Template | undefined {
    const leaf = this.#leaf(tokens);
    let best: Template | undefined;
    let bestScore = -1;
    let bestWild = -1;
    const n = tokens.length;
    templates: for (const t of leaf.templates) {
      let same = 0;
      let wild = 0;
      for (let i = 0; i < n; i++) {
        if (t.tokens[i] === PATTERN_WILDCARD) wild++;
        else if (t.tokens[i] === tokens[i]) same++;
        // Even if every token left agreed, this template could not join nor beat the best.
        else if (same + n - i - 1 < n * Math.max(this.#o.similarity, bestScore)) continue templates;
      }
      const score = same / n;
      if (score > bestScore || (score === bestScore && wild > bestWild)) {
        best = t;
        bestScore = score;
        bestWild = wild;
      }
    }
    if (best && bestScore >= this.#o.similarity) {
      for (let i = 0; i < tokens.length; i++) if (best.tokens[i] !== tokens[i]) best.tokens[i] = PATTERN_WILDCARD;
      return best;
    }
    if (this.templates >= this.#o.maxTemplates || leaf.templates.length >= this.#o.maxLeafTemplates) return undefined;
    const created: Template = { tokens: [...tokens], counts: new Map(), total: 0 };
    leaf.templates.push(created);
    this.templates++;
    return created;
  }

  *all(): Generator<Template> {
    const stack = [this.#root];
    while (stack.length > 0) {
      const node = stack.pop()!;
      yield* node.templates;
      for (const c of node.children.values()) stack.push(c);
    }
  }

  /** The leaf of the tokens: by their count, then their first prefixTokens tokens. */
  #leaf(tokens: string[]): Node {
    let node = this.#child(this.#root, String(tokens.length), true);
    const depth = Math.min(this.#o.prefixTokens, tokens.length);
    for (let i = 0; i < depth; i++) {
      const token = tokens[i]!;
      node = this.#child(node, hasDigit(token) ? PATTERN_WILDCARD : token, false);
    }
    return node;
  }

  #child(node: Node, key: string, unlimited: boolean): Node {
    let child = node.children.get(key);
    if (child) return child;
    if (!unlimited && key !== PATTERN_WILDCARD && node.children.size >= this.#o.maxChildren) key = PATTERN_WILDCARD;
    child = node.children.get(key);
    if (!child) node.children.set(key, (child = newNode()));
    return child;
  }
}

/**
 * One prefix token: lines that differ early (`user alice …`, `user bob …`) still meet in one leaf,
 * where similarity decides; deeper trees keep such lines apart until maxChildren values are seen.
 */
const DEFAULTS: Required<PatternOptions> = { prefixTokens: 1, similarity: 0.4, maxChildren: 64, maxTokens: 128, maxTemplates: 1000, maxLeafTemplates: 50 };

/** Mines patterns from lines, added in any order; `patterns` groups their counts by step. */
export class LogPatternMiner {
  readonly #o: Required<PatternOptions>;
  readonly #byLevel = new Map<string, Drain>();
  readonly #stepSeconds: number;

  /** `stepSeconds`: the width of a sample's bucket (at least 1). */
  constructor(stepSeconds: number, opts: PatternOptions = {}) {
    this.#o = { ...DEFAULTS, ...opts };
    this.#stepSeconds = Math.max(1, Math.floor(stepSeconds));
  }

  add(line: string, unixSeconds: number, level: string): void {
    const tokens = tokenize(line, this.#o.maxTokens);
    if (tokens.length === 0) return;
    const key = level === '' ? 'unknown' : level;
    let drain = this.#byLevel.get(key);
    if (!drain) this.#byLevel.set(key, (drain = new Drain(this.#o)));
    const template = drain.place(tokens);
    if (!template) return;
    const step = Math.floor(unixSeconds / this.#stepSeconds) * this.#stepSeconds;
    template.counts.set(step, (template.counts.get(step) ?? 0) + 1);
    template.total++;
  }

  /** The patterns, most lines first; a template that is only `<_>` tokens says nothing and is left out. */
  patterns(): LogPattern[] {
    const out: Array<LogPattern & { total: number }> = [];
    for (const [level, drain] of this.#byLevel) {
      for (const t of drain.all()) {
        if (t.tokens.every((x) => x === PATTERN_WILDCARD)) continue;
        const samples = [...t.counts].sort((a, b) => a[0] - b[0]) as Array<[number, number]>;
        out.push({ pattern: joinTokens(t.tokens), level, samples, total: t.total });
      }
    }
    out.sort((a, b) => b.total - a.total || (a.pattern < b.pattern ? -1 : a.pattern > b.pattern ? 1 : 0));
    return out.map(({ total: _total, ...p }) => p);
  }
}

/** A line's tokens: split on runs of spaces and tabs, at most `max` (the rest one `<_>`). */
export function tokenize(line: string, max: number): string[] {
  const tokens = line.split(/[ \t]+/).filter((t) => t !== '');
  if (tokens.length <= max) return tokens;
  return [...tokens.slice(0, max - 1), PATTERN_WILDCARD];
}

/** Tokens joined by spaces, consecutive `<_>` as one (they read the same in a pattern). */
function joinTokens(tokens: readonly string[]): string {
  const out: string[] = [];
  for (const t of tokens) if (!(t === PATTERN_WILDCARD && out[out.length - 1] === PATTERN_WILDCARD)) out.push(t);
  return out.join(' ');
}
