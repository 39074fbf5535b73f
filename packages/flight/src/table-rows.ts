import type { Table } from 'apache-arrow';

/** Arrow rows as plain objects: int64 stays bigint, maps become plain objects. */
export function tableRows<T>(table: Table): T[] {
  const out: T[] = [];
  for (const row of table) {
    if (row) out.push(row.toJSON() as T);
  }
  return out;
}
