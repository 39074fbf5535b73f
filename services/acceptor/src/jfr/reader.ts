/**
 * A reader of Java Flight Recorder files (the JDK's recordings and async-profiler's, which the
 * Pyroscope Java agent sends to /ingest?format=jfr), enough to pull stack samples out of them.
 * Written here because no maintained npm package reads JFR.
 *
 * A recording is a sequence of chunks. Each chunk starts with a 68-byte header (magic "FLR\0",
 * version, chunk size, the offsets of its last constant pool and of its metadata, start time,
 * tick frequency, feature flags), then holds events, each `size, type, fields…`. Two kinds of
 * event describe the others: the metadata event (type 0) lists every class with its fields in
 * the order they are written, and the constant pool events (type 1, chained by relative offsets
 * from the last one back to the first) hold the values events refer to by id: threads, stack
 * traces, methods, classes, symbols. Integers are LEB128-style varints when the chunk's
 * compressed-integers flag is set (every recording JDK 11+ writes), fixed big-endian otherwise.
 *
 * Everything read is bounded by the buffer: a malformed file is a JfrError, never a hang (each
 * loop advances or stops), an out-of-range read, or more values than its bytes can hold.
 */

export class JfrError extends Error {}

const HEADER_BYTES = 68;
const MAX_DEPTH = 64;

interface FieldDesc {
  name: string;
  typeId: bigint;
  constantPool: boolean;
  array: boolean;
}

interface ClassDesc {
  id: bigint;
  name: string;
  fields: FieldDesc[];
}

/** A value as read: a primitive, a string, an object of a class's fields, an array, or a pool reference. */
export type JfrValue = null | boolean | number | bigint | string | JfrObject | JfrValue[] | JfrRef;
export interface JfrObject {
  readonly [field: string]: JfrValue;
}
export interface JfrRef {
  readonly pool: bigint;
  readonly id: bigint;
}

export const isRef = (v: JfrValue): v is JfrRef => typeof v === 'object' && v !== null && !Array.isArray(v) && 'pool' in v && 'id' in v && typeof v.pool === 'bigint';

/** One event of a chunk: its class name and its fields as read (references unresolved). */
export interface JfrEvent {
  type: string;
  fields: JfrObject;
}

/** A chunk's header and pools, with reference resolution. */
export interface JfrChunk {
  startNanos: bigint;
  ticksPerSecond: bigint;
  startTicks: bigint;
  /** A referenced constant, or undefined when the pool does not hold it. */
  resolve(ref: JfrRef): JfrValue | undefined;
}

class Cursor {
  pos: number;
  readonly buf: Buffer;
  readonly end: number;
  readonly compressed: boolean;
  constructor(buf: Buffer, start: number, end: number, compressed: boolean) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
    this.compressed = compressed;
  }
  #need(n: number): void {
    if (this.pos + n > this.end) throw new JfrError(`truncated recording: ${n} bytes needed at ${this.pos}, the region ends at ${this.end}`);
  }
  u8(): number {
    this.#need(1);
    return this.buf[this.pos++]!;
  }
  /** JFR's varint: 7 bits a byte, low first, with a continuation bit; the ninth byte is whole. */
  varlong(): bigint {
    let result = 0n;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      result |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) return result;
    }
    return result | (BigInt(this.u8()) << 56n);
  }
  long(): bigint {
    if (this.compressed) return BigInt.asIntN(64, this.varlong());
    this.#need(8);
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }
  int(): number {
    if (this.compressed) return Number(BigInt.asIntN(32, this.varlong()));
    this.#need(4);
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  short(): number {
    if (this.compressed) return Number(BigInt.asIntN(16, this.varlong()));
    this.#need(2);
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  float(): number {
    this.#need(4);
    const v = this.buf.readFloatBE(this.pos);
    this.pos += 4;
    return v;
  }
  double(): number {
    this.#need(8);
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }
  /** A count (array length, string length): never negative, never past what is left. */
  count(): number {
    const n = this.int();
    if (n < 0 || n > this.end - this.pos) throw new JfrError(`implausible count ${n} at ${this.pos}`);
    return n;
  }
  bytes(n: number): Buffer {
    this.#need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  /** Steps over an integer of `width` bytes (a varint of at most nine when compressed). */
  skipInteger(width: 2 | 4 | 8): void {
    if (!this.compressed) {
      this.#need(width);
      this.pos += width;
      return;
    }
    for (let i = 0; i < 8; i++) if ((this.u8() & 0x80) === 0) return;
    this.u8();
  }
  skipBytes(n: number): void {
    this.#need(n);
    this.pos += n;
  }
}

/** A string as JFR encodes one: null, empty, a pool reference, UTF-8, UTF-16 chars or Latin-1. */
function readString(c: Cursor, strings?: readonly string[]): string | JfrRef | null {
  const encoding = c.u8();
  switch (encoding) {
    case 0:
      return null;
    case 1:
      return '';
    case 2: {
      const id = c.long();
      // In the metadata event strings are indexes of its own table; elsewhere, of the String pool.
      return strings ? (strings[Number(id)] ?? '') : { pool: -1n, id };
    }
    case 3:
      return c.bytes(c.count()).toString('utf8');
    case 4: {
      const n = c.count();
      let s = '';
      for (let i = 0; i < n; i++) s += String.fromCharCode(c.int() & 0xffff);
      return s;
    }
    case 5:
      return c.bytes(c.count()).toString('latin1');
    default:
      throw new JfrError(`unknown string encoding ${encoding} at ${c.pos - 1}`);
  }
}

/** Steps over a string as readString reads one. */
function skipString(c: Cursor): void {
  const encoding = c.u8();
  switch (encoding) {
    case 0:
    case 1:
      return;
    case 2:
      return c.skipInteger(8);
    case 3:
    case 5:
      return c.skipBytes(c.count());
    case 4:
      for (let n = c.count(); n > 0; n--) c.skipInteger(4);
      return;
    default:
      throw new JfrError(`unknown string encoding ${encoding} at ${c.pos - 1}`);
  }
}

interface Element {
  name: string;
  attributes: Map<string, string>;
  children: Element[];
}

function readElement(c: Cursor, strings: readonly string[], depth: number): Element {
  if (depth > MAX_DEPTH) throw new JfrError('metadata nested too deep');
  const at = (i: number) => {
    const s = strings[i];
    if (s === undefined) throw new JfrError(`metadata names string ${i} of ${strings.length}`);
    return s;
  };
  const name = at(c.int());
  const attributes = new Map<string, string>();
  for (let i = c.count(); i > 0; i--) attributes.set(at(c.int()), at(c.int()));
  const children: Element[] = [];
  for (let i = c.count(); i > 0; i--) children.push(readElement(c, strings, depth + 1));
  return { name, attributes, children };
}

/** The metadata event: every class by id. */
function readMetadata(c: Cursor): Map<bigint, ClassDesc> {
  c.int(); // size
  if (c.long() !== 0n) throw new JfrError('the metadata offset does not point at a metadata event');
  c.long(); // start time
  c.long(); // duration
  c.long(); // metadata id
  const strings: string[] = [];
  for (let i = c.count(); i > 0; i--) {
    const s = readString(c, strings);
    strings.push(typeof s === 'string' ? s : '');
  }
  const root = readElement(c, strings, 0);
  const classes = new Map<bigint, ClassDesc>();
  const idOf = (text: string | undefined, what: string) => {
    if (text === undefined || !/^-?\d{1,19}$/.test(text)) throw new JfrError(`metadata ${what} ${JSON.stringify(text?.slice(0, 40))} is not a class id`);
    return BigInt(text);
  };
  const visit = (e: Element, depth: number) => {
    if (depth > MAX_DEPTH) return;
    if (e.name === 'class') {
      const id = idOf(e.attributes.get('id'), 'class id');
      const fields = e.children
        .filter((f) => f.name === 'field')
        .map((f) => ({
          name: f.attributes.get('name') ?? '',
          typeId: idOf(f.attributes.get('class'), 'field class'),
          constantPool: f.attributes.get('constantPool') === 'true',
          array: (f.attributes.get('dimension') ?? '0') !== '0',
        }));
      classes.set(id, { id, name: e.attributes.get('name') ?? '', fields });
    }
    for (const child of e.children) visit(child, depth + 1);
  };
  visit(root, 0);
  return classes;
}

/** Reads values of the chunk's classes. */
/**
 * Values left to read in the whole recording. A class without fields reads no bytes, so the bytes
 * alone do not bound the work or the memory; every real value costs at least a byte, so a few per
 * byte is all a recording can hold.
 */
interface Budget {
  left: number;
}

class ValueReader {
  readonly classes: Map<bigint, ClassDesc>;
  readonly #budget: Budget;
  constructor(classes: Map<bigint, ClassDesc>, budget: Budget) {
    this.classes = classes;
    this.#budget = budget;
  }

  /** The class of a value about to be read or skipped, paid for from the budget. */
  #enter(typeId: bigint, depth: number): ClassDesc {
    if (depth > MAX_DEPTH) throw new JfrError('values nested too deep');
    if (--this.#budget.left < 0) throw new JfrError('the recording describes more values than its bytes can hold');
    const cls = this.classes.get(typeId);
    if (!cls) throw new JfrError(`unknown class id ${typeId}`);
    return cls;
  }

  read(c: Cursor, typeId: bigint, depth = 0): JfrValue {
    const cls = this.#enter(typeId, depth);
    switch (cls.name) {
      case 'boolean':
        return c.u8() !== 0;
      case 'byte':
        return (c.u8() << 24) >> 24;
      case 'char':
        return String.fromCharCode(c.int() & 0xffff);
      case 'short':
        return c.short();
      case 'int':
        return c.int();
      case 'long':
        return c.long();
      case 'float':
        return c.float();
      case 'double':
        return c.double();
      case 'java.lang.String': {
        const s = readString(c);
        // A pool reference of a string names the String pool's class.
        return s !== null && typeof s === 'object' ? { pool: typeId, id: s.id } : s;
      }
    }
    const out: Record<string, JfrValue> = {};
    for (const f of cls.fields) out[f.name] = f.array ? this.#array(c, f, depth) : this.#field(c, f, depth);
    return out;
  }

  /** Moves past a value as `read` would, building nothing (a pool's constants are read only when an event refers to them). */
  skip(c: Cursor, typeId: bigint, depth = 0): void {
    const cls = this.#enter(typeId, depth);
    switch (cls.name) {
      case 'boolean':
      case 'byte':
        return c.skipBytes(1);
      case 'char':
      case 'int':
        return c.skipInteger(4);
      case 'short':
        return c.skipInteger(2);
      case 'long':
        return c.skipInteger(8);
      case 'float':
        return c.skipBytes(4);
      case 'double':
        return c.skipBytes(8);
      case 'java.lang.String':
        return skipString(c);
    }
    for (const f of cls.fields) {
      if (!f.array) {
        this.#skipField(c, f, depth);
        continue;
      }
      const n = c.count();
      const start = c.pos;
      for (let i = 0; i < n; i++) {
        this.#skipField(c, f, depth);
        if (i === 0 && n > 1 && c.pos === start) throw new JfrError(`an array of ${n} values that take no bytes at ${start}`);
      }
    }
  }

  #skipField(c: Cursor, f: FieldDesc, depth: number): void {
    if (f.constantPool) c.skipInteger(8);
    else this.skip(c, f.typeId, depth + 1);
  }

  #field(c: Cursor, f: FieldDesc, depth: number): JfrValue {
    return f.constantPool ? { pool: f.typeId, id: c.long() } : this.read(c, f.typeId, depth + 1);
  }

  #array(c: Cursor, f: FieldDesc, depth: number): JfrValue[] {
    const n = c.count();
    const items: JfrValue[] = [];
    const start = c.pos;
    for (let i = 0; i < n; i++) {
      items.push(this.#field(c, f, depth));
      // Elements that take no bytes can only be a crafted class without fields.
      if (i === 0 && n > 1 && c.pos === start) throw new JfrError(`an array of ${n} values that take no bytes at ${start}`);
    }
    return items;
  }
}

/**
 * Where each constant of one pool starts in the chunk, by id: 12 bytes a constant, where reading
 * them all made objects of ~30 bytes for every byte of the pools (an 18 MB recording held 600 MB)
 * and held the event loop for seconds. Constants are read when an event refers to one. An id
 * given again (a later checkpoint) replaces the earlier constant, as in the JDK's reader.
 */
class PoolIndex {
  #ids = new BigInt64Array(16);
  #offsets = new Uint32Array(16);
  #n = 0;
  #sorted = true;

  add(id: bigint, offset: number): void {
    if (this.#n === this.#ids.length) {
      const ids = new BigInt64Array(this.#n * 2);
      ids.set(this.#ids);
      this.#ids = ids;
      const offsets = new Uint32Array(this.#n * 2);
      offsets.set(this.#offsets);
      this.#offsets = offsets;
    }
    if (this.#n > 0 && id < this.#ids[this.#n - 1]!) this.#sorted = false;
    this.#ids[this.#n] = id;
    this.#offsets[this.#n] = offset;
    this.#n++;
  }

  /** The offset of the constant `id` (the last one given), or undefined. */
  find(id: bigint): number | undefined {
    if (!this.#sorted) this.#sort();
    const ids = this.#ids;
    // The last position whose id is at most `id`.
    let lo = 0;
    let hi = this.#n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[mid]! <= id) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && ids[lo - 1] === id ? this.#offsets[lo - 1] : undefined;
  }

  /** By id, keeping the order of equal ids (so the last given stays last). */
  #sort(): void {
    const n = this.#n;
    const ids = this.#ids;
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    order.sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : a - b));
    const sortedIds = new BigInt64Array(n);
    const sortedOffsets = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      sortedIds[i] = ids[order[i]!]!;
      sortedOffsets[i] = this.#offsets[order[i]!]!;
    }
    this.#ids = sortedIds;
    this.#offsets = sortedOffsets;
    this.#sorted = true;
  }
}

/**
 * Reads a recording's chunks, each with its metadata and pools, and hands `onEvent` each event
 * whose class `wanted` accepts, in file order, with its chunk. Events are not kept: a few bytes
 * of an event are a few objects once read, and a gzipped recording of 16 KB held four million of
 * them (a gigabyte) before a stack was counted.
 */
export function readJfr(buf: Buffer, wanted: (className: string) => boolean, onEvent: (event: JfrEvent, chunk: JfrChunk) => void = () => {}): void {
  const budget: Budget = { left: 4 * buf.length + 1024 };
  let at = 0;
  while (at < buf.length) {
    if (buf.length - at < HEADER_BYTES || buf.readUInt32BE(at) !== 0x464c5200) throw new JfrError(at === 0 ? 'not a JFR recording (no FLR magic)' : `no chunk header at ${at}`);
    const major = buf.readUInt16BE(at + 4);
    if (major !== 1 && major !== 2) throw new JfrError(`JFR format version ${major} is not supported (1 and 2 are)`);
    const size = buf.readBigInt64BE(at + 8);
    const cpOffset = Number(buf.readBigInt64BE(at + 16));
    const metaOffset = Number(buf.readBigInt64BE(at + 24));
    if (size < BigInt(HEADER_BYTES) || size > BigInt(buf.length - at)) throw new JfrError(`chunk at ${at} claims ${size} bytes, ${buf.length - at} are left`);
    const end = at + Number(size);
    const compressed = (buf.readInt32BE(at + 64) & 1) !== 0;
    if (metaOffset < HEADER_BYTES || at + metaOffset >= end) throw new JfrError(`chunk at ${at} has no metadata inside it`);
    const classes = readMetadata(new Cursor(buf, at + metaOffset, end, compressed));
    const values = new ValueReader(classes, budget);

    // Constant pools: the header names the last; each names the one before by a negative delta.
    const pools = new Map<bigint, PoolIndex>();
    const seen = new Set<number>();
    for (let offset = cpOffset; offset !== 0; ) {
      const start = at + offset;
      if (offset < HEADER_BYTES || start >= end || seen.has(offset)) throw new JfrError(`constant pool chain broken at ${offset}`);
      seen.add(offset);
      const c = new Cursor(buf, start, end, compressed);
      c.int(); // size
      if (c.long() !== 1n) throw new JfrError(`no constant pool event at ${start}`);
      c.long(); // start time
      c.long(); // duration
      const delta = Number(c.long());
      c.u8(); // flush / checkpoint kind
      for (let p = c.count(); p > 0; p--) {
        const classId = c.long();
        const pool = pools.get(classId) ?? new PoolIndex();
        pools.set(classId, pool);
        for (let n = c.count(); n > 0; n--) {
          const id = c.long();
          pool.add(id, c.pos);
          values.skip(c, classId);
        }
      }
      offset = delta === 0 ? 0 : offset + delta;
    }

    const stringPool = [...classes.values()].find((cls) => cls.name === 'java.lang.String')?.id;
    const chunk: JfrChunk = {
      startNanos: buf.readBigInt64BE(at + 32),
      startTicks: buf.readBigInt64BE(at + 48),
      ticksPerSecond: buf.readBigInt64BE(at + 56),
      resolve: (ref) => {
        const classId = ref.pool === -1n && stringPool !== undefined ? stringPool : ref.pool;
        const offset = pools.get(classId)?.find(ref.id);
        return offset === undefined ? undefined : values.read(new Cursor(buf, offset, end, compressed), classId);
      },
    };

    // Events, in file order; the metadata and pool events among them are skipped.
    const names = new Map<bigint, string>([...classes].map(([id, cls]) => [id, cls.name]));
    for (let pos = at + HEADER_BYTES; pos < end; ) {
      const c = new Cursor(buf, pos, end, compressed);
      const eventSize = c.int();
      if (eventSize <= 0 || pos + eventSize > end) throw new JfrError(`event at ${pos} has size ${eventSize}`);
      const type = c.long();
      const name = names.get(type);
      if (type > 1n && name !== undefined && wanted(name)) {
        const fields = values.read(new Cursor(buf, c.pos, pos + eventSize, compressed), type) as JfrObject;
        onEvent({ type: name, fields }, chunk);
      }
      pos += eventSize;
    }
    at = end;
  }
}
