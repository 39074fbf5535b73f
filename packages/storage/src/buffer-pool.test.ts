import { describe, expect, it } from 'vitest';
import { BufferPool } from './buffer-pool.ts';

describe('BufferPool', () => {
  it('hands out arrays of the asked length in whole-chunk buffers, each its own', () => {
    const p = new BufferPool(64, 1024);
    const a = p.u8(10).fill(1);
    const b = p.u8(100).fill(2);
    expect([a.length, b.length]).toEqual([10, 100]);
    expect([a.buffer.byteLength, b.buffer.byteLength]).toEqual([64, 128]);
    expect(a.buffer).not.toBe(b.buffer);
    expect([...a]).toEqual(new Array(10).fill(1));
  });

  it('after releaseAll, serves each request from the smallest kept buffer that holds it, whatever the order', () => {
    const p = new BufferPool(64, 1024);
    const small = p.u8(60).buffer; // 64
    const large = p.u8(190).buffer; // 192
    const mid = p.u8(120).buffer; // 128
    p.releaseAll();
    // Asked in another order and with other sizes: no new buffer is made.
    expect(p.u8(150).buffer).toBe(large);
    expect(p.u8(70).buffer).toBe(mid);
    expect(p.u8(64).buffer).toBe(small);
    expect(p.keptBytes).toBe(64 + 128 + 192);
    // Only when none is free and large enough is one made.
    expect(p.u8(10).buffer.byteLength).toBe(64);
    expect(p.keptBytes).toBe(64 + 128 + 192 + 64);
  });

  it('keeps at most keepBytes on release, the largest buffers first; releaseAll(0) keeps none', () => {
    const p = new BufferPool(64, 200);
    const big = p.u8(128).buffer;
    p.u8(64);
    p.u8(64);
    p.releaseAll();
    expect(p.keptBytes).toBe(192);
    expect(p.u8(100).buffer).toBe(big);
    p.releaseAll(0);
    expect(p.keptBytes).toBe(0);
    expect(p.u8(100).buffer).not.toBe(big);
  });

  it('makes SharedArrayBuffers when shared', () => {
    expect(new BufferPool(64, 64, { shared: true }).u8(8).buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(new BufferPool(64, 64).u8(8).buffer).toBeInstanceOf(ArrayBuffer);
  });
});
