/**
 * Arrow rows (from flightDoGet) as plain objects for `toEqual`: rows, maps and structs through
 * their toJSON, nested values likewise; 64-bit integers stay bigint, binary stays Uint8Array.
 */
export function plain(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof Uint8Array) return v;
  if (Array.isArray(v)) return v.map(plain);
  const json = typeof (v as { toJSON?: unknown }).toJSON === 'function' ? (v as { toJSON(): unknown }).toJSON() : v;
  if (json === null || typeof json !== 'object') return json;
  if (Array.isArray(json)) return json.map(plain);
  return Object.fromEntries(Object.entries(json as Record<string, unknown>).map(([k, x]) => [k, plain(x)]));
}
