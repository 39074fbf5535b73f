import type { LabelMatch, LabelPredicate, RowFilter } from '../ir/logs.ts';
import { resolveLogLabel } from './log-labels.ts';
import type { PlannerTable } from './printer.ts';

/**
 * Query demand (spec 1, Log query API): the attribute keys a query filters on that resolve to no
 * dedicated column (label resolution sends them to the typed maps), once per query however often
 * the query names them. Stream matchers and label filters count; grouping and unwrap do not
 * filter, so they do not. Aliases and materialized labels resolve to columns and are left out.
 */
export function filterDemand(parts: ReadonlyArray<{ streams: readonly LabelMatch[]; filters: readonly RowFilter[] }>, table: PlannerTable): string[] {
  const labels = new Set<string>();
  const predicate = (p: LabelPredicate): void => {
    switch (p.kind) {
      case 'match':
        labels.add(p.match.label);
        return;
      case 'compare':
        labels.add(p.label);
        return;
      case 'and':
      case 'or':
        predicate(p.left);
        predicate(p.right);
        return;
      case 'const':
        return;
    }
  };
  for (const part of parts) {
    for (const m of part.streams) labels.add(m.label);
    for (const f of part.filters) if (f.kind === 'labels') predicate(f.predicate);
  }
  const keys: string[] = [];
  for (const label of labels) {
    const target = resolveLogLabel(label, table);
    if (target.kind === 'attribute') keys.push(target.key);
  }
  return keys.sort();
}
