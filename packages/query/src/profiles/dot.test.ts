import { parse } from '@ts-graphviz/ast';
import { describe, expect, it } from 'vitest';
import { dotGraph } from './dot.ts';

/**
 * The DOT call graph, read back with an independent DOT parser (@ts-graphviz/ast): nodes with
 * flat and cumulative values, caller → callee edges, the node cap, and names that need escaping.
 */
const STACKS = [
  { stack: ['c', 'b', 'a'], value: 3 },
  { stack: ['b', 'a'], value: 2 },
  { stack: ['d', 'a'], value: 4 },
  // Recursion counts once in the cumulative value and once per edge.
  { stack: ['a', 'a'], value: 1 },
];

interface Graph {
  nodes: Map<string, string>;
  edges: Array<[string, string, string]>;
}

/** Node ids → label, and edges (from label, to label, edge label), from the parsed document. */
function read(dot: string): Graph {
  const ast = parse(dot);
  const graph = ast.children.find((c) => c.type === 'Graph')!;
  const attr = (stmt: { children: Array<{ type: string; key?: { value: string }; value?: { value: string } }> }, key: string) =>
    stmt.children.find((a) => a.type === 'Attribute' && a.key?.value === key)?.value?.value ?? '';
  const nodes = new Map<string, string>();
  const edgeStmts: Array<{ from: string; to: string; label: string }> = [];
  for (const stmt of graph.children as Array<{ type: string; id?: { value: string }; targets?: Array<{ id: { value: string } }>; children: Array<{ type: string; key?: { value: string }; value?: { value: string } }> }>) {
    if (stmt.type === 'Node' && stmt.id) nodes.set(stmt.id.value, attr(stmt, 'label'));
    if (stmt.type === 'Edge' && stmt.targets) edgeStmts.push({ from: stmt.targets[0]!.id.value, to: stmt.targets[1]!.id.value, label: attr(stmt, 'label') });
  }
  const name = (id: string) => nodes.get(id)!.split('\\n')[0]!;
  return { nodes, edges: edgeStmts.map((e) => [name(e.from), name(e.to), e.label.trim()]) };
}

describe('dotGraph', () => {
  it('draws one node per function with flat and cumulative values, and weighted caller → callee edges', () => {
    const g = read(dotGraph(STACKS, 'cpu', 'nanoseconds', 100));
    const labels = [...g.nodes.values()].filter((l) => !l.startsWith('Type:'));
    expect(labels).toEqual([
      'a\\n1 nanoseconds (10.00%)\\nof 10 nanoseconds (100.00%)',
      'b\\n2 nanoseconds (20.00%)\\nof 5 nanoseconds (50.00%)',
      'd\\n4 nanoseconds (40.00%)\\nof 4 nanoseconds (40.00%)',
      'c\\n3 nanoseconds (30.00%)\\nof 3 nanoseconds (30.00%)',
    ]);
    expect(g.edges).toEqual([
      ['a', 'b', '5'],
      ['a', 'd', '4'],
      ['b', 'c', '3'],
      ['a', 'a', '1'],
    ]);
  });

  it('keeps the largest functions by cumulative value and only edges between them', () => {
    const g = read(dotGraph(STACKS, 'cpu', 'nanoseconds', 2));
    expect([...g.nodes.values()].filter((l) => !l.startsWith('Type:')).map((l) => l.split('\\n')[0])).toEqual(['a', 'b']);
    expect(g.edges).toEqual([['a', 'b', '5'], ['a', 'a', '1']]);
  });

  it('escapes names that carry quotes and backslashes', () => {
    const dot = dotGraph([{ stack: ['say "hi"\\now', 'main'], value: 1 }], 'cpu', 'nanoseconds', 10);
    expect(dot).toContain('label="say \\"hi\\"\\\\now\\n1 nanoseconds');
    const g = read(dot);
    expect(g.nodes.size).toBe(2);
    expect(g.edges).toHaveLength(1);
  });
});
