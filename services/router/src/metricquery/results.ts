/** A string map value (Arrow MapRow, Map or object) as a plain label object. */
export function mapLabels(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (v === null || v === undefined) return out;
  const entries: Array<[string, unknown]> =
    v instanceof Map
      ? ([...v.entries()] as Array<[string, unknown]>)
      : Object.entries((typeof (v as { toJSON?: unknown }).toJSON === 'function' ? (v as { toJSON(): unknown }).toJSON() : v) as Record<string, unknown>);
  for (const [k, val] of entries) if (typeof val === 'string' && val !== '') out[k] = val;
  return out;
}
