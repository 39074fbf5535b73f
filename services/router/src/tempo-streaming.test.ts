import { describe, expect, it } from 'vitest';
import { grpcTimeoutMs } from './tempo-streaming.ts';

describe('grpcTimeoutMs', () => {
  it.each([
    ['10S', 10_000],
    ['250m', 250],
    ['2M', 120_000],
    ['1H', 3_600_000],
    ['5000u', 5],
  ] as const)('%s is %d ms', (header, ms) => expect(grpcTimeoutMs(header)).toBe(ms));
  it.each([undefined, '', '10', 'S', '123456789S', '1s', '-1S'])('%o is none', (header) => expect(grpcTimeoutMs(header)).toBeUndefined());
});
