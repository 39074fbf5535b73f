// SqlCatalog.registerTable: a table whose files are in the store but whose catalog row is gone
// (the metadata DB restored from an older backup) gets a row again, at a new version.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlCatalog } from './catalog.ts';
import { metadataVersion, parseTableMetadata } from './metadata.ts';
import { FsBlobStore, pgliteClient } from './test-support.ts';
import type { Schema } from './types.ts';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };

describe('SqlCatalog.registerTable', () => {
  let dir: string;
  let pg: Awaited<ReturnType<typeof pgliteClient>>;
  let blobs: FsBlobStore;
  let catalog: SqlCatalog;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floe-register-'));
    pg = await pgliteClient();
    blobs = new FsBlobStore(dir);
    catalog = new SqlCatalog(pg.sql, blobs, { catalogName: 'c', warehouseKeyPrefix: 'wh' });
  });
  afterAll(async () => {
    await pg?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('points a new row at the content of a version as a new version, and refuses a table that has a row', async () => {
    const created = await catalog.createTable('acme.default', 'logs', { schema });
    const file = { key: 'wh/acme/default/logs/data/a.parquet', fileSizeBytes: 10, recordCount: 3, partition: {} };
    const appended = (await catalog.appendFiles(created, [file])).handle;
    // The restore: the row is gone, the files stay.
    await pg.sql.query(`DELETE FROM iceberg_tables WHERE table_namespace = 'acme.default'`);
    await pg.sql.query(`DELETE FROM iceberg_namespace_properties WHERE namespace = 'acme.default'`);
    expect(await catalog.loadTable('acme.default', 'logs')).toBeUndefined();

    const location = await catalog.registerTable('acme.default', 'logs', { location: appended.metadataLocation, metadata: appended.metadata }, 5);
    expect(location).toMatch(/^file:\/\/.*\/wh\/acme\/default\/logs\/metadata\/00005-[^/]+\.metadata\.json$/);
    expect(metadataVersion(location!)).toBe(5);
    const loaded = (await catalog.loadTable('acme.default', 'logs'))!;
    expect(loaded.metadataLocation).toBe(location);
    expect(loaded.metadata.snapshots).toEqual(appended.metadata.snapshots);
    expect(loaded.metadata['metadata-log'].at(-1)!['metadata-file']).toBe(appended.metadataLocation);
    // Written to the store, as another process reads it.
    expect(parseTableMetadata(new TextDecoder().decode((await blobs.get(blobs.keyFromUri(location!)))!)).snapshots).toEqual(appended.metadata.snapshots);
    expect(await catalog.pointerOf('acme.default', 'logs')).toEqual({ metadataLocation: location, previousMetadataLocation: null });
    expect(await catalog.listNamespaces('acme')).toEqual(['acme.default']);
    // The table takes commits again.
    const next = await catalog.appendFiles(loaded, [{ ...file, key: 'wh/acme/default/logs/data/b.parquet' }]);
    expect(metadataVersion(next.metadataLocation)).toBe(6);
    expect((await catalog.planFiles(next.handle)).map((p) => p.key).sort()).toEqual(['wh/acme/default/logs/data/a.parquet', 'wh/acme/default/logs/data/b.parquet']);

    // A row exists: nothing changes.
    expect(await catalog.registerTable('acme.default', 'logs', { location: appended.metadataLocation, metadata: appended.metadata }, 9)).toBeUndefined();
    expect((await catalog.pointerOf('acme.default', 'logs'))!.metadataLocation).toBe(next.metadataLocation);
  });
});
