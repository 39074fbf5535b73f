/**
 * Thrift compact protocol, the write side only and only the types Parquet's metadata uses (bool,
 * i32, i64, binary, list, struct). Hand-written: the few Parquet structures Floe emits (page headers
 * and a file footer, column-batch-parquet.ts) do not justify a Thrift runtime and its generated
 * code, and the npm Thrift packages implement the binary protocol for RPC, not compact encoding
 * into a buffer.
 */

const utf8 = new TextEncoder();

const T_BOOL_TRUE = 1;
const T_BOOL_FALSE = 2;
const T_I32 = 5;
const T_I64 = 6;
const T_BINARY = 8;
const T_LIST = 9;
const T_STRUCT = 12;

export class ThriftWriter {
  #b = new Uint8Array(256);
  #p = 0;
  #last: number[] = [];
  #field = 0;

  #room(n: number): void {
    if (this.#p + n <= this.#b.length) return;
    const b = new Uint8Array(Math.max(this.#b.length * 2, this.#p + n));
    b.set(this.#b.subarray(0, this.#p));
    this.#b = b;
  }

  #byte(v: number): void {
    this.#room(1);
    this.#b[this.#p++] = v;
  }

  #varint(v: number): void {
    this.#room(10);
    while (v >= 0x80) {
      this.#b[this.#p++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.#b[this.#p++] = v;
  }

  #zigzag(v: number): void {
    // Numbers here are below 2^53 in magnitude: zigzag by arithmetic, not 32-bit shifts.
    this.#varint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  #header(id: number, type: number): void {
    const delta = id - this.#field;
    if (delta > 0 && delta <= 15) this.#byte((delta << 4) | type);
    else {
      this.#byte(type);
      this.#zigzag(id);
    }
    this.#field = id;
  }

  i32(id: number, v: number): this {
    this.#header(id, T_I32);
    this.#zigzag(v);
    return this;
  }

  i64(id: number, v: number): this {
    this.#header(id, T_I64);
    this.#zigzag(v);
    return this;
  }

  /** A boolean field: compact Thrift folds the value into the field header. */
  bool(id: number, v: boolean): this {
    this.#header(id, v ? T_BOOL_TRUE : T_BOOL_FALSE);
    return this;
  }

  binary(id: number, bytes: Uint8Array): this {
    this.#header(id, T_BINARY);
    this.#varint(bytes.length);
    this.#room(bytes.length);
    this.#b.set(bytes, this.#p);
    this.#p += bytes.length;
    return this;
  }

  string(id: number, s: string): this {
    return this.binary(id, utf8.encode(s));
  }

  beginStruct(id: number): this {
    this.#header(id, T_STRUCT);
    this.#last.push(this.#field);
    this.#field = 0;
    return this;
  }

  endStruct(): this {
    this.#byte(0);
    this.#field = this.#last.pop() ?? 0;
    return this;
  }

  #listHeader(id: number, size: number, elem: number): void {
    this.#header(id, T_LIST);
    if (size < 15) this.#byte((size << 4) | elem);
    else {
      this.#byte(0xf0 | elem);
      this.#varint(size);
    }
  }

  listI32(id: number, values: readonly number[]): this {
    this.#listHeader(id, values.length, T_I32);
    for (const v of values) this.#zigzag(v);
    return this;
  }

  listString(id: number, values: readonly string[]): this {
    this.#listHeader(id, values.length, T_BINARY);
    for (const s of values) {
      const bytes = utf8.encode(s);
      this.#varint(bytes.length);
      this.#room(bytes.length);
      this.#b.set(bytes, this.#p);
      this.#p += bytes.length;
    }
    return this;
  }

  /** A list of structs: `each` writes one element's fields (its struct is opened and closed here). */
  listStruct<T>(id: number, items: readonly T[], each: (w: ThriftWriter, item: T, index: number) => void): this {
    this.#listHeader(id, items.length, T_STRUCT);
    for (let i = 0; i < items.length; i++) {
      this.#last.push(this.#field);
      this.#field = 0;
      each(this, items[i]!, i);
      this.endStruct();
    }
    return this;
  }

  /** Ends the top-level struct being written (a page header, the file metadata). */
  end(): Uint8Array {
    this.#byte(0);
    return this.#b.subarray(0, this.#p);
  }
}
