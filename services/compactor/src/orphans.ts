import { dataFileSidecars, decodeManifest, decodeManifestList, metadataVersion, type TableMetadata } from '@floe/iceberg';
import type { ObjectInfo, ObjectStore } from '@floe/storage';

/**
 * An unreferenced object is deleted only when it is at least this old. A writer or compactor
 * uploads its Parquet file, id filter and manifests before the commit that references them; a
 * sweep running in between must not take them. An hour is far beyond any upload-to-commit gap
 * (seconds), and beyond the time a querier holds a plan.
 */
export const ORPHAN_MIN_AGE_MS = 60 * 60_000;

/**
 * Decoded manifest lists and manifests, by blob key. Both are immutable, so what a previous pass
 * read is reused; `endPass` forgets entries the pass did not touch (they left every retained
 * snapshot), which keeps the cache as large as the live metadata and no larger.
 */
export class ReferenceCache {
  #lists = new Map<string, string[]>();
  #manifests = new Map<string, string[]>();
  #touched = new Set<string>();

  async manifestList(store: ObjectStore, key: string): Promise<string[]> {
    this.#touched.add(key);
    let hit = this.#lists.get(key);
    if (!hit) {
      hit = decodeManifestList(await mustGet(store, key)).map((m) => store.keyFromUri(m.manifestPath));
      this.#lists.set(key, hit);
    }
    return hit;
  }

  /** Every data file a manifest names, whatever the entry status. */
  async manifest(store: ObjectStore, key: string): Promise<string[]> {
    this.#touched.add(key);
    let hit = this.#manifests.get(key);
    if (!hit) {
      hit = decodeManifest(await mustGet(store, key)).entries.map((e) => store.keyFromUri(e.dataFile.filePath));
      this.#manifests.set(key, hit);
    }
    return hit;
  }

  endPass(): void {
    for (const k of this.#lists.keys()) if (!this.#touched.has(k)) this.#lists.delete(k);
    for (const k of this.#manifests.keys()) if (!this.#touched.has(k)) this.#manifests.delete(k);
    this.#touched.clear();
  }
}

async function mustGet(store: ObjectStore, key: string): Promise<Uint8Array> {
  const bytes = await store.get(key);
  // Never guess: a missing manifest means the reference set is unknown, so nothing is swept.
  if (!bytes) throw new Error(`${key} is referenced by the table metadata but missing`);
  return bytes;
}

export interface References {
  /** Current metadata file, the files of its metadata log, manifest lists and manifests. */
  metadata: Set<string>;
  data: Set<string>;
}

/**
 * Everything the table's retained snapshots can reach. Data files are taken from every entry of
 * every reachable manifest, DELETED ones included: that is a superset of the files any retained
 * snapshot reads, which is the safe direction for a sweep (expiry reports the rest once their last
 * snapshot goes).
 */
export async function tableReferences(store: ObjectStore, metadataLocation: string, metadata: TableMetadata, cache: ReferenceCache): Promise<References> {
  const refs: References = { metadata: new Set([store.keyFromUri(metadataLocation)]), data: new Set() };
  for (const entry of metadata['metadata-log']) refs.metadata.add(store.keyFromUri(entry['metadata-file']));
  for (const snap of metadata.snapshots) {
    const listKey = store.keyFromUri(snap['manifest-list']);
    refs.metadata.add(listKey);
    for (const manifestKey of await cache.manifestList(store, listKey)) {
      if (refs.metadata.has(manifestKey)) continue;
      refs.metadata.add(manifestKey);
      for (const dataKey of await cache.manifest(store, manifestKey)) refs.data.add(dataKey);
    }
  }
  return refs;
}

/** Only what Iceberg engines write under metadata/ is swept there (never e.g. a version hint). */
const SWEPT_METADATA = /(\.avro|\.metadata\.json(\.gz)?)$/;
const SIDECAR_SUFFIXES = dataFileSidecars('');

export interface OrphanListing {
  data: ObjectInfo[];
  metadata: ObjectInfo[];
}

/** Lists the table's data/ and metadata/ areas. Call before loading the metadata to compare. */
export async function listTableObjects(store: ObjectStore, locationKey: string): Promise<OrphanListing> {
  const [data, metadata] = await Promise.all([store.list(`${locationKey}/data/`), store.list(`${locationKey}/metadata/`)]);
  return { data, metadata };
}

/**
 * Objects of the listing that no retained snapshot references and that are older than
 * `minAgeMs`. Under data/: Parquet files and sidecars (id filters, id blocks) whose data file is not referenced (an
 * object without a modification time is kept). Under metadata/: manifests, manifest lists and
 * metadata files outside the metadata log (lost commit attempts, expiries interrupted before
 * their deletes, versions the log has dropped).
 */
export function findOrphans(listing: OrphanListing, refs: References, nowMs: number, minAgeMs: number): { data: string[]; metadata: string[] } {
  const oldEnough = (o: ObjectInfo) => o.lastModified !== undefined && nowMs - o.lastModified.getTime() >= minAgeMs;
  const data = listing.data
    .filter((o) => {
      if (!oldEnough(o)) return false;
      if (refs.data.has(o.key)) return false;
      const suffix = SIDECAR_SUFFIXES.find((sfx) => o.key.endsWith(sfx));
      if (suffix && refs.data.has(o.key.slice(0, -suffix.length))) return false;
      return true;
    })
    .map((o) => o.key);
  const metadata = listing.metadata.filter((o) => oldEnough(o) && SWEPT_METADATA.test(o.key) && !refs.metadata.has(o.key)).map((o) => o.key);
  return { data, metadata };
}

/**
 * Metadata files numbered beyond the next commit's (the current version + 1, which a commit in
 * flight or an attempt that lost its swap may hold). Version numbers only grow (a rollback
 * writes a new version too), so these mean the catalog's pointer is behind the table's own
 * history: the metadata DB was restored from an older backup than the bucket. Everything
 * committed since is then unreferenced by the pointer, and the orphan sweep must not take it.
 */
export function versionsAhead(metadataFiles: readonly ObjectInfo[], pointer: string, store: ObjectStore): ObjectInfo[] {
  const current = metadataVersion(store.keyFromUri(pointer));
  if (current < 0) return [];
  return metadataFiles.filter((o) => metadataVersion(o.key) > current + 1);
}
