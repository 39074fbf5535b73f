import { describe, expect, it } from 'vitest';
import { Scratch } from './scratch.ts';

describe('Scratch', () => {
  it('hands out disjoint, 8-byte aligned arrays of the asked length', () => {
    const s = new Scratch(64);
    const a = s.u8(3).fill(1);
    const b = s.i32(5).fill(-2);
    const c = s.u16(7).fill(3);
    const d = s.u32(2).fill(4);
    for (const x of [a, b, c, d]) expect(x.byteOffset % 8).toBe(0);
    expect([a.length, b.length, c.length, d.length]).toEqual([3, 5, 7, 2]);
    // Writing each did not touch another.
    expect([...a]).toEqual([1, 1, 1]);
    expect([...b]).toEqual([-2, -2, -2, -2, -2]);
    expect([...c]).toEqual([3, 3, 3, 3, 3, 3, 3]);
    expect([...d]).toEqual([4, 4]);
  });

  it('gives memory back to a mark and hands the same bytes out again', () => {
    const s = new Scratch(1024);
    const kept = s.u8(16).fill(9);
    const mark = s.mark();
    const first = s.u8(100).fill(7);
    s.release(mark);
    const again = s.u8(100);
    expect(again.buffer).toBe(first.buffer);
    expect(again.byteOffset).toBe(first.byteOffset);
    // Not zeroed: the caller sees what was there.
    expect(again[0]).toBe(7);
    expect([...kept]).toEqual(new Array(16).fill(9));
  });

  it('moves to a new buffer when one is full, and fits a request larger than its buffers', () => {
    const s = new Scratch(64);
    const a = s.u8(40);
    const b = s.u8(40); // does not fit after a
    expect(b.buffer).not.toBe(a.buffer);
    const big = s.u8(1000).fill(5);
    expect(big.length).toBe(1000);
    expect(big.buffer.byteLength).toBeGreaterThanOrEqual(1000);
    s.reset();
    // After a reset the buffers are used again from the first.
    expect(s.u8(8).buffer).toBe(a.buffer);
  });

  it('remakes a kept buffer that is too small for a later, larger request', () => {
    const s = new Scratch(64);
    s.u8(64);
    s.u8(64);
    s.reset();
    s.u8(64);
    const big = s.u8(500); // the second buffer (64 bytes) is free and too small: replaced
    expect(big.buffer.byteLength).toBe(512); // whole chunks
    const mark = s.mark();
    expect(s.u8(16).buffer).not.toBe(big.buffer); // big filled its buffer
    s.release(mark);
  });

  it('makes buffers in whole chunks, so requests of varying size come to reuse them', () => {
    const s = new Scratch(64);
    const first = s.u8(70).buffer; // 128 bytes
    expect(first.byteLength).toBe(128);
    s.reset();
    // A somewhat larger request fits the same buffer instead of a new one made to measure.
    expect(s.u8(120).buffer).toBe(first);
  });

  it('drops buffers past keepBytes on reset', () => {
    const s = new Scratch(64, 128);
    const bufs = [s.u8(64).buffer, s.u8(64).buffer, s.u8(64).buffer];
    s.reset();
    expect([s.u8(64).buffer, s.u8(64).buffer]).toEqual([bufs[0], bufs[1]]);
    expect(s.u8(64).buffer).not.toBe(bufs[2]);
    // reset(0): nothing kept (an idle writer lets go of its round memory).
    s.reset(0);
    expect(bufs).not.toContain(s.u8(64).buffer);
  });
});
