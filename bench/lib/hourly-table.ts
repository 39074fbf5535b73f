import { join } from 'node:path';
import { loadConfig } from '@floe/config';
import { ensureFloeTable, floeTableDef, openFloeCatalog, publishDataFile, type DataFileInput } from '@floe/iceberg';
import { migrate, openDbFromConfig } from '@floe/meta';
import type { TableName } from '@floe/schema';
import { ParquetWriter, objectStoreFromConfig, type WriteOptions } from '@floe/storage';

/**
 * Benchmark data written straight into a table's stored layout, without ingest: each hour's
 * SELECT goes through the writer's own encoding path (ParquetWriter.writeQuery: canonical sort
 * order, zstd, the table's row-group size and field ids) and the files are published as one
 * Iceberg append, in the embedded data directory `dir` (meta/ and data/ under it; tenant `bench`,
 * dataset `default`). Start `floe all` on the same directories afterwards (embeddedStores).
 */
export async function generateHourlyTable(opts: {
  dir: string;
  table: TableName;
  /** Hours since the epoch, one file each. */
  hours: number[];
  /** The SELECT of one hour's rows. */
  hourSelect: (hour: number) => string;
  write?: WriteOptions;
  /** The append snapshot's `floe.bench` summary entry. */
  bench: string;
}): Promise<void> {
  const config = loadConfig({ env: {}, overrides: embeddedStores(opts.dir) });
  const db = await openDbFromConfig(config);
  await migrate(db);
  const store = objectStoreFromConfig(config);
  const catalog = openFloeCatalog(db, store);
  const handle = await ensureFloeTable(catalog, 'bench', 'default', opts.table);
  // The table's own definition (its recorded label columns too), as the writer writes it.
  const table = floeTableDef(handle);
  const tableKey = store.keyFromUri(handle.metadata.location);
  const writer = new ParquetWriter(join(opts.dir, 'gen'));
  const files: DataFileInput[] = [];
  for (const hour of opts.hours) {
    const written = await writer.writeQuery(table, opts.hourSelect(hour), opts.write);
    files.push(await publishDataFile(store, table, written, tableKey, hour));
  }
  writer.close();
  await catalog.appendFiles(handle, files, { summary: { 'floe.bench': opts.bench } });
  await db.close();
  await store.close();
}

/** The meta and storage sections of an embedded Floe whose data directory is `dir`. */
export const embeddedStores = (dir: string) => ({
  meta: { kind: 'pglite' as const, data_dir: join(dir, 'meta') },
  storage: { kind: 'fs' as const, root: join(dir, 'data'), cache_dir: join(dir, 'cache') },
});
