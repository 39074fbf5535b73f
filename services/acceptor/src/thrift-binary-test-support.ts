import { TType } from './thrift-binary.ts';

/**
 * A Thrift binary-protocol writer for tests (thrift-binary.test.ts, jaeger.test.ts): values built
 * with `tw.*`, then `encodeStruct`. The end-to-end test sends a real Jaeger client's bytes.
 */
export interface TW {
  type: number;
  write(out: number[]): void;
}

const be = (n: number, bytes: number, out: number[]) => {
  for (let i = bytes - 1; i >= 0; i--) out.push((n >>> (i * 8)) & 0xff);
};

export const tw = {
  bool: (v: boolean): TW => ({ type: TType.BOOL, write: (o) => o.push(v ? 1 : 0) }),
  byte: (v: number): TW => ({ type: TType.BYTE, write: (o) => o.push(v & 0xff) }),
  i16: (v: number): TW => ({ type: TType.I16, write: (o) => be(v, 2, o) }),
  i32: (v: number): TW => ({ type: TType.I32, write: (o) => be(v, 4, o) }),
  i64: (v: bigint | number): TW => ({
    type: TType.I64,
    write: (o) => {
      const b = Buffer.alloc(8);
      b.writeBigInt64BE(BigInt.asIntN(64, BigInt(v)));
      o.push(...b);
    },
  }),
  double: (v: number): TW => ({
    type: TType.DOUBLE,
    write: (o) => {
      const b = Buffer.alloc(8);
      b.writeDoubleBE(v);
      o.push(...b);
    },
  }),
  str: (v: string | Uint8Array): TW => ({
    type: TType.STRING,
    write: (o) => {
      const b = typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
      be(b.length, 4, o);
      o.push(...b);
    },
  }),
  struct: (fields: Array<[number, TW]>): TW => ({
    type: TType.STRUCT,
    write: (o) => {
      for (const [id, v] of fields) {
        o.push(v.type);
        be(id, 2, o);
        v.write(o);
      }
      o.push(TType.STOP);
    },
  }),
  list: (elemType: number, items: TW[], kind: number = TType.LIST): TW => ({
    type: kind,
    write: (o) => {
      o.push(elemType);
      be(items.length, 4, o);
      for (const i of items) i.write(o);
    },
  }),
  map: (keyType: number, valueType: number, entries: Array<[TW, TW]>): TW => ({
    type: TType.MAP,
    write: (o) => {
      o.push(keyType, valueType);
      be(entries.length, 4, o);
      for (const [k, v] of entries) {
        k.write(o);
        v.write(o);
      }
    },
  }),
};

/** The bytes of a struct of `fields`. */
export function encodeStruct(fields: Array<[number, TW]>): Uint8Array {
  const out: number[] = [];
  tw.struct(fields).write(out);
  return Uint8Array.from(out);
}
