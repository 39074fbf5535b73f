import { write, writeSync, writev, writevSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

/** Most iovecs one writev takes (Linux IOV_MAX). */
const IOV_MAX = 1024;

/** What of `slice` is still to write after writev wrote `done` of its bytes (the first part cut). */
function unwritten(slice: readonly Uint8Array[], done: number): Uint8Array[] {
  const rest: Uint8Array[] = [];
  for (const p of slice) {
    if (done >= p.byteLength) done -= p.byteLength;
    else {
      rest.push(done > 0 ? p.subarray(done) : p);
      done = 0;
    }
  }
  return rest;
}

/** Bytes of the parts end to end. */
export const totalBytes = (parts: readonly Uint8Array[]) => parts.reduce((n, p) => n + p.byteLength, 0);

/** A file's writev and write, each resolving to the bytes it wrote. */
interface AsyncWrites {
  writev(parts: Uint8Array[]): Promise<number>;
  write(part: Uint8Array): Promise<number>;
}

/**
 * Writes the parts one after the other at the handle's position, with writev, IOV_MAX at a
 * time. writev may write less than asked (a signal, a full disk just freed): what is left is
 * written with write until it is all there, so no caller sees a short write.
 */
export async function writeParts(fh: FileHandle, parts: readonly Uint8Array[]): Promise<void> {
  await writeAll(parts, { writev: async (p) => (await fh.writev(p)).bytesWritten, write: async (p) => (await fh.write(p)).bytesWritten });
}

async function writeAll(parts: readonly Uint8Array[], io: AsyncWrites): Promise<void> {
  for (let i = 0; i < parts.length; i += IOV_MAX) {
    const slice = parts.slice(i, i + IOV_MAX);
    const done = await io.writev(slice);
    if (done === totalBytes(slice)) continue;
    for (let rest of unwritten(slice, done)) while (rest.byteLength > 0) rest = rest.subarray(await io.write(rest));
  }
}

/**
 * Below this many bytes a local write or read is made on the calling thread: a trip to libuv's
 * pool costs more than the copy. Above it the copy to or from the page cache (on a VM ~5 µs a
 * page, most of it faulting pages in) goes to the pool, off the event loop that serves ingest: at
 * remote write's ~60 MB/s of WAL, writing it on the loop took 7.6 % of the loop and the writer's
 * reading it back 3.9 %.
 */
export const OFF_LOOP_IO_BYTES = 64 * 1024;

/**
 * writeParts on a file descriptor at its position: small writes synchronously, large ones on
 * libuv's pool (see OFF_LOOP_IO_BYTES). Calls on one descriptor must not overlap.
 */
export async function writePartsFd(fd: number, parts: readonly Uint8Array[]): Promise<void> {
  if (totalBytes(parts) < OFF_LOOP_IO_BYTES) writePartsSync(fd, parts);
  else
    await writeAll(parts, {
      writev: (p) => new Promise((resolve, reject) => writev(fd, p, (err, n) => (err ? reject(err) : resolve(n)))),
      write: (p) => new Promise((resolve, reject) => write(fd, p, (err, n) => (err ? reject(err) : resolve(n)))),
    });
}

/** writeParts on a file descriptor, synchronously (writePartsFd's small writes). */
function writePartsSync(fd: number, parts: readonly Uint8Array[]): void {
  for (let i = 0; i < parts.length; i += IOV_MAX) {
    const slice = parts.slice(i, i + IOV_MAX);
    const done = writevSync(fd, slice);
    if (done === totalBytes(slice)) continue;
    for (let rest of unwritten(slice, done)) while (rest.byteLength > 0) rest = rest.subarray(writeSync(fd, rest));
  }
}
