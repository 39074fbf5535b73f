import { currentSnapshot, decodeManifest, decodeManifestList, ManifestEntryStatus, metadataVersion, parseTableMetadata, type SqlCatalog, type TableIdentifier, type TableMetadata } from '@floe/iceberg';
import { isTableName } from '@floe/schema';
import type { ObjectInfo, ObjectStore } from '@floe/storage';
import { inScope, type PassScope } from './compactor.ts';
import { listTableObjects, versionsAhead } from './orphans.ts';

/**
 * Whether a table's metadata version can be read whole: the metadata file is there and parses,
 * and its current snapshot's manifest list, manifests and live data files are all in the store.
 * The writer cannot commit to a table whose current version fails this (it holds the table's WAL
 * segments until it heals), and a query of it fails; `floe ops check-tables` reports it and
 * `floe ops rollback-table` (table-rollback.ts) moves the table back to a version that passes.
 *
 * Existence comes from ONE listing of the table's data/ and metadata/ areas, never a HEAD per
 * file: a table has thousands of data files. The pointer is read before the listing (the reverse
 * of the orphan sweep): every file of the version it names was uploaded before the pointer
 * moved to it, so it is in a listing taken after, and a commit landing meanwhile cannot make a
 * sound table look damaged.
 */

export type TableProblemKind =
  | 'metadata_missing'
  | 'metadata_unparseable'
  | 'metadata_outside_table'
  | 'manifest_list_missing'
  | 'manifest_list_unreadable'
  | 'manifests_missing'
  | 'manifests_unreadable'
  | 'data_files_missing'
  | 'catalog_behind_files';

export interface TableProblem {
  kind: TableProblemKind;
  /** What is wrong, in words (the parse error included). */
  message: string;
  /** How many files the problem covers, and the first few of them (object keys). */
  count?: number;
  keys?: string[];
}

export interface TableCheck {
  /** `<tenant>.<dataset>.<table>`. */
  table: string;
  status: 'ok' | 'damaged';
  /** The catalog's pointer: the version checked. */
  metadata_location: string;
  problems: TableProblem[];
}

export interface CheckReport {
  tables_checked: number;
  ok: number;
  damaged: number;
  tables: TableCheck[];
}

/** Keys named in a problem: enough to find the others with a listing. */
const SHOWN_KEYS = 5;

const errorText = (err: unknown): string => {
  const e = err as Error & { cause?: unknown };
  const cause = e.cause instanceof Error ? e.cause.message : undefined;
  return cause ? `${e.message} (${cause})` : e.message;
};

const many = (kind: TableProblemKind, what: string, keys: string[]): TableProblem => ({
  kind,
  message: `${keys.length} ${what}, first: ${keys.slice(0, SHOWN_KEYS).join(', ')}`,
  count: keys.length,
  keys: keys.slice(0, SHOWN_KEYS),
});

/** The object key of a location of this store, or undefined when it is not one. */
export function keyIn(store: ObjectStore, location: string): string | undefined {
  try {
    return store.keyFromUri(location);
  } catch {
    return undefined;
  }
}

/** The table's root key from its pointer (`<root>/metadata/<file>`), or undefined when it is elsewhere. */
export function tableKeyOfPointer(store: ObjectStore, pointer: string): string | undefined {
  const key = keyIn(store, pointer);
  return key === undefined ? undefined : /^(.+)\/metadata\/[^/]+$/.exec(key)?.[1];
}

/** A metadata version as read from the store: parsed, or why it is not. */
export type ReadVersion = { metadata: TableMetadata; problem?: undefined } | { metadata?: undefined; problem: TableProblem };

/**
 * The objects of one table from one listing, with what has been read of them. Manifests and
 * manifest lists are immutable and shared between versions, so each is read once however many
 * versions are inspected.
 */
export class TableObjects {
  readonly store: ObjectStore;
  /** The table's root key (`warehouse/<tenant>/<dataset>/<table>`). */
  readonly locationKey: string;
  readonly metadataFiles: readonly ObjectInfo[];
  readonly #listed: Set<string>;
  readonly #reads = new Map<string, Promise<unknown>>();

  private constructor(store: ObjectStore, locationKey: string, data: ObjectInfo[], metadata: ObjectInfo[]) {
    this.store = store;
    this.locationKey = locationKey;
    this.metadataFiles = metadata;
    this.#listed = new Set([...data, ...metadata].map((o) => o.key));
  }

  static async list(store: ObjectStore, locationKey: string): Promise<TableObjects> {
    const listing = await listTableObjects(store, locationKey);
    return new TableObjects(store, locationKey, listing.data, listing.metadata);
  }

  /** Whether the listing holds the key; a key outside the table's areas (a file another engine added elsewhere) is asked for on its own. */
  async #exists(key: string): Promise<boolean> {
    if (key.startsWith(`${this.locationKey}/data/`) || key.startsWith(`${this.locationKey}/metadata/`)) return this.#listed.has(key);
    return (await this.store.head(key)) !== undefined;
  }

  #once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let hit = this.#reads.get(key) as Promise<T> | undefined;
    if (!hit) {
      hit = read();
      this.#reads.set(key, hit);
    }
    return hit;
  }

  /** The metadata file at `location`, parsed, or the problem with it. */
  readVersion(location: string): Promise<ReadVersion> {
    return this.#once(`version:${location}`, async (): Promise<ReadVersion> => {
      let key: string;
      try {
        key = this.store.keyFromUri(location);
      } catch (err) {
        return { problem: { kind: 'metadata_outside_table', message: `metadata ${location} is not in this store: ${errorText(err)}` } };
      }
      const bytes = (await this.#exists(key)) ? await this.store.get(key) : undefined;
      if (!bytes) return { problem: { kind: 'metadata_missing', message: `metadata file ${key} is missing`, keys: [key] } };
      try {
        return { metadata: parseTableMetadata(new TextDecoder().decode(bytes)) };
      } catch (err) {
        return { problem: { kind: 'metadata_unparseable', message: `metadata file ${key} does not parse: ${errorText(err)}`, keys: [key] } };
      }
    });
  }

  /** Everything wrong with the version at `location`: empty when it can be read whole. */
  async inspect(location: string): Promise<{ metadata?: TableMetadata; problems: TableProblem[] }> {
    const read = await this.readVersion(location);
    if (!read.metadata) return { problems: [read.problem] };
    const metadata = read.metadata;
    const snapshot = currentSnapshot(metadata);
    if (!snapshot) return { metadata, problems: [] };
    const listKey = this.store.keyFromUri(snapshot['manifest-list']);
    if (!(await this.#exists(listKey))) return { metadata, problems: [{ kind: 'manifest_list_missing', message: `manifest list ${listKey} of snapshot ${snapshot['snapshot-id']} is missing`, keys: [listKey] }] };
    let manifests: string[];
    try {
      manifests = await this.#once(`list:${listKey}`, async () => {
        const bytes = await this.store.get(listKey);
        if (!bytes) throw new Error('missing since the listing');
        return decodeManifestList(bytes).map((m) => this.store.keyFromUri(m.manifestPath));
      });
    } catch (err) {
      return { metadata, problems: [{ kind: 'manifest_list_unreadable', message: `manifest list ${listKey} cannot be read: ${errorText(err)}`, keys: [listKey] }] };
    }
    const missingManifests: string[] = [];
    const unreadable: Array<{ key: string; error: string }> = [];
    const live = new Set<string>();
    for (const key of manifests) {
      if (!(await this.#exists(key))) {
        missingManifests.push(key);
        continue;
      }
      try {
        for (const dataKey of await this.#liveFiles(key)) live.add(dataKey);
      } catch (err) {
        unreadable.push({ key, error: errorText(err) });
      }
    }
    const missingData: string[] = [];
    for (const key of live) if (!(await this.#exists(key))) missingData.push(key);
    const problems: TableProblem[] = [];
    if (missingManifests.length > 0) problems.push(many('manifests_missing', 'manifests of the current snapshot are missing', missingManifests));
    if (unreadable.length > 0) {
      problems.push({
        kind: 'manifests_unreadable',
        message: `${unreadable.length} manifests of the current snapshot cannot be read, first: ${unreadable[0]!.key}: ${unreadable[0]!.error}`,
        count: unreadable.length,
        keys: unreadable.slice(0, SHOWN_KEYS).map((u) => u.key),
      });
    }
    if (missingData.length > 0) problems.push(many('data_files_missing', 'data files of the current snapshot are missing', missingData));
    return { metadata, problems };
  }

  /** The data (and delete) files a manifest holds live: ADDED and EXISTING entries. */
  #liveFiles(manifestKey: string): Promise<string[]> {
    return this.#once(`manifest:${manifestKey}`, async () => {
      const bytes = await this.store.get(manifestKey);
      if (!bytes) throw new Error('missing since the listing');
      return decodeManifest(bytes)
        .entries.filter((e) => e.status !== ManifestEntryStatus.DELETED)
        .map((e) => this.store.keyFromUri(e.dataFile.filePath));
    });
  }
}

/**
 * The table's metadata files from the listing, newest first: by version number; among equals
 * (a commit attempt that lost its swap shares its number with the one that won) the current
 * pointer, then `parentKey` (the version the current one was committed on, which the catalog
 * row records), then by time written.
 */
export function metadataCandidates(objects: TableObjects, pointerKey: string, parentKey?: string): ObjectInfo[] {
  const time = (o: ObjectInfo) => o.lastModified?.getTime() ?? 0;
  const rank = (o: ObjectInfo) => (o.key === pointerKey ? 2 : o.key === parentKey ? 1 : 0);
  return objects.metadataFiles
    .filter((o) => /^[^/]+\.metadata\.json$/.test(o.key.slice(objects.locationKey.length + '/metadata/'.length)))
    .sort((a, b) => metadataVersion(b.key) - metadataVersion(a.key) || rank(b) - rank(a) || time(b) - time(a));
}

/** Checks one table's current version; undefined when the table is gone since the listing. */
export async function checkTable(catalog: SqlCatalog, store: ObjectStore, id: TableIdentifier): Promise<TableCheck | undefined> {
  const table = `${id.namespace}.${id.name}`;
  const pointer = (await catalog.pointerOf(id.namespace, id.name))?.metadataLocation;
  if (!pointer) return undefined;
  const locationKey = tableKeyOfPointer(store, pointer);
  if (!locationKey) {
    return { table, status: 'damaged', metadata_location: pointer, problems: [{ kind: 'metadata_outside_table', message: `the catalog points at ${pointer}, which is not in a metadata/ directory of this store` }] };
  }
  const objects = await TableObjects.list(store, locationKey);
  const { problems } = await objects.inspect(pointer);
  // Against the pointer as it is after the listing: a commit landing meanwhile is no sign of a catalog behind.
  const ahead = versionsAhead(objects.metadataFiles, (await catalog.pointerOf(id.namespace, id.name))?.metadataLocation ?? pointer, store);
  if (ahead.length > 0) {
    const newest = ahead.reduce((a, b) => (metadataVersion(b.key) > metadataVersion(a.key) ? b : a));
    problems.push({
      kind: 'catalog_behind_files',
      message: `${ahead.length} metadata files are numbered beyond the next commit's (newest ${newest.key}): the catalog is behind the table's files, as after a restore of the metadata DB from an older backup; the compactor leaves the table's unreferenced files alone until it is resolved (floe ops rollback-table --to the newest sound one rolls it forward)`,
      count: ahead.length,
      keys: ahead.slice(0, SHOWN_KEYS).map((o) => o.key),
    });
  }
  return { table, status: problems.length > 0 ? 'damaged' : 'ok', metadata_location: pointer, problems };
}

/** `POST /tables/check`: every Floe table of the scope, one after another. Read-only. */
export async function checkTables(catalog: SqlCatalog, store: ObjectStore, scope?: PassScope): Promise<CheckReport> {
  const tables: TableCheck[] = [];
  for (const id of await catalog.listTables(scope?.tenant)) {
    if (!isTableName(id.name) || !inScope(id, scope)) continue;
    const checked = await checkTable(catalog, store, id);
    if (checked) tables.push(checked);
  }
  const damaged = tables.filter((t) => t.status === 'damaged').length;
  return { tables_checked: tables.length, ok: tables.length - damaged, damaged, tables };
}
