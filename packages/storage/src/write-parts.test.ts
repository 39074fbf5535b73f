import { describe, expect, it } from 'vitest';
import type { FileHandle } from 'node:fs/promises';
import { writeParts } from './write-parts.ts';

/** A file handle whose writev and write take at most `limit` bytes a call, as a short write does. */
function shortWriter(limit: number) {
  const out: number[] = [];
  const take = (bufs: readonly Uint8Array[]) => {
    let n = 0;
    for (const b of bufs) for (const x of b) if (n < limit) (out.push(x), n++);
    return n;
  };
  const fh = {
    writev: async (bufs: Uint8Array[]) => ({ bytesWritten: take(bufs), buffers: bufs }),
    write: async (buf: Uint8Array) => ({ bytesWritten: take([buf]), buffer: buf }),
  };
  return { fh: fh as unknown as FileHandle, out };
}

describe('writeParts', () => {
  it('completes short writes: every byte lands once, in order', async () => {
    const parts = [Uint8Array.of(1, 2, 3), Uint8Array.of(), Uint8Array.of(4, 5, 6, 7, 8), Uint8Array.of(9)];
    for (const limit of [1, 2, 4, 7, 100]) {
      const { fh, out } = shortWriter(limit);
      await writeParts(fh, parts);
      expect(out).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
  });

  it('writes more parts than one writev takes', async () => {
    const parts = Array.from({ length: 2500 }, (_, i) => Uint8Array.of(i & 0xff));
    const { fh, out } = shortWriter(1 << 30);
    await writeParts(fh, parts);
    expect(out).toEqual(parts.map((p) => p[0]));
  });
});
