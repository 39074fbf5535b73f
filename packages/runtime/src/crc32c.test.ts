import { describe, expect, it } from 'vitest';
import { crc32c } from './crc32c.ts';

describe('crc32c', () => {
  it('gives the Castagnoli check values', () => {
    // RFC 3720 (iSCSI) B.4 and the usual "123456789" check value.
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });
});
