import { attributeMaps, type AttributeType, type TableDef } from '@floe/schema';
import { columnLeaves, type ColumnBatchView } from './column-batch.ts';

/** How many values of one type one attribute key has in a file (all scopes together). */
export interface AttributeTypeCount {
  key: string;
  type: AttributeType;
  count: number;
}

interface Tally {
  bytes: Uint8Array;
  type: AttributeType;
  count: number;
}

/**
 * The keys of every typed attribute map of the batches, counted per key and type: what
 * attributeTypesSql counts over a written file, taken from the batches' key leaves instead
 * (a DuckDB pass over the file's map columns cost about 1.2 CPU-µs a span). Keys are counted as
 * bytes, grouped by an FNV-1a hash checked byte by byte, and decoded once each at the end.
 */
export function attributeKeyCounts(table: TableDef, batches: readonly ColumnBatchView[]): AttributeTypeCount[] {
  const typeOf = new Map(attributeMaps(table).map((m) => [m.column, m.type]));
  const byHash = new Map<number, Tally[]>();
  const leavesCache = new Map<ColumnBatchView['schema'], { leaf: number; type: AttributeType }[]>();
  for (const batch of batches) {
    let keyLeaves = leavesCache.get(batch.schema);
    if (!keyLeaves) {
      keyLeaves = [];
      let leaf = 0;
      for (const c of batch.schema.columns) {
        const type = c.kind === 'map' ? typeOf.get(c.name) : undefined;
        if (type) keyLeaves.push({ leaf, type }); // a map's key leaf comes first
        leaf += columnLeaves(c).length;
      }
      leavesCache.set(batch.schema, keyLeaves);
    }
    for (const { leaf, type } of keyLeaves) countKeys(batch.leaves[leaf]!.values, type, byHash);
  }
  const decoder = new TextDecoder();
  const out: AttributeTypeCount[] = [];
  for (const list of byHash.values()) for (const t of list) out.push({ key: decoder.decode(t.bytes), type: t.type, count: t.count });
  return out;
}

const TYPE_SEED: Record<AttributeType, number> = { str: 1, int: 2, double: 3, bool: 4 };

/** PLAIN strings (a 4-byte little-endian length, then the bytes) of one key leaf. */
function countKeys(values: Uint8Array, type: AttributeType, byHash: Map<number, Tally[]>): void {
  const view = new DataView(values.buffer, values.byteOffset, values.byteLength);
  for (let p = 0; p < values.length; ) {
    const start = p + 4;
    const end = start + view.getUint32(p, true);
    p = end;
    let h = 0x811c9dc5 ^ TYPE_SEED[type];
    for (let i = start; i < end; i++) h = Math.imul(h ^ values[i]!, 0x01000193);
    let list = byHash.get(h);
    if (!list) byHash.set(h, (list = []));
    let found: Tally | undefined;
    for (const t of list) {
      if (t.type !== type || t.bytes.length !== end - start) continue;
      let same = true;
      for (let i = 0; i < t.bytes.length; i++) {
        if (t.bytes[i] !== values[start + i]) {
          same = false;
          break;
        }
      }
      if (same) {
        found = t;
        break;
      }
    }
    if (found) found.count++;
    else list.push({ bytes: values.slice(start, end), type, count: 1 });
  }
}
