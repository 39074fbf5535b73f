/**
 * What every query language's parser here needs of a lezer syntax tree, whatever the grammar
 * (@grafana/lezer-logql, @grafana/lezer-traceql): the structural slice of a node they use.
 */
export interface SyntaxNodeLike {
  readonly from: number;
  readonly to: number;
  readonly type: { readonly isError: boolean };
  cursor(): { iterate(enter: (n: { type: { isError: boolean }; node: SyntaxNodeLike }) => boolean | void, leave?: () => void): void };
}

/** The first error node of a tree in document order (lezer recovers and marks what it skipped). */
export function firstErrorNode<N extends SyntaxNodeLike>(top: N): N | undefined {
  let found: N | undefined;
  top.cursor().iterate((n) => {
    if (found) return false;
    if (n.type.isError) {
      found = n.node as N;
      return false;
    }
    return undefined;
  });
  return found;
}

/**
 * How deep the tree nests (the top node is 1), walked with a cursor, not by recursion: what
 * lowers and evaluates the tree after it recurses that deep, so a parser bounds it first.
 */
export function syntaxDepth(top: SyntaxNodeLike): number {
  let depth = 0;
  let deepest = 0;
  top.cursor().iterate(
    () => {
      deepest = Math.max(deepest, ++depth);
    },
    () => {
      depth--;
    },
  );
  return deepest;
}

/**
 * Runs a parse whose recursion (the grammar's tree building, the lowering) follows the query's
 * nesting: a query nested deeper than the stack allows becomes `tooDeep()`, a 400, not a 500.
 */
export function parseWithinStack<T>(parse: () => T, tooDeep: () => Error): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof RangeError && /call stack/i.test(err.message)) throw tooDeep();
    throw err;
  }
}
