import { randomInt } from 'node:crypto';
import { metadataVersion, type SqlCatalog, type Snapshot, type TableHandle } from '@floe/iceberg';

/**
 * `h` given `snapshots` snapshots in all: copies of its current one with ids of their own, 10 s
 * apart before it (a table the writer committed to every 10 s), written as ONE new metadata
 * version. Benches whose costs grow with a table's history need old tables; committing the
 * snapshots one by one took ~15 ms each, too long for thousands of tables.
 */
export async function ageTable(catalog: SqlCatalog, h: TableHandle, snapshots: number): Promise<TableHandle> {
  const m = h.metadata;
  const current = m.snapshots.at(-1)!;
  const n = Math.max(0, snapshots - m.snapshots.length);
  const old: Snapshot[] = Array.from({ length: n }, (_, i) => ({ ...current, 'snapshot-id': BigInt(randomInt(1, 2 ** 48 - 1)), 'timestamp-ms': current['timestamp-ms'] - (n - i) * 10_000 }));
  const aged = { ...m, snapshots: [...old, ...m.snapshots], 'snapshot-log': [...old.map((s) => ({ 'timestamp-ms': s['timestamp-ms'], 'snapshot-id': s['snapshot-id'] })), ...m['snapshot-log']] };
  const location = await catalog.restoreVersion(h.namespace, h.name, h.metadataLocation, { location: h.metadataLocation, metadata: aged }, metadataVersion(h.metadataLocation) + 1);
  if (!location) throw new Error(`${h.namespace}.${h.name}: its pointer moved while it was aged`);
  return (await catalog.loadTable(h.namespace, h.name))!;
}
