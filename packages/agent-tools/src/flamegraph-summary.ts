/**
 * Flamegraphs as an agent can read them. A flamebearer document (the render and render-diff
 * answers, reference/api-contracts.md §4.2) is a layout for drawing: per depth, runs of integers
 * relative to the previous node. What an agent wants is which functions cost the most (a search)
 * or changed the most (a comparison), so the tools turn the layout back into a call tree and sum
 * it per function name.
 *
 * Layout read here: level d lists the nodes at depth d left to right, each a chunk of 4 integers
 * (single: x delta, total, self, name index) or 7 (double: left x delta, total, self, right x
 * delta, total, self, name index); x delta is the node's left edge minus the right edge of the
 * previous node of its level, per side. A node's children lie inside its span on each side, so
 * inside the sum of its spans too, which is how a node finds its parent (zero-width nodes may
 * land on a neighbour, which changes no sum). "total" (the root) is left out; "other", the
 * flamegraph's fold of nodes under its node cap, is kept under that name.
 *
 * A function's total counts each stack once: a recursive call below itself adds nothing more.
 */
import { optional, type Shape } from '@floe/client';

/** What the summaries read of a render or render-diff answer. */
export const FLAMEBEARER: Shape = {
  flamebearer: { names: ['string'], levels: [['number']], numTicks: 'number' },
  metadata: { format: 'string', units: optional('string') },
  leftTicks: optional('number'),
  rightTicks: optional('number'),
};

export interface FlamebearerDocument {
  flamebearer: { names: string[]; levels: number[][]; numTicks: number };
  metadata: { format: 'single' | 'double'; units?: string; name?: string };
  leftTicks?: number;
  rightTicks?: number;
}

export interface FunctionCost {
  /** Per side: one entry for a single flamegraph, two (left, right) for a diff. */
  self: number[];
  total: number[];
}

interface Node {
  name: string;
  start: number;
  end: number;
  self: number[];
  total: number[];
  parent: Node | undefined;
}

/** Every node of the layout below the root, with its parent. */
function nodesOf(doc: FlamebearerDocument): Node[] {
  const sides = doc.metadata.format === 'double' ? 2 : 1;
  const width = sides === 2 ? 7 : 4;
  const { names, levels } = doc.flamebearer;
  const all: Node[] = [];
  let above: Node[] = [];
  levels.forEach((level, depth) => {
    const here: Node[] = [];
    const edge = new Array<number>(sides).fill(0);
    for (let i = 0; i + width <= level.length; i += width) {
      const self: number[] = [];
      const total: number[] = [];
      let start = 0;
      let span = 0;
      for (let s = 0; s < sides; s++) {
        const [dx, t, sf] = [level[i + 3 * s]!, level[i + 3 * s + 1]!, level[i + 3 * s + 2]!];
        const x = edge[s]! + dx;
        edge[s] = x + t;
        start += x;
        span += t;
        self.push(sf);
        total.push(t);
      }
      here.push({ name: names[level[i + width - 1]!] ?? '', start, end: start + span, self, total, parent: undefined });
    }
    // Parents and children are both in left-to-right order: one pass pairs them.
    let j = 0;
    for (const n of here) {
      while (j < above.length - 1 && !(n.start >= above[j]!.start && n.end <= above[j]!.end)) j++;
      n.parent = above[j];
    }
    if (depth > 0) for (const x of here) all.push(x);
    above = here;
  });
  return all;
}

/** Self and total per function name, summed over the call tree (the root left out). */
export function functionCosts(doc: FlamebearerDocument): Map<string, FunctionCost> {
  const sides = doc.metadata.format === 'double' ? 2 : 1;
  const out = new Map<string, FunctionCost>();
  for (const n of nodesOf(doc)) {
    let cost = out.get(n.name);
    if (!cost) out.set(n.name, (cost = { self: new Array<number>(sides).fill(0), total: new Array<number>(sides).fill(0) }));
    let recursive = false;
    // The root (depth 0) has no parent; it is nobody's namesake.
    for (let a = n.parent; a?.parent; a = a.parent) if (a.name === n.name) recursive = true;
    for (let s = 0; s < sides; s++) {
      cost.self[s]! += n.self[s]!;
      if (!recursive) cost.total[s]! += n.total[s]!;
    }
  }
  return out;
}

export type RankBy = 'self' | 'total';

const percent = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 100 : 0);
const byNameThen = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export interface TopFunction {
  name: string;
  self: number;
  total: number;
  /** Shares of the whole profile, in percent. */
  selfPercent: number;
  totalPercent: number;
}

/** The `top` costliest functions of a single flamegraph, by self or total. */
export function topFunctions(doc: FlamebearerDocument, by: RankBy, top: number): { units: string; totalValue: number; functionCount: number; functions: TopFunction[] } {
  const whole = doc.flamebearer.numTicks;
  const all = [...functionCosts(doc)].map(([name, c]): TopFunction => ({ name, self: c.self[0]!, total: c.total[0]!, selfPercent: percent(c.self[0]!, whole), totalPercent: percent(c.total[0]!, whole) }));
  all.sort((a, b) => b[by] - a[by] || byNameThen(a, b));
  return { units: doc.metadata.units ?? '', totalValue: whole, functionCount: all.length, functions: all.slice(0, top) };
}

export interface FunctionChange {
  name: string;
  leftSelf: number;
  rightSelf: number;
  selfDelta: number;
  leftTotal: number;
  rightTotal: number;
  totalDelta: number;
  /** Change of the function's share of its side's whole, in percentage points (fair when the two windows differ in length). */
  selfShareDelta: number;
  totalShareDelta: number;
}

/** The `top` functions whose self or total changed most (by absolute change) between the two sides of a diff. */
export function topChanges(doc: FlamebearerDocument, by: RankBy, top: number): { units: string; leftTotal: number; rightTotal: number; changedCount: number; changes: FunctionChange[] } {
  const left = doc.leftTicks ?? 0;
  const right = doc.rightTicks ?? 0;
  const share = (v: number, whole: number) => (whole > 0 ? v / whole : 0);
  const pp = (l: number, r: number) => Math.round((share(r, right) - share(l, left)) * 10_000) / 100;
  const all = [...functionCosts(doc)].map(([name, c]): FunctionChange => {
    const [ls, rs] = c.self as [number, number];
    const [lt, rt] = c.total as [number, number];
    return { name, leftSelf: ls, rightSelf: rs, selfDelta: rs - ls, leftTotal: lt, rightTotal: rt, totalDelta: rt - lt, selfShareDelta: pp(ls, rs), totalShareDelta: pp(lt, rt) };
  });
  const delta = (c: FunctionChange) => Math.abs(by === 'self' ? c.selfDelta : c.totalDelta);
  const changed = all.filter((c) => c.selfDelta !== 0 || c.totalDelta !== 0);
  changed.sort((a, b) => delta(b) - delta(a) || byNameThen(a, b));
  return { units: doc.metadata.units ?? '', leftTotal: left, rightTotal: right, changedCount: changed.length, changes: changed.slice(0, top) };
}
