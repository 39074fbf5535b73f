import xxhash from 'xxhash-wasm';
import type { Labels } from '../labels.ts';

/**
 * Prometheus's `Labels.Hash()` as its release builds compute it (the `stringlabels` layout):
 * xxHash64 over every label in name order, each as its name's UTF-8 length (a uvarint), the
 * name, its value's length and the value. limit_ratio picks series by this hash, so the same
 * series are picked here as there. (Builds without `stringlabels` hash `name 0xff value 0xff`
 * instead and pick others; Prometheus documents the choice as unspecified.)
 */
const { h64Raw } = await xxhash();
const utf8 = new TextEncoder();

function uvarint(out: number[], n: number): void {
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
}

export function labelsHash(labels: Labels): bigint {
  const bytes: number[] = [];
  for (const name of Object.keys(labels).sort()) {
    for (const text of [name, labels[name]!]) {
      const b = utf8.encode(text);
      uvarint(bytes, b.length);
      for (const x of b) bytes.push(x);
    }
  }
  return h64Raw(Uint8Array.from(bytes));
}

const offsets = new WeakMap<Labels, number>();
const MAX_UINT64 = 2 ** 64;

/** Where a series falls in [0, 1] for limit_ratio: its hash over the largest uint64, as Prometheus divides them. */
export function ratioOffset(labels: Labels): number {
  let o = offsets.get(labels);
  if (o === undefined) offsets.set(labels, (o = Number(labelsHash(labels)) / MAX_UINT64));
  return o;
}

/** Prometheus's limit_ratio rule: ratio r ≥ 0 keeps offsets below r; r < 0 keeps those from 1 + r on (the complement of the same set). */
export function ratioKeeps(r: number, labels: Labels): boolean {
  const o = ratioOffset(labels);
  return r >= 0 ? o < r : o >= 1 + r;
}
