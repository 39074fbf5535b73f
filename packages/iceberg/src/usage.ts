import type { SqlCatalog } from './catalog.ts';
import { currentSnapshot } from './metadata.ts';

/**
 * Bytes of data a tenant stores: the `total-files-size` of the current snapshot of every table in
 * the tenant's namespaces (`<tenant>.<dataset>`), which every Floe commit keeps up to date. Floe's
 * sidecar files are not counted. This is what the storage quota (limits.max_storage_bytes) is
 * measured against.
 */
export async function tenantStoredBytes(catalog: SqlCatalog, tenant: string): Promise<number> {
  let total = 0;
  for (const t of await catalog.listTables(tenant)) {
    const handle = await catalog.loadTable(t.namespace, t.name);
    const size = handle ? Number(currentSnapshot(handle.metadata)?.summary['total-files-size'] ?? 0) : 0;
    if (Number.isFinite(size)) total += size;
  }
  return total;
}
