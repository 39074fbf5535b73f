/**
 * The `fields` parameter (spec 3): only the named fields of each record. The id always stays, so
 * a projected list can still be joined back to the records it came from.
 */
export function project<T extends { id: string }>(record: T, fields: readonly string[] | undefined): Partial<T> & { id: string } {
  if (!fields) return record;
  const out: Record<string, unknown> = { id: record.id };
  for (const f of fields) if (Object.hasOwn(record, f)) out[f] = (record as Record<string, unknown>)[f];
  return out as Partial<T> & { id: string };
}
