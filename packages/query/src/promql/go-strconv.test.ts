import { describe, expect, it } from 'vitest';
import { parseLe } from './histogram-quantile.ts';
import { goQuote, parseGoFloat } from './go-strconv.ts';

describe('parseGoFloat (strconv.ParseFloat)', () => {
  it('reads what Go reads', () => {
    expect(parseGoFloat('0.25')).toBe(0.25);
    expect(parseGoFloat('1e3')).toBe(1000);
    expect(parseGoFloat('.5')).toBe(0.5);
    expect(parseGoFloat('5.')).toBe(5);
    expect(parseGoFloat('-2.5E-1')).toBe(-0.25);
    expect(parseGoFloat('+Inf')).toBe(Infinity);
    expect(parseGoFloat('INF')).toBe(Infinity);
    expect(parseGoFloat('-infinity')).toBe(-Infinity);
    expect(parseGoFloat('NaN')).toBeNaN();
    expect(parseGoFloat('0x1.8p3')).toBe(12);
    expect(parseGoFloat('-0x10p-4')).toBe(-1);
  });

  it('refuses what Go refuses, with its error text', () => {
    for (const s of ['', ' 1', '1 ', '0x10', '0b1', '0o7', 'Infinityy', '+nan', '1e', '1_000', 'abc']) {
      expect(() => parseGoFloat(s), s).toThrow(`strconv.ParseFloat: parsing ${goQuote(s)}: invalid syntax`);
    }
    expect(() => parseGoFloat('1e999')).toThrow('value out of range');
  });
});

describe('parseLe (histogram_quantile bucket bounds)', () => {
  it('takes Go floats and leaves out the rest', () => {
    expect(parseLe('+Inf')).toBe(Infinity);
    expect(parseLe('0.005')).toBe(0.005);
    expect(parseLe('Infinity')).toBe(Infinity);
    // Number() would have read these; Prometheus's ParseFloat does not, so the bucket is ignored.
    expect(parseLe(' 1')).toBeUndefined();
    expect(parseLe('0x10')).toBeUndefined();
    expect(parseLe('')).toBeUndefined();
  });
});
