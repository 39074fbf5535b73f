import { FloeError } from '@floe/errors';

/**
 * Snappy block format (not the framed/stream format) decompression, as Prometheus remote write
 * sends it (`Content-Encoding: snappy`). Written here rather than taken from the pure-JS
 * `snappyjs` package: its decoder trusts the stream, and a six-byte body whose literal length
 * wraps negative walks it backwards forever, which would stall the acceptor's event loop. This
 * one checks every length and offset against both buffers, and the output length against the
 * header and `maxBytes` before allocating; any violation is `bad_data` (400), a header beyond the
 * cap `too_large` (413), so nothing a client sends can hang it or make it allocate more than the cap.
 *
 * Format (google/snappy format_description.txt): a varint of the uncompressed length, then
 * elements whose tag byte's low two bits say literal (00), or copy with a 1-, 2- or 4-byte offset
 * (01, 10, 11) back into the output already produced.
 */

const corrupt = (why: string) => new FloeError('bad_data', `body is not snappy block-compressed data: ${why}`, { code: 'FLOE_ERR_INGEST_SNAPPY' });

/** The uncompressed length the block header announces, and where the elements start. */
export function snappyLength(input: Uint8Array): { length: number; start: number } {
  let length = 0;
  for (let i = 0, shift = 0; i < 5 && i < input.length; i++, shift += 7) {
    const b = input[i]!;
    length += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) {
      if (length > 0xffff_ffff) throw corrupt('length header beyond 32 bits');
      return { length, start: i + 1 };
    }
  }
  throw corrupt(input.length === 0 ? 'empty body' : 'unterminated length header');
}

export function snappyUncompress(input: Uint8Array, maxBytes: number): Buffer {
  const { length, start } = snappyLength(input);
  if (length > maxBytes) throw new FloeError('too_large', `request body inflates beyond ${maxBytes} bytes`, { code: 'FLOE_ERR_INGEST_TOO_LARGE' });
  // The densest element (a copy with a 2-byte offset) yields 64 bytes from 3: a header promising
  // more than that cannot be honest, so it is refused before anything is allocated.
  if (length > (input.length - start) * 22) throw corrupt('announced length is more than the input can encode');
  const out = Buffer.allocUnsafe(length);
  let pos = start;
  let op = 0;
  const n = input.length;
  while (pos < n) {
    const tag = input[pos++]!;
    const kind = tag & 3;
    let len: number;
    if (kind === 0) {
      len = tag >>> 2;
      if (len >= 60) {
        const bytes = len - 59;
        if (pos + bytes > n) throw corrupt('truncated literal length');
        len = 0;
        for (let i = 0; i < bytes; i++) len += input[pos + i]! * 2 ** (8 * i);
        pos += bytes;
      }
      len += 1;
      if (len > n - pos) throw corrupt('literal runs past the end of the input');
      if (len > length - op) throw corrupt('literal runs past the announced length');
      out.set(input.subarray(pos, pos + len), op);
      pos += len;
      op += len;
      continue;
    }
    let offset: number;
    if (kind === 1) {
      if (pos >= n) throw corrupt('truncated copy');
      len = ((tag >>> 2) & 7) + 4;
      offset = ((tag >>> 5) << 8) | input[pos]!;
      pos += 1;
    } else if (kind === 2) {
      if (pos + 2 > n) throw corrupt('truncated copy');
      len = (tag >>> 2) + 1;
      offset = input[pos]! | (input[pos + 1]! << 8);
      pos += 2;
    } else {
      if (pos + 4 > n) throw corrupt('truncated copy');
      len = (tag >>> 2) + 1;
      offset = input[pos]! + input[pos + 1]! * 0x100 + input[pos + 2]! * 0x1_0000 + input[pos + 3]! * 0x100_0000;
      pos += 4;
    }
    if (offset === 0 || offset > op) throw corrupt('copy offset outside the output');
    if (len > length - op) throw corrupt('copy runs past the announced length');
    if (offset >= len) {
      out.copyWithin(op, op - offset, op - offset + len);
      op += len;
    } else {
      // Overlapping copy: a run that repeats the last `offset` bytes.
      for (let i = 0; i < len; i++, op++) out[op] = out[op - offset]!;
    }
  }
  if (op !== length) throw corrupt(`decoded ${op} bytes where the header announced ${length}`);
  return out;
}
