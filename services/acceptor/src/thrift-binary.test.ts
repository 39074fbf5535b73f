import { describe, expect, it } from 'vitest';
import { FloeError } from '@floe/errors';
import { decodeThriftStruct, MAX_DEPTH, TType, type ThriftList, type ThriftMap, type ThriftStruct } from './thrift-binary.ts';
import { encodeStruct, tw } from './thrift-binary-test-support.ts';

/** The decode error of `body`, which must be a FloeError bad_data (a 400), never anything else. */
function refusal(body: Uint8Array): string {
  try {
    decodeThriftStruct(body);
  } catch (err) {
    expect(err).toBeInstanceOf(FloeError);
    expect((err as FloeError).kind).toBe('bad_data');
    expect((err as FloeError).code).toBe('FLOE_ERR_INGEST_DECODE');
    return (err as Error).message;
  }
  throw new Error('decoded without error');
}

const u8 = (...bytes: number[]) => Uint8Array.from(bytes);

describe('Thrift binary protocol', () => {
  const sample = encodeStruct([
    [1, tw.bool(true)],
    [2, tw.byte(-3)],
    [3, tw.double(2.5)],
    [4, tw.i16(-2)],
    [5, tw.i32(-70_000)],
    [6, tw.i64(-1n)],
    [7, tw.str('héllo')],
    [8, tw.struct([[1, tw.i64(1n << 62n)]])],
    [9, tw.list(TType.STRING, [tw.str('a'), tw.str('')])],
    [10, tw.list(TType.I32, [tw.i32(7)], TType.SET)],
    [11, tw.map(TType.STRING, TType.LIST, [[tw.str('k'), tw.list(TType.BOOL, [tw.bool(false), tw.bool(true)])]])],
    [-1, tw.bool(false)],
    [200, tw.i32(1)],
    [200, tw.i32(2)],
  ]);

  it('decodes every type by field id, with its wire type', () => {
    const s = decodeThriftStruct(sample);
    const v = (id: number) => s.get(id)?.value;
    expect([v(1), v(2), v(3), v(4), v(5), v(6)]).toEqual([true, -3, 2.5, -2, -70_000, -1n]);
    expect(Buffer.from(v(7) as Uint8Array).toString()).toBe('héllo');
    expect((v(8) as ThriftStruct).get(1)).toEqual({ type: TType.I64, value: 1n << 62n });
    const list = v(9) as ThriftList;
    expect([list.kind, list.elemType, list.items.map((b) => Buffer.from(b as Uint8Array).toString())]).toEqual(['list', TType.STRING, ['a', '']]);
    expect(v(10)).toEqual({ kind: 'set', elemType: TType.I32, items: [7] });
    const map = v(11) as ThriftMap;
    expect(map.entries.map(([k, x]) => [Buffer.from(k as Uint8Array).toString(), (x as ThriftList).items])).toEqual([['k', [false, true]]]);
    expect(s.get(-1)).toEqual({ type: TType.BOOL, value: false });
    // A repeated id: the last value, as generated readers keep it.
    expect(v(200)).toBe(2);
    expect(decodeThriftStruct(u8(0)).size).toBe(0);
  });

  it('refuses every truncation of a valid struct with a 400', () => {
    for (let n = 0; n < sample.length; n++) expect(refusal(sample.subarray(0, n))).toMatch(/^body is not valid Thrift binary protocol: .* at byte \d+/);
  });

  it('refuses lengths and counts beyond the bytes left before allocating', () => {
    // A string of 2^31-1 bytes, a list of 2^31-1 i64s, a map of 1000 entries, in a 20-byte body.
    expect(refusal(u8(11, 0, 1, 0x7f, 0xff, 0xff, 0xff, 0x41))).toMatch(/string of 2147483647 at byte 3 needs at least 2147483647 bytes, 1 left/);
    expect(refusal(u8(15, 0, 1, 10, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0))).toMatch(/list of 2147483647 at byte 4 needs at least/);
    expect(refusal(u8(13, 0, 1, 11, 11, 0, 0, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))).toMatch(/map of 1000 .* needs at least 8000 bytes/);
    // A list of empty structs: each takes a byte at least.
    expect(refusal(u8(15, 0, 1, 12, 0, 0, 0, 5, 0, 0, 0, 0))).toMatch(/list of 5 at byte 4 needs at least 5 bytes, 4 left/);
    expect(refusal(u8(11, 0, 1, 0xff, 0xff, 0xff, 0xff))).toMatch(/negative string size -1 at byte 3/);
    expect(refusal(u8(15, 0, 1, 8, 0x80, 0, 0, 0))).toMatch(/negative list size/);
  });

  it('refuses unknown types, trailing bytes and nesting beyond the cap', () => {
    expect(refusal(u8(1, 0, 1, 0))).toMatch(/unknown type id 1 of a field at byte 0/);
    expect(refusal(u8(99, 0, 1, 0))).toMatch(/unknown type id 99/);
    expect(refusal(u8(15, 0, 1, 0, 0, 0, 0, 0, 0))).toMatch(/unknown type id 0 of a list element/);
    expect(refusal(u8(0, 0))).toMatch(/1 bytes after the end of the struct at byte 1/);
    // Structs nested MAX_DEPTH deep decode; one more level is refused, for structs and lists alike.
    const nested = (depth: number) => {
      let v = tw.struct([]);
      for (let i = 2; i < depth; i++) v = tw.struct([[1, v]]);
      return encodeStruct([[1, v]]);
    };
    expect(decodeThriftStruct(nested(MAX_DEPTH)).size).toBe(1);
    expect(refusal(nested(MAX_DEPTH + 1))).toMatch(new RegExp(`nested deeper than ${MAX_DEPTH}`));
    // A list-in-list bomb: 100,000 levels in 500 KB must be refused, not overflow the stack.
    const bomb: number[] = [15, 0, 1];
    for (let i = 0; i < 100_000; i++) bomb.push(15, 0, 0, 0, 1);
    expect(refusal(Uint8Array.from(bomb))).toMatch(/nested deeper than/);
  });

  it('answers random bytes with a value or a 400, quickly', () => {
    let seed = 42;
    const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff) / 0x7fffffff);
    const started = performance.now();
    for (let i = 0; i < 5000; i++) {
      const body = Uint8Array.from({ length: 1 + Math.floor(rand() * 64) }, () => Math.floor(rand() * 256));
      // Bias toward plausible headers: a valid type byte first.
      body[0] = [2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15][Math.floor(rand() * 11)]!;
      try {
        decodeThriftStruct(body);
      } catch (err) {
        expect(err).toBeInstanceOf(FloeError);
      }
      // And every mutation of a valid struct.
      const m = Uint8Array.from(sample);
      m[Math.floor(rand() * m.length)] = Math.floor(rand() * 256);
      try {
        decodeThriftStruct(m);
      } catch (err) {
        expect(err).toBeInstanceOf(FloeError);
      }
    }
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
