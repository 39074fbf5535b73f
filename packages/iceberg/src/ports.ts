// The two I/O ports this package needs. They are structural on purpose: @floe/meta's Db and
// @floe/storage's ObjectStore satisfy them, and tests can pass PGlite or a temp-dir store directly.

/** A SQL connection or pool that takes `$1…` parameters (node-postgres and PGlite both do). */
export interface SqlClient {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: R[]; rowCount: number }>;
  /**
   * Present only when this process is the database's one writer: changes whenever a write starts
   * or ends, so a read made under one value stays current while it holds (see @floe/meta's Db).
   */
  writeGeneration?(): number;
}

/**
 * An object store addressed by keys. `uri(key)` is the absolute location written into Iceberg
 * metadata (`file:///…`, `s3://bucket/…`, `http://…`) and `keyFromUri` is its inverse.
 */
export interface BlobStore {
  put(key: string, body: Uint8Array): Promise<void>;
  get(key: string): Promise<Uint8Array | undefined>;
  uri(key: string): string;
  keyFromUri(uri: string): string;
}
