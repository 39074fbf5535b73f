// Test helpers for the querier's tests (not exported from the package): a traces table on a real
// meta database, store and catalog in a temp dir, and appends to it as the writer publishes them.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureFloeTable, openFloeCatalog, publishDataFile, type SqlCatalog } from '@floe/iceberg';
import { migrate, openDb, type Db } from '@floe/meta';
import { tracesTable } from '@floe/schema';
import { LocalFileCache, ParquetWriter, createObjectStore, type ObjectStore } from '@floe/storage';
import { silentLogger } from '@floe/telemetry';
import { FileResolver } from './file-resolver.ts';

export interface TracesFixture {
  /** A directory of the fixture's own, removed with it. */
  dir: string;
  db: Db;
  store: ObjectStore;
  catalog: SqlCatalog;
  resolver: FileResolver;
  /** Writes NDJSON span lines as one file of `tenant`'s traces table in `hour`; its object key. */
  append(tenant: string, lines: string[], hour: number, opts?: { idBlocks?: boolean }): Promise<string>;
  close(): Promise<void>;
}

export async function openTracesFixture(name: string): Promise<TracesFixture> {
  const dir = await mkdtemp(join(tmpdir(), `floe-${name}-`));
  const db: Db = await openDb({ kind: 'pglite', dataDir: 'memory://' });
  await migrate(db);
  const store = createObjectStore({ kind: 'fs', root: join(dir, 'data') });
  const catalog = openFloeCatalog(db, store);
  const writer = new ParquetWriter(join(dir, 'work'));
  const cache = new LocalFileCache({ dir: join(dir, 'cache'), maxBytes: 0 });
  return {
    dir,
    db,
    store,
    catalog,
    resolver: new FileResolver(catalog, store, cache, silentLogger()),
    async append(tenant, lines, hour, opts = {}) {
      const handle = await ensureFloeTable(catalog, tenant, 'default', 'traces');
      const written = await writer.write(tracesTable, [new TextEncoder().encode(`${lines.join('\n')}\n`)], { idBlocks: opts.idBlocks ?? false });
      const file = await publishDataFile(store, tracesTable, written, store.keyFromUri(handle.metadata.location), hour);
      await catalog.appendFiles(handle, [file], {});
      return file.key;
    },
    async close() {
      writer.close();
      await cache.close();
      await store.close();
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
