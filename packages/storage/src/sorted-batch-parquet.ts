import { open } from 'node:fs/promises';
import { constants as zlibConstants, zstdCompressSync } from 'node:zlib';
import { attributeMaps, isListType, isMapType, isStructType, labelSources, rowGroupSizeOf, timeColumn, type AttributeType, type ColumnDef, type TableDef } from '@floe/schema';
import { PLAIN_WIDTH, batchColumns, batchSchema, columnLeaves, type BatchColumnType, type BatchSchemaInfo, type ColumnBatchView, type LeafType, type LeafView } from './column-batch.ts';
import type { AttributeTypeCount } from './attribute-key-counts.ts';
import type { WrittenFile } from './parquet-writer.ts';
import {
  bitWidth,
  dataPageHeader,
  dictionaryPageHeader,
  encodeLevelRuns,
  encodeRepeatedRun,
  fileFooter,
  INT_32,
  INT_64,
  LIST,
  MAP,
  OPTIONAL,
  PAR1,
  packBooleans,
  pageCrc,
  PLAIN,
  REPEATED,
  REQUIRED,
  RLE_DICTIONARY,
  TIMESTAMP_MICROS,
  UTF8,
  writeColumnChunkStart,
  writeSchemaElement,
  ZSTD,
  type SchemaElement,
} from './parquet-format.ts';
import { bytesAre, bytesEqual, compareBytes, copyBytes, hashBytes, viewOf } from './byte-ranges.ts';
import { Lru } from './lru.ts';
import { Scratch } from './scratch.ts';
import { ThriftWriter } from './thrift-compact.ts';
import { writeParts } from './write-parts.ts';

/**
 * Column batches → a table's stored Parquet file without DuckDB. The rows are sorted in the
 * table's order, and each leaf's levels and values gathered in that order as bytes, never
 * decoded into values. Strings that repeat get a dictionary page, everything else is PLAIN; one
 * zstd data page per column chunk; Iceberg field ids; min/max statistics on the top-level
 * columns. Run leaves (a resource's or scope's columns, kept once per run of rows) are joined
 * per fragment, and string leaves that repeat get their dictionaries before the sort, from each
 * fragment's values once (gatherStringIndices). The writer's flushes take this path (parquet-writer.ts), on a thread of their own.
 * It replaces an uncompressed hand-off file that DuckDB read back, sorted row by row with its maps
 * and encoded: per span, Floe's CPU fell from 13.2–13.8 to 11.4 µs in bench/ingest-traces
 * (bench/RESULTS.md). A flush file lives only until the compactor merges its hour, with DuckDB.
 *
 * What it writes is what DuckDB's COPY writes for the same rows, as DuckDB reads it back: the
 * same columns, types (timestamptz as INT64 TIMESTAMP(MICROS, UTC)), nesting, field ids and row
 * order (sorted-batch-parquet.test.ts compares the two). It takes the stored columns a batch carries
 * as they are, the µs timestamp derived from the time column, materialized labels looked up in
 * the maps (labelLeaf), and NULL for a column the batch lacks; a batch whose columns differ in
 * type from the table's goes through DuckDB (sortedParquetPlan says so), and so does a flush in
 * which a label holds a double (NeedsDuckDbError).
 */

/** This thread's working memory for flushes (scratch.ts): up to 128 MiB kept between them. */
const work = new Scratch();
const workBytes = (n: number) => work.u8(n);

/** Longest probe sequence of a RangeIds lookup (see there). */
const MAX_PROBES = 64;
/** zstd's own default level, as DuckDB uses it. */
const ZSTD_LEVEL = 3;

/** Where a stored leaf's levels and values come from. */
type LeafSource =
  /** The batches' leaf at `index`, as it is. */
  | { kind: 'batch'; index: number }
  /** A column the batches lack: NULL in every row. */
  | { kind: 'null' }
  /** The µs timestamp: the unix-nanosecond leaf at `index`, divided by 1000 (truncated, as DuckDB's `//`). */
  | { kind: 'micros'; index: number }
  /** A materialized label: `key` (UTF-8) looked up in typed maps, in order (@floe/schema labelSources), each as its key and value leaves. */
  | { kind: 'label'; key: Uint8Array; maps: readonly { key: number; value: number }[] };

/**
 * A flush this encoder cannot write as DuckDB would, found while writing it (a label whose value
 * is a double: DuckDB's text for doubles is its own); the writer gives it to DuckDB instead.
 */
export class NeedsDuckDbError extends Error {
  override readonly name = 'NeedsDuckDbError';
}

interface StoredLeaf {
  path: string[];
  type: LeafType;
  maxDef: number;
  maxRep: number;
  source: LeafSource;
  /** Min/max statistics are written for top-level primitive columns. */
  stats: boolean;
}

type SortKeyType = 'string' | 'long' | 'int';

export interface SortedParquetPlan {
  elements: SchemaElement[];
  leaves: StoredLeaf[];
  /** The table's sort columns as batch leaves, most significant first. */
  sortKeys: { index: number; type: SortKeyType }[];
  /** The stored leaves (indexes into `leaves`) of the unix-nanosecond time column and of the partition timestamp. */
  timeLeaf: number;
  timestampLeaf: number;
  /** The batch leaf of the table's id column (distinct ids for the file's id filter). */
  idLeaf: number | undefined;
  rowGroupSize: number;
  /** The stored key leaves of the typed attribute maps and their value types (attribute key counts). */
  keyLeaves: ReadonlyMap<number, AttributeType>;
}

/** What the file holds besides its rows, for WrittenFile. */
export type SortedParquetResult = Pick<WrittenFile, 'sizeBytes' | 'rowCount' | 'minStartNs' | 'maxStartNs' | 'minTimestampUs' | 'maxTimestampUs' | 'ids'>;

const plans = new WeakMap<TableDef, WeakMap<BatchSchemaInfo, SortedParquetPlan | null>>();

/**
 * How batches of schema `info` become `table`'s stored file here, or undefined when DuckDB must
 * do it: a computed column other than a materialized label, a column's type in the batch is not the table's, or
 * a sort, time or id column is missing or not of a type this sorts.
 */
export function sortedParquetPlan(table: TableDef, info: BatchSchemaInfo): SortedParquetPlan | undefined {
  let byInfo = plans.get(table);
  if (!byInfo) plans.set(table, (byInfo = new WeakMap()));
  let plan = byInfo.get(info);
  if (plan === undefined) {
    plan = makePlan(table, info) ?? null;
    byInfo.set(info, plan);
  }
  return plan ?? undefined;
}

function makePlan(table: TableDef, info: BatchSchemaInfo): SortedParquetPlan | undefined {
  // The batch's columns and where their leaves start in the payload's leaf order.
  const inBatch = new Map<string, { type: BatchColumnType; first: number }>();
  let at = 0;
  for (let i = 0; i < info.columns.length; i++) {
    inBatch.set(info.names[i]!, { type: info.schema[i]![1], first: at });
    at += columnLeaves(info.columns[i]!).length;
  }
  const want = new Map(batchSchema(table));
  const same = (a: BatchColumnType, b: BatchColumnType) => JSON.stringify(a) === JSON.stringify(b);

  const elements: SchemaElement[] = [{ name: 'schema', children: table.columns.length }];
  const leaves: StoredLeaf[] = [];
  // The converted types DuckDB writes: its readers (and the compactor's union_by_name) see the same types either way.
  const converted: Partial<Record<LeafType, number>> = { string: UTF8, long: INT_64, int: INT_32 };
  const primitive = (name: string, type: LeafType): SchemaElement => ({ name, type, repetition: OPTIONAL, ...(converted[type] !== undefined ? { converted: converted[type] } : {}) });
  for (const c of table.columns) {
    if (c.expr) {
      // A materialized label (labels.ts): computed from the maps as its expression does.
      if (c.attributeKey === undefined || c.type !== 'string') return undefined;
      const maps: { key: number; value: number }[] = [];
      for (const m of labelSources(table)) {
        const got = inBatch.get(m.column);
        const type = want.get(m.column);
        // A map the batches lack is NULL in every row: nothing to find there.
        if (!got) continue;
        if (!type || !same(got.type, type) || typeof type === 'string' || !('map' in type)) return undefined;
        maps.push({ key: got.first, value: got.first + 1 });
      }
      elements.push({ ...primitive(c.name, 'string'), fieldId: c.id });
      leaves.push({ path: [c.name], type: 'string', maxDef: 1, maxRep: 0, source: { kind: 'label', key: Buffer.from(c.attributeKey, 'utf8'), maps }, stats: true });
      continue;
    }
    if (c.derived) {
      const source = inBatch.get(c.derived);
      if (c.type !== 'timestamptz' || !source || source.type !== 'long') return undefined;
      elements.push({ name: c.name, type: 'long', repetition: OPTIONAL, converted: TIMESTAMP_MICROS, fieldId: c.id, timestampMicros: true });
      leaves.push({ path: [c.name], type: 'long', maxDef: 1, maxRep: 0, source: { kind: 'micros', index: source.first }, stats: true });
      continue;
    }
    const type = want.get(c.name)!;
    const got = inBatch.get(c.name);
    if (got && !same(got.type, type)) return undefined;
    const shapes = columnLeaves(batchColumns([[c.name, type]])[0]!);
    const source = (k: number): LeafSource => (got ? { kind: 'batch', index: got.first + k } : { kind: 'null' });
    const leaf = (k: number, path: string[], stats = false): StoredLeaf => ({ path, type: shapes[k]!.type, maxDef: shapes[k]!.maxDef, maxRep: shapes[k]!.maxRep, source: source(k), stats });
    if (typeof type === 'string') {
      elements.push({ ...primitive(c.name, type), fieldId: c.id });
      leaves.push(leaf(0, [c.name], true));
    } else if ('map' in type) {
      const ids = table.mapIds[c.name];
      if (!ids || !isMapType(c.type)) return undefined;
      elements.push({ name: c.name, repetition: OPTIONAL, children: 1, converted: MAP, fieldId: c.id });
      elements.push({ name: 'key_value', repetition: REPEATED, children: 2 });
      elements.push({ ...primitive('key', 'string'), repetition: REQUIRED, fieldId: ids.keyId });
      elements.push({ ...primitive('value', type.map), fieldId: ids.valueId });
      leaves.push(leaf(0, [c.name, 'key_value', 'key']), leaf(1, [c.name, 'key_value', 'value']));
    } else {
      if (!isListType(c.type)) return undefined;
      elements.push({ name: c.name, repetition: OPTIONAL, children: 1, converted: LIST, fieldId: c.id });
      elements.push({ name: 'list', repetition: REPEATED, children: 1 });
      const el = c.type.list;
      if (typeof type.list === 'string') {
        elements.push({ ...primitive('element', type.list), fieldId: c.type.elementId });
        leaves.push(leaf(0, [c.name, 'list', 'element']));
      } else {
        if (!isStructType(el)) return undefined;
        elements.push({ name: 'element', repetition: OPTIONAL, children: el.struct.length, fieldId: c.type.elementId });
        el.struct.forEach((f, k) => {
          elements.push({ ...primitive(f.name, shapes[k]!.type), fieldId: f.id });
          leaves.push(leaf(k, [c.name, 'list', 'element', f.name]));
        });
      }
    }
  }

  const primitiveIn = (name: string | undefined): { index: number; type: LeafType } | undefined => {
    const got = name === undefined ? undefined : inBatch.get(name);
    return got && typeof got.type === 'string' ? { index: got.first, type: got.type } : undefined;
  };
  const sortKeys: SortedParquetPlan['sortKeys'] = [];
  for (const name of table.sortOrder) {
    const key = primitiveIn(name);
    if (!key || (key.type !== 'string' && key.type !== 'long' && key.type !== 'int')) return undefined;
    sortKeys.push({ index: key.index, type: key.type });
  }
  const storedLeaf = (c: ColumnDef) => leaves.findIndex((l) => l.path.length === 1 && l.path[0] === c.name);
  const time = table.columns.find((c) => c.name === timeColumn(table));
  const stamp = table.columns.find((c) => c.name === table.partitionSource);
  if (!time || !stamp || !primitiveIn(time.name)) return undefined;
  let idLeaf: number | undefined;
  if (table.idColumn) {
    const id = primitiveIn(table.idColumn);
    if (!id || id.type !== 'string') return undefined;
    idLeaf = id.index;
  }
  const mapTypes = new Map(attributeMaps(table).map((m) => [m.column, m.type]));
  const keyLeaves = new Map<number, AttributeType>();
  leaves.forEach((l, i) => {
    const type = l.path.length === 3 && l.path[2] === 'key' ? mapTypes.get(l.path[0]!) : undefined;
    if (type && l.source.kind === 'batch') keyLeaves.set(i, type);
  });
  return { elements, leaves, sortKeys, timeLeaf: storedLeaf(time), timestampLeaf: storedLeaf(stamp), idLeaf, rowGroupSize: rowGroupSizeOf(table), keyLeaves };
}

/**
 * One leaf of all the batches, end to end, as fragments (one row's worth of levels and values
 * each) with where each fragment's levels and values start, and each row's fragment. A plain
 * batch has a fragment per row; a run leaf (column-batch.ts) one per run of rows.
 */
interface RowLeaf {
  defs: Uint8Array;
  reps: Uint8Array | undefined;
  vals: Uint8Array;
  /** Fragment f's levels are [rowLevel[f], rowLevel[f + 1]); undefined when every fragment has one level. */
  rowLevel: Int32Array | undefined;
  /** Fragment f's values are the bytes [rowVal[f], rowVal[f + 1]). */
  rowVal: Int32Array;
  /** Row r's fragment; undefined when fragment r is row r (no batch has run leaves). */
  frag: Uint32Array | undefined;
  /** Levels and value bytes of all the rows. */
  levels: number;
  bytes: number;
}

const u32le = (b: Uint8Array, p: number) => (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;

function joinLeaf(batches: readonly ColumnBatchView[], index: number, shape: { type: LeafType; maxDef: number; maxRep: number }, rows: number): RowLeaf {
  let defs: Uint8Array;
  let reps: Uint8Array | undefined;
  let vals: Uint8Array;
  // Each batch's views of this leaf, made here and dropped with the join (ColumnBatchView.leaf).
  const parts = batches.map((b) => b.leaf(index));
  // The fragments' sources: the series definitions that batches of references take this leaf
  // from (each segment's once, first), then every other batch's own leaf. Each batch's first
  // fragment among them is base[i] (for references, its definitions' first).
  const sources: LeafView[] = [];
  const base = new Int32Array(batches.length);
  let fragments = 0;
  let shared = false;
  let defsBase: Map<readonly ColumnBatchView[], number> | undefined;
  for (let i = 0; i < batches.length; i++) {
    if (!parts[i]!.ref) continue;
    const defs = batches[i]!.defs;
    if (!defs) throw new TypeError('a batch of series references without its definitions');
    defsBase ??= new Map();
    let b = defsBase.get(defs);
    if (b === undefined) {
      defsBase.set(defs, (b = fragments));
      for (const d of defs) {
        sources.push(d.leaf(index));
        fragments += d.rows;
      }
    }
    base[i] = b;
    shared = true;
  }
  for (let i = 0; i < batches.length; i++) {
    const l = parts[i]!;
    if (l.ref) continue;
    if (l.runs) shared = true;
    base[i] = fragments;
    sources.push(l);
    fragments += l.runs ? l.runs.length : batches[i]!.rows;
  }
  if (sources.length === 1) {
    const l = sources[0]!;
    defs = l.defs;
    reps = l.reps;
    // gatherLeaf copies 4- and 8-byte values as 32-bit words: they must sit 4-byte aligned.
    if (l.values.byteOffset % 4 === 0) vals = l.values;
    else (vals = work.u8(l.values.length)).set(l.values);
  } else {
    let n = 0;
    let bytes = 0;
    for (const l of sources) {
      n += l.levels;
      bytes += l.values.length;
    }
    defs = work.u8(n);
    reps = shape.maxRep > 0 ? work.u8(n) : undefined;
    vals = work.u8(bytes);
    let p = 0;
    let q = 0;
    for (const l of sources) {
      defs.set(l.defs, p);
      if (reps) reps.set(l.reps!, p);
      vals.set(l.values, q);
      p += l.levels;
      q += l.values.length;
    }
  }
  const n = defs.length;
  const rowLevel = reps ? work.i32(fragments + 1) : undefined;
  const rowVal = work.i32(fragments + 1);
  const width = PLAIN_WIDTH[shape.type];
  const max = shape.maxDef;
  let vp = 0;
  // A flat leaf has one level per fragment; its loops are specialised (most of a flush's leaves).
  if (!reps && width !== undefined) {
    for (let k = 0; k < n; k++) {
      rowVal[k] = vp;
      if (defs[k] === max) vp += width;
    }
  } else if (!reps) {
    const dv = viewOf(vals);
    for (let k = 0; k < n; k++) {
      rowVal[k] = vp;
      if (defs[k] === max) vp += 4 + dv.getUint32(vp, true);
    }
  } else {
    const dv = viewOf(vals);
    for (let k = 0, r = -1; k < n; k++) {
      if (reps[k] === 0) {
        rowLevel![++r] = k;
        rowVal[r] = vp;
      }
      if (defs[k] === max) vp += width ?? 4 + dv.getUint32(vp, true);
    }
  }
  if (rowLevel) rowLevel[fragments] = n;
  rowVal[fragments] = vp;
  if (!shared) return { defs, reps, vals, rowLevel, rowVal, frag: undefined, levels: n, bytes: vp };

  // Each row's fragment, and the levels and bytes of all the rows.
  const frag = work.u32(rows);
  const levelsOf = (f: number) => (rowLevel ? rowLevel[f + 1]! - rowLevel[f]! : 1);
  let levels = 0;
  let bytes = 0;
  let row = 0;
  for (let i = 0; i < batches.length; i++) {
    const b = batches[i]!;
    const l = parts[i]!;
    const from = base[i]!;
    const counts = l.runs;
    if (l.ref) {
      const refs = b.refs!;
      for (let k = 0; k < b.rows; k++) {
        const f = from + refs[k]!;
        frag[row++] = f;
        levels += levelsOf(f);
        bytes += rowVal[f + 1]! - rowVal[f]!;
      }
    } else if (counts) {
      for (let j = 0; j < counts.length; j++) {
        const f = from + j;
        const c = counts[j]!;
        frag.fill(f, row, row + c);
        row += c;
        levels += c * levelsOf(f);
        bytes += c * (rowVal[f + 1]! - rowVal[f]!);
      }
    } else {
      for (let k = 0; k < b.rows; k++) frag[row + k] = from + k;
      row += b.rows;
      levels += rowLevel ? rowLevel[from + b.rows]! - rowLevel[from]! : b.rows;
      bytes += rowVal[from + b.rows]! - rowVal[from]!;
    }
  }
  return { defs, reps, vals, rowLevel, rowVal, frag, levels, bytes };
}

/** Attribute key counts of one type, taken from key leaves' dictionaries; `counted` once a leaf's are in. */
interface KeyTally {
  counts: Map<string, number>;
  counted: boolean;
}

/**
 * Each dictionary entry's rows (a map key leaf: how many values the key has), added to `keys`:
 * an entry's count is its values, each weighted by the rows its fragment stands for; only the
 * distinct keys are decoded.
 */
function countEntries(keys: KeyTally, all: Dictionary, entryAt: Int32Array, valueAt: Int32Array, frag: Uint32Array | undefined, rows: number): void {
  const perEntry = new Float64Array(all.size);
  const ids = all.indices;
  if (frag) {
    const fragments = valueAt.length - 1;
    const fragRows = work.u32(fragments).fill(0);
    for (let r = 0; r < rows; r++) fragRows[frag[r]!]!++;
    for (let f = 0; f < fragments; f++) {
      const w = fragRows[f]!;
      for (let j = valueAt[f]!; j < valueAt[f + 1]!; j++) perEntry[ids[j]!]! += w;
    }
  } else for (let j = 0; j < valueAt[valueAt.length - 1]!; j++) perEntry[ids[j]!]!++;
  const text = Buffer.from(all.page.buffer, all.page.byteOffset, all.page.byteLength);
  for (let e = 0; e < all.size; e++) {
    // A key only fragments no row takes hold (unreferenced series definitions) is not in the file.
    if (perEntry[e] === 0) continue;
    const key = text.toString('utf8', entryAt[e]! + 4, entryAt[e + 1]!);
    keys.counts.set(key, (keys.counts.get(key) ?? 0) + perEntry[e]!);
  }
  keys.counted = true;
}

/** A leaf of NULL in every row (a column the batches lack). */
function nullLeaf(rows: number, maxRep: number): RowLeaf {
  return {
    defs: work.u8(rows).fill(0),
    reps: maxRep > 0 ? work.u8(rows).fill(0) : undefined,
    vals: new Uint8Array(0),
    rowLevel: undefined,
    rowVal: work.i32(rows + 1).fill(0),
    frag: undefined,
    levels: rows,
    bytes: 0,
  };
}

/** A typed map's joined key and value leaves, their maximum definition levels, and its value type. */
interface LabelMap {
  keys: RowLeaf;
  keyDef: number;
  values: RowLeaf;
  valueDef: number;
  type: LeafType;
  /** Bytes of one value (undefined: strings, their own length first). */
  width: number | undefined;
}

const TRUE_TEXT = Buffer.from('true');
const FALSE_TEXT = Buffer.from('false');

/**
 * A materialized label's column (@floe/schema labels.ts): row by row, the value of `key` in the
 * first map that holds it with a value, as text, else NULL: what the column's DuckDB expression
 * (a COALESCE of map lookups, non-text values CAST to VARCHAR) gives. Integers and booleans are
 * written as DuckDB prints them; a double throws NeedsDuckDbError. The maps' leaves are in `kept`.
 */
function labelLeaf(src: { key: Uint8Array; maps: readonly { key: number; value: number }[] }, kept: ReadonlyMap<number, RowLeaf>, shapes: readonly { type: LeafType; maxDef: number }[], rows: number): RowLeaf {
  const key = src.key;
  const maps: LabelMap[] = src.maps.map((m) => {
    const type = shapes[m.value]!.type;
    return { keys: kept.get(m.key)!, keyDef: shapes[m.key]!.maxDef, values: kept.get(m.value)!, valueDef: shapes[m.value]!.maxDef, type, width: PLAIN_WIDTH[type] };
  });
  // Text is at most a map's own bytes of the row, or 20 digits for an 8-byte integer, 5 for a boolean.
  let bound = 4 * rows;
  for (const m of maps) bound += m.type === 'string' ? m.values.bytes : m.type === 'long' ? 3 * m.values.bytes : m.type === 'boolean' ? 5 * m.values.bytes : 0;
  const defs = work.u8(rows);
  const rowVal = work.i32(rows + 1);
  const vals = work.u8(bound);
  const out = viewOf(vals);
  const views = maps.map((m) => viewOf(m.values.vals));
  let at = 0;
  for (let r = 0; r < rows; r++) {
    rowVal[r] = at;
    defs[r] = 0;
    for (let i = 0; i < maps.length; i++) {
      const m = maps[i]!;
      const view = views[i]!;
      const v = valueOf(m, view, key, r);
      if (v < 0) continue;
      if (m.type === 'string') {
        at = copyBytes(m.values.vals, view, v, v + 4 + view.getUint32(v, true), vals, out, at);
      } else if (m.type === 'long' || m.type === 'boolean') {
        const text = m.type === 'long' ? Buffer.from(view.getBigInt64(v, true).toString()) : m.values.vals[v] !== 0 ? TRUE_TEXT : FALSE_TEXT;
        out.setUint32(at, text.length, true);
        vals.set(text, at + 4);
        at += 4 + text.length;
      } else {
        throw new NeedsDuckDbError(`label ${JSON.stringify(Buffer.from(key).toString('utf8'))} holds a ${m.type}`);
      }
      defs[r] = 1;
      break;
    }
  }
  rowVal[rows] = at;
  // (Readers of a leaf take its values to the end of `vals`.)
  return { defs, reps: undefined, vals: vals.subarray(0, at), rowLevel: undefined, rowVal, frag: undefined, levels: rows, bytes: at };
}

/** Where row r's value of `key` starts in the map's value bytes (`values`: their view); -1 when the row's map lacks the key or its value is NULL. */
function valueOf(m: LabelMap, values: DataView, key: Uint8Array, r: number): number {
  const K = m.keys;
  const f = K.frag ? K.frag[r]! : r;
  const lo = K.rowLevel ? K.rowLevel[f]! : f;
  const hi = K.rowLevel ? K.rowLevel[f + 1]! : f + 1;
  let p = K.rowVal[f]!;
  let found = -1;
  for (let k = lo; k < hi; k++) {
    // Levels below the key's own are a NULL or empty map: no entry, no bytes.
    if (K.defs[k] !== m.keyDef) continue;
    const n = u32le(K.vals, p);
    if (bytesAre(K.vals, p + 4, n, key)) {
      found = k - lo;
      break;
    }
    p += 4 + n;
  }
  if (found < 0) return -1;
  // The value leaf has the key leaf's levels: the entry's value is at the same position.
  const V = m.values;
  const g = V.frag ? V.frag[r]! : r;
  const vlo = V.rowLevel ? V.rowLevel[g]! : g;
  const target = vlo + found;
  if (V.defs[target] !== m.valueDef) return -1;
  let q = V.rowVal[g]!;
  for (let k = vlo; k < target; k++) if (V.defs[k] === m.valueDef) q += m.width ?? 4 + values.getUint32(q, true);
  return q;
}

/**
 * The order of the rows by the sort keys, ascending, NULLs last (DuckDB's ORDER BY default): an
 * LSD radix sort over 16-bit digits, least significant key first. Strings sort by rank among the
 * distinct values (byte order), integers by their bits with the sign flipped.
 */
function sortRows(rows: number, keys: readonly { leaf: RowLeaf; type: SortKeyType; maxDef: number }[]): Uint32Array {
  // The order is in one of a and b (they swap after each pass): both outlive the temporaries.
  let a = work.u32(rows);
  for (let i = 0; i < rows; i++) a[i] = i;
  let b = work.u32(rows);
  const temporaries = work.mark();
  const counts = work.u32(65536);
  const digit = work.u16(rows);
  const pass = () => {
    counts.fill(0);
    for (let r = 0; r < rows; r++) counts[digit[r]!]!++;
    // A pass over one digit value would not move anything.
    if (counts[digit[0]!] === rows) return;
    let sum = 0;
    for (let d = 0; d < 65536; d++) {
      const c = counts[d]!;
      counts[d] = sum;
      sum += c;
    }
    for (let i = 0; i < rows; i++) {
      const r = a[i]!;
      b[counts[digit[r]!]!++] = r;
    }
    [a, b] = [b, a];
  };
  for (let k = keys.length - 1; k >= 0; k--) {
    const { leaf, type, maxDef } = keys[k]!;
    const { defs, vals, rowVal } = leaf;
    if (type === 'string') {
      const ranks = stringRanks(leaf, rows, maxDef);
      for (let r = 0; r < rows; r++) digit[r] = ranks[r]! & 0xffff;
      pass();
      if (ranks.distinct >= 0xffff) {
        for (let r = 0; r < rows; r++) digit[r] = ranks[r]! >>> 16;
        pass();
      }
      continue;
    }
    const dv = viewOf(vals);
    const frag = leaf.frag;
    let nulls = false;
    if (type === 'long') {
      const lo = work.u32(rows).fill(0);
      const hi = work.i32(rows).fill(0);
      for (let r = 0; r < rows; r++) {
        const f = frag ? frag[r]! : r;
        if (defs[f] !== maxDef) {
          nulls = true;
          continue;
        }
        lo[r] = dv.getUint32(rowVal[f]!, true);
        hi[r] = dv.getInt32(rowVal[f]! + 4, true);
      }
      for (let r = 0; r < rows; r++) digit[r] = lo[r]! & 0xffff;
      pass();
      for (let r = 0; r < rows; r++) digit[r] = lo[r]! >>> 16;
      pass();
      for (let r = 0; r < rows; r++) digit[r] = hi[r]! & 0xffff;
      pass();
      for (let r = 0; r < rows; r++) digit[r] = (hi[r]! >>> 16) ^ 0x8000;
      pass();
    } else {
      const v = work.i32(rows).fill(0);
      for (let r = 0; r < rows; r++) {
        const f = frag ? frag[r]! : r;
        if (defs[f] !== maxDef) nulls = true;
        else v[r] = dv.getInt32(rowVal[f]!, true);
      }
      for (let r = 0; r < rows; r++) digit[r] = v[r]! & 0xffff;
      pass();
      for (let r = 0; r < rows; r++) digit[r] = (v[r]! >>> 16) ^ 0x8000;
      pass();
    }
    if (nulls) {
      for (let r = 0; r < rows; r++) digit[r] = defs[frag ? frag[r]! : r] === maxDef ? 0 : 1;
      pass();
    }
  }
  work.release(temporaries);
  return a;
}

/**
 * The distinct values of a one-level-per-row string leaf as latin1 text (one char per byte, so
 * JavaScript's string order is the bytes' order), in order of first appearance, and each row's
 * index among them (NULL: 0xffffffff). Runs of one value (a request's service, a series' name)
 * skip the lookup; values are found by their bytes (RangeIds), and only a new distinct value is
 * decoded (a remote-write flush's series ids: thousands of values over hundreds of thousands of
 * rows). Values made to collide in RangeIds are looked up as text from then on, in a Map (V8
 * keys its string hashes).
 */
function distinctOf(leaf: RowLeaf, rows: number, maxDef: number): { values: string[]; index: Uint32Array } {
  const { defs, vals, rowVal, frag } = leaf;
  const text = Buffer.from(vals.buffer, vals.byteOffset, vals.byteLength);
  const dv = viewOf(vals);
  const values: string[] = [];
  const known = new RangeIds(vals, dv);
  let byText: Map<string, number> | undefined;
  const idOf = (s: number, e: number): number => {
    if (!byText) {
      const id = known.find(s, e);
      if (id >= 0) return id;
      if (id === ABSENT) {
        values.push(text.toString('latin1', s, e));
        return known.add(s, e);
      }
      byText = new Map(values.map((v, i) => [v, i]));
    }
    const str = text.toString('latin1', s, e);
    let id = byText.get(str);
    if (id === undefined) {
      byText.set(str, (id = values.length));
      values.push(str);
    }
    return id;
  };
  // Per fragment, then (run leaves) per row.
  const fragments = rowVal.length - 1;
  const index = work.u32(fragments);
  let prevStart = -1;
  let prevEnd = -1;
  let prev = 0;
  for (let r = 0; r < fragments; r++) {
    if (defs[r] !== maxDef) {
      index[r] = 0xffffffff;
      continue;
    }
    const s = rowVal[r]! + 4;
    const e = rowVal[r + 1]!;
    if (prevStart < 0 || !bytesEqual(vals, dv, s, e, prevStart, prevEnd)) {
      prev = idOf(s, e);
      prevStart = s;
      prevEnd = e;
    }
    index[r] = prev;
  }
  if (!frag) return { values, index };
  const byRow = work.u32(rows);
  for (let r = 0; r < rows; r++) byRow[r] = index[frag[r]!]!;
  return { values, index: byRow };
}

/** Each row's rank among the distinct strings of a one-level-per-row leaf, in byte order, NULL after every value. */
function stringRanks(leaf: RowLeaf, rows: number, maxDef: number): Uint32Array & { distinct: number } {
  const { values, index } = distinctOf(leaf, rows, maxDef);
  const order = values.map((_, i) => i).sort((x, y) => (values[x]! < values[y]! ? -1 : values[x]! > values[y]! ? 1 : 0));
  const rankOf = work.u32(values.length);
  order.forEach((id, rank) => (rankOf[id] = rank));
  const ranks = index as Uint32Array & { distinct: number };
  for (let r = 0; r < rows; r++) ranks[r] = ranks[r] === 0xffffffff ? values.length : rankOf[ranks[r]!]!;
  ranks.distinct = values.length + 1;
  return ranks;
}

/**
 * A leaf's levels and values with its rows in sorted order, and where each row group's levels
 * and values start (group g: levels [levelAt[g], levelAt[g + 1]), bytes [byteAt[g], byteAt[g + 1])).
 */
interface SortedLeaf {
  defs: Uint8Array;
  reps: Uint8Array | undefined;
  vals: Uint8Array;
  levelAt: Int32Array;
  byteAt: Int32Array;
}

/** One pass over the rows in `order`: every row's levels and values copied to its place. */
function gatherLeaf(leaf: RowLeaf, type: LeafType, maxDef: number, rowOrder: Uint32Array, groupSize: number): SortedLeaf {
  const { defs, reps, vals, rowLevel, rowVal } = leaf;
  const rows = rowOrder.length;
  // The fragments in row order: for a run leaf, each row's fragment.
  let order = rowOrder;
  if (leaf.frag) {
    const frag = leaf.frag;
    order = work.u32(rows);
    for (let i = 0; i < rows; i++) order[i] = frag[rowOrder[i]!]!;
  }
  const groups = Math.ceil(rows / groupSize);
  const levelAt = work.i32(groups + 1);
  const byteAt = work.i32(groups + 1);
  const od = work.u8(leaf.levels);
  // One level per row (a NULL leaf of a list): every repetition level is 0.
  const or = reps ? (rowLevel ? work.u8(leaf.levels) : work.u8(leaf.levels).fill(0)) : undefined;
  const ov = work.u8(leaf.bytes);
  const width = PLAIN_WIDTH[type];
  // 4- and 8-byte values move as 32-bit words (not as floats: that could rewrite a NaN's bits).
  const words = !rowLevel && (width === 4 || width === 8) ? width >> 2 : 0;
  const src32 = words ? new Int32Array(vals.buffer, vals.byteOffset, vals.length >> 2) : undefined;
  const dst32 = words ? new Int32Array(ov.buffer, ov.byteOffset, ov.length >> 2) : undefined;
  const sv = viewOf(vals);
  const dv = viewOf(ov);
  let p = 0;
  let q = 0;
  for (let g = 0; g < groups; g++) {
    levelAt[g] = p;
    byteAt[g] = q;
    const end = Math.min(rows, (g + 1) * groupSize);
    if (src32 && dst32) {
      let w = q >> 2;
      for (let i = g * groupSize; i < end; i++) {
        const r = order[i]!;
        const d = defs[r]!;
        od[p++] = d;
        if (d !== maxDef) continue;
        const s = rowVal[r]! >> 2;
        dst32[w++] = src32[s]!;
        if (words === 2) dst32[w++] = src32[s + 1]!;
      }
      q = w << 2;
    } else if (!rowLevel) {
      for (let i = g * groupSize; i < end; i++) {
        const r = order[i]!;
        od[p++] = defs[r]!;
        q = copyBytes(vals, sv, rowVal[r]!, rowVal[r + 1]!, ov, dv, q);
      }
    } else {
      for (let i = g * groupSize; i < end; i++) {
        const r = order[i]!;
        const ls = rowLevel[r]!;
        const le = rowLevel[r + 1]!;
        for (let k = ls; k < le; k++, p++) {
          od[p] = defs[k]!;
          or![p] = reps![k]!;
        }
        q = copyBytes(vals, sv, rowVal[r]!, rowVal[r + 1]!, ov, dv, q);
      }
    }
  }
  levelAt[groups] = p;
  byteAt[groups] = q;
  return { defs: od, reps: or, vals: ov, levelAt, byteAt };
}


/**
 * The one definition level of a leaf that holds no values and one level per row (or per run) in
 * every batch: NULL, or an empty list or map, in every row; -1 for any other leaf. Most of a
 * remote-write sample's leaves are such (its histogram, summary and other kinds' columns).
 */
function constantDef(batches: readonly ColumnBatchView[], index: number): number {
  let d = -1;
  /** Whether `l`, of `fragments` fragments, holds no value and only the level d (set by the first leaf with levels). */
  const constant = (l: LeafView, fragments: number): boolean => {
    if (l.values.length > 0 || l.levels !== fragments) return false;
    if (d < 0 && l.levels > 0) d = l.defs[0]!;
    for (let k = 0; k < l.levels; k++) if (l.defs[k] !== d) return false;
    return true;
  };
  // A referenced leaf is its definitions' (every series of the segment, referenced here or not), each segment's once.
  const seen = new Set<readonly ColumnBatchView[]>();
  for (const b of batches) {
    const l = b.leaf(index);
    if (!l.ref) {
      if (!constant(l, l.runs ? l.runs.length : b.rows)) return -1;
    } else if (!seen.has(b.defs!)) {
      seen.add(b.defs!);
      for (const def of b.defs!) if (!constant(def.leaf(index), def.rows)) return -1;
    }
  }
  return d;
}

const NO_VALUES = new Uint8Array(0);

/** A row group of `levels` rows of a leaf at definition level `def` in every row (constantDef): its levels are not spelled out. */
function constantGroup(levels: number, def: number, maxRep: number): Gathered {
  return { defs: NO_VALUES, reps: maxRep > 0 ? NO_VALUES : undefined, vals: NO_VALUES, levels, constantDef: def };
}

/** Row group g of a sorted leaf. */
function groupOf(l: SortedLeaf, g: number): Gathered {
  const ls = l.levelAt[g]!;
  const le = l.levelAt[g + 1]!;
  return { defs: l.defs.subarray(ls, le), reps: l.reps?.subarray(ls, le), vals: l.vals.subarray(l.byteAt[g]!, l.byteAt[g + 1]!), levels: le - ls };
}

/** Levels and values of one row group of a leaf. */
interface Gathered {
  defs: Uint8Array;
  reps: Uint8Array | undefined;
  vals: Uint8Array;
  levels: number;
  /** A dictionary made already (strings: gatherStringIndices); `vals` is then empty. */
  dictionary?: Dictionary;
  /** The chunk's statistics, when made with the dictionary. */
  stats?: ChunkStats;
  /** Set when every level is this definition level and repetition level 0 (constantGroup): `defs` and `reps` are then empty. */
  constantDef?: number;
}

/** A chunk's dictionary: its page (PLAIN values, in order of first use), their count, each value's index. */
interface Dictionary {
  page: Uint8Array;
  size: number;
  indices: Uint32Array;
}

/**
 * The row groups of a string leaf with their dictionaries made before the rows are sorted: the
 * values are looked up in the order they came, where neighbours repeat most (a request's
 * service, its records' keys), each fragment's values once (a run leaf's rows share a
 * fragment: a resource's attributes), and then each row gets its fragment's indices, where
 * gatherLeaf would copy every row's bytes for dictionaryOf to hash. Undefined when the values
 * are mostly distinct, or a group would have more distinct values than dictionaryOf allows
 * (then gatherLeaf's path writes the leaf).
 */
function gatherStringIndices(leaf: RowLeaf, maxDef: number, rowOrder: Uint32Array, groupSize: number, stats: boolean, keys?: KeyTally): Gathered[] | undefined {
  const { defs, reps, vals, rowLevel, frag } = leaf;
  const fragments = leaf.rowVal.length - 1;
  // Fragment f's values are [valueAt[f], valueAt[f + 1]) among all the fragments' values.
  const valueAt = work.i32(fragments + 1);
  let present = 0;
  for (let f = 0; f < fragments; f++) {
    valueAt[f] = present;
    const ls = rowLevel ? rowLevel[f]! : f;
    const le = rowLevel ? rowLevel[f + 1]! : f + 1;
    for (let k = ls; k < le; k++) if (defs[k] === maxDef) present++;
  }
  valueAt[fragments] = present;
  if (present === 0) {
    if (keys) keys.counted = true;
    return undefined;
  }
  const all = dictionaryOf(vals, present);
  if (!all) return undefined;
  // Where each distinct value's PLAIN encoding sits in all.page.
  const entryAt = work.i32(all.size + 1);
  for (let i = 0, q = 0; i <= all.size; i++) {
    entryAt[i] = q;
    if (i < all.size) q += 4 + u32le(all.page, q);
  }
  if (keys) countEntries(keys, all, entryAt, valueAt, frag, rowOrder.length);
  const pv = viewOf(all.page);
  const local = work.i32(all.size);
  const used = work.u32(all.size);
  const ids = all.indices;
  // A flat leaf's fragment is one level with at most one value: its dictionary entry, or -1.
  const entryOf = rowLevel ? undefined : work.i32(fragments);
  if (entryOf) for (let f = 0; f < fragments; f++) entryOf[f] = defs[f] === maxDef ? ids[valueAt[f]!]! : -1;
  const rows = rowOrder.length;
  // Levels and indices of every group, end to end (a leaf has no more values than levels).
  const od = work.u8(leaf.levels);
  const or = rowLevel ? work.u8(leaf.levels) : undefined;
  const indices = work.u32(leaf.levels);
  const out: Gathered[] = [];
  let p = 0;
  let q = 0;
  for (let from = 0; from < rows; from += groupSize) {
    const to = Math.min(rows, from + groupSize);
    const p0 = p;
    const q0 = q;
    local.fill(-1);
    let size = 0;
    let bytes = 0;
    /** The group's index of dictionary entry `id`, the next one when the group has not used it yet. */
    const localOf = (id: number): number => {
      let l = local[id]!;
      if (l < 0) {
        local[id] = l = size;
        used[size++] = id;
        bytes += entryAt[id + 1]! - entryAt[id]!;
      }
      return l;
    };
    for (let i = from; i < to; i++) {
      const f = frag ? frag[rowOrder[i]!]! : rowOrder[i]!;
      if (entryOf) {
        od[p++] = defs[f]!;
        const id = entryOf[f]!;
        if (id >= 0) indices[q++] = localOf(id);
        continue;
      }
      for (let k = rowLevel![f]!, le = rowLevel![f + 1]!; k < le; k++, p++) {
        od[p] = defs[k]!;
        or![p] = reps![k]!;
      }
      for (let j = valueAt[f]!; j < valueAt[f + 1]!; j++) indices[q++] = localOf(ids[j]!);
    }
    const levels = p - p0;
    const values = q - q0;
    if (values > 0 && size > Math.max(16, values >>> 2)) return undefined;
    const page = work.u8(bytes);
    for (let l = 0, at = 0; l < size; l++) {
      const id = used[l]!;
      page.set(all.page.subarray(entryAt[id]!, entryAt[id + 1]!), at);
      at += entryAt[id + 1]! - entryAt[id]!;
    }
    let chunkStats: ChunkStats | undefined;
    if (stats) {
      chunkStats = { nulls: levels - values };
      if (size > 0) {
        let min = used[0]!;
        let max = min;
        for (let l = 1; l < size; l++) {
          const id = used[l]!;
          if (compareBytes(all.page, pv, entryAt[id]! + 4, entryAt[id + 1]!, entryAt[min]! + 4, entryAt[min + 1]!) < 0) min = id;
          if (compareBytes(all.page, pv, entryAt[id]! + 4, entryAt[id + 1]!, entryAt[max]! + 4, entryAt[max + 1]!) > 0) max = id;
        }
        chunkStats.min = all.page.slice(entryAt[min]! + 4, entryAt[min + 1]!);
        chunkStats.max = all.page.slice(entryAt[max]! + 4, entryAt[max + 1]!);
      }
    }
    out.push({
      defs: od.subarray(p0, p),
      reps: or?.subarray(p0, p),
      vals: new Uint8Array(0),
      levels,
      dictionary: values > 0 ? { page, size, indices: indices.subarray(q0, q) } : undefined,
      stats: chunkStats,
    });
  }
  return out;
}

/** Unix nanoseconds → microseconds in place (8-byte little-endian values), truncating toward zero. */
function nanosToMicros(vals: Uint8Array): void {
  const dv = viewOf(vals);
  for (let p = 0; p < vals.length; p += 8) {
    let lo = dv.getUint32(p, true);
    let hi = dv.getUint32(p + 4, true);
    const negative = hi >= 0x80000000;
    if (negative) {
      lo = (~lo + 1) >>> 0;
      hi = (~hi + (lo === 0 ? 1 : 0)) >>> 0;
    }
    // Long division by 1000 over four 16-bit limbs: every partial stays below 2^26.
    let cur = hi >>> 16;
    const q3 = Math.floor(cur / 1000);
    cur = (cur - q3 * 1000) * 65536 + (hi & 0xffff);
    const q2 = Math.floor(cur / 1000);
    cur = (cur - q2 * 1000) * 65536 + (lo >>> 16);
    const q1 = Math.floor(cur / 1000);
    cur = (cur - q1 * 1000) * 65536 + (lo & 0xffff);
    const q0 = Math.floor(cur / 1000);
    hi = ((q3 << 16) | q2) >>> 0;
    lo = ((q1 << 16) | q0) >>> 0;
    if (negative) {
      lo = (~lo + 1) >>> 0;
      hi = (~hi + (lo === 0 ? 1 : 0)) >>> 0;
    }
    dv.setUint32(p, lo, true);
    dv.setUint32(p + 4, hi, true);
  }
}

interface ChunkStats {
  nulls: number;
  min?: Uint8Array;
  max?: Uint8Array;
}

/** Min, max and NULL count of a gathered top-level primitive chunk of `present` values (NaN left out of a double's bounds). */
function chunkStats(type: LeafType, g: Gathered, present: number): ChunkStats {
  const nulls = g.levels - present;
  if (present === 0) return { nulls };
  const v = g.vals;
  const dv = viewOf(v);
  switch (type) {
    case 'long': {
      let minHi = dv.getInt32(4, true);
      let minLo = dv.getUint32(0, true);
      let maxHi = minHi;
      let maxLo = minLo;
      for (let p = 8; p < v.length; p += 8) {
        const hi = dv.getInt32(p + 4, true);
        const lo = dv.getUint32(p, true);
        if (hi < minHi || (hi === minHi && lo < minLo)) [minHi, minLo] = [hi, lo];
        if (hi > maxHi || (hi === maxHi && lo > maxLo)) [maxHi, maxLo] = [hi, lo];
      }
      return { nulls, min: int64Bytes(minHi, minLo), max: int64Bytes(maxHi, maxLo) };
    }
    case 'int': {
      let min = dv.getInt32(0, true);
      let max = min;
      for (let p = 4; p < v.length; p += 4) {
        const x = dv.getInt32(p, true);
        if (x < min) min = x;
        if (x > max) max = x;
      }
      return { nulls, min: int32Bytes(min), max: int32Bytes(max) };
    }
    case 'double': {
      let min = Infinity;
      let max = -Infinity;
      let any = false;
      for (let p = 0; p < v.length; p += 8) {
        const x = dv.getFloat64(p, true);
        if (Number.isNaN(x)) continue;
        any = true;
        if (x < min) min = x;
        if (x > max) max = x;
      }
      return any ? { nulls, min: float64Bytes(min), max: float64Bytes(max) } : { nulls };
    }
    case 'string': {
      let minS = 4;
      let minE = 4 + u32le(v, 0);
      let maxS = minS;
      let maxE = minE;
      for (let p = minE; p < v.length; ) {
        const s = p + 4;
        const e = s + u32le(v, p);
        if (compareBytes(v, dv, s, e, minS, minE) < 0) [minS, minE] = [s, e];
        else if (compareBytes(v, dv, s, e, maxS, maxE) > 0) [maxS, maxE] = [s, e];
        p = e;
      }
      return { nulls, min: v.slice(minS, minE), max: v.slice(maxS, maxE) };
    }
    case 'boolean':
      return { nulls };
  }
}

const int64Bytes = (hi: number, lo: number) => {
  const b = new Uint8Array(8);
  const dv = new DataView(b.buffer);
  dv.setUint32(0, lo, true);
  dv.setInt32(4, hi, true);
  return b;
};
const int32Bytes = (x: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, x, true);
  return b;
};
const float64Bytes = (x: number) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, x, true);
  return b;
};

interface Chunk {
  /** The dictionary page (header and compressed page), when the chunk has one. */
  dict: { header: Uint8Array; page: Uint8Array } | undefined;
  /** The data page's header and compressed page. */
  header: Uint8Array;
  page: Uint8Array;
  levels: number;
  /** Bytes of both pages with their headers, uncompressed. */
  uncompressed: number;
  stats: ChunkStats | undefined;
}

/** Bytes a chunk takes in the file. */
const chunkBytes = (c: Chunk) => (c.dict ? c.dict.header.length + c.dict.page.length : 0) + c.header.length + c.page.length;

const zstdOnce = (body: Uint8Array) => zstdCompressSync(body, { params: { [zlibConstants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } });

/** Pages this small are compressed once per distinct content (zstdPages). */
const SMALL_PAGE_BYTES = 256;

/**
 * Compressed small pages by their bytes. Each zstd call costs ~20 µs however small the page
 * (a compression context is made and freed), and a flush of a few rows is mostly small pages
 * that repeat from file to file: the levels of a column NULL or empty in every row, a
 * dictionary of one value. A file of 50 spans made 48 calls (~1 ms of the thread's CPU).
 * zstd's output is a function of the input and the level, so the bytes written are the same.
 */
const zstdPages = new Lru<string, Uint8Array>(4096);

/** The page zstd-compressed (never changed afterwards: it may be shared by other files' chunks). */
function zstd(body: Uint8Array): Uint8Array {
  if (body.length > SMALL_PAGE_BYTES) return zstdOnce(body);
  const key = Buffer.from(body.buffer, body.byteOffset, body.length).toString('latin1');
  const hit = zstdPages.get(key);
  if (hit) return hit;
  // A copy: zstdCompressSync's result is a view of a 64 KiB buffer, which the cache would keep whole.
  const page = new Uint8Array(zstdOnce(body));
  zstdPages.set(key, page);
  return page;
}

/**
 * A string chunk's dictionary: its distinct values (PLAIN, in order of first use) and each
 * value's index, or undefined when there are more distinct values than a quarter of the values
 * (then PLAIN is as small and cheaper to read; a column of mostly unique values is given up
 * after its first 4,096). Values are looked up as bytes in an
 * open-addressing table (FNV-1a), never decoded; equal neighbours, the common case in sorted
 * rows (a series' name and labels, a service), and a value that follows the one before it as it
 * did last time (map keys in the same order in every row) skip the lookup.
 */
function dictionaryOf(vals: Uint8Array, present: number): Dictionary | undefined {
  const limit = Math.max(16, present >>> 2);
  const dv = viewOf(vals);
  // Entry i: its value bytes [entries.start(i), entries.end(i)), its PLAIN encoding starting 4 bytes before.
  const entries = new RangeIds(vals, dv, Math.min(limit, present));
  /** The entry that last followed entry i (-1: none yet). */
  const next = work.i32(limit);
  let bytes = 0;
  const indices = work.u32(present);
  let prevS = -1;
  let prevE = -1;
  let prev = 0;
  for (let p = 0, k = 0; p < vals.length; k++) {
    const s = p + 4;
    const e = s + u32le(vals, p);
    p = e;
    if (prevS >= 0 && bytesEqual(vals, dv, s, e, prevS, prevE)) {
      indices[k] = prev;
      continue;
    }
    // The value that followed the previous one last time: map keys and the fields of a
    // repeated record come in the same order row after row.
    const guess = prevS >= 0 ? next[prev]! : -1;
    if (guess >= 0 && bytesEqual(vals, dv, s, e, entries.start(guess), entries.end(guess))) {
      indices[k] = prev = guess;
      prevS = s;
      prevE = e;
      continue;
    }
    let id = entries.find(s, e);
    // Values made to collide in the table: PLAIN.
    if (id === CROWDED) return undefined;
    if (id === ABSENT) {
      // Too many distinct values, or already more than a quarter of the first 4,096: the rest
      // would only confirm it.
      const size = entries.size;
      if (size === limit || (k >= 4096 && size * 4 > k)) return undefined;
      id = entries.add(s, e);
      next[id] = -1;
      bytes += 4 + e - s;
    }
    if (prevS >= 0) next[prev] = id;
    indices[k] = prev = id;
    prevS = s;
    prevE = e;
  }
  const page = work.u8(bytes);
  for (let i = 0, q = 0; i < entries.size; i++) {
    page.set(vals.subarray(entries.start(i) - 4, entries.end(i)), q);
    q += entries.end(i) - entries.start(i) + 4;
  }
  return { page, size: entries.size, indices };
}

/** RangeIds.find: the range is not there (add() may follow). */
const ABSENT = -1;
/** RangeIds.find: the range's probe sequence passed MAX_PROBES; the caller takes another way. */
const CROWDED = -2;

/**
 * Ids (0, 1, ... in order of addition) of distinct byte ranges of one buffer, found by their
 * bytes: open addressing over hashBytes, at most half full, in this thread's working memory.
 * hashBytes has no secret key, so a client could send values that all land in one slot: a lookup
 * gives up after MAX_PROBES (CROWDED) rather than make a flush quadratic.
 */
class RangeIds {
  readonly #vals: Uint8Array;
  readonly #dv: DataView;
  #slots: Int32Array;
  #from: Int32Array;
  #to: Int32Array;
  size = 0;
  /** Where the last find() that gave ABSENT stopped: add() fills it. */
  #free = -1;

  /** `expected`: distinct ranges to make room for at once (the table grows past them). */
  constructor(vals: Uint8Array, dv: DataView, expected = 64) {
    this.#vals = vals;
    this.#dv = dv;
    let cap = 32;
    while (cap < 2 * expected) cap *= 2;
    this.#slots = work.i32(cap).fill(-1);
    this.#from = work.i32(cap >> 1);
    this.#to = work.i32(cap >> 1);
  }

  start(id: number): number {
    return this.#from[id]!;
  }

  end(id: number): number {
    return this.#to[id]!;
  }

  /** The id of vals[s, e), ABSENT, or CROWDED. */
  find(s: number, e: number): number {
    const slots = this.#slots;
    const mask = slots.length - 1;
    let slot = hashBytes(this.#vals, this.#dv, s, e) & mask;
    for (let c = slots[slot]!, probes = 0; c >= 0; c = slots[slot]!) {
      if (bytesEqual(this.#vals, this.#dv, s, e, this.#from[c]!, this.#to[c]!)) return c;
      if (++probes === MAX_PROBES) return CROWDED;
      slot = (slot + 1) & mask;
    }
    this.#free = slot;
    return ABSENT;
  }

  /** Adds vals[s, e), which the last find() gave ABSENT for; returns its id. */
  add(s: number, e: number): number {
    const id = this.size++;
    this.#slots[this.#free] = id;
    this.#from[id] = s;
    this.#to[id] = e;
    if (2 * this.size >= this.#slots.length) this.#grow();
    return id;
  }

  #grow(): void {
    const cap = 2 * this.#slots.length;
    const from = work.i32(cap >> 1);
    const to = work.i32(cap >> 1);
    from.set(this.#from.subarray(0, this.size));
    to.set(this.#to.subarray(0, this.size));
    this.#from = from;
    this.#to = to;
    const slots = (this.#slots = work.i32(cap).fill(-1));
    for (let id = 0; id < this.size; id++) {
      let slot = hashBytes(this.#vals, this.#dv, from[id]!, to[id]!) & (cap - 1);
      while (slots[slot]! >= 0) slot = (slot + 1) & (cap - 1);
      slots[slot] = id;
    }
  }
}

/**
 * One column chunk: a data page of the repetition and definition levels (RLE/bit-packed,
 * length-prefixed) and the values, PLAIN or, for strings that repeat, as indices into a
 * dictionary page (as DuckDB writes them: its readers keep dictionary strings as dictionary
 * vectors, which scans and label matchers over flush files need); each page zstd.
 */
function encodeChunk(leaf: StoredLeaf, g: Gathered): Chunk {
  const parts: Uint8Array[] = [];
  const constant = g.constantDef;
  const levelRuns = (levels: Uint8Array, max: number, same: number | undefined) => {
    const runs = same === undefined ? encodeLevelRuns(levels, levels.length, bitWidth(max), max, workBytes) : encodeRepeatedRun(g.levels, same, bitWidth(max), workBytes);
    const len = work.u8(4);
    new DataView(len.buffer, len.byteOffset, 4).setUint32(0, runs.length, true);
    parts.push(len, runs);
  };
  if (leaf.maxRep > 0) levelRuns(g.reps!, leaf.maxRep, constant === undefined ? undefined : 0);
  levelRuns(g.defs, leaf.maxDef, constant);
  let present = 0;
  if (constant !== undefined) present = constant === leaf.maxDef ? g.levels : 0;
  else for (let i = 0; i < g.levels; i++) if (g.defs[i] === leaf.maxDef) present++;
  const dictionary = g.dictionary ?? (leaf.type === 'string' && present > 0 ? dictionaryOf(g.vals, present) : undefined);
  let dict: Chunk['dict'];
  let dictBytes = 0;
  if (dictionary) {
    const page = zstd(dictionary.page);
    const header = dictionaryPageHeader(dictionary.size, dictionary.page.length, page.length, pageCrc(page));
    dict = { header, page };
    dictBytes = header.length + dictionary.page.length;
    // Dictionary indices as a data page holds them: their bit width (one byte), then the RLE/bit-packed hybrid.
    const width = Math.max(1, bitWidth(dictionary.size - 1));
    parts.push(Uint8Array.of(width), encodeLevelRuns(dictionary.indices, dictionary.indices.length, width, 0xffffffff, workBytes));
  } else parts.push(leaf.type === 'boolean' ? packBooleans([g.vals]) : g.vals);
  let bodyBytes = 0;
  for (const part of parts) bodyBytes += part.length;
  const body = work.u8(bodyBytes);
  for (let i = 0, at = 0; i < parts.length; at += parts[i]!.length, i++) body.set(parts[i]!, at);
  const page = zstd(body);
  const header = dataPageHeader(g.levels, body.length, page.length, dictionary ? RLE_DICTIONARY : PLAIN, pageCrc(page));
  return {
    dict,
    header,
    page,
    levels: g.levels,
    uncompressed: dictBytes + header.length + body.length,
    stats: leaf.stats ? (g.stats ?? chunkStats(leaf.type, g, present)) : undefined,
  };
}

/** Bounds of the 8-byte little-endian values over every chunk's statistics, as bigints. */
function longBounds(chunks: readonly Chunk[]): [bigint, bigint] {
  let min: bigint | undefined;
  let max: bigint | undefined;
  for (const c of chunks) {
    if (!c.stats?.min || !c.stats.max) continue;
    const lo = new DataView(c.stats.min.buffer, c.stats.min.byteOffset, 8).getBigInt64(0, true);
    const hi = new DataView(c.stats.max.buffer, c.stats.max.byteOffset, 8).getBigInt64(0, true);
    if (min === undefined || lo < min) min = lo;
    if (max === undefined || hi > max) max = hi;
  }
  return [min ?? 0n, max ?? 0n];
}

/**
 * Writes the batches (one schema, read by readColumnBatch; at least one row) to `path` as the
 * plan's table, sorted; returns what WrittenFile reports besides the path and size.
 */
export async function writeSortedBatchParquet(
  path: string,
  plan: SortedParquetPlan,
  batches: readonly ColumnBatchView[],
  opts: { attributeTypes?: boolean } = {},
): Promise<SortedParquetResult & { attributeTypes?: AttributeTypeCount[] }> {
  let rows = 0;
  for (const b of batches) rows += b.rows;
  if (rows === 0) throw new TypeError('no rows to write');
  const shapes = batches[0]!.schema.leaves;
  const groups: [number, number][] = [];
  for (let from = 0; from < rows; from += plan.rowGroupSize) groups.push([from, Math.min(rows, from + plan.rowGroupSize)]);
  let ids: string[];
  let chunks: Chunk[][];
  // Attribute key counts from the key leaves' dictionaries; a leaf without one (mostly distinct
  // keys) leaves them to the caller (attributeKeyCounts).
  const keyCounts: Partial<Record<AttributeType, Map<string, number>>> = {};
  let keysComplete = true;
  // Everything of this flush in working memory is given back before the first await (the
  // chunks hold their own compressed pages), so flushes on one thread never share it.
  const base = work.mark();
  try {
    // Leaves that the sort, the ids or more than one stored leaf read are joined once for the
    // whole flush; the others with each stored leaf's temporaries, given back after it.
    const uses = new Map<number, number>();
    for (const { source: s } of plan.leaves) if (s.kind === 'batch' || s.kind === 'micros') uses.set(s.index, (uses.get(s.index) ?? 0) + 1);
    const kept = new Map<number, RowLeaf>();
    const keep = (index: number) => {
      let l = kept.get(index);
      if (!l) kept.set(index, (l = joinLeaf(batches, index, shapes[index]!, rows)));
      return l;
    };
    const keys = plan.sortKeys.map((k) => ({ leaf: keep(k.index), type: k.type, maxDef: shapes[k.index]!.maxDef }));
    if (plan.idLeaf !== undefined) keep(plan.idLeaf);
    for (const [index, n] of uses) if (n > 1) keep(index);
    // Labels read their maps' leaves whole: joined once, beside the maps' own stored leaves.
    for (const { source: s } of plan.leaves) {
      if (s.kind !== 'label') continue;
      for (const m of s.maps) {
        keep(m.key);
        keep(m.value);
      }
    }

    const order = sortRows(rows, keys);
    ids = plan.idLeaf === undefined ? [] : distinctOf(keep(plan.idLeaf), rows, shapes[plan.idLeaf]!.maxDef).values.map((v) => Buffer.from(v, 'latin1').toString('utf8'));

    // Leaf by leaf, every row group's chunk.
    chunks = plan.leaves.map((leaf, l) => {
      const mark = work.mark();
      const src = leaf.source;
      const keyType = opts.attributeTypes ? plan.keyLeaves.get(l) : undefined;
      // A leaf NULL (or an empty list or map) in every row: its levels are one value, nothing to join or gather.
      const constant = src.kind === 'null' ? 0 : src.kind === 'batch' && !kept.has(src.index) ? constantDef(batches, src.index) : -1;
      if (constant >= 0) {
        // A key leaf of maps empty in every row: counted, with no keys.
        if (keyType) keyCounts[keyType] ??= new Map();
        const out = groups.map(([from, to]) => encodeChunk(leaf, constantGroup(to - from, constant, leaf.maxRep)));
        work.release(mark);
        return out;
      }
      const rowLeaf =
        src.kind === 'null'
          ? nullLeaf(rows, leaf.maxRep)
          : src.kind === 'label'
            ? labelLeaf(src, kept, shapes, rows)
            : (kept.get(src.index) ?? joinLeaf(batches, src.index, shapes[src.index]!, rows));
      const tally: KeyTally | undefined = keyType ? { counts: (keyCounts[keyType] ??= new Map()), counted: false } : undefined;
      const indexed = leaf.type === 'string' && (src.kind === 'batch' || src.kind === 'label') ? gatherStringIndices(rowLeaf, leaf.maxDef, order, plan.rowGroupSize, leaf.stats, tally) : undefined;
      if (tally && !tally.counted) keysComplete = false;
      if (indexed) {
        const out = indexed.map((g) => encodeChunk(leaf, g));
        work.release(mark);
        return out;
      }
      const sorted = gatherLeaf(rowLeaf, leaf.type, leaf.maxDef, order, plan.rowGroupSize);
      if (src.kind === 'micros') nanosToMicros(sorted.vals);
      const out = groups.map((_, g) => encodeChunk(leaf, groupOf(sorted, g)));
      work.release(mark);
      return out;
    });
  } finally {
    work.release(base);
    if (base === 0) work.reset();
  }

  let sizeBytes = 0;
  const file = await open(path, 'w');
  try {
    const parts: Uint8Array[] = [PAR1];
    let offset = PAR1.length;
    const offsets = chunks.map((perLeaf) => perLeaf.map(() => 0));
    for (let g = 0; g < groups.length; g++) {
      for (let l = 0; l < chunks.length; l++) {
        const c = chunks[l]![g]!;
        offsets[l]![g] = offset;
        if (c.dict) parts.push(c.dict.header, c.dict.page);
        parts.push(c.header, c.page);
        offset += chunkBytes(c);
      }
    }
    const meta = new ThriftWriter()
      .i32(1, 1)
      .listStruct(2, plan.elements, writeSchemaElement)
      .i64(3, rows)
      .listStruct(4, groups, (t, [from, to], g) => {
        let bytes = 0;
        t.listStruct(1, plan.leaves, (c, leaf, l) => {
          const chunk = chunks[l]![g]!;
          bytes += chunk.uncompressed;
          const at = offsets[l]![g]!;
          writeColumnChunkStart(c, {
            type: leaf.type,
            path: leaf.path,
            codec: ZSTD,
            levels: chunk.levels,
            uncompressed: chunk.uncompressed,
            compressed: chunkBytes(chunk),
            offset: at,
            ...(chunk.dict ? { dataOffset: at + chunk.dict.header.length + chunk.dict.page.length } : {}),
          });
          const s = chunk.stats;
          if (s) {
            c.beginStruct(12).i64(3, s.nulls);
            if (s.max && s.min) c.binary(5, s.max).binary(6, s.min);
            c.endStruct();
          }
          c.endStruct();
        });
        t.i64(2, bytes);
        t.i64(3, to - from);
      })
      .string(6, 'floe sorted column batches')
      .end();
    const footer = fileFooter(meta);
    parts.push(footer);
    sizeBytes = offset + footer.length;
    await writeParts(file, parts);
  } finally {
    await file.close();
  }

  const [minStartNs, maxStartNs] = longBounds(chunks[plan.timeLeaf]!);
  const [minTimestampUs, maxTimestampUs] = longBounds(chunks[plan.timestampLeaf]!);
  const result = { sizeBytes, rowCount: rows, minStartNs, maxStartNs, minTimestampUs, maxTimestampUs, ids };
  if (!opts.attributeTypes || !keysComplete) return result;
  const attributeTypes: AttributeTypeCount[] = [];
  for (const [type, counts] of Object.entries(keyCounts) as [AttributeType, Map<string, number>][]) for (const [key, count] of counts) attributeTypes.push({ key, type, count });
  return { ...result, attributeTypes };
}
