import type { Data } from 'apache-arrow';

/**
 * The Float64 list of row `i` of a List<Float64> column chunk, as a view on its values (no copy);
 * null for a null row. (Arrow JS slices a chunk's value offsets with it but not its validity
 * bitmap: the offsets are indexed by row, the bitmap by the chunk's offset plus the row.)
 */
export function float64ListAt(data: Data, i: number): Float64Array | null {
  const bit = data.offset + i;
  if (data.nullCount > 0 && data.nullBitmap && data.nullBitmap.length > 0 && ((data.nullBitmap[bit >> 3]! >> (bit & 7)) & 1) === 0) return null;
  const child = data.children[0]!;
  const offsets = data.valueOffsets as Int32Array;
  return (child.values as Float64Array).subarray(child.offset + offsets[i]!, child.offset + offsets[i + 1]!);
}
