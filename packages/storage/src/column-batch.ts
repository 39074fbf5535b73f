import { isListType, isMapType, isStructType, rawColumns, type ColumnType, type TableDef } from '@floe/schema';
import { copyBytes, viewOf } from './byte-ranges.ts';

/**
 * Column batches: how the acceptor hands rows to the writer (a WAL record's payload). Each raw
 * column of the table (the columns the acceptor sends; the writer derives the rest) is one or
 * more Parquet leaf columns, each held as its levels (one byte per level) and its values in
 * Parquet's PLAIN encoding (booleans one byte each). The writer concatenates the leaves of many
 * records into the pages of one uncompressed Parquet file (column-batch-parquet.ts) that DuckDB
 * reads as it reads any Parquet: rows never pass through JSON text, the acceptor writes bytes it
 * mostly copies from the request, and the writer copies values without looking at them.
 *
 * Payload layout (integers u32 little-endian):
 *   "FCB2" | rows | schemaLen | schema (UTF-8 JSON of the BatchSchema) | leafCount |
 *   leafCount × (levelCount, valueBytes) |
 *   per leaf: [runs] definition levels (levelCount bytes), repetition levels (levelCount bytes,
 *   only for leaves inside a map or list), values (valueBytes)
 * A leaf whose levelCount has its top bit set is a run leaf: its levels and values are
 * fragments, one row's worth each, and `runs` (a count F, then F row counts) says how many rows
 * in a row each fragment stands for. The columns a resource or scope gives all its rows (service
 * name, resource and scope attributes: half a log record's levels) travel once per run, not once
 * per row, and the writer's dictionary and copies work per fragment. "FCB1" payloads (written
 * before run leaves) are read as well; they hold plain leaves only.
 * The schema travels in every payload so a writer reads records from an acceptor of another
 * version (other columns) correctly: records are grouped by schema text, and DuckDB unions the
 * groups by column name.
 *
 * Series references ("FCB3"): the rows of a remote-write series share every column but their
 * sample's four, and a sender repeats each series in every request. Such a batch carries, after
 * the leaf table, one u32 per row: a reference to a row of "FCS2" payloads (series definitions,
 * laid out as "FCB2" batches of one row per series) that the WAL appender writes into the same
 * segment before the first record that references them (wal-appender.ts; references count the
 * definitions of the segment's tenant, dataset, table and schema from 0, in segment order). A
 * leaf whose level count is REF_FLAG holds nothing in the batch: each row takes its referenced
 * definition's levels and values. So a sample costs the WAL its four values and a reference
 * instead of its series' ~300 bytes, and the writer's dictionaries and copies work per series.
 *
 * Parquet nesting, all nodes OPTIONAL except map keys (REQUIRED) and the repeated groups:
 *   primitive           max def 1
 *   map<string, T>      key_value repeated (rep 1): key max def 2, value max def 3
 *   list<T>             list repeated (rep 1): element max def 3
 *   list<struct{...}>   list repeated (rep 1): element group def 3, each field max def 4
 * Levels per row: NULL at def 0, empty map or list at def 1, then one level per entry with rep 0
 * for the first entry of a row and 1 for the rest.
 */

export type LeafType = 'string' | 'long' | 'int' | 'double' | 'boolean';

const COLUMN_BATCH_MAGIC = Uint8Array.of(0x46, 0x43, 0x42, 0x32); // "FCB2"
/** The top bit of a leaf's level count: the leaf holds runs (see the layout above). */
const RUNS_FLAG = 0x80000000;
/** A leaf's level count in an "FCB3" batch whose rows take the leaf from their series definitions. */
const REF_FLAG = 0x40000000;
const REF_BATCH = 0x33; // "FCB3"
const SERIES_DEFINITIONS_MAGIC = Uint8Array.of(0x46, 0x43, 0x53, 0x32); // "FCS2"

/** Bytes of one PLAIN value of the fixed-width types (booleans one byte each, as batches hold them). */
export const PLAIN_WIDTH: Partial<Record<LeafType, number>> = { long: 8, double: 8, int: 4, boolean: 1 };

/** True when a WAL payload is a column batch (otherwise it is the older NDJSON rows). */
export const isColumnBatch = (payload: Uint8Array): boolean =>
  payload.length >= 4 && payload[0] === 0x46 && payload[1] === 0x43 && payload[2] === 0x42 && (payload[3] === 0x32 || payload[3] === 0x31 || payload[3] === REF_BATCH);

/** True when a WAL payload holds series definitions ("FCS2", see the layout above): rows that other records reference, not rows of their own. */
export const isSeriesDefinitions = (payload: Uint8Array): boolean =>
  payload.length >= 4 && payload[0] === 0x46 && payload[1] === 0x43 && payload[2] === 0x53 && payload[3] === 0x32;

/** Most bytes a cleared builder (or scratch leaf) may hold on to and still be reused. */
export const REUSE_BYTES = 4 * 1024 * 1024;

const HEX = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

/** One Parquet leaf column of a batch: its levels and its PLAIN values, growing as rows are added. */
export class Leaf {
  readonly type: LeafType;
  readonly maxDef: number;
  readonly maxRep: number;
  /** Definition levels, then repetition levels (when maxRep > 0), one per level entry. */
  defs = new Uint8Array(64);
  reps: Uint8Array;
  /** Level entries (Parquet's num_values for the page). */
  n = 0;
  vals = new Uint8Array(256);
  #dv = new DataView(this.vals.buffer);
  /** The last source of utf8() and a view of it. */
  #src: Uint8Array | undefined;
  #sv: DataView | undefined;
  /** Bytes of vals in use (booleans: one byte per value until the page packs them into bits). */
  vp = 0;
  /**
   * Run leaf (see the payload layout): fragment i, the i-th row's worth of levels, stands for
   * runs[i] rows. Empty while the leaf is plain.
   */
  #runs: number[] = [];
  /** Levels and value bytes the runs cover: a level written after them is a plain row. */
  #runN = 0;
  #runVp = 0;

  constructor(type: LeafType, maxDef: number, maxRep: number) {
    this.type = type;
    this.maxDef = maxDef;
    this.maxRep = maxRep;
    this.reps = new Uint8Array(maxRep > 0 ? 64 : 0);
  }

  /** Room for `total` levels (defs and reps always grow together). */
  #levelRoom(total: number): void {
    if (total <= this.defs.length) return;
    const size = Math.max(this.defs.length * 2, total);
    const d = new Uint8Array(size);
    d.set(this.defs.subarray(0, this.n));
    this.defs = d;
    if (this.maxRep > 0) {
      const r = new Uint8Array(size);
      r.set(this.reps.subarray(0, this.n));
      this.reps = r;
    }
  }

  #level(def: number, rep: number): void {
    if (this.n === this.defs.length) this.#levelRoom(this.n + 1);
    this.defs[this.n] = def;
    if (this.maxRep > 0) this.reps[this.n] = rep;
    this.n++;
  }

  /** Room for n more value bytes. */
  room(n: number): void {
    if (this.vp + n <= this.vals.length) return;
    const v = new Uint8Array(Math.max(this.vals.length * 2, this.vp + n));
    v.set(this.vals.subarray(0, this.vp));
    this.vals = v;
    this.#dv = new DataView(v.buffer);
  }

  /** `count` rows of one level each (repetition level 0: a row's first), NULL or empty at definition level `def`. */
  nils(def: number, count: number): void {
    const n = this.n;
    this.#levelRoom(n + count);
    this.defs.fill(def, n, n + count);
    if (this.maxRep > 0) this.reps.fill(0, n, n + count);
    this.n = n + count;
  }

  /** No value: NULL (or empty) at definition level `def`. */
  nil(def: number, rep = 0): void {
    this.#level(def, rep);
  }

  /** A string given as valid UTF-8 bytes src[s, e). */
  utf8(src: Uint8Array, s: number, e: number, rep = 0): void {
    this.#level(this.maxDef, rep);
    this.room(4 + e - s);
    this.#dv.setUint32(this.vp, e - s, true);
    // A request's values all come from its body: one view of it per leaf and request.
    if (src !== this.#src) this.#sv = viewOf((this.#src = src));
    this.vp = copyBytes(src, this.#sv!, s, e, this.vals, this.#dv, this.vp + 4);
  }

  string(str: string, rep = 0): void {
    this.#level(this.maxDef, rep);
    const len = str.length;
    this.room(4 + 3 * len);
    const v = this.vals;
    let p = this.vp + 4;
    let i = 0;
    // ASCII by hand (most values): TextEncoder's call costs more than these strings.
    for (; i < len; i++) {
      const c = str.charCodeAt(i);
      if (c >= 0x80) break;
      v[p++] = c;
    }
    if (i < len) p += utf8.encodeInto(str.slice(i), v.subarray(p)).written;
    this.#dv.setUint32(this.vp, p - this.vp - 4, true);
    this.vp = p;
  }

  /** Lower-case hex of the bytes src[s, e). */
  hex(src: Uint8Array, s: number, e: number, rep = 0): void {
    this.#level(this.maxDef, rep);
    const n = 2 * (e - s);
    this.room(4 + n);
    this.#dv.setUint32(this.vp, n, true);
    const v = this.vals;
    let p = this.vp + 4;
    for (let i = s; i < e; i++) {
      const x = src[i]!;
      v[p++] = HEX[x >> 4]!;
      v[p++] = HEX[x & 15]!;
    }
    this.vp = p;
  }

  /** A 64-bit integer as its two 32-bit halves (bit patterns). */
  i64(lo: number, hi: number, rep = 0): void {
    this.#level(this.maxDef, rep);
    this.room(8);
    this.#dv.setInt32(this.vp, lo, true);
    this.#dv.setInt32(this.vp + 4, hi, true);
    this.vp += 8;
  }

  bigint(v: bigint, rep = 0): void {
    this.#level(this.maxDef, rep);
    this.room(8);
    this.#dv.setBigInt64(this.vp, v, true);
    this.vp += 8;
  }

  /** A 64-bit integer given as a safe-integer number. */
  long(v: number, rep = 0): void {
    this.#level(this.maxDef, rep);
    this.room(8);
    const lo = v % 4294967296;
    const hi = (v - lo) / 4294967296;
    // lo has v's sign; make it the unsigned low half with hi borrowing.
    this.#dv.setInt32(this.vp, lo | 0, true);
    this.#dv.setInt32(this.vp + 4, lo < 0 ? (hi - 1) | 0 : hi | 0, true);
    this.vp += 8;
  }

  i32(v: number, rep = 0): void {
    this.#level(this.maxDef, rep);
    this.room(4);
    this.#dv.setInt32(this.vp, v, true);
    this.vp += 4;
  }

  f64(v: number, rep = 0): void {
    this.#level(this.maxDef, rep);
    this.room(8);
    this.#dv.setFloat64(this.vp, v, true);
    this.vp += 8;
  }

  bool(v: boolean, rep = 0): void {
    this.#level(this.maxDef, rep);
    this.room(1);
    this.vals[this.vp++] = v ? 1 : 0;
  }

  /** Appends every level and value of `other` (same type and nesting, plain): a repeated fragment. */
  append(other: Leaf): void {
    if (other.#runs.length > 0) throw new TypeError('append takes a plain leaf');
    const m = other.n;
    this.#levelRoom(this.n + m);
    const n = this.n;
    const vn = other.vp;
    this.room(vn);
    // Fragments are a few bytes: a loop beats making subarray views for set().
    if (m <= 16 && vn <= 64) {
      const d = this.defs;
      const od = other.defs;
      for (let i = 0; i < m; i++) d[n + i] = od[i]!;
      if (this.maxRep > 0) {
        const r = this.reps;
        const or = other.reps;
        for (let i = 0; i < m; i++) r[n + i] = or[i]!;
      }
      const v = this.vals;
      const ov = other.vals;
      const vp = this.vp;
      for (let i = 0; i < vn; i++) v[vp + i] = ov[i]!;
    } else {
      this.defs.set(other.defs.subarray(0, m), n);
      if (this.maxRep > 0) this.reps.set(other.reps.subarray(0, m), n);
      this.vals.set(other.vals.subarray(0, vn), this.vp);
    }
    this.n = n + m;
    this.vp += vn;
  }

  /**
   * Appends `levels` levels and `bytes` value bytes kept end to end in src from `at`: the
   * definition levels, the repetition levels (when maxRep > 0), then the values (a RowTemplate's;
   * `sv` is a DataView of src, byte-ranges.ts). Returns where in src they end.
   */
  appendRaw(src: Uint8Array, sv: DataView, at: number, levels: number, bytes: number): number {
    // Most of a series' constant columns are one NULL or empty map: one level, no value.
    if (levels === 1 && bytes === 0) {
      this.#level(src[at]!, this.maxRep > 0 ? src[at + 1]! : 0);
      return at + (this.maxRep > 0 ? 2 : 1);
    }
    const n = this.n;
    this.#levelRoom(n + levels);
    this.room(bytes);
    const d = this.defs;
    for (let i = 0; i < levels; i++) d[n + i] = src[at + i]!;
    let p = at + levels;
    if (this.maxRep > 0) {
      const r = this.reps;
      for (let i = 0; i < levels; i++) r[n + i] = src[p + i]!;
      p += levels;
    }
    this.n = n + levels;
    this.vp = copyBytes(src, sv, p, p + bytes, this.vals, this.#dv, this.vp);
    return p + bytes;
  }

  /**
   * What was written since this leaf held `n0` levels and `vp0` value bytes (one row's worth)
   * stands for `count` rows (the same rows' constant columns). While every row of the leaf comes
   * this way, the leaf keeps it once, as a run; otherwise it is copied until it is there `count`
   * times, with a few memmoves for any count.
   */
  repeat(n0: number, vp0: number, count: number): void {
    if (count <= 0) {
      this.n = n0;
      this.vp = vp0;
      return;
    }
    if (n0 === this.#runN && vp0 === this.#runVp && this.n > n0) {
      this.#runs.push(count);
      this.#runN = this.n;
      this.#runVp = this.vp;
      return;
    }
    // Expanding the runs moves what follows them: the fragment is found from the end.
    const levels = this.n - n0;
    const bytes = this.vp - vp0;
    this.#expandRuns();
    this.#copies(this.n - levels, this.vp - bytes, count);
  }

  /** The run counts (one per fragment) of a run leaf, as written (byteLength, writeTo); undefined for a plain leaf. */
  get runs(): readonly number[] | undefined {
    return this.#runs.length > 0 ? this.#runs : undefined;
  }

  /** A run leaf with plain rows after its runs becomes plain: a payload leaf is one or the other. */
  #settle(): void {
    if (this.#runs.length > 0 && this.n !== this.#runN) this.#expandRuns();
  }

  /** Every run written out as its rows: the leaf becomes plain. */
  #expandRuns(): void {
    if (this.#runs.length === 0) return;
    const nested = this.maxRep > 0;
    const runN = this.#runN;
    const runVp = this.#runVp;
    const rows = plainLeaf(
      { levels: runN, defs: this.defs.subarray(0, runN), reps: nested ? this.reps.subarray(0, runN) : undefined, values: this.vals.subarray(0, runVp), runs: Uint32Array.from(this.#runs) },
      this,
    );
    const tailLevels = this.n - runN;
    const tailBytes = this.vp - runVp;
    const defs = new Uint8Array(Math.max(64, rows.levels + tailLevels));
    defs.set(rows.defs);
    defs.set(this.defs.subarray(runN, this.n), rows.levels);
    const reps = new Uint8Array(nested ? defs.length : 0);
    if (nested) {
      reps.set(rows.reps!);
      reps.set(this.reps.subarray(runN, this.n), rows.levels);
    }
    const vals = new Uint8Array(Math.max(256, rows.values.length + tailBytes));
    vals.set(rows.values);
    vals.set(this.vals.subarray(runVp, this.vp), rows.values.length);
    this.defs = defs;
    this.reps = reps;
    this.vals = vals;
    this.#dv = new DataView(vals.buffer);
    this.n = rows.levels + tailLevels;
    this.vp = rows.values.length + tailBytes;
    this.#runs = [];
    this.#runN = 0;
    this.#runVp = 0;
  }

  /** Copies of [n0, n) and [vp0, vp) until they are there `count` times. */
  #copies(n0: number, vp0: number, count: number): void {
    if (count <= 1) return;
    const levels = this.n - n0;
    const n = n0 + levels * count;
    this.#levelRoom(n);
    repeatBytes(this.defs, n0, levels, count);
    if (this.maxRep > 0) repeatBytes(this.reps, n0, levels, count);
    this.n = n;
    const bytes = this.vp - vp0;
    if (bytes === 0) return;
    this.room(bytes * (count - 1));
    repeatBytes(this.vals, vp0, bytes, count);
    this.vp = vp0 + bytes * count;
  }

  /** Bytes of its runs, levels and values end to end (writeTo, a payload's and a RowTemplate's layout). */
  get byteLength(): number {
    this.#settle();
    const runs = this.runs;
    return (runs ? 4 + 4 * runs.length : 0) + this.n * (this.maxRep > 0 ? 2 : 1) + this.vp;
  }

  /** Writes its runs (a run leaf), definition levels, repetition levels (nested leaves) and values to `out` at `p`; returns the end. */
  writeTo(out: Uint8Array, p: number): number {
    this.#settle();
    const runs = this.runs;
    if (runs) {
      const dv = new DataView(out.buffer, out.byteOffset + p, 4 + 4 * runs.length);
      dv.setUint32(0, runs.length, true);
      for (let i = 0; i < runs.length; i++) dv.setUint32(4 + 4 * i, runs[i]!, true);
      p += 4 + 4 * runs.length;
    }
    out.set(this.defs.subarray(0, this.n), p);
    p += this.n;
    if (this.maxRep > 0) {
      out.set(this.reps.subarray(0, this.n), p);
      p += this.n;
    }
    out.set(this.vals.subarray(0, this.vp), p);
    return p + this.vp;
  }

  /** Bytes this leaf holds on to (to drop builders a huge request grew). */
  get capacity(): number {
    return this.vals.length + this.defs.length + this.reps.length;
  }

  clear(): void {
    this.n = 0;
    this.vp = 0;
    this.#runs.length = 0;
    this.#runN = 0;
    this.#runVp = 0;
    this.#src = undefined;
    this.#sv = undefined;
  }
}

/** Repeats a[start, start + len) until it is there `count` times, by doubling copies. */
function repeatBytes(a: Uint8Array, start: number, len: number, count: number): void {
  const total = len * count;
  for (let have = len; have < total; ) {
    const k = Math.min(have, total - have);
    a.copyWithin(start + have, start, start + k);
    have += k;
  }
}

/** A raw column as the batch schema names it (types without Iceberg ids). */
export type BatchColumnType =
  | LeafType
  | { map: LeafType }
  | { list: LeafType }
  | { list: { struct: [name: string, type: LeafType][] } };

export type BatchSchema = [name: string, type: BatchColumnType][];

function leafType(t: string): LeafType {
  if (t === 'string' || t === 'long' || t === 'int' || t === 'double' || t === 'boolean') return t;
  throw new TypeError(`column batches do not carry ${t} columns`);
}

function batchType(t: ColumnType): BatchColumnType {
  if (typeof t === 'string') return leafType(t);
  if (isMapType(t)) return { map: leafType(t.map) };
  if (isListType(t)) return isStructType(t.list) ? { list: { struct: t.list.struct.map((f) => [f.name, leafType(f.type)]) } } : { list: leafType(t.list) };
  throw new TypeError('unknown column type');
}

/** The columns a table's batches carry: its raw columns (not derived, not computed labels). */
export function batchSchema(table: TableDef): BatchSchema {
  return rawColumns(table).map((c) => [c.name, batchType(c.type)]);
}

/** One raw column of a batch and its leaves (one for primitives and lists, two for maps). */
export type BatchColumn =
  | { name: string; kind: 'primitive'; type: LeafType; leaf: Leaf }
  | { name: string; kind: 'map'; type: LeafType; key: Leaf; value: Leaf }
  | { name: string; kind: 'list'; type: LeafType; element: Leaf }
  | { name: string; kind: 'structList'; fields: { name: string; type: LeafType; leaf: Leaf }[] };

export function batchColumns(schema: BatchSchema): BatchColumn[] {
  return schema.map(([name, t]): BatchColumn => {
    if (typeof t === 'string') return { name, kind: 'primitive', type: t, leaf: new Leaf(t, 1, 0) };
    if ('map' in t) return { name, kind: 'map', type: t.map, key: new Leaf('string', 2, 1), value: new Leaf(t.map, 3, 1) };
    if (typeof t.list === 'string') return { name, kind: 'list', type: t.list, element: new Leaf(t.list, 3, 1) };
    return { name, kind: 'structList', fields: t.list.struct.map(([f, ft]) => ({ name: f, type: ft, leaf: new Leaf(ft, 4, 1) })) };
  });
}

export function columnLeaves(c: BatchColumn): Leaf[] {
  switch (c.kind) {
    case 'primitive':
      return [c.leaf];
    case 'map':
      return [c.key, c.value];
    case 'list':
      return [c.element];
    case 'structList':
      return c.fields.map((f) => f.leaf);
  }
}

/** Schema texts, one string per distinct text: builders and templates of a schema share it, so checking that they match is a pointer comparison. */
const schemaKeys = new Map<string, string>();
function schemaKey(schema: BatchSchema): string {
  const text = JSON.stringify(schema);
  let key = schemaKeys.get(text);
  if (key === undefined) {
    if (schemaKeys.size >= 64) schemaKeys.clear();
    schemaKeys.set(text, (key = text));
  }
  return key;
}

/**
 * One row's levels and values of some of a schema's columns, kept compact: the constant columns
 * of a series (ColumnBatchBuilder.template), appended to a batch for each of its points. Layout
 * per leaf in `bytes`: definition levels, repetition levels (nested leaves), values.
 *
 * Most of a series' columns are NULL or an empty map (44 of the 50 leaves of a Prometheus
 * sample's metrics row): one level and no value each. Those are kept apart (`nulls`), and a
 * builder writes each of them once for a whole stretch of rows (see appendTemplate).
 */
export class RowTemplate {
  readonly schemaKey: string;
  readonly bytes: Uint8Array;
  readonly view: DataView;
  /** Per leaf with values or several levels: its index in the schema's leaves, its levels, its value bytes, where it starts in `bytes`. */
  readonly leaves: Int32Array;
  /** Per leaf of one level and no value: its index and its definition level (its repetition level is a row's first, 0). */
  readonly nulls: Int32Array;
  /** The columns it leaves out (ColumnBatchBuilder.template): those its rows write themselves. */
  readonly except: ReadonlySet<string>;
  /** The builder generation that last referenced it (appendRef) and its number there. */
  refToken: object | undefined;
  refNo = 0;
  /** The last numbering of a WAL segment's series that took it (wal-appender.ts) and its number there. */
  segmentSeries: object | undefined;
  segmentNo = 0;

  constructor(schemaKey: string, bytes: Uint8Array, leaves: Int32Array, nulls: Int32Array, except: ReadonlySet<string>) {
    this.schemaKey = schemaKey;
    this.bytes = bytes;
    this.view = viewOf(bytes);
    this.leaves = leaves;
    this.nulls = nulls;
    this.except = except;
  }

  /** Bytes held, for a cache's weight. */
  get size(): number {
    return this.bytes.length + this.leaves.byteLength + this.nulls.byteLength + 64;
  }
}

/**
 * Rows of one table in column form. Fast producers (the trace transcoder) write each column's
 * leaves directly, exactly one row's levels per column per row, then call endRow(); the others
 * call addRow() with the row object they would have serialised as JSON.
 */
export class ColumnBatchBuilder {
  readonly schema: BatchSchema;
  readonly columns: BatchColumn[];
  readonly #byName = new Map<string, BatchColumn>();
  readonly #leaves: Leaf[];
  readonly #writers: RowWriter[];
  readonly #schemaText: Uint8Array;
  readonly #schemaKey: string;
  #scratch: ColumnBatchBuilder | undefined;
  /**
   * Per leaf, what it owes (appendTemplate): the definition level (-1: nothing) of each row since
   * row #owedFrom; #owing counts the leaves that owe.
   */
  readonly #owedDef: Int16Array;
  readonly #owedFrom: Int32Array;
  #owing = 0;
  /** One past the last row appendTemplate wrote: what owing leaves owe runs up to it. */
  #claimedEnd = 0;
  /**
   * Rows by series reference (appendRef): each row's template number, the templates in the
   * order first referenced, and the leaves the rows take from their definitions (1: every leaf
   * of a column a template holds, its NULL ones too, so a row carries none of them; 0: a column
   * the rows write themselves), from the `except` sets of the templates (#folded: one, as a rule).
   */
  #refs = new Uint32Array(0);
  readonly #templates: RowTemplate[] = [];
  readonly #folded: ReadonlySet<string>[] = [];
  readonly #referenced: Uint8Array;
  #refToken: object = {};
  rows = 0;

  constructor(schema: BatchSchema) {
    this.schema = schema;
    this.columns = batchColumns(schema);
    for (const c of this.columns) this.#byName.set(c.name, c);
    this.#leaves = this.columns.flatMap(columnLeaves);
    this.#owedDef = new Int16Array(this.#leaves.length).fill(-1);
    this.#owedFrom = new Int32Array(this.#leaves.length);
    this.#referenced = new Uint8Array(this.#leaves.length);
    this.#writers = this.columns.map(columnWriter);
    this.#schemaKey = schemaKey(schema);
    this.#schemaText = utf8.encode(this.#schemaKey);
  }

  /**
   * The template of `row` (as addRow takes it) without the columns in `except`: those a caller
   * writes itself for each row it appends the template to (appendTemplate, then endRow).
   */
  template(row: Readonly<Record<string, unknown>>, except: ReadonlySet<string>): RowTemplate {
    const scratch = (this.#scratch ??= new ColumnBatchBuilder(this.schema));
    scratch.clear();
    scratch.addRow(row);
    const kept: number[] = [];
    const nulls: number[] = [];
    let size = 0;
    let index = 0;
    for (const c of scratch.columns) {
      for (const l of columnLeaves(c)) {
        if (!except.has(c.name)) {
          if (l.n === 1 && l.vp === 0 && !l.runs) nulls.push(index, l.defs[0]!);
          else {
            kept.push(index, l.n, l.vp, size);
            size += l.byteLength;
          }
        }
        index++;
      }
    }
    const bytes = new Uint8Array(size);
    for (let k = 0, p = 0; k < kept.length; k += 4) p = scratch.#leaves[kept[k]!]!.writeTo(bytes, p);
    scratch.clear();
    return new RowTemplate(this.#schemaKey, bytes, Int32Array.from(kept), Int32Array.from(nulls), except);
  }

  /**
   * Appends a template's leaves (made by a builder of the same schema) to the row being written.
   * A NULL leaf of the template is not written now: the leaf owes its level from this row on, and
   * later template rows that have it NULL at the same level extend what it owes, until a row
   * writes it otherwise (or finish) and the owed rows are written as one fill (#settle). So the
   * columns a template left out must be the same for every template appended to a builder, and
   * only they may be written directly between appendTemplate and endRow.
   */
  appendTemplate(t: RowTemplate): void {
    if (t.schemaKey !== this.#schemaKey) throw new TypeError('row template of another schema');
    this.#notByRef();
    const row = this.rows;
    const owedDef = this.#owedDef;
    const { bytes, view, leaves: kept, nulls } = t;
    const leaves = this.#leaves;
    for (let k = 0; k < kept.length; k += 4) {
      const i = kept[k]!;
      if (owedDef[i]! >= 0) this.#settle(i, row);
      leaves[i]!.appendRaw(bytes, view, kept[k + 3]!, kept[k + 1]!, kept[k + 2]!);
    }
    for (let k = 0; k < nulls.length; k += 2) {
      const i = nulls[k]!;
      const def = nulls[k + 1]!;
      if (owedDef[i] === def) continue;
      if (owedDef[i]! >= 0) this.#settle(i, row);
      owedDef[i] = def;
      this.#owedFrom[i] = row;
      this.#owing++;
    }
    this.#claimedEnd = row + 1;
  }

  /**
   * Starts a row that references `t` (see the payload layout: "FCB3"): the row's template
   * columns are not written here but taken from the template's definition, which the WAL
   * appender writes into the segment (`templates`, seriesDefinitions). As with appendTemplate,
   * the caller then writes the columns the template left out, and endRow(). Every row of such a
   * batch is written this way.
   */
  appendRef(t: RowTemplate): void {
    if (t.schemaKey !== this.#schemaKey) throw new TypeError('row template of another schema');
    const row = this.rows;
    if (row > 0 && this.#templates.length === 0) throw new TypeError('appendRef on a batch with rows of another kind');
    let no = t.refNo;
    if (t.refToken !== this.#refToken) {
      no = this.#templates.length;
      this.#templates.push(t);
      t.refToken = this.#refToken;
      t.refNo = no;
      if (!this.#folded.includes(t.except)) this.#fold(t.except);
    }
    if (row === this.#refs.length) {
      const grown = new Uint32Array(Math.max(64, 2 * row));
      grown.set(this.#refs);
      this.#refs = grown;
    }
    this.#refs[row] = no;
  }

  #fold(except: ReadonlySet<string>): void {
    this.#folded.push(except);
    let i = 0;
    for (const c of this.columns) {
      const n = columnLeaves(c).length;
      if (!except.has(c.name)) this.#referenced.fill(1, i, i + n);
      i += n;
    }
  }

  /** The templates the rows reference (appendRef), each row's reference being its index here. */
  get templates(): readonly RowTemplate[] {
    return this.#templates;
  }

  #notByRef(): void {
    if (this.#templates.length > 0) throw new TypeError('rows by series reference and rows of another kind in one batch');
  }

  /** Writes what leaf i owes (see appendTemplate) for the rows before `end`. */
  #settle(i: number, end: number): void {
    this.#leaves[i]!.nils(this.#owedDef[i]!, end - this.#owedFrom[i]!);
    this.#owedDef[i] = -1;
    this.#owing--;
  }

  /** Writes what every leaf owes, up to the last row a template was appended to (ended or not). */
  #settleAll(): void {
    if (this.#owing === 0) return;
    for (let i = 0; i < this.#owedDef.length; i++) if (this.#owedDef[i]! >= 0) this.#settle(i, this.#claimedEnd);
  }

  static forTable(table: TableDef): ColumnBatchBuilder {
    return new ColumnBatchBuilder(batchSchema(table));
  }

  column(name: string): BatchColumn {
    this.#settleAll();
    const c = this.#byName.get(name);
    if (!c) throw new TypeError(`column batch has no column ${name}`);
    return c;
  }

  endRow(): void {
    this.rows++;
  }

  /** A row as an object of raw column values, typed as the NDJSON rows were (see addValue). */
  addRow(row: Readonly<Record<string, unknown>>): void {
    this.#notByRef();
    this.#settleAll();
    const w = this.#writers;
    for (let i = 0; i < w.length; i++) w[i]!(row);
    this.rows++;
  }

  /**
   * Rows (as addRow takes them) that share the values of the `shared` columns, a resource's or a
   * scope's: those are written once, from the first row, as runs (see the payload layout).
   */
  addRows(rows: readonly Readonly<Record<string, unknown>>[], shared: ReadonlySet<string>): void {
    this.#notByRef();
    this.#settleAll();
    if (rows.length === 0) return;
    const w = this.#writers;
    for (let i = 0; i < w.length; i++) {
      const c = this.columns[i]!;
      if (!shared.has(c.name)) {
        for (const row of rows) w[i]!(row);
        continue;
      }
      const leaves = columnLeaves(c);
      const starts = leaves.map((l) => [l.n, l.vp] as const);
      w[i]!(rows[0]!);
      leaves.forEach((l, k) => l.repeat(starts[k]![0], starts[k]![1], rows.length));
    }
    this.rows += rows.length;
  }

  clear(): void {
    this.#owedDef.fill(-1);
    this.#owing = 0;
    this.#claimedEnd = 0;
    for (const l of this.#leaves) l.clear();
    if (this.#templates.length > 0) {
      this.#templates.length = 0;
      this.#folded.length = 0;
      this.#referenced.fill(0);
      this.#refToken = {};
    }
    this.rows = 0;
  }

  /**
   * Whether the builder is worth keeping for the next request once cleared: not when a huge
   * request grew its leaves past REUSE_BYTES, which it would otherwise pin for good.
   */
  get reusable(): boolean {
    let n = 0;
    for (const l of this.#leaves) n += l.capacity;
    return n <= REUSE_BYTES;
  }

  /**
   * The WAL record payload of the rows added so far, in memory from `alloc` (every byte of it is
   * written: it need not be zeroed).
   */
  finish(alloc: (bytes: number) => Uint8Array = (n) => new Uint8Array(n)): Uint8Array {
    return this.#templates.length > 0 ? this.#finishByRef(alloc) : this.#finish(alloc, COLUMN_BATCH_MAGIC);
  }

  #finish(alloc: (bytes: number) => Uint8Array, magic: Uint8Array): Uint8Array {
    this.#settleAll();
    const leaves = this.#leaves;
    const schema = this.#schemaText;
    let size = 16 + schema.length + 8 * leaves.length;
    for (const l of leaves) size += l.byteLength;
    const out = alloc(size);
    const dv = new DataView(out.buffer, out.byteOffset, size);
    out.set(magic, 0);
    dv.setUint32(4, this.rows, true);
    dv.setUint32(8, schema.length, true);
    out.set(schema, 12);
    let p = 12 + schema.length;
    dv.setUint32(p, leaves.length, true);
    p += 4;
    for (const l of leaves) {
      dv.setUint32(p, l.runs ? (RUNS_FLAG | l.n) >>> 0 : l.n, true);
      dv.setUint32(p + 4, l.vp, true);
      p += 8;
    }
    for (const l of leaves) p = l.writeTo(out, p);
    return out;
  }

  /** An "FCB3" payload: the rows' references and their own columns. */
  #finishByRef(alloc: (bytes: number) => Uint8Array): Uint8Array {
    const leaves = this.#leaves;
    const referenced = this.#referenced;
    const schema = this.#schemaText;
    const rows = this.rows;
    let size = 16 + schema.length + 8 * leaves.length + 4 * rows;
    for (let i = 0; i < leaves.length; i++) if (!referenced[i]) size += leaves[i]!.byteLength;
    const out = alloc(size);
    const dv = new DataView(out.buffer, out.byteOffset, size);
    out.set(COLUMN_BATCH_MAGIC, 0);
    out[3] = REF_BATCH;
    dv.setUint32(4, rows, true);
    dv.setUint32(8, schema.length, true);
    out.set(schema, 12);
    let p = 12 + schema.length;
    dv.setUint32(p, leaves.length, true);
    p += 4;
    for (let i = 0; i < leaves.length; i++) {
      const l = leaves[i]!;
      if (referenced[i] && l.n !== 0) throw new TypeError('a template column was written directly in a batch of series references');
      if (!referenced[i] && l.runs) throw new TypeError('run leaves in a batch of series references');
      dv.setUint32(p, referenced[i] ? REF_FLAG : l.n, true);
      dv.setUint32(p + 4, referenced[i] ? 0 : l.vp, true);
      p += 8;
    }
    for (let r = 0; r < rows; r++, p += 4) dv.setUint32(p, this.#refs[r]!, true);
    for (let i = 0; i < leaves.length; i++) if (!referenced[i]) p = leaves[i]!.writeTo(out, p);
    return out;
  }

  /**
   * The "FCS2" payload that defines `templates` (made by builders of one schema, with the same
   * columns left out): one row per template, in order, its left-out columns NULL.
   */
  static seriesDefinitions(templates: readonly RowTemplate[], alloc: (bytes: number) => Uint8Array = (n) => new Uint8Array(n)): Uint8Array {
    if (templates.length === 0) throw new TypeError('seriesDefinitions: no templates');
    const key = templates[0]!.schemaKey;
    let b = definitionBuilders.get(key);
    if (!b) {
      if (definitionBuilders.size >= 16) definitionBuilders.clear();
      definitionBuilders.set(key, (b = new ColumnBatchBuilder(JSON.parse(key) as BatchSchema)));
    }
    b.clear();
    for (const t of templates) {
      b.appendTemplate(t);
      // (Not b.column(): that would settle the NULL stretches appendTemplate leaves owing.)
      for (const name of t.except) {
        const c = b.#byName.get(name);
        if (c) for (const l of columnLeaves(c)) l.nil(0);
      }
      b.endRow();
    }
    const out = b.#finish(alloc, SERIES_DEFINITIONS_MAGIC);
    b.clear();
    return out;
  }
}

/** Builders of series definitions, per schema text (seriesDefinitions). */
const definitionBuilders = new Map<string, ColumnBatchBuilder>();

/**
 * Rewrites an "FCB3" payload's references in place, each `r` to `to[r]` (the WAL appender's
 * numbering of its segment's definitions, from the builder's own).
 */
export function renumberRefs(payload: Uint8Array, to: ArrayLike<number>): void {
  if (!isColumnBatch(payload) || payload[3] !== REF_BATCH) throw new TypeError('not a batch of series references');
  const dv = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const rows = dv.getUint32(4, true);
  let p = 12 + dv.getUint32(8, true);
  p += 4 + 8 * dv.getUint32(p, true);
  for (let r = 0; r < rows; r++, p += 4) {
    const v = to[dv.getUint32(p, true)];
    if (v === undefined) throw new RangeError('renumberRefs: a reference beyond the map');
    dv.setUint32(p, v, true);
  }
}

/**
 * addRow's values are as the row objects of the converters hold them (the JSON they used to be serialised
 * as): longs as numbers, bigints or decimal strings; doubles as numbers or "NaN"/"Infinity"/
 * "-Infinity"; strings as strings (anything else as its JSON text); maps as plain objects;
 * lists as arrays; NULL as null or undefined.
 */
type ValueWriter = (v: unknown, rep: number) => void;

/** Writes one non-NULL value into `leaf`, specialised by its type (addRow's inner loop). */
function valueWriter(leaf: Leaf): ValueWriter {
  switch (leaf.type) {
    case 'string':
      return (v, rep) => leaf.string(typeof v === 'string' ? v : JSON.stringify(v), rep);
    case 'long':
      return (v, rep) => {
        if (typeof v === 'number' && Number.isSafeInteger(v)) leaf.long(v, rep);
        else if (typeof v === 'string' && v.length <= 15 && /^-?[0-9]+$/.test(v)) leaf.long(Number(v), rep);
        else leaf.bigint(BigInt.asIntN(64, toBigInt(v)), rep);
      };
    case 'int':
      return (v, rep) => leaf.i32(Number(v), rep);
    case 'double':
      return (v, rep) => leaf.f64(typeof v === 'number' ? v : Number(v), rep);
    case 'boolean':
      return (v, rep) => leaf.bool(v === true || v === 'true', rep);
  }
}

type RowWriter = (row: Readonly<Record<string, unknown>>) => void;

/** Writes one row's value of column `c` (all its leaves' levels for the row). */
function columnWriter(c: BatchColumn): RowWriter {
  const name = c.name;
  switch (c.kind) {
    case 'primitive': {
      const { leaf } = c;
      const put = valueWriter(leaf);
      return (row) => {
        const v = row[name];
        if (v === null || v === undefined) leaf.nil(0);
        else put(v, 0);
      };
    }
    case 'map': {
      const { key, value } = c;
      const put = valueWriter(value);
      return (row) => {
        const v = row[name];
        if (v === null || v === undefined) {
          key.nil(0);
          value.nil(0);
          return;
        }
        let rep = 0;
        for (const k in v as object) {
          if (!Object.hasOwn(v as object, k)) continue;
          const x = (v as Record<string, unknown>)[k];
          key.string(k, rep);
          if (x === null || x === undefined) value.nil(2, rep);
          else put(x, rep);
          rep = 1;
        }
        if (rep === 0) {
          key.nil(1);
          value.nil(1);
        }
      };
    }
    case 'list': {
      const { element } = c;
      const put = valueWriter(element);
      return (row) => {
        const v = row[name];
        if (v === null || v === undefined) return element.nil(0);
        const a = v as readonly unknown[];
        if (a.length === 0) return element.nil(1);
        for (let i = 0; i < a.length; i++) {
          const x = a[i];
          if (x === null || x === undefined) element.nil(2, i === 0 ? 0 : 1);
          else put(x, i === 0 ? 0 : 1);
        }
      };
    }
    case 'structList': {
      const fields = c.fields.map((f) => ({ name: f.name, leaf: f.leaf, put: valueWriter(f.leaf) }));
      return (row) => {
        const v = row[name];
        if (v === null || v === undefined) {
          for (const f of fields) f.leaf.nil(0);
          return;
        }
        const a = v as readonly (Record<string, unknown> | null | undefined)[];
        if (a.length === 0) {
          for (const f of fields) f.leaf.nil(1);
          return;
        }
        for (let i = 0; i < a.length; i++) {
          const rep = i === 0 ? 0 : 1;
          const e = a[i];
          for (const f of fields) {
            const x = e === null || e === undefined ? e : e[f.name];
            if (e === null || e === undefined) f.leaf.nil(2, rep);
            else if (x === null || x === undefined) f.leaf.nil(3, rep);
            else f.put(x, rep);
          }
        }
      };
    }
  }
}

function toBigInt(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?[0-9]+$/.test(v)) return BigInt(v);
  throw new TypeError(`not a 64-bit integer: ${String(v)}`);
}

/** One leaf of a column batch payload: views into the payload. */
export interface LeafView {
  levels: number;
  defs: Uint8Array;
  /** Present for leaves inside a map or list. */
  reps: Uint8Array | undefined;
  values: Uint8Array;
  /**
   * A run leaf's row count per fragment: its levels and values are then fragments, each one
   * row's worth, the i-th standing for runs[i] rows in a row. Undefined for a plain leaf.
   */
  runs: Uint32Array | undefined;
  /** Set on a leaf of an "FCB3" batch that its rows take from their series definitions (then it holds nothing). */
  ref?: true;
}

/** What a column batch payload says of itself before its leaves: its rows and schema. */
export interface ColumnBatchHead {
  rows: number;
  schema: BatchSchemaInfo;
  /** The whole payload. */
  bytes: Uint8Array;
  /**
   * A batch of series references: the definitions ("FCS2" batches, in segment order) that its
   * references number from 0, as the writer found them in the batch's segment.
   */
  defs?: readonly ColumnBatchHead[];
}

/** A column batch payload's parts (the writer's view; validated, throws on a malformed payload). */
export interface ColumnBatchView extends ColumnBatchHead {
  /** Every leaf's views, made on first use and kept. */
  readonly leaves: readonly LeafView[];
  /**
   * Leaf i's views, made anew by each call: a flush reads each leaf of thousands of batches once,
   * and views it does not keep die young (kept, they were the encoding thread's live heap).
   */
  leaf(i: number): LeafView;
  /** Each row's series reference ("FCB3"), numbering the rows of `defs` end to end; undefined for other batches. */
  readonly refs?: Uint32Array | undefined;
  readonly defs?: readonly ColumnBatchView[];
}

/** A leaf's place in a batch: its value type and the nesting its levels encode. */
export interface LeafShape {
  type: LeafType;
  maxDef: number;
  maxRep: number;
}

/** What a schema text says, parsed once per distinct text (a writer meets few). */
export interface BatchSchemaInfo {
  text: string;
  schema: BatchSchema;
  /** Raw column names, in order. */
  names: string[];
  /** Its columns (their leaves are templates: never written to). */
  columns: readonly BatchColumn[];
  /** Every leaf in payload order. */
  leaves: LeafShape[];
  /** Each leaf's name for messages: the column's, `.key`/`.value` in maps, `.field` in struct lists. */
  leafNames: string[];
}

const schemaInfos = new Map<string, BatchSchemaInfo>();

export function batchSchemaInfo(text: string): BatchSchemaInfo {
  let info = schemaInfos.get(text);
  if (!info) {
    let schema: BatchSchema;
    try {
      schema = JSON.parse(text) as BatchSchema;
    } catch {
      throw new TypeError('column batch schema is not JSON');
    }
    const columns = batchColumns(schema);
    const leaves = columns.flatMap(columnLeaves).map((l) => ({ type: l.type, maxDef: l.maxDef, maxRep: l.maxRep }));
    const leafNames = columns.flatMap((c) =>
      c.kind === 'map' ? [`${c.name}.key`, `${c.name}.value`] : c.kind === 'structList' ? c.fields.map((f) => `${c.name}.${f.name}`) : [c.name],
    );
    info = { text, schema, names: schema.map(([name]) => name), columns, leaves, leafNames };
    if (schemaInfos.size >= 64) schemaInfos.clear();
    schemaInfos.set(text, info);
  }
  return info;
}

/**
 * A column batch's rows and schema, its leaves not read: for a holder of bytes checked before
 * (readColumnBatch) that only needs to group them, as the writer's committer does with each
 * WAL record until its flush. Reading every leaf's views there made several objects per leaf and
 * record on the event loop, all kept until the flush, so promoted by its young-generation GCs.
 */
export function readColumnBatchHead(payload: Uint8Array): ColumnBatchHead {
  if (!(isColumnBatch(payload) || isSeriesDefinitions(payload)) || payload.length < 16) throw new TypeError('not a column batch');
  const dv = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const rows = dv.getUint32(4, true);
  const p = 12 + dv.getUint32(8, true);
  if (p + 4 > payload.length) throw new TypeError('column batch schema runs past the payload');
  return { rows, schema: batchSchemaInfo(utf8Decoder.decode(payload.subarray(12, p))), bytes: payload };
}

/**
 * `checked`: the same bytes were read before with their leaves checked (the writer's encoding
 * thread reads what the committer checked), so the per-level check is skipped.
 */
export function readColumnBatch(payload: Uint8Array, opts: { checked?: boolean; defs?: readonly ColumnBatchView[] } = {}): ColumnBatchView {
  const { rows, schema } = readColumnBatchHead(payload);
  const dv = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  let p = 12 + dv.getUint32(8, true);
  const shape = schema.leaves;
  const count = dv.getUint32(p, true);
  p += 4;
  if (count !== shape.length) throw new TypeError(`column batch has ${count} leaves, its schema ${shape.length}`);
  if (p + 8 * count > payload.length) throw new TypeError('column batch leaf table runs past the payload');
  let at = p + 8 * count;
  const parts = new Int32Array(PARTS * count);
  const byRef = payload[2] === 0x42 && payload[3] === REF_BATCH;
  const runLeaves = payload[3] === 0x32 || byRef;
  let refs: Uint32Array | undefined;
  if (byRef) {
    if (at + 4 * rows > payload.length) throw new TypeError('column batch references run past the payload');
    refs = new Uint32Array(rows);
    for (let r = 0; r < rows; r++) refs[r] = dv.getUint32(at + 4 * r, true);
    at += 4 * rows;
  }
  for (let i = 0; i < count; i++) {
    let levels = dv.getUint32(p + 8 * i, true);
    const valueBytes = dv.getUint32(p + 8 * i + 4, true);
    let runsAt = -1;
    if (byRef && levels === REF_FLAG) {
      if (valueBytes !== 0) throw new TypeError(`column batch leaf ${schema.leafNames[i]}: a referenced leaf with values`);
      parts[PARTS * i + 1] = parts[PARTS * i + 2] = parts[PARTS * i + 3] = at;
      parts[PARTS * i + 4] = REF_LEAF;
      continue;
    }
    if (runLeaves && levels >= RUNS_FLAG) {
      levels -= RUNS_FLAG;
      if (at + 4 > payload.length) throw new TypeError('column batch leaf runs past the payload');
      const fragments = dv.getUint32(at, true);
      if (at + 4 + 4 * fragments > payload.length) throw new TypeError('column batch leaf runs past the payload');
      runsAt = at;
      at += 4 + 4 * fragments;
    }
    const end = at + levels * (shape[i]!.maxRep > 0 ? 2 : 1) + valueBytes;
    if (end > payload.length) throw new TypeError('column batch leaf runs past the payload');
    parts[PARTS * i] = levels;
    parts[PARTS * i + 1] = at;
    parts[PARTS * i + 2] = end - valueBytes;
    parts[PARTS * i + 3] = end;
    parts[PARTS * i + 4] = runsAt;
    at = end;
  }
  if (at !== payload.length) throw new TypeError('column batch has bytes after its last leaf');
  const view = new PayloadBatch(rows, schema, payload, parts, refs, opts.defs);
  if (!opts.checked) {
    for (let i = 0; i < count; i++) if (parts[PARTS * i + 4] !== REF_LEAF) checkLeaf(shape[i]!, view.leaf(i), rows, schema.leafNames[i]!);
    if (refs && opts.defs) checkRefs(refs, opts.defs, schema);
  }
  return view;
}

/**
 * That every reference names a row of `defs`, batches of the referencing batch's schema: the
 * writer's check of a batch of series references against its segment's definitions.
 */
export function checkRefs(refs: Uint32Array, defs: readonly ColumnBatchHead[], schema: BatchSchemaInfo): void {
  let total = 0;
  for (const d of defs) {
    if (d.schema.text !== schema.text) throw new TypeError('series definitions of another schema');
    total += d.rows;
  }
  let max = 0;
  for (let r = 0; r < refs.length; r++) max = Math.max(max, refs[r]!);
  if (refs.length > 0 && max >= total) throw new TypeError(`column batch references series ${max}, its segment defines ${total}`);
}

/** Numbers per leaf in PayloadBatch's table: levels, where its levels start, its values start and end, its runs (-1: none; REF_LEAF: a referenced leaf). */
const PARTS = 5;
const REF_LEAF = -2;
const EMPTY = new Uint8Array(0);

/** A read payload: where each leaf's parts sit, its views made when asked for (ColumnBatchView.leaf). */
class PayloadBatch implements ColumnBatchView {
  readonly rows: number;
  readonly schema: BatchSchemaInfo;
  readonly bytes: Uint8Array;
  readonly refs: Uint32Array | undefined;
  readonly defs: readonly ColumnBatchView[] | undefined;
  readonly #parts: Int32Array;
  #leaves: LeafView[] | undefined;

  constructor(rows: number, schema: BatchSchemaInfo, bytes: Uint8Array, parts: Int32Array, refs: Uint32Array | undefined, defs: readonly ColumnBatchView[] | undefined) {
    this.rows = rows;
    this.schema = schema;
    this.bytes = bytes;
    this.#parts = parts;
    this.refs = refs;
    this.defs = defs;
  }

  get leaves(): readonly LeafView[] {
    return (this.#leaves ??= this.schema.leaves.map((_, i) => this.leaf(i)));
  }

  leaf(i: number): LeafView {
    const b = this.bytes;
    const k = PARTS * i;
    const parts = this.#parts;
    const levels = parts[k]!;
    const at = parts[k + 1]!;
    const valuesAt = parts[k + 2]!;
    const runsAt = parts[k + 4]!;
    if (runsAt === REF_LEAF) return { levels: 0, defs: EMPTY, reps: this.schema.leaves[i]!.maxRep > 0 ? EMPTY : undefined, values: EMPTY, runs: undefined, ref: true };
    let runs: Uint32Array | undefined;
    if (runsAt >= 0) {
      const dv = new DataView(b.buffer, b.byteOffset + runsAt);
      runs = new Uint32Array(dv.getUint32(0, true));
      for (let f = 0; f < runs.length; f++) runs[f] = dv.getUint32(4 + 4 * f, true);
    }
    return {
      levels,
      defs: b.subarray(at, at + levels),
      reps: this.schema.leaves[i]!.maxRep > 0 ? b.subarray(at + levels, valuesAt) : undefined,
      values: b.subarray(valuesAt, parts[k + 3]!),
      runs,
    };
  }
}

/**
 * A leaf the writer can hand to DuckDB: levels within their maxima, one row start per row, and
 * PLAIN values that frame exactly as many values as the levels say are present. A record that
 * fails this would fail every write of its table (the WAL would stop for it), so the writer
 * checks before it writes and sets such a record aside (committer.ts). UTF-8 is the acceptor's
 * check (every string it writes was validated or built by it).
 */
function checkLeaf(shape: LeafShape, leaf: LeafView, rows: number, name: string): void {
  const { defs, reps, levels, values, runs } = leaf;
  if (runs) {
    let covered = 0;
    for (let f = 0; f < runs.length; f++) {
      if (runs[f] === 0) throw new TypeError(`column batch leaf ${name}: a run of no rows`);
      covered += runs[f]!;
    }
    if (covered !== rows) throw new TypeError(`column batch leaf ${name}: runs of ${covered} rows, the batch has ${rows}`);
    // The fragments frame as the rows of a plain leaf do, one per run.
    rows = runs.length;
  }
  const maxDef = shape.maxDef;
  let present = 0;
  // Negative once a level is above maxDef (the loop stays free of branches; the level is found after).
  let over = 0;
  for (let k = 0; k < levels; k++) {
    const d = defs[k]!;
    present += d === maxDef ? 1 : 0;
    over |= maxDef - d;
  }
  if (over < 0) {
    const d = defs.find((x) => x > maxDef)!;
    throw new TypeError(`column batch leaf ${name}: definition level ${d} above ${maxDef}`);
  }
  // A flat leaf has a level per row; a nested one starts each row at repetition level 0.
  let starts = levels;
  if (reps) {
    starts = 0;
    for (let k = 0; k < levels; k++) {
      const r = reps[k]!;
      if (r > shape.maxRep || (k === 0 && r !== 0)) throw new TypeError(`column batch leaf ${name}: bad repetition level ${r} at ${k}`);
      if (r === 0) starts++;
    }
  }
  if (starts !== rows) throw new TypeError(`column batch leaf ${name}: ${starts} rows, the batch has ${rows}`);
  const width = PLAIN_WIDTH[shape.type];
  if (width !== undefined) {
    if (values.length !== present * width) throw new TypeError(`column batch leaf ${name}: ${values.length} value bytes for ${present} values`);
    return;
  }
  const dv = new DataView(values.buffer, values.byteOffset, values.byteLength);
  let p = 0;
  for (let k = 0; k < present; k++) {
    if (p + 4 > values.length) throw new TypeError(`column batch leaf ${name}: values end inside value ${k}`);
    p += 4 + dv.getUint32(p, true);
  }
  if (p !== values.length) throw new TypeError(`column batch leaf ${name}: values do not frame ${present} strings`);
}

/**
 * A leaf as a plain leaf: a run leaf's fragments copied until each is there as many times as its
 * run says (for readers that take every row as it is: the DuckDB hand-off file, tests).
 */
export function plainLeaf(leaf: LeafView, shape: LeafShape): LeafView {
  const { runs, defs, reps, values } = leaf;
  if (!runs) return leaf;
  const { fl, fv } = fragmentBounds(leaf, shape, runs.length);
  let levels = 0;
  let bytes = 0;
  for (let i = 0; i < runs.length; i++) {
    levels += (fl[i + 1]! - fl[i]!) * runs[i]!;
    bytes += (fv[i + 1]! - fv[i]!) * runs[i]!;
  }
  const outDefs = new Uint8Array(levels);
  const outReps = reps ? new Uint8Array(levels) : undefined;
  const outVals = new Uint8Array(bytes);
  let n = 0;
  let q = 0;
  for (let i = 0; i < runs.length; i++) {
    const l = fl[i + 1]! - fl[i]!;
    const b = fv[i + 1]! - fv[i]!;
    outDefs.set(defs.subarray(fl[i]!, fl[i + 1]!), n);
    repeatBytes(outDefs, n, l, runs[i]!);
    if (outReps) {
      outReps.set(reps!.subarray(fl[i]!, fl[i + 1]!), n);
      repeatBytes(outReps, n, l, runs[i]!);
    }
    if (b > 0) {
      outVals.set(values.subarray(fv[i]!, fv[i + 1]!), q);
      repeatBytes(outVals, q, b, runs[i]!);
    }
    n += l * runs[i]!;
    q += b * runs[i]!;
  }
  return { levels, defs: outDefs, reps: outReps, values: outVals, runs: undefined };
}

/**
 * Where each fragment (a row's worth: one level, or a repetition level 0 and those after it) of
 * a leaf starts: fragment f holds levels [fl[f], fl[f + 1]) and value bytes [fv[f], fv[f + 1]).
 */
function fragmentBounds(leaf: LeafView, shape: LeafShape, fragments: number): { fl: Int32Array; fv: Int32Array } {
  const { defs, reps, values } = leaf;
  const width = PLAIN_WIDTH[shape.type];
  const fl = new Int32Array(fragments + 1);
  const fv = new Int32Array(fragments + 1);
  const dv = viewOf(values);
  let f = -1;
  let vp = 0;
  for (let k = 0; k < leaf.levels; k++) {
    if (!reps || reps[k] === 0) {
      fl[++f] = k;
      fv[f] = vp;
    }
    if (defs[k] === shape.maxDef) vp += width ?? 4 + dv.getUint32(vp, true);
  }
  fl[fragments] = leaf.levels;
  fv[fragments] = vp;
  return { fl, fv };
}

/**
 * A referenced leaf as a plain leaf: each row's definition's levels and values. `defs` are the
 * definitions batches whose rows `refs` number end to end.
 */
function referencedLeaf(defs: readonly ColumnBatchView[], index: number, refs: Uint32Array, shape: LeafShape): LeafView {
  const parts = defs.map((d) => d.leaf(index));
  const all = concatLeaves(parts);
  const fragments = defs.reduce((n, d) => n + d.rows, 0);
  const { fl, fv } = fragmentBounds(all, shape, fragments);
  let levels = 0;
  let bytes = 0;
  for (const g of refs) {
    if (g >= fragments) throw new TypeError(`column batch references series ${g}, its definitions hold ${fragments}`);
    levels += fl[g + 1]! - fl[g]!;
    bytes += fv[g + 1]! - fv[g]!;
  }
  const out: LeafView = { levels, defs: new Uint8Array(levels), reps: all.reps ? new Uint8Array(levels) : undefined, values: new Uint8Array(bytes), runs: undefined };
  let n = 0;
  let q = 0;
  for (const g of refs) {
    out.defs.set(all.defs.subarray(fl[g]!, fl[g + 1]!), n);
    out.reps?.set(all.reps!.subarray(fl[g]!, fl[g + 1]!), n);
    out.values.set(all.values.subarray(fv[g]!, fv[g + 1]!), q);
    n += fl[g + 1]! - fl[g]!;
    q += fv[g + 1]! - fv[g]!;
  }
  return out;
}

/** Plain leaves end to end, as one. */
function concatLeaves(parts: readonly LeafView[]): LeafView {
  if (parts.length === 1) return parts[0]!;
  const cat = (pick: (l: LeafView) => Uint8Array) => Buffer.concat(parts.map(pick));
  return {
    levels: parts.reduce((n, l) => n + l.levels, 0),
    defs: cat((l) => l.defs),
    reps: parts[0]!.reps ? cat((l) => l.reps!) : undefined,
    values: cat((l) => l.values),
    runs: undefined,
  };
}

/** A batch with every run leaf made plain (plainLeaf), and a batch of series references resolved against its definitions. */
export function plainBatch(view: ColumnBatchView): ColumnBatchView {
  if (!view.refs && !view.leaves.some((l) => l.runs)) return view;
  const refs = view.refs;
  if (refs && !view.defs) throw new TypeError('a batch of series references read without its definitions');
  const leaves = view.leaves.map((l, i) =>
    l.ref ? referencedLeaf(view.defs!, i, refs!, view.schema.leaves[i]!) : plainLeaf(l, view.schema.leaves[i]!),
  );
  return { rows: view.rows, schema: view.schema, bytes: view.bytes, leaves, leaf: (i) => leaves[i]! };
}
