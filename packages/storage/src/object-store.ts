// The object store contract shared by the fs (embedded mode) and S3 (cluster mode) adapters.
// Everything above this interface — WAL, Parquet files, Iceberg metadata — is written once and runs
// on both. Keys follow the rules in keys.ts.

export interface ObjectInfo {
  key: string;
  size: number;
  lastModified?: Date;
}

/** An object's bytes, whole or as parts written one after the other (the WAL's frames, uncopied). */
export type ObjectBody = Uint8Array | readonly Uint8Array[];

/** A body's parts as one array (one copy; for stores that need a single buffer). */
export function joinBody(body: ObjectBody): Uint8Array {
  if (body instanceof Uint8Array) return body;
  if (body.length === 1) return body[0]!;
  return Buffer.concat(body as Uint8Array[]);
}

export interface ObjectStore {
  readonly kind: 'fs' | 's3';
  /** Writes the whole object; durable (fsync'd, or acknowledged by S3) when the promise resolves. */
  put(key: string, body: ObjectBody): Promise<void>;
  /** Like put, but only if no object has that key; resolves false (and writes nothing) otherwise. */
  putIfAbsent(key: string, body: Uint8Array): Promise<boolean>;
  /**
   * The object's bytes, or undefined when it does not exist. With `alloc`, they are returned in
   * what alloc(size) gives (the fs store reads straight into it; S3 copies its response there),
   * so a caller can keep them in memory of its own (the writer's shared round memory).
   */
  get(key: string, alloc?: (bytes: number) => Uint8Array): Promise<Uint8Array | undefined>;
  /**
   * Bytes [offset, offset + length) clipped to the object's end (empty when offset is at or past the
   * end). Throws ObjectNotFoundError when the object does not exist.
   */
  getRange(key: string, offset: number, length: number): Promise<Uint8Array>;
  head(key: string): Promise<ObjectInfo | undefined>;
  /** Every object whose key starts with `prefix` (a plain string prefix), sorted by key. */
  list(prefix: string): Promise<ObjectInfo[]>;
  /**
   * The "directories" one level below `prefix`: for every object `<prefix><part>/<rest>`, the
   * prefix `<prefix><part>/` once, sorted by key; objects directly under `prefix` are not named.
   * S3's delimiter listing (CommonPrefixes): a walk down a tree of keys that never lists the
   * objects below the level it stops at (a table's thousands of data files).
   */
  listPrefixes(prefix: string): Promise<string[]>;
  /** Removes the object; no error when it does not exist. */
  delete(key: string): Promise<void>;
  deleteMany(keys: string[]): Promise<void>;
  /** fs: absolute path of the object, for readers such as DuckDB; s3: undefined. */
  localPath(key: string): string | undefined;
  /** file:///abs/path or s3://bucket/prefix/key — the form written into Iceberg metadata. */
  uri(key: string): string;
  /** Inverse of uri(); throws for a URI that does not belong to this store. */
  keyFromUri(uri: string): string;
  /** Uploads a local file as the object (the local file is left in place); durable on resolve. */
  putFile(key: string, localFile: string): Promise<void>;
  /** Objects written by appends (the fs store only: S3 objects are written whole). */
  readonly appendables?: AppendableObjects;
  close(): Promise<void>;
}

/**
 * Objects that grow by durable appends and appear under their key (get, list) only once sealed:
 * the fs WAL's segments, where one append and an fdatasync per group commit replace a new file,
 * a rename and two fsyncs.
 */
export interface AppendableObjects {
  /** Starts the object with its first bytes, durable (file and directory entry) on resolve. */
  open(key: string, first: readonly Uint8Array[]): Promise<AppendableObject>;
  /**
   * Publishes objects whose writer has left them untouched for `idleMs` (it died, or stalled):
   * each is taken over first, so that any later append of its writer fails rather than being
   * acknowledged and lost, then cut to the prefix `keep` accepts (a torn last append) and put
   * under its key; one with nothing to keep is deleted. Only the keys `mine` accepts are taken
   * (all when absent): writers sharing a WAL each recover their own share. Returns the keys published.
   */
  recover(idleMs: number, keep: (bytes: Uint8Array) => number, mine?: (key: string) => boolean): Promise<string[]>;
}

export interface AppendableObject {
  readonly key: string;
  /** Bytes written and made durable so far. */
  readonly size: number;
  /**
   * Appends the parts, durable on resolve. Rejects when the write or its sync failed or when the
   * object was taken over by recover(); the object then takes no more appends (seal it).
   */
  append(parts: readonly Uint8Array[]): Promise<void>;
  /**
   * Publishes the object under its key and closes it. After a failed append it is first cut back
   * to what was durable; when even that fails, or it was taken over, it is left to recover().
   */
  seal(): Promise<void>;
}

export interface FsObjectStoreConfig {
  kind: 'fs';
  /** Directory holding the objects; created on first write. */
  root: string;
}

export interface S3ObjectStoreConfig {
  kind: 's3';
  bucket: string;
  /** Key prefix inside the bucket ('floe' and 'floe/' are the same). */
  prefix?: string;
  /** Custom endpoint (MinIO, R2, s3rver…); path-style addressing is the default when set. */
  endpoint?: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle?: boolean;
  /**
   * How putIfAbsent is made conditional. 'native' sends `If-None-Match: *` (AWS S3 since 2024,
   * MinIO, R2); 'emulate' does HEAD then PUT, which is racy between writers; 'auto' (default) probes
   * the server once and uses native when the server honours the header.
   */
  conditionalPut?: 'auto' | 'native' | 'emulate';
  /** ListObjectsV2 (default) or the legacy V1 listing for old S3-compatible servers. */
  listApi?: 'v2' | 'v1';
  /** Keys per list page (default 1000, the S3 maximum). */
  listPageSize?: number;
}

export type ObjectStoreConfig = FsObjectStoreConfig | S3ObjectStoreConfig;

/** Shared argument check for getRange(). */
export function checkRange(offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`invalid offset ${offset}`);
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`invalid length ${length}`);
}
