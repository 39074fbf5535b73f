/**
 * Merged stacks → Pyroscope's flamebearer levels (reference/api-contracts.md §4.2).
 *
 * A call tree is built from stacks (frame names leaf first, as profiles-to-rows.ts stores them):
 * each stack is walked from its root end, adding its value to the total of every node on the
 * way and to the self of the last (a stack with no frames adds to the root's self). One tree
 * holds one side (single format) or two (double format: left and right of a diff) so both
 * formats share the merging, truncation and layout.
 *
 * Layout: level d lists the nodes at depth d in left-to-right order; children sit from their
 * parent's left edge in name order (code-unit order, so the output is deterministic), with the
 * parent's self after them. Each node is a chunk of 4 ints (single: x delta, total, self, name
 * index) or 7 (double: left x delta, total, self, right x delta, total, self, name index); the x
 * delta is the node's left edge minus the right edge of the previous node on its level, per side.
 *
 * Truncation (the payload cap): with more than maxNodes nodes below the root, the lowest-weighted
 * are folded into one synthetic "other" child of their parent (weight: total, summed over sides).
 * The cut is the lowest weight at which what remains, "other" nodes included, fits maxNodes: a
 * node is kept only with its parent, and raising the cut never adds nodes (each new "other"
 * replaces at least one node), so that weight is found by binary search.
 */

export const OTHER_NAME = 'other';
export const ROOT_NAME = 'total';

export interface MergedStack {
  /** Frame names, leaf first. */
  stack: readonly string[];
  value: number;
}

interface Node {
  name: string;
  total: number[];
  self: number[];
  children: Map<string, Node>;
}

export interface FlamegraphLevels {
  names: string[];
  levels: number[][];
  /** Total per side (one entry in single format). */
  totals: number[];
  maxSelf: number;
}

const newNode = (name: string, sides: number): Node => ({ name, total: new Array<number>(sides).fill(0), self: new Array<number>(sides).fill(0), children: new Map() });

/** The call tree of one stack set per side. */
function buildTree(sides: ReadonlyArray<readonly MergedStack[]>): Node {
  const root = newNode(ROOT_NAME, sides.length);
  sides.forEach((stacks, side) => {
    for (const { stack, value } of stacks) {
      root.total[side]! += value;
      let node = root;
      for (let i = stack.length - 1; i >= 0; i--) {
        const name = stack[i]!;
        let child = node.children.get(name);
        if (!child) {
          child = newNode(name, sides.length);
          node.children.set(name, child);
        }
        child.total[side]! += value;
        node = child;
      }
      node.self[side]! += value;
    }
  });
  return root;
}

const weight = (n: Node) => n.total.reduce((a, b) => a + b, 0);

/** Nodes shown when nodes below `cut` are folded: kept nodes plus one "other" per parent that loses any child. */
function shownCount(root: Node, cut: number): number {
  let count = 0;
  const pending = [root];
  while (pending.length > 0) {
    const n = pending.pop()!;
    let folded = false;
    for (const c of n.children.values()) {
      if (weight(c) >= cut) {
        count++;
        pending.push(c);
      } else folded = true;
    }
    if (folded) count++;
  }
  return count;
}

/** The lowest weight a node needs to be shown so that at most maxNodes nodes are (0: everything fits). */
function truncationCut(root: Node, maxNodes: number): number {
  const weights: number[] = [];
  const pending = [root];
  while (pending.length > 0) {
    for (const c of pending.pop()!.children.values()) {
      weights.push(weight(c));
      pending.push(c);
    }
  }
  if (weights.length <= maxNodes) return -Infinity;
  const distinct = [...new Set(weights)].sort((a, b) => a - b);
  // Smallest index whose cut fits; the cut above the largest weight always fits (one "other").
  let lo = 0;
  let hi = distinct.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (shownCount(root, distinct[mid]!) <= maxNodes) hi = mid;
    else lo = mid + 1;
  }
  return lo < distinct.length ? distinct[lo]! : Infinity;
}

/** A node's children as shown: kept ones in name order, then "other" holding the folded ones. */
function shownChildren(n: Node, cut: number, sides: number): Node[] {
  const kept: Node[] = [];
  let other: Node | undefined;
  for (const c of n.children.values()) {
    if (weight(c) >= cut) {
      kept.push(c);
      continue;
    }
    other ??= newNode(OTHER_NAME, sides);
    for (let s = 0; s < sides; s++) {
      other.total[s]! += c.total[s]!;
      other.self[s]! += c.total[s]!;
    }
  }
  kept.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (other) kept.push(other);
  return kept;
}

/**
 * Flamebearer names and levels of one stack set per side (one side: single format, two: double).
 * maxNodes bounds the nodes below the root (at least 1).
 */
export function flamegraphLevels(sides: ReadonlyArray<readonly MergedStack[]>, maxNodes: number): FlamegraphLevels {
  const n = sides.length;
  const root = buildTree(sides);
  const cut = truncationCut(root, Math.max(1, maxNodes));
  const names: string[] = [];
  const nameIndex = new Map<string, number>();
  const indexOf = (name: string) => {
    let i = nameIndex.get(name);
    if (i === undefined) {
      i = names.push(name) - 1;
      nameIndex.set(name, i);
    }
    return i;
  };
  const levels: number[][] = [];
  // Right edge of the last node placed on each level, per side.
  const ends: number[][] = [];
  let maxSelf = 0;

  // Every walk is iterative: deep stacks (thousands of frames) must not overflow the JS stack.
  const pending: Array<{ node: Node; depth: number; x: number[] }> = [{ node: root, depth: 0, x: new Array<number>(n).fill(0) }];
  while (pending.length > 0) {
    const { node, depth, x } = pending.pop()!;
    const level = (levels[depth] ??= []);
    const end = (ends[depth] ??= new Array<number>(n).fill(0));
    for (let s = 0; s < n; s++) {
      level.push(x[s]! - end[s]!, node.total[s]!, node.self[s]!);
      end[s] = x[s]! + node.total[s]!;
      maxSelf = Math.max(maxSelf, node.self[s]!);
    }
    level.push(indexOf(node.name));
    const children = shownChildren(node, cut, n);
    const at = [...x];
    const placed = children.map((child) => {
      const cx = [...at];
      for (let s = 0; s < n; s++) at[s]! += child.total[s]!;
      return { node: child, depth: depth + 1, x: cx };
    });
    for (let i = placed.length - 1; i >= 0; i--) pending.push(placed[i]!);
  }
  return { names, levels, totals: root.total, maxSelf };
}

/**
 * The stacks cut to at most maxNodes distinct call-tree nodes below the root, the flamegraph's own
 * truncation applied to stacks: a folded node's whole subtree becomes one frame "other" under its
 * parent. For downloads (pprof) that must stay stacks rather than levels.
 */
export function truncateStacks(stacks: readonly MergedStack[], maxNodes: number): MergedStack[] {
  const root = buildTree([stacks]);
  const cut = truncationCut(root, Math.max(1, maxNodes));
  if (cut === -Infinity) return [...stacks];
  const out: MergedStack[] = [];
  // Paths are root first while walking; stacks are stored leaf first.
  const pending: Array<{ node: Node; path: string[] }> = [{ node: root, path: [] }];
  while (pending.length > 0) {
    const { node, path } = pending.pop()!;
    if (node.self[0]! > 0) out.push({ stack: [...path].reverse(), value: node.self[0]! });
    // A folded "other" has no children and all its weight as self, so it ends its stack.
    for (const child of shownChildren(node, cut, 1)) pending.push({ node: child, path: [...path, child.name] });
  }
  return out;
}
