import { describe, expect, it } from 'vitest';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { OFF_LOOP_IO_BYTES, writeParts, writePartsFd } from './write-parts.ts';

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

describe('writePartsFd', () => {
  it('appends small writes (on the loop) and large ones (on the pool) in order at the descriptor\'s position', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'floe-write-parts-'));
    try {
      const file = path.join(dir, 'f');
      const fd = openSync(file, 'w');
      const small = [Uint8Array.of(1, 2), Uint8Array.of(3)];
      // More parts than one writev takes, and more bytes than the loop writes itself.
      const large = Array.from({ length: 2100 }, (_, i) => new Uint8Array(Math.ceil(OFF_LOOP_IO_BYTES / 1000)).fill(i & 0xff));
      await writePartsFd(fd, small);
      await writePartsFd(fd, large);
      await writePartsFd(fd, [Uint8Array.of(9)]);
      closeSync(fd);
      expect(readFileSync(file).equals(Buffer.concat([...small, ...large, Uint8Array.of(9)]))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
