import { createHash } from 'node:crypto';
import { float64ListAt } from '@floe/flight';
import { Lru } from '@floe/storage';
import type { TimeRange } from './file-resolver.ts';
import { Field, Float64, List, RecordBatch, Schema, Struct, Table, Uint32, Utf8, makeData, vectorFromArray, type Data } from 'apache-arrow';

/**
 * Point lists per series and data file, kept for the planner's point-lists reads
 * (@floe/query planMetricSeriesPoints without labels: `series_hi`, `series_lo`, `series_text`,
 * and the List<DOUBLE> columns `t`, `v`, `stale_t`).
 *
 * A dashboard asks for the same metrics over a window that moves a little at each refresh. Every
 * data file of an Iceberg table is immutable, so what a query selects from a file does not change:
 * the planner also prints a per-file form of the read (without the window, grouped by file too,
 * times as nanoseconds into the file's hour), the querier runs it only for the files it has not
 * kept, keeps each file's lists, and answers the window from the kept lists, cut exactly to it
 * where a file reaches past either end. A file replaced by compaction or expired is never asked
 * for again, and ages out.
 */

/**
 * Lists of one file: columnar, a few objects per file. Times are milliseconds (what the router
 * reads) with the nanoseconds past each millisecond beside them, so a window in nanoseconds cuts
 * them exactly.
 */
export interface FileLists {
  hi: Uint32Array;
  lo: Uint32Array;
  /** Non-hex ids (null where the halves hold the id); undefined when every row's halves do. */
  text: Array<string | null> | undefined;
  /** Row i's points are t/tNs/v[tOff[i], tOff[i+1]), its staleness markers staleT/staleNs[sOff[i], sOff[i+1]). */
  tOff: Int32Array;
  t: Float64Array;
  tNs: Uint32Array;
  v: Float64Array;
  sOff: Int32Array;
  staleT: Float64Array;
  staleNs: Uint32Array;
}

const EMPTY: FileLists = {
  hi: new Uint32Array(0),
  lo: new Uint32Array(0),
  text: undefined,
  tOff: new Int32Array(1),
  t: new Float64Array(0),
  tNs: new Uint32Array(0),
  v: new Float64Array(0),
  sOff: new Int32Array(1),
  staleT: new Float64Array(0),
  staleNs: new Uint32Array(0),
};

const bytesOf = (f: FileLists) =>
  64 + f.hi.byteLength * 2 + f.tOff.byteLength * 2 + f.t.byteLength + f.tNs.byteLength + f.v.byteLength + f.staleT.byteLength + f.staleNs.byteLength + (f.text ? f.text.length * 8 : 0);

export class SeriesListsCache {
  readonly #lru: Lru<string, FileLists>;

  constructor(maxBytes: number) {
    this.#lru = new Lru(maxBytes, bytesOf);
  }

  /** Files' lists kept, their size in bytes (about), and the most bytes kept. */
  get kept(): { files: number; bytes: number; maxBytes: number } {
    return { files: this.#lru.size, bytes: this.#lru.weight, maxBytes: this.#lru.maxWeight };
  }

  get(key: string): FileLists | undefined {
    return this.#lru.get(key);
  }

  set(key: string, lists: FileLists): void {
    this.#lru.set(key, lists);
  }
}

/** The cache key of a file's lists under a per-file query: the file and the query (SQL and values). */
export function fileListsKeyer(scope: string, sql: string, params: readonly unknown[]): (path: string) => string {
  const digest = createHash('sha256').update(sql).update('\u0000').update(JSON.stringify(params)).digest('base64');
  return (path) => `${scope}\u0000${digest}\u0000${path}`;
}

/** Whether every row time a file may hold lies in [startNs, endNs] (inclusive bounds). */
export function fileInside(time: TimeRange | undefined, startNs: bigint, endNs: bigint): boolean {
  return time !== undefined && time.first >= startNs && time.last <= endNs;
}

function listColumn(batch: RecordBatch, name: string): Data {
  const d = batch.getChild(name)?.data[0];
  if (!d || d.children.length !== 1 || !(d.children[0]!.values instanceof Float64Array)) throw new Error(`point lists: column ${name} is not a list of doubles`);
  return d;
}

function uint32Column(batch: RecordBatch, name: string): Uint32Array {
  const v = batch.getChild(name)?.toArray();
  if (!(v instanceof Uint32Array)) throw new Error(`point lists: column ${name} is not UINTEGER`);
  return v;
}

/** Row i of a List<Float64> chunk (empty for NULL). */
const listAt = (d: Data, i: number): Float64Array => float64ListAt(d, i) ?? EMPTY.t;

/** Rows being gathered for one FileLists; times come as nanoseconds into the file's hour. */
class ListsBuilder {
  hi: number[] = [];
  lo: number[] = [];
  text: Array<string | null> = [];
  anyText = false;
  t: Float64Array[] = [];
  v: Float64Array[] = [];
  s: Float64Array[] = [];
  readonly #hourMs: number;

  /** `hourStartNs`: the start of the file's hour partition. */
  constructor(hourStartNs: bigint) {
    this.#hourMs = Number(hourStartNs / 1_000_000n);
  }

  add(hi: number, lo: number, text: string | null, t: Float64Array, v: Float64Array, s: Float64Array): void {
    if (t.length !== v.length) throw new Error('point lists: times and values differ in length');
    this.hi.push(hi);
    this.lo.push(lo);
    this.text.push(text);
    if (text !== null) this.anyText = true;
    this.t.push(t);
    this.v.push(v);
    this.s.push(s);
  }

  /** Copies the rows' points into lists of their own (nothing of the query's buffers is kept). */
  build(): FileLists {
    const n = this.hi.length;
    const tOff = new Int32Array(n + 1);
    const sOff = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) {
      tOff[i + 1] = tOff[i]! + this.t[i]!.length;
      sOff[i + 1] = sOff[i]! + this.s[i]!.length;
    }
    const t = new Float64Array(tOff[n]!);
    const tNs = new Uint32Array(tOff[n]!);
    const v = new Float64Array(tOff[n]!);
    const staleT = new Float64Array(sOff[n]!);
    const staleNs = new Uint32Array(sOff[n]!);
    for (let i = 0; i < n; i++) {
      this.#times(this.t[i]!, t, tNs, tOff[i]!);
      v.set(this.v[i]!, tOff[i]!);
      this.#times(this.s[i]!, staleT, staleNs, sOff[i]!);
    }
    return { hi: Uint32Array.from(this.hi), lo: Uint32Array.from(this.lo), text: this.anyText ? this.text : undefined, tOff, t, tNs, v, sOff, staleT, staleNs };
  }

  /**
   * Nanoseconds into the hour (below 2^42, exact as doubles) → milliseconds since the epoch and
   * the nanoseconds past them: the hour starts on a whole millisecond, and the quotient by 1e6 of
   * an integer below 2^53 floors exactly.
   */
  #times(inHour: Float64Array, ms: Float64Array, ns: Uint32Array, at: number): void {
    const base = this.#hourMs;
    for (let k = 0; k < inHour.length; k++) {
      const x = inHour[k]!;
      const q = Math.floor(x / 1e6);
      ms[at + k] = base + q;
      ns[at + k] = x - q * 1e6;
    }
  }
}

function eachRow(table: Table, row: (batch: RecordBatch, i: number, hi: number, lo: number, text: string | null, t: Float64Array, v: Float64Array, s: Float64Array) => void): void {
  for (const batch of table.batches) {
    if (batch.numRows === 0) continue;
    const hi = uint32Column(batch, 'series_hi');
    const lo = uint32Column(batch, 'series_lo');
    const text = batch.getChild('series_text');
    if (!text) throw new Error('point lists: no series_text column');
    const allNull = text.nullCount === text.length;
    const t = listColumn(batch, 't_in_hour');
    const v = listColumn(batch, 'v');
    const s = listColumn(batch, 'stale_in_hour');
    for (let i = 0; i < batch.numRows; i++) {
      row(batch, i, hi[i]!, lo[i]!, allNull ? null : ((text.get(i) as string | null) ?? null), listAt(t, i), listAt(v, i), listAt(s, i));
    }
  }
}

/**
 * A per-file point-lists result (its `column` naming each row's file) split into each file's
 * lists; every file asked for gets an entry, empty when it had no rows.
 */
export function splitByFile(table: Table, column: string, files: ReadonlyArray<{ path: string; hourStartNs: bigint }>): Map<string, FileLists> {
  const builders = new Map(files.map((f) => [f.path, new ListsBuilder(f.hourStartNs)]));
  eachRow(table, (batch, i, hi, lo, text, t, v, s) => {
    const file = batch.getChild(column)?.get(i);
    const b = typeof file === 'string' ? builders.get(file) : undefined;
    if (!b) throw new Error('point lists: a row of a file that was not asked for');
    b.add(hi, lo, text, t, v, s);
  });
  return new Map([...builders].map(([p, b]) => [p, b.hi.length === 0 ? EMPTY : b.build()]));
}

const LIST = () => new List(new Field('item', new Float64(), true));
const FIELDS = [
  new Field('series_hi', new Uint32(), true),
  new Field('series_lo', new Uint32(), true),
  new Field('series_text', new Utf8(), true),
  new Field('t', LIST(), true),
  new Field('v', LIST(), true),
  new Field('stale_t', LIST(), true),
];

/**
 * Series numbers by series id, for a merge: a text id by itself, a hex id by its halves (numbers,
 * no key text built per row: a merge visits every series of every file of the window).
 */
class SeriesSlots {
  readonly #byText = new Map<string, number>();
  readonly #byHalves = new Map<number, Map<number, number>>();

  get(f: FileLists, i: number): number | undefined {
    const text = f.text?.[i];
    if (text !== null && text !== undefined) return this.#byText.get(text);
    return this.#byHalves.get(f.hi[i]!)?.get(f.lo[i]!);
  }

  set(f: FileLists, i: number, slot: number): void {
    const text = f.text?.[i];
    if (text !== null && text !== undefined) {
      this.#byText.set(text, slot);
      return;
    }
    let byLo = this.#byHalves.get(f.hi[i]!);
    if (!byLo) this.#byHalves.set(f.hi[i]!, (byLo = new Map()));
    byLo.set(f.lo[i]!, slot);
  }
}

/** Points of a series in one part copied one by one rather than as a subarray. */
const SHORT_RUN = 16;

/** One file's lists for a merge, and whether all of them lie in the window (nothing to cut). */
export interface ListsPart {
  lists: FileLists;
  inside: boolean;
}

/**
 * planMetricSeriesPoints' answer (without labels) from the lists of several files over a window
 * [first, last] in nanoseconds, both inclusive: a row per series with points in the window, its
 * points the concatenation of its lists in the order of the parts (the router orders points by
 * time, as it does the runs of one DuckDB list). A series without staleness markers in the window
 * has NULL `stale_t`, as DuckDB answers.
 */
export function mergeLists(parts: readonly ListsPart[], first: bigint, last: bigint): Table {
  const fMs = Number(first / 1_000_000n);
  const fNs = Number(first % 1_000_000n);
  const lMs = Number(last / 1_000_000n);
  const lNs = Number(last % 1_000_000n);
  const inWindow = (ms: number, ns: number) => (ms > fMs || (ms === fMs && ns >= fNs)) && (ms < lMs || (ms === lMs && ns <= lNs));
  const kept = (times: Float64Array, nanos: Uint32Array, a: number, b: number) => {
    let n = 0;
    for (let k = a; k < b; k++) if (inWindow(times[k]!, nanos[k]!)) n++;
    return n;
  };
  const index = new SeriesSlots();
  const hi: number[] = [];
  const lo: number[] = [];
  const text: Array<string | null> = [];
  const slots: Int32Array[] = [];
  const tLen: number[] = [];
  const sLen: number[] = [];
  for (const { lists: f, inside } of parts) {
    const slot = new Int32Array(f.hi.length);
    for (let i = 0; i < f.hi.length; i++) {
      const nt = inside ? f.tOff[i + 1]! - f.tOff[i]! : kept(f.t, f.tNs, f.tOff[i]!, f.tOff[i + 1]!);
      if (nt === 0) {
        slot[i] = -1;
        continue;
      }
      let s = index.get(f, i);
      if (s === undefined) {
        s = hi.length;
        index.set(f, i, s);
        hi.push(f.hi[i]!);
        lo.push(f.lo[i]!);
        text.push(f.text?.[i] ?? null);
        tLen.push(0);
        sLen.push(0);
      }
      slot[i] = s;
      tLen[s]! += nt;
      sLen[s]! += inside ? f.sOff[i + 1]! - f.sOff[i]! : kept(f.staleT, f.staleNs, f.sOff[i]!, f.sOff[i + 1]!);
    }
    slots.push(slot);
  }
  const n = hi.length;
  const tOff = new Int32Array(n + 1);
  const sOff = new Int32Array(n + 1);
  for (let s = 0; s < n; s++) {
    tOff[s + 1] = tOff[s]! + tLen[s]!;
    sOff[s + 1] = sOff[s]! + sLen[s]!;
  }
  const t = new Float64Array(tOff[n]!);
  const v = new Float64Array(tOff[n]!);
  const staleT = new Float64Array(sOff[n]!);
  // Write cursors: where each series' next part goes.
  const tAt = tOff.slice(0, n);
  const sAt = sOff.slice(0, n);
  parts.forEach(({ lists: f, inside }, p) => {
    const slot = slots[p]!;
    for (let i = 0; i < f.hi.length; i++) {
      const s = slot[i]!;
      if (s < 0) continue;
      const a = f.tOff[i]!;
      const b = f.tOff[i + 1]!;
      const c = f.sOff[i]!;
      const d = f.sOff[i + 1]!;
      let at = tAt[s]!;
      if (inside) {
        // A short run element by element: a flush file holds a point or two of a series, and two
        // subarrays for each cost more than the copy (bench/small-files); a long run as one copy.
        if (b - a > SHORT_RUN) {
          t.set(f.t.subarray(a, b), at);
          v.set(f.v.subarray(a, b), at);
          at += b - a;
        } else {
          for (let k = a; k < b; k++, at++) {
            t[at] = f.t[k]!;
            v[at] = f.v[k]!;
          }
        }
        tAt[s] = at;
        at = sAt[s]!;
        if (d - c > SHORT_RUN) {
          staleT.set(f.staleT.subarray(c, d), at);
          at += d - c;
        } else for (let k = c; k < d; k++) staleT[at++] = f.staleT[k]!;
        sAt[s] = at;
        continue;
      }
      for (let k = a; k < b; k++) {
        if (!inWindow(f.t[k]!, f.tNs[k]!)) continue;
        t[at] = f.t[k]!;
        v[at] = f.v[k]!;
        at++;
      }
      tAt[s] = at;
      at = sAt[s]!;
      for (let k = c; k < d; k++) if (inWindow(f.staleT[k]!, f.staleNs[k]!)) staleT[at++] = f.staleT[k]!;
      sAt[s] = at;
    }
  });
  // stale_t is NULL where a series has no marker (list() FILTER over no rows).
  const staleValid = new Uint8Array((n + 7) >> 3);
  let staleNulls = 0;
  for (let s = 0; s < n; s++) {
    if (sOff[s + 1]! > sOff[s]!) staleValid[s >> 3]! |= 1 << (s & 7);
    else staleNulls++;
  }
  const list = (values: Float64Array, offsets: Int32Array, nullBitmap?: Uint8Array, nullCount = 0) =>
    makeData({
      type: FIELDS[3]!.type as List<Float64>,
      length: n,
      nullCount,
      ...(nullBitmap ? { nullBitmap } : {}),
      valueOffsets: offsets,
      child: makeData({ type: new Float64(), length: values.length, nullCount: 0, data: values }),
    });
  const children = [
    makeData({ type: new Uint32(), length: n, nullCount: 0, data: Uint32Array.from(hi) }),
    makeData({ type: new Uint32(), length: n, nullCount: 0, data: Uint32Array.from(lo) }),
    vectorFromArray(text, new Utf8()).data[0]!,
    list(t, tOff),
    list(v, tOff),
    list(staleT, sOff, staleValid, staleNulls),
  ];
  const schema = new Schema(FIELDS);
  const data = makeData({ type: new Struct(FIELDS), length: n, nullCount: 0, children } as never);
  return new Table(schema, [new RecordBatch(schema, data as never)]);
}
