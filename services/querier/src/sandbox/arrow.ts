import {
  Binary,
  Bool,
  DateDay,
  Field,
  Float32,
  Float64,
  Int16,
  Int32,
  Int64,
  Int8,
  List,
  Map_,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMicrosecond,
  TimestampMillisecond,
  TimestampNanosecond,
  TimestampSecond,
  Uint16,
  Uint32,
  Uint64,
  Uint8,
  Utf8,
  makeData,
  type Data,
  type DataType,
} from 'apache-arrow';
import {
  DuckDBTypeId,
  type DuckDBArrayType,
  type DuckDBBlobValue,
  type DuckDBDataChunk,
  type DuckDBListVector,
  type DuckDBVector,
  type DuckDBDateValue,
  type DuckDBDecimalValue,
  type DuckDBListType,
  type DuckDBListValue,
  type DuckDBArrayValue,
  type DuckDBMapType,
  type DuckDBMapValue,
  type DuckDBStructType,
  type DuckDBStructValue,
  type DuckDBTimestampMillisecondsValue,
  type DuckDBTimestampNanosecondsValue,
  type DuckDBTimestampSecondsValue,
  type DuckDBTimestampValue,
  type DuckDBType,
  type DuckDBValue,
} from '@duckdb/node-api';
import { SandboxError } from './errors.ts';

/**
 * DuckDB → Arrow type mapping:
 *   BOOLEAN→Bool; TINYINT/SMALLINT/INTEGER/BIGINT→Int8/16/32/64; UTINYINT/USMALLINT/UINTEGER/UBIGINT→Uint8/16/32/64;
 *   FLOAT→Float32; DOUBLE→Float64; DECIMAL→Float64 (lossy beyond 2^53);
 *   VARCHAR/ENUM/UUID→Utf8; HUGEINT/UHUGEINT→Utf8 (exact decimal text);
 *   BLOB→Binary; DATE→Date(day);
 *   TIMESTAMP→Timestamp(µs), TIMESTAMP WITH TIME ZONE→Timestamp(µs, "UTC"),
 *   TIMESTAMP_S/_MS/_NS→Timestamp(s/ms/ns);
 *   LIST and ARRAY→List; STRUCT→Struct; MAP(K, V)→Map_<K, V>;
 *   anything else (TIME, INTERVAL, BIT, UNION, VARIANT, GEOMETRY, NULL…)→Utf8 of DuckDB's string form.
 */
export interface ColumnConverter {
  readonly type: DataType;
  build(values: readonly DuckDBValue[]): Data;
  /**
   * Builds from DuckDB's vector without a JS value per row, where that is much cheaper than
   * build(values): lists of numbers (PromQL's per-series points), whose values would otherwise
   * come as one list object per row and one JS array per list.
   */
  buildVector?(vector: DuckDBVector, length: number): Data;
}

/** A converter that can also copy items of a DuckDB vector straight into its Arrow buffer. */
interface GatheringConverter extends ColumnConverter {
  /** Items [starts[e], starts[e] + lengths[e]) of `vector` for each entry e, concatenated (`total` items). */
  gather(vector: DuckDBVector, starts: Int32Array, lengths: Int32Array, total: number): Data;
}

type NumArrayCtor =
  | Int8ArrayConstructor
  | Int16ArrayConstructor
  | Int32ArrayConstructor
  | Uint8ArrayConstructor
  | Uint16ArrayConstructor
  | Uint32ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor;

function validity(values: readonly DuckDBValue[]): { nullBitmap: Uint8Array | undefined; nullCount: number } {
  let nullCount = 0;
  for (const v of values) if (v === null) nullCount++;
  if (nullCount === 0) return { nullBitmap: undefined, nullCount: 0 };
  const bitmap = new Uint8Array((values.length + 7) >> 3);
  for (let i = 0; i < values.length; i++) if (values[i] !== null) bitmap[i >> 3]! |= 1 << (i & 7);
  return { nullBitmap: bitmap, nullCount };
}

/**
 * The items of a fixed-width DuckDB vector as its own typed array, when it has no NULL at all;
 * undefined otherwise (then items are read one by one). node-api keeps both fields private; the
 * shape is checked here and pinned by arrow.test.ts, so a node-api change costs speed, not
 * correctness.
 */
export function denseItems(vector: DuckDBVector, Ctor: NumArrayCtor): ArrayLike<number> | undefined {
  const { items, validity } = vector as unknown as { items?: unknown; validity?: unknown };
  if (!(items instanceof Ctor) || items.length !== vector.itemCount) return undefined;
  // node-api leaves the mask out (null) when DuckDB has none: every item is valid.
  if (typeof validity !== 'object' || validity === null || !('data' in validity) || validity.data !== null) return undefined;
  return items;
}

/**
 * Whether each row of a list vector is valid, read from the vector's NULL mask (private in
 * node-api, hence checked) rather than through getItemVector, which copies the row's items just
 * to say it is not NULL. Pinned by arrow.test.ts; undefined if node-api changed its shape.
 */
export function listValidity(lists: DuckDBListVector): { itemValid(row: number): boolean } | undefined {
  const validity = (lists as unknown as { validity?: unknown }).validity;
  if (typeof validity !== 'object' || validity === null || !('itemValid' in validity) || typeof validity.itemValid !== 'function') return undefined;
  return validity as { itemValid(row: number): boolean };
}

/** Whether entry e's items start where entry e - 1's end, the first at 0 (empty entries aside). */
function itemsInOrder(starts: Int32Array, lengths: Int32Array): boolean {
  let at = 0;
  for (let e = 0; e < starts.length; e++) {
    const n = lengths[e]!;
    if (n === 0) continue;
    if (starts[e] !== at) return false;
    at += n;
  }
  return true;
}

/** `raw`: the JS value of an item is its stored number (so a NULL-free run can be copied whole). */
function numeric(type: DataType, Ctor: NumArrayCtor, get: (v: DuckDBValue) => number, raw = false): GatheringConverter {
  return {
    type,
    build(values) {
      const data = new Ctor(values.length);
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (v !== null) data[i] = get(v);
      }
      return makeData({ type, length: values.length, data, ...validity(values) } as never);
    },
    gather(vector, starts, lengths, total) {
      const dense = raw ? denseItems(vector, Ctor) : undefined;
      // Lists whose items lie back to back from the first (DuckDB lays out an aggregate's lists
      // so) are the items themselves: node-api's vector already holds a copy of its own, so
      // copying it again only costs fresh memory (a day of 500 series: 3 lists of 360k doubles).
      if (dense && itemsInOrder(starts, lengths)) return makeData({ type, length: total, data: (dense as InstanceType<NumArrayCtor>).subarray(0, total), nullCount: 0 } as never);
      const data = new Ctor(total);
      if (dense) {
        let at = 0;
        for (let e = 0; e < starts.length; e++) {
          const start = starts[e]!;
          const n = lengths[e]!;
          data.set((dense as typeof data).subarray(start, start + n), at);
          at += n;
        }
        return makeData({ type, length: total, data, nullCount: 0 } as never);
      }
      let nullBitmap: Uint8Array | undefined;
      let nullCount = 0;
      let at = 0;
      for (let e = 0; e < starts.length; e++) {
        for (let k = starts[e]!, end = k + lengths[e]!; k < end; k++, at++) {
          const v = vector.getItem(k);
          if (v !== null) {
            data[at] = get(v);
            continue;
          }
          nullBitmap ??= new Uint8Array((total + 7) >> 3).fill(0xff);
          nullBitmap[at >> 3]! &= ~(1 << (at & 7));
          nullCount++;
        }
      }
      return makeData({ type, length: total, data, nullBitmap, nullCount } as never);
    },
  };
}

function bigints(type: DataType, unsigned: boolean, get: (v: DuckDBValue) => bigint): ColumnConverter {
  return {
    type,
    build(values) {
      const data = unsigned ? new BigUint64Array(values.length) : new BigInt64Array(values.length);
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (v !== null) data[i] = get(v);
      }
      return makeData({ type, length: values.length, data, ...validity(values) } as never);
    },
  };
}

const bool: ColumnConverter = {
  type: new Bool(),
  build(values) {
    const data = new Uint8Array((values.length + 7) >> 3);
    for (let i = 0; i < values.length; i++) if (values[i] === true) data[i >> 3]! |= 1 << (i & 7);
    return makeData({ type: this.type, length: values.length, data, ...validity(values) } as never);
  },
};

const encoder = new TextEncoder();

function variableWidth(type: DataType, toBytes: (v: DuckDBValue) => Uint8Array): ColumnConverter {
  return {
    type,
    build(values) {
      const chunks: Uint8Array[] = [];
      const valueOffsets = new Int32Array(values.length + 1);
      let total = 0;
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (v !== null) {
          const bytes = toBytes(v);
          chunks.push(bytes);
          total += bytes.length;
        }
        valueOffsets[i + 1] = total;
      }
      const data = new Uint8Array(total);
      let at = 0;
      for (const c of chunks) {
        data.set(c, at);
        at += c.length;
      }
      return makeData({ type, length: values.length, valueOffsets, data, ...validity(values) } as never);
    },
  };
}

/** Arrow's Utf8 offsets are int32: one batch's text must stay below 2 GiB. */
const MAX_TEXT_BYTES = 0x7fff_ffff;

/**
 * Utf8 columns: every string encoded straight into one growing buffer (encodeInto), not into a
 * new array each that is then copied: result sets of labels are mostly many short strings.
 * encodeInto measured faster than Buffer#write for short strings, on par for long ones.
 */
function text(toString: (v: DuckDBValue) => string): ColumnConverter {
  const type = new Utf8();
  return {
    type,
    build(values) {
      const valueOffsets = new Int32Array(values.length + 1);
      let data = new Uint8Array(Math.max(64, values.length * 16));
      let at = 0;
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (v !== null) {
          const str = toString(v);
          // A UTF-16 code unit takes at most 3 bytes of UTF-8. Only when that bound does not fit
          // is the string measured, so a long value reserves its size, not three times it.
          if (at + str.length * 3 > data.length) {
            const need = Buffer.byteLength(str, 'utf8');
            if (at + need > MAX_TEXT_BYTES) {
              throw new SandboxError('bad_sql', `result column text exceeds ${MAX_TEXT_BYTES} bytes in one batch of ${values.length} rows: select fewer or shorter values`);
            }
            if (at + need > data.length) {
              const grown = new Uint8Array(Math.min(MAX_TEXT_BYTES, Math.max(data.length * 2, at + need)));
              grown.set(data.subarray(0, at));
              data = grown;
            }
          }
          at += encoder.encodeInto(str, data.subarray(at)).written;
        }
        valueOffsets[i + 1] = at;
      }
      // The batch keeps its buffer alive: past half the text again in slack, keep an exact copy.
      const bytes = data.length - at > Math.max(64 * 1024, at / 2) ? data.slice(0, at) : data.subarray(0, at);
      return makeData({ type, length: values.length, valueOffsets, data: bytes, ...validity(values) } as never);
    },
  };
}

const stringForm = (v: DuckDBValue): string => (typeof v === 'string' ? v : String(v));

const gathers = (c: ColumnConverter): c is GatheringConverter => typeof (c as Partial<GatheringConverter>).gather === 'function';

function list(child: ColumnConverter, items: (v: DuckDBValue) => readonly DuckDBValue[], fromVector = false): ColumnConverter {
  const type = new List(new Field('item', child.type, true));
  const buildVector =
    fromVector && gathers(child)
      ? (vector: DuckDBVector, length: number): Data => {
          const lists = vector as DuckDBListVector;
          const mask = listValidity(lists);
          const valueOffsets = new Int32Array(length + 1);
          const starts = new Int32Array(length);
          const lengths = new Int32Array(length);
          let nullBitmap: Uint8Array | undefined;
          let nullCount = 0;
          for (let i = 0; i < length; i++) {
            // A NULL list has no entry to read (its offset and length are undefined).
            if (mask ? !mask.itemValid(i) : lists.getItemVector(i) === null) {
              nullBitmap ??= new Uint8Array((length + 7) >> 3).fill(0xff);
              nullBitmap[i >> 3]! &= ~(1 << (i & 7));
              nullCount++;
            } else {
              starts[i] = lists.getEntryOffset(i);
              lengths[i] = lists.getEntryLength(i);
            }
            valueOffsets[i + 1] = valueOffsets[i]! + lengths[i]!;
          }
          const childData = child.gather(lists.childVector, starts, lengths, valueOffsets[length]!);
          return makeData({ type, length, valueOffsets, child: childData, nullBitmap, nullCount } as never);
        }
      : undefined;
  return {
    type,
    buildVector,
    build(values) {
      const valueOffsets = new Int32Array(values.length + 1);
      const flat: DuckDBValue[] = [];
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (v !== null) for (const item of items(v)) flat.push(item);
        valueOffsets[i + 1] = flat.length;
      }
      return makeData({ type, length: values.length, valueOffsets, child: child.build(flat), ...validity(values) } as never);
    },
  };
}

function struct(names: readonly string[], children: readonly ColumnConverter[]): ColumnConverter {
  const type = new Struct(names.map((n, i) => new Field(n, children[i]!.type, true)));
  return {
    type,
    build(values) {
      const columns: DuckDBValue[][] = names.map(() => new Array<DuckDBValue>(values.length));
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        const entries = v === null ? undefined : (v as DuckDBStructValue).entries;
        names.forEach((n, c) => {
          columns[c]![i] = entries?.[n] ?? null;
        });
      }
      const childData = children.map((conv, c) => conv.build(columns[c]!));
      return makeData({ type, length: values.length, children: childData, ...validity(values) } as never);
    },
  };
}

function map(key: ColumnConverter, value: ColumnConverter): ColumnConverter {
  const entryType = new Struct([new Field('key', key.type, false), new Field('value', value.type, true)]);
  const type = new Map_(new Field('entries', entryType, false), false);
  return {
    type,
    build(values) {
      const valueOffsets = new Int32Array(values.length + 1);
      const keys: DuckDBValue[] = [];
      const vals: DuckDBValue[] = [];
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (v !== null) {
          for (const e of (v as DuckDBMapValue).entries) {
            keys.push(e.key);
            vals.push(e.value);
          }
        }
        valueOffsets[i + 1] = keys.length;
      }
      const child = makeData({
        type: entryType,
        length: keys.length,
        nullCount: 0,
        children: [key.build(keys), value.build(vals)],
      } as never);
      return makeData({ type, length: values.length, valueOffsets, child, ...validity(values) } as never);
    },
  };
}

export function converterFor(t: DuckDBType): ColumnConverter {
  switch (t.typeId) {
    case DuckDBTypeId.BOOLEAN:
      return bool;
    case DuckDBTypeId.TINYINT:
      return numeric(new Int8(), Int8Array, Number, true);
    case DuckDBTypeId.SMALLINT:
      return numeric(new Int16(), Int16Array, Number, true);
    case DuckDBTypeId.INTEGER:
      return numeric(new Int32(), Int32Array, Number, true);
    case DuckDBTypeId.BIGINT:
      return bigints(new Int64(), false, (v) => v as bigint);
    case DuckDBTypeId.UTINYINT:
      return numeric(new Uint8(), Uint8Array, Number, true);
    case DuckDBTypeId.USMALLINT:
      return numeric(new Uint16(), Uint16Array, Number, true);
    case DuckDBTypeId.UINTEGER:
      return numeric(new Uint32(), Uint32Array, Number, true);
    case DuckDBTypeId.UBIGINT:
      return bigints(new Uint64(), true, (v) => v as bigint);
    case DuckDBTypeId.FLOAT:
      return numeric(new Float32(), Float32Array, Number, true);
    case DuckDBTypeId.DOUBLE:
      return numeric(new Float64(), Float64Array, Number, true);
    case DuckDBTypeId.DECIMAL:
      return numeric(new Float64(), Float64Array, (v) => (v as DuckDBDecimalValue).toDouble());
    case DuckDBTypeId.DATE:
      return numeric(new DateDay(), Int32Array, (v) => (v as DuckDBDateValue).days);
    case DuckDBTypeId.TIMESTAMP:
      return bigints(new TimestampMicrosecond(), false, (v) => (v as DuckDBTimestampValue).micros);
    case DuckDBTypeId.TIMESTAMP_TZ:
      return bigints(new TimestampMicrosecond('UTC'), false, (v) => (v as DuckDBTimestampValue).micros);
    case DuckDBTypeId.TIMESTAMP_S:
      return bigints(new TimestampSecond(), false, (v) => (v as DuckDBTimestampSecondsValue).seconds);
    case DuckDBTypeId.TIMESTAMP_MS:
      return bigints(new TimestampMillisecond(), false, (v) => (v as DuckDBTimestampMillisecondsValue).millis);
    case DuckDBTypeId.TIMESTAMP_NS:
      return bigints(new TimestampNanosecond(), false, (v) => (v as DuckDBTimestampNanosecondsValue).nanos);
    case DuckDBTypeId.VARCHAR:
    case DuckDBTypeId.ENUM:
      return text(stringForm);
    case DuckDBTypeId.BLOB:
      return variableWidth(new Binary(), (v) => (v as DuckDBBlobValue).bytes);
    case DuckDBTypeId.LIST:
      return list(converterFor((t as DuckDBListType).valueType), (v) => (v as DuckDBListValue).items, true);
    case DuckDBTypeId.ARRAY:
      return list(converterFor((t as DuckDBArrayType).valueType), (v) => (v as DuckDBArrayValue).items);
    case DuckDBTypeId.STRUCT: {
      const st = t as DuckDBStructType;
      return struct(st.entryNames, st.entryTypes.map(converterFor));
    }
    case DuckDBTypeId.MAP: {
      const mt = t as DuckDBMapType;
      return map(converterFor(mt.keyType), converterFor(mt.valueType));
    }
    default:
      // UUID, HUGEINT, UHUGEINT (exact decimal text), TIME, INTERVAL, BIT, UNION, VARIANT, …
      return text(stringForm);
  }
}

/** Accumulates DuckDB result columns as Arrow record batches (one per DuckDB chunk). */
export class ArrowResultBuilder {
  readonly schema: Schema;
  private readonly converters: ColumnConverter[];
  private readonly structType: Struct;
  private readonly batches: RecordBatch[] = [];
  private rows = 0;
  private bytes = 0;

  constructor(names: readonly string[], types: readonly DuckDBType[]) {
    this.converters = types.map(converterFor);
    const fields = names.map((n, i) => new Field(n, this.converters[i]!.type, true));
    this.schema = new Schema(fields);
    this.structType = new Struct(fields);
  }

  get rowCount(): number {
    return this.rows;
  }

  /** The Arrow buffers held so far (values, offsets, validity; children included). */
  get byteLength(): number {
    return this.bytes;
  }

  /** Adds the first `length` rows of a DuckDB chunk. */
  addChunk(chunk: DuckDBDataChunk, length: number): void {
    if (length === 0) return;
    const children = this.converters.map((c, i) => {
      const vector = chunk.getColumnVector(i);
      if (c.buildVector) return c.buildVector(vector, length);
      // Only the rows kept: a chunk cut at maxRows is not converted whole.
      const values: DuckDBValue[] = [];
      for (let r = 0; r < length; r++) values.push(vector.getItem(r));
      return c.build(values);
    });
    const data = makeData({ type: this.structType, length, nullCount: 0, children } as never);
    const batch = new RecordBatch(this.schema, data as never);
    this.batches.push(batch);
    this.rows += length;
    this.bytes += batch.data.byteLength;
  }

  /** The result, its schema carrying `metadata` when given. */
  toTable(metadata?: Map<string, string>): Table {
    return new Table(metadata ? new Schema(this.schema.fields, metadata) : this.schema, this.batches);
  }
}
