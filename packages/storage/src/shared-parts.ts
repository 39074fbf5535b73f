/**
 * Byte ranges handed to another thread without copying what already sits in shared memory: a
 * list of SharedArrayBuffers and, per part, three numbers (its buffer's index in the list, its
 * offset, its length). Parts in ordinary memory are copied into one new shared buffer.
 */
export interface SharedParts {
  buffers: SharedArrayBuffer[];
  /** Per part: buffer index, byte offset, length. */
  spans: number[];
}

/** `parts` as SharedParts. */
export function shareParts(parts: readonly Uint8Array[]): SharedParts {
  let copied = 0;
  for (const p of parts) if (!(p.buffer instanceof SharedArrayBuffer)) copied += p.length;
  const own = copied > 0 ? new SharedArrayBuffer(copied) : undefined;
  const buffers: SharedArrayBuffer[] = [];
  const index = new Map<SharedArrayBuffer, number>();
  const indexOf = (b: SharedArrayBuffer) => {
    let i = index.get(b);
    if (i === undefined) index.set(b, (i = buffers.push(b) - 1));
    return i;
  };
  const spans: number[] = [];
  let at = 0;
  for (const p of parts) {
    if (p.buffer instanceof SharedArrayBuffer) {
      spans.push(indexOf(p.buffer), p.byteOffset, p.length);
    } else {
      new Uint8Array(own!, at, p.length).set(p);
      spans.push(indexOf(own!), at, p.length);
      at += p.length;
    }
  }
  return { buffers, spans };
}

/** The parts of SharedParts, as views (on the receiving thread). */
export function partsOf({ buffers, spans }: SharedParts): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < spans.length; i += 3) out.push(new Uint8Array(buffers[spans[i]!]!, spans[i + 1], spans[i + 2]));
  return out;
}
