import { randomBytes } from 'node:crypto';
import { compress } from 'snappyjs';
import { describe, expect, it } from 'vitest';
import { snappyUncompress } from './snappy.ts';

/** The block decoder against an independent encoder (snappyjs), and against hostile streams. */
describe('snappyUncompress', () => {
  const text = Buffer.from('prometheus_http_requests_total{handler="/api/v1/write",code="204"} '.repeat(500));
  const mixed = Buffer.concat([randomBytes(3000), text, Buffer.alloc(70_000, 7), randomBytes(17)]);

  it.each([
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from([42])],
    ['repetitive text (copies with 1- and 2-byte offsets)', text],
    ['random bytes (long literals)', randomBytes(100_000)],
    ['a long run (overlapping copies)', Buffer.alloc(200_000, 0xab)],
    ['mixed', mixed],
  ])('round-trips %s', (_name, data) => {
    expect(Buffer.compare(snappyUncompress(compress(data), 10 << 20), data)).toBe(0);
  });

  it.each([
    ['an empty body', Buffer.alloc(0), /empty body/],
    ['an unterminated length header', Buffer.from([0x80, 0x80]), /unterminated length/],
    // snappyjs walks this one backwards forever: a 4-byte literal length that wraps negative.
    ['a literal length that wraps', Buffer.from([0, 252, 0xfa, 0xff, 0xff, 0xff]), /literal/],
    ['a literal past the input', Buffer.from([5, 4 << 2, 1, 2]), /past the end of the input/],
    ['a literal past the announced length', Buffer.from([1, 1 << 2, 1, 2]), /past the announced length/],
    ['a copy before any output', Buffer.from([4, 0x01, 0x01]), /offset outside the output/],
    ['a zero copy offset', Buffer.from([6, 0, 0x61, 0x01, 0x00]), /offset outside the output/],
    ['a truncated copy', Buffer.from([6, 0, 0x61, 0x02, 0x01]), /truncated copy/],
    ['output shorter than announced', Buffer.from([3, 0, 0x61]), /decoded 1 bytes where the header announced 3/],
    ['a header far beyond what the input can encode', Buffer.from([0xff, 0xff, 0x03, 0, 0x61]), /more than the input can encode/],
  ])('refuses %s (bad_data)', (_name, input, message) => {
    expect(() => snappyUncompress(input, 1 << 20)).toThrow(expect.objectContaining({ kind: 'bad_data', message: expect.stringMatching(message) }));
  });

  it('a header beyond the cap is too_large, before anything is decoded', () => {
    expect(() => snappyUncompress(compress(Buffer.alloc(5000)), 4096)).toThrow(expect.objectContaining({ kind: 'too_large' }));
  });
});
