import type { SqlCatalog } from './catalog.ts';
import { splitFloeNamespace } from './floe-catalog.ts';
import { currentSnapshot } from './metadata.ts';

/** What one table of a tenant holds now: the totals its current snapshot's summary keeps. */
export interface TableUsage {
  dataset: string;
  table: string;
  /** Parquet bytes (`total-files-size`); Floe's sidecar files are not counted. */
  bytes: number;
  rows: number;
  files: number;
}

/**
 * The tables in the tenant's namespaces (`<tenant>.<dataset>`) with the `total-files-size`,
 * `total-records` and `total-data-files` of their current snapshots, which every Floe commit
 * keeps up to date.
 */
export async function tenantTableUsage(catalog: SqlCatalog, tenant: string): Promise<TableUsage[]> {
  const out: TableUsage[] = [];
  for (const t of await catalog.listTables(tenant)) {
    const handle = await catalog.loadTable(t.namespace, t.name);
    const summary: Readonly<Record<string, string>> = (handle && currentSnapshot(handle.metadata)?.summary) || {};
    const total = (key: string) => {
      const n = Number(summary[key] ?? 0);
      return Number.isFinite(n) ? n : 0;
    };
    out.push({ dataset: splitFloeNamespace(t.namespace).dataset, table: t.name, bytes: total('total-files-size'), rows: total('total-records'), files: total('total-data-files') });
  }
  return out;
}

/** Bytes of data a tenant stores: what the storage quota (limits.max_storage_bytes) is measured against. */
export async function tenantStoredBytes(catalog: SqlCatalog, tenant: string): Promise<number> {
  return (await tenantTableUsage(catalog, tenant)).reduce((a, t) => a + t.bytes, 0);
}
