import type { MergedStack } from './flamegraph.ts';

/**
 * Merged stacks → a Graphviz DOT call graph, what Pyroscope's render answers for `format=dot`
 * (the view `go tool pprof -dot` draws): one node per function with its flat value (as the leaf)
 * and cumulative value (anywhere on the stack, once per stack however often it recurses), one
 * edge per caller → callee pair weighted by the stacks that pass through it. Only the `maxNodes`
 * functions of largest cumulative value are drawn, with the edges between them; sizes scale with
 * the flat share as in pprof's graphs. Written here because no maintained npm library renders
 * pprof-style call graphs.
 */

interface Fn {
  flat: number;
  cum: number;
}

/** Text for inside a DOT quoted string: backslash and double quote escaped (DOT's own \n and \l are added apart). */
const esc = (text: string) => text.replace(/\\/g, '\\\\').replace(/"/g, '\\"');

function percent(part: number, total: number): string {
  return total === 0 ? '0%' : `${((100 * part) / total).toFixed(2)}%`;
}

export function dotGraph(stacks: readonly MergedStack[], title: string, unit: string, maxNodes: number): string {
  const fns = new Map<string, Fn>();
  const edges = new Map<string, { from: string; to: string; value: number }>();
  let total = 0;
  for (const { stack, value } of stacks) {
    if (stack.length === 0) continue;
    total += value;
    const seen = new Set<string>();
    const seenEdges = new Set<string>();
    for (let i = 0; i < stack.length; i++) {
      const name = stack[i]!;
      let fn = fns.get(name);
      if (!fn) {
        fn = { flat: 0, cum: 0 };
        fns.set(name, fn);
      }
      if (i === 0) fn.flat += value;
      if (!seen.has(name)) {
        seen.add(name);
        fn.cum += value;
      }
      // Leaf first: the frame after i is its caller.
      const caller = stack[i + 1];
      if (caller === undefined) continue;
      const key = JSON.stringify([caller, name]);
      if (seenEdges.has(key)) continue;
      seenEdges.add(key);
      const edge = edges.get(key);
      if (edge) edge.value += value;
      else edges.set(key, { from: caller, to: name, value });
    }
  }
  const shown = [...fns.entries()].sort((a, b) => b[1].cum - a[1].cum || (a[0] < b[0] ? -1 : 1)).slice(0, Math.max(1, maxNodes));
  const ids = new Map(shown.map(([name], i) => [name, `N${i + 1}`]));
  const maxFlat = Math.max(1, ...shown.map(([, f]) => f.flat));
  const lines = [
    `digraph "${esc(title)}" {`,
    'node [style=filled fillcolor="#f8f8f8"]',
    `subgraph cluster_L { "legend" [shape=box fontsize=16 label="Type: ${esc(title)}\\lShowing ${shown.length} of ${fns.size} nodes\\lTotal: ${total} ${esc(unit)}\\l"] }`,
  ];
  for (const [name, f] of shown) {
    const fontsize = Math.round(8 + (16 * f.flat) / maxFlat);
    const label = `${esc(name)}\\n${f.flat} ${esc(unit)} (${percent(f.flat, total)})\\nof ${f.cum} ${esc(unit)} (${percent(f.cum, total)})`;
    lines.push(`${ids.get(name)} [label="${label}" fontsize=${fontsize} shape=box tooltip="${esc(name)} (${f.cum} ${esc(unit)})"]`);
  }
  const drawn = [...edges.values()].filter((e) => ids.has(e.from) && ids.has(e.to)).sort((a, b) => b.value - a.value);
  for (const e of drawn) {
    const penwidth = total === 0 ? 1 : Math.max(1, Math.round((5 * e.value) / total));
    lines.push(`${ids.get(e.from)} -> ${ids.get(e.to)} [label=" ${e.value}" weight=${Math.max(1, Math.round((100 * e.value) / Math.max(1, total)))} penwidth=${penwidth}]`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
