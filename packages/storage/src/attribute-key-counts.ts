import { attributeMaps, type AttributeType, type TableDef } from '@floe/schema';
import { columnLeaves, type ColumnBatchView } from './column-batch.ts';
import { bytesAre } from './byte-ranges.ts';

/** How many values of one type one attribute key has in a file (all scopes together). */
export interface AttributeTypeCount {
  key: string;
  type: AttributeType;
  count: number;
}

/** One key's count, and the key that followed it last time in its leaf (the likely next one). */
interface Tally {
  key: string;
  bytes: Uint8Array;
  count: number;
  next: Tally | undefined;
}

/**
 * The keys of every typed attribute map of the batches, counted per key and type: what
 * attributeTypesSql counts over a written file, taken from the batches' key leaves instead (a
 * DuckDB pass over the file's map columns cost about 1.2 CPU-µs a span). This runs on the main
 * thread, so keys are not decoded one by one (Buffer#toString per key cost ~2 µs a span): rows of
 * a leaf mostly repeat the same keys in the same order, so each key is first compared, byte by
 * byte, with the one that followed the previous key last time, and looked up only on a miss.
 */
export function attributeKeyCounts(table: TableDef, batches: readonly ColumnBatchView[]): AttributeTypeCount[] {
  const typeOf = new Map(attributeMaps(table).map((m) => [m.column, m.type]));
  const counts = new Map<AttributeType, Map<string, Tally>>();
  const keyLeavesOf = new Map<ColumnBatchView['schema'], { leaf: number; type: AttributeType }[]>();
  // Per segment's series definitions and key leaf: how many rows reference each definition.
  const referenced = new Map<readonly ColumnBatchView[], Map<number, { type: AttributeType; counts: Uint32Array }>>();
  for (const batch of batches) {
    let keyLeaves = keyLeavesOf.get(batch.schema);
    if (!keyLeaves) {
      keyLeaves = [];
      let leaf = 0;
      for (const c of batch.schema.columns) {
        const type = c.kind === 'map' ? typeOf.get(c.name) : undefined;
        if (type) keyLeaves.push({ leaf, type }); // a map's key leaf comes first
        leaf += columnLeaves(c).length;
      }
      keyLeavesOf.set(batch.schema, keyLeaves);
    }
    for (const { leaf, type } of keyLeaves) {
      let byKey = counts.get(type);
      if (!byKey) counts.set(type, (byKey = new Map()));
      const l = batch.leaves[leaf]!;
      if (l.ref) {
        // Counted once per segment's definitions below, each weighted by the rows that reference it.
        let perLeaf = referenced.get(batch.defs!);
        if (!perLeaf) referenced.set(batch.defs!, (perLeaf = new Map()));
        let rows = perLeaf.get(leaf);
        if (!rows) perLeaf.set(leaf, (rows = { type, counts: new Uint32Array(batch.defs!.reduce((n, d) => n + d.rows, 0)) }));
        for (const r of batch.refs!) rows.counts[r]!++;
        continue;
      }
      countKeys(l.values, byKey, l.runs && fragmentWeights(l.defs, l.reps!, l.runs));
    }
  }
  for (const [defs, perLeaf] of referenced) {
    for (const [leaf, { type, counts: rows }] of perLeaf) {
      let at = 0;
      for (const d of defs) {
        const l = d.leaf(leaf);
        countKeys(l.values, counts.get(type)!, fragmentWeights(l.defs, l.reps!, rows.subarray(at, at + d.rows)));
        at += d.rows;
      }
    }
  }
  const out: AttributeTypeCount[] = [];
  // (A key only unreferenced definitions hold counts 0: it is not in these rows.)
  for (const [type, byKey] of counts) for (const t of byKey.values()) if (t.count > 0) out.push({ key: t.key, type, count: t.count });
  return out;
}

/**
 * A run leaf's weight per key (map keys are required: every level at definition level 2 is one):
 * the row count of the run whose fragment holds it.
 */
function fragmentWeights(defs: Uint8Array, reps: Uint8Array, runs: Uint32Array): Uint32Array {
  let keys = 0;
  for (let k = 0; k < defs.length; k++) if (defs[k] === 2) keys++;
  const weights = new Uint32Array(keys);
  for (let k = 0, f = -1, i = 0; k < defs.length; k++) {
    if (reps[k] === 0) f++;
    if (defs[k] === 2) weights[i++] = runs[f]!;
  }
  return weights;
}

/** PLAIN strings (a 4-byte little-endian length, then the UTF-8 bytes) of one key leaf; key i counts weights[i] times when given. */
function countKeys(values: Uint8Array, byKey: Map<string, Tally>, weights?: Uint32Array): void {
  const buf = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  let prev: Tally | undefined;
  for (let p = 0, i = 0; p < buf.length; i++) {
    const start = p + 4;
    const n = buf.readUInt32LE(p);
    p = start + n;
    let t = prev?.next;
    if (!t || !bytesAre(buf, start, n, t.bytes)) {
      const key = buf.toString('utf8', start, p);
      t = byKey.get(key);
      if (!t) byKey.set(key, (t = { key, bytes: buf.slice(start, p), count: 0, next: undefined }));
      if (prev) prev.next = t;
    }
    t.count += weights ? weights[i]! : 1;
    prev = t;
  }
}
