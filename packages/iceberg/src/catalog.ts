// SQL catalog with the JDBC/PyIceberg table layout (iceberg_tables, iceberg_namespace_properties),
// so Spark, Trino and PyIceberg configured with the same database see the same tables.
//
// Every commit is optimistic: write new manifests, a manifest list and a metadata file (all new,
// immutable objects), then compare-and-swap the table's metadata_location. Losing the swap means
// another writer committed first: reload, rebuild on the new base, retry with backoff.

import { setTimeout as sleep } from 'node:timers/promises';
import {
  countPartitions,
  finalizeManifest,
  snapshotSummary,
  tableKeyOf,
  toDataFile,
  withSnapshot,
  writeManifest,
  writeManifestList,
  type WrittenManifest,
} from './append.ts';
import { CommitConflictError, IcebergError, InvalidMetadataError, TableNotFoundError } from './errors.ts';
import { snapshotsToRetain, unreferencedFiles, withoutSnapshots, type ExpireOptions } from './expire.ts';
import { Lru } from '@floe/storage';
import {
  currentSchema,
  currentSnapshot,
  defaultSpec,
  maxFieldId,
  metadataFileName,
  metadataVersion,
  newSnapshotId,
  newTableMetadata,
  parseTableMetadata,
  snapshotById,
  specById,
  tableMetadataBytes,
  withMetadataLog,
  type NewTableOptions,
} from './metadata.ts';
import { ManifestReader, planFiles, type ManifestCacheOptions, type PlanOptions } from './scan.ts';
import type { BlobStore, SqlClient } from './ports.ts';
import type {
  CommitResult,
  DataFile,
  DataFileInput,
  ManifestEntry,
  ManifestFile,
  PlannedFile,
  Schema,
  Snapshot,
  SnapshotSummaryInfo,
  SortOrder,
  TableHandle,
  TableMetadata,
} from './types.ts';

export interface SqlCatalogOptions {
  /** `catalog_name` column value; engines sharing the tables must use the same name. */
  catalogName: string;
  /** Blob key prefix under which table locations are created (`<prefix>/<ns levels>/<table>`). */
  warehouseKeyPrefix: string;
  /** Compare-and-swap retries after the first attempt (default 10). */
  commitRetries?: number;
  /** Backoff between retries: exponential from min to max, with jitter (defaults 10 ms, 2 s). */
  commitMinBackoffMs?: number;
  commitMaxBackoffMs?: number;
  /** Tables whose current metadata (as last read or committed here) is kept parsed in memory (default 256). */
  metadataCacheSize?: number;
  manifestCache?: ManifestCacheOptions;
  /** Clock for snapshot timestamps (tests). */
  now?: () => number;
}

export interface CreateTableOptions {
  schema: NewTableOptions['schema'];
  partitionSpec?: NewTableOptions['partitionSpec'];
  sortOrder?: SortOrder;
  properties?: Record<string, string>;
  /** Blob key of the table root; default `<warehouse>/<namespace levels>/<name>`. */
  locationKey?: string;
}

export interface AppendOptions {
  /** Extra snapshot summary entries (e.g. the WAL segments this append consumed). */
  summary?: Record<string, string>;
  /**
   * Called with the base of every attempt, the first and each one after a lost swap; throwing
   * aborts the commit. Lets a writer re-check that no concurrent commit already consumed its input.
   */
  validate?: (base: TableHandle) => void;
}

export interface ReplaceOptions {
  /** Blob keys of live data files to remove. */
  remove: string[];
  add: DataFileInput[];
  summary?: Record<string, string>;
  /** 'replace' (default: same rows, new files, as compaction does), 'overwrite' or 'delete'. */
  operation?: 'replace' | 'overwrite' | 'delete';
}

export interface ExpireResult {
  expiredSnapshotIds: bigint[];
  /** Blob keys no retained snapshot references; the caller may delete them. */
  manifestLists: string[];
  manifests: string[];
  dataFiles: string[];
  metadataLocation: string;
  handle: TableHandle;
}

export interface TableIdentifier {
  namespace: string;
  name: string;
}

/** A table and the metadata file its catalog row points at. */
export interface TablePointer extends TableIdentifier {
  metadataLocation: string;
}

interface Built<T> {
  metadata: TableMetadata;
  value: T;
}

const utf8Decoder = new TextDecoder();
/** Pointers a catalog keeps (see #metadataLocation); past this many the map starts over. */
const MAX_CACHED_POINTERS = 10_000;

/** A table's key in a catalog's in-memory maps. */
const memoryKey = (namespace: string, name: string) => `${namespace}\u0000${name}`;

function validateIdentifier(namespace: string, name: string): void {
  if (!namespace || namespace.split('.').some((level) => level === '' || level.includes('/'))) {
    throw new IcebergError('invalid_argument', `invalid namespace ${JSON.stringify(namespace)}`);
  }
  if (!name || name.includes('/') || name.includes('.')) throw new IcebergError('invalid_argument', `invalid table name ${JSON.stringify(name)}`);
}

/** Manifests carried into a new snapshot: drop those that only record deletes of older snapshots. */
function carried(manifests: ManifestFile[]): ManifestFile[] {
  return manifests.filter((mf) => mf.content !== 0 || mf.addedFilesCount > 0 || mf.existingFilesCount > 0);
}

export class SqlCatalog {
  readonly #sql: SqlClient;
  /** Metadata pointers read under a write generation (only where the SqlClient has one). */
  readonly #pointers = new Map<string, { generation: number; location: string | undefined }>();
  readonly #blobs: BlobStore;
  readonly #catalogName: string;
  readonly #warehouse: string;
  readonly #retries: number;
  readonly #minBackoff: number;
  readonly #maxBackoff: number;
  readonly #now: () => number;
  /**
   * By table, its metadata as last read or committed here and the file that holds it. By table,
   * not by file: a commit's new version takes its base's place, where by file the versions a
   * table had committed since took the slots of other tables.
   */
  readonly #metadata: Lru<string, { location: string; metadata: TableMetadata }>;
  readonly #reader: ManifestReader;

  constructor(sql: SqlClient, blobs: BlobStore, options: SqlCatalogOptions) {
    this.#sql = sql;
    this.#blobs = blobs;
    this.#catalogName = options.catalogName;
    this.#warehouse = options.warehouseKeyPrefix.replace(/^\/+|\/+$/g, '');
    this.#retries = options.commitRetries ?? 10;
    this.#minBackoff = options.commitMinBackoffMs ?? 10;
    this.#maxBackoff = options.commitMaxBackoffMs ?? 2000;
    this.#now = options.now ?? Date.now;
    this.#metadata = new Lru(options.metadataCacheSize ?? 256);
    this.#reader = new ManifestReader(blobs, options.manifestCache);
  }

  get catalogName(): string {
    return this.#catalogName;
  }

  // -------------------------------------------------------------------------------------------
  // Tables and namespaces

  async #readMetadata(namespace: string, name: string, location: string): Promise<TableMetadata> {
    const hit = this.#metadata.get(memoryKey(namespace, name));
    if (hit?.location === location) return hit.metadata;
    const bytes = await this.#blobs.get(this.#blobs.keyFromUri(location));
    if (!bytes) throw new InvalidMetadataError(`metadata file ${location} is missing`);
    const metadata = parseTableMetadata(utf8Decoder.decode(bytes));
    this.#remember(namespace, name, location, metadata);
    return metadata;
  }

  #remember(namespace: string, name: string, location: string, metadata: TableMetadata): void {
    this.#metadata.set(memoryKey(namespace, name), { location, metadata });
  }

  /**
   * The table's current metadata pointer. Where this process is the database's one writer
   * (embedded PGlite), a pointer read stands until the next write to the database: the read cost
   * ~1.7 ms of the main thread, on every query.
   */
  async #metadataLocation(namespace: string, name: string): Promise<string | undefined> {
    const generation = this.#sql.writeGeneration?.();
    const key = memoryKey(namespace, name);
    if (generation !== undefined) {
      const hit = this.#pointers.get(key);
      if (hit && hit.generation === generation) return hit.location;
    }
    const res = await this.#sql.query<{ metadata_location: string | null }>(
      `SELECT metadata_location FROM iceberg_tables
        WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3
          AND (iceberg_type IS NULL OR iceberg_type = 'TABLE')`,
      [this.#catalogName, namespace, name],
    );
    const location = res.rows[0]?.metadata_location ?? undefined;
    if (generation !== undefined) {
      if (this.#pointers.size >= MAX_CACHED_POINTERS) this.#pointers.clear();
      this.#pointers.set(key, { generation, location });
    }
    return location;
  }

  /**
   * The table's catalog row as it is now (never cached), without reading the file it points at:
   * what a repair tool needs when that file is missing or damaged (loadTable throws then). The
   * previous location is the version the last commit was made on (each swap records it), so the
   * one a damaged version came from. Undefined when there is no such table.
   */
  async pointerOf(namespace: string, name: string): Promise<{ metadataLocation: string; previousMetadataLocation: string | null } | undefined> {
    const res = await this.#sql.query<{ metadata_location: string | null; previous_metadata_location: string | null }>(
      `SELECT metadata_location, previous_metadata_location FROM iceberg_tables
        WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3
          AND (iceberg_type IS NULL OR iceberg_type = 'TABLE')`,
      [this.#catalogName, namespace, name],
    );
    const row = res.rows[0];
    return row?.metadata_location ? { metadataLocation: row.metadata_location, previousMetadataLocation: row.previous_metadata_location } : undefined;
  }

  /**
   * Makes an earlier version's content (`from`, read and checked sound by the caller) the table's
   * current one as a NEW metadata version numbered `version`, by the same compare-and-swap as
   * every commit from `expected` (the pointer the caller read): the location written, or
   * undefined, and the pointer unchanged, when it has moved since. Version numbers thus never go
   * back, as Iceberg's own rollback, so the files of the versions given up rank below the current
   * one like every superseded version, and a metadata file ranking above the current one always
   * means a commit in flight or a catalog behind its files (restored from an older backup).
   */
  async restoreVersion(namespace: string, name: string, expected: string, from: { location: string; metadata: TableMetadata }, version: number): Promise<string | undefined> {
    const next = withMetadataLog({ ...from.metadata, 'last-updated-ms': Date.now() }, from.metadata, from.location);
    const key = `${tableKeyOf(this.#blobs, from.metadata)}/metadata/${metadataFileName(version)}`;
    const location = this.#blobs.uri(key);
    await this.#blobs.put(key, tableMetadataBytes(next));
    if (!(await this.#swap(namespace, name, expected, location))) return undefined;
    this.#remember(namespace, name, location, next);
    return location;
  }

  /** The table's current metadata, or undefined when it doesn't exist. */
  async loadTable(namespace: string, name: string): Promise<TableHandle | undefined> {
    const location = await this.#metadataLocation(namespace, name);
    if (!location) return undefined;
    return { namespace, name, metadataLocation: location, metadata: await this.#readMetadata(namespace, name, location) };
  }

  /** Records a namespace the way PyIceberg does (an `exists` property row). */
  async createNamespace(namespace: string): Promise<void> {
    validateIdentifier(namespace, 'x');
    await this.#sql.query(
      `INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value)
       VALUES ($1, $2, 'exists', 'true') ON CONFLICT DO NOTHING`,
      [this.#catalogName, namespace],
    );
  }

  /**
   * Creates the table, or returns the existing one (also when another process wins the race:
   * INSERT … ON CONFLICT DO NOTHING, then load).
   */
  async createTable(namespace: string, name: string, options: CreateTableOptions): Promise<TableHandle> {
    validateIdentifier(namespace, name);
    const existing = await this.loadTable(namespace, name);
    if (existing) return existing;
    await this.createNamespace(namespace);
    const tableKey = (options.locationKey ?? [this.#warehouse, ...namespace.split('.'), name].filter((p) => p !== '').join('/')).replace(/\/+$/, '');
    const metadata = newTableMetadata({
      location: this.#blobs.uri(tableKey),
      schema: options.schema,
      ...(options.partitionSpec ? { partitionSpec: options.partitionSpec } : {}),
      ...(options.sortOrder ? { sortOrder: options.sortOrder } : {}),
      ...(options.properties ? { properties: options.properties } : {}),
      nowMs: this.#now(),
    });
    const key = `${tableKey}/metadata/${metadataFileName(0)}`;
    await this.#blobs.put(key, tableMetadataBytes(metadata));
    await this.#sql.query(
      `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location, iceberg_type)
       VALUES ($1, $2, $3, $4, NULL, 'TABLE') ON CONFLICT DO NOTHING`,
      [this.#catalogName, namespace, name, this.#blobs.uri(key)],
    );
    const loaded = await this.loadTable(namespace, name);
    if (!loaded) throw new TableNotFoundError(namespace, name);
    return loaded;
  }

  /** Tables in the catalog, optionally under a namespace prefix (`acme` matches `acme.default`). */
  async listTables(namespacePrefix?: string): Promise<TableIdentifier[]> {
    const rows = await this.#tableRows<{ table_namespace: string; table_name: string }>('table_namespace, table_name', namespacePrefix);
    return rows.map((r) => ({ namespace: r.table_namespace, name: r.table_name }));
  }

  /**
   * Every table's current metadata pointer (optionally under a namespace prefix, as listTables),
   * read in one query and never from this catalog's caches: what a process visiting many tables
   * in turn compares with the pointers it last saw, to leave alone the tables nobody committed to.
   */
  async listTablePointers(namespacePrefix?: string): Promise<TablePointer[]> {
    const rows = await this.#tableRows<{ table_namespace: string; table_name: string; metadata_location: string | null }>('table_namespace, table_name, metadata_location', namespacePrefix);
    return rows.flatMap((r) => (r.metadata_location ? [{ namespace: r.table_namespace, name: r.table_name, metadataLocation: r.metadata_location }] : []));
  }

  /** The table rows (not views) of this catalog, under a namespace prefix when given, in namespace and name order. */
  async #tableRows<R>(columns: string, namespacePrefix: string | undefined): Promise<R[]> {
    const params: unknown[] = [this.#catalogName];
    let where = '';
    if (namespacePrefix !== undefined && namespacePrefix !== '') {
      params.push(namespacePrefix);
      where = ` AND (table_namespace = $2 OR left(table_namespace, length($2::text) + 1) = $2::text || '.')`;
    }
    const res = await this.#sql.query<R>(
      `SELECT ${columns} FROM iceberg_tables
        WHERE catalog_name = $1 AND (iceberg_type IS NULL OR iceberg_type = 'TABLE')${where}
        ORDER BY table_namespace, table_name`,
      params,
    );
    return res.rows;
  }

  /** Namespaces that have a table or a property row, optionally under a prefix. */
  async listNamespaces(prefix?: string): Promise<string[]> {
    const params: unknown[] = [this.#catalogName];
    let filter = '';
    if (prefix !== undefined && prefix !== '') {
      params.push(prefix);
      filter = ` AND (ns = $2 OR left(ns, length($2::text) + 1) = $2::text || '.')`;
    }
    const res = await this.#sql.query<{ ns: string }>(
      `SELECT DISTINCT ns FROM (
         SELECT table_namespace AS ns FROM iceberg_tables WHERE catalog_name = $1
         UNION SELECT namespace AS ns FROM iceberg_namespace_properties WHERE catalog_name = $1
       ) n WHERE true${filter} ORDER BY ns`,
      params,
    );
    return res.rows.map((r) => r.ns);
  }

  /**
   * Removes the table from the catalog (its files stay; the returned metadata location lets the
   * caller purge them). Undefined when there was no such table.
   */
  async dropTable(namespace: string, name: string): Promise<{ metadataLocation: string | null } | undefined> {
    const res = await this.#sql.query<{ metadata_location: string | null }>(
      `DELETE FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3
       RETURNING metadata_location`,
      [this.#catalogName, namespace, name],
    );
    const row = res.rows[0];
    return row ? { metadataLocation: row.metadata_location } : undefined;
  }

  // -------------------------------------------------------------------------------------------
  // Reading

  /** All retained snapshots, oldest first, with their summaries (e.g. the writer's WAL markers). */
  snapshotSummaries(handle: TableHandle): SnapshotSummaryInfo[] {
    return [...handle.metadata.snapshots]
      .sort((a, b) => a['sequence-number'] - b['sequence-number'] || a['timestamp-ms'] - b['timestamp-ms'])
      .map((s) => ({
        snapshotId: s['snapshot-id'],
        parentSnapshotId: s['parent-snapshot-id'] ?? null,
        sequenceNumber: s['sequence-number'],
        timestampMs: s['timestamp-ms'],
        summary: { ...s.summary },
      }));
  }

  /** Live data files of the current snapshot (or `options.snapshotId`) that survive pruning. */
  planFiles(handle: TableHandle, options: PlanOptions = {}): Promise<PlannedFile[]> {
    return planFiles(this.#reader, this.#blobs, handle.metadata, options);
  }

  // -------------------------------------------------------------------------------------------
  // Commits

  /** Writes the next metadata file and swaps it in; on a lost swap reloads and rebuilds. */
  async #commit<T>(
    handle: TableHandle,
    build: (base: TableHandle, attempt: number) => Promise<Built<T> | undefined>,
  ): Promise<{ handle: TableHandle; value: T | undefined; attempts: number }> {
    let base = handle;
    for (let attempt = 1; ; attempt++) {
      const built = await build(base, attempt);
      if (!built) return { handle: base, value: undefined, attempts: attempt };
      const next = withMetadataLog(built.metadata, base.metadata, base.metadataLocation);
      const prevVersion = metadataVersion(base.metadataLocation);
      const version = (prevVersion >= 0 ? prevVersion : base.metadata['metadata-log'].length) + 1;
      const key = `${tableKeyOf(this.#blobs, base.metadata)}/metadata/${metadataFileName(version)}`;
      const location = this.#blobs.uri(key);
      await this.#blobs.put(key, tableMetadataBytes(next));
      if (await this.#swap(base.namespace, base.name, base.metadataLocation, location)) {
        this.#remember(base.namespace, base.name, location, next);
        return {
          handle: { namespace: base.namespace, name: base.name, metadataLocation: location, metadata: next },
          value: built.value,
          attempts: attempt,
        };
      }
      if (attempt > this.#retries) {
        throw new CommitConflictError(`commit to ${base.namespace}.${base.name} lost the compare-and-swap ${attempt} times`, true);
      }
      const backoff = Math.min(this.#maxBackoff, this.#minBackoff * 2 ** (attempt - 1));
      await sleep(Math.round(backoff * (0.5 + Math.random() / 2)));
      const reloaded = await this.loadTable(base.namespace, base.name);
      if (!reloaded) throw new TableNotFoundError(base.namespace, base.name);
      base = reloaded;
    }
  }

  /** The compare-and-swap. An error with an unknown outcome is resolved by reading the row back. */
  async #swap(namespace: string, name: string, expected: string, location: string): Promise<boolean> {
    try {
      const res = await this.#sql.query(
        `UPDATE iceberg_tables SET metadata_location = $1, previous_metadata_location = $2
          WHERE catalog_name = $3 AND table_namespace = $4 AND table_name = $5 AND metadata_location = $2`,
        [location, expected, this.#catalogName, namespace, name],
      );
      return res.rowCount === 1;
    } catch (err) {
      const now = await this.#metadataLocation(namespace, name).catch(() => undefined);
      if (now === location) return true;
      throw err;
    }
  }

  /**
   * Fast append: one new manifest with the files (status ADDED, sequence numbers inherited), a
   * manifest list carrying the previous snapshot's manifests, metadata, CAS. On retry only the
   * manifest list and metadata are rewritten. Appending no files still commits a snapshot
   * (useful to record summary markers).
   */
  async appendFiles(handle: TableHandle, files: DataFileInput[], options: AppendOptions = {}): Promise<CommitResult> {
    let snapshotId = newSnapshotId();
    let written: WrittenManifest | undefined;
    let dataFiles: DataFile[] = [];
    const result = await this.#commit(handle, async (base, attempt) => {
      options.validate?.(base);
      const m = base.metadata;
      if (snapshotById(m, snapshotId)) {
        snapshotId = newSnapshotId();
        written = undefined;
      }
      const spec = defaultSpec(m);
      const schema = currentSchema(m);
      if (files.length > 0 && written?.specId !== spec['spec-id']) {
        dataFiles = files.map((f) => toDataFile(this.#blobs, spec, schema, f));
        const entries: ManifestEntry[] = dataFiles.map((dataFile) => ({ status: 1, snapshotId, sequenceNumber: null, fileSequenceNumber: null, dataFile }));
        written = await writeManifest(this.#blobs, m, spec, schema, snapshotId, entries);
      }
      const parent = currentSnapshot(m);
      const seq = m['last-sequence-number'] + 1;
      const previous = parent ? carried(await this.#reader.manifestList(parent['manifest-list'])) : [];
      const manifests = written ? [finalizeManifest(written, seq), ...previous] : previous;
      const parentId = parent?.['snapshot-id'] ?? null;
      const listUri = await writeManifestList(this.#blobs, m, manifests, snapshotId, parentId, seq, attempt);
      this.#reader.rememberList(listUri, manifests);
      const now = Math.max(this.#now(), m['last-updated-ms']);
      const summary = snapshotSummary(
        'append',
        parent,
        {
          addedFiles: dataFiles.length,
          addedRecords: dataFiles.reduce((a, f) => a + f.recordCount, 0),
          addedSize: dataFiles.reduce((a, f) => a + f.fileSizeInBytes, 0),
          deletedFiles: 0,
          deletedRecords: 0,
          removedSize: 0,
          changedPartitions: countPartitions(dataFiles),
        },
        options.summary,
      );
      const snapshot: Snapshot = {
        'snapshot-id': snapshotId,
        ...(parentId !== null ? { 'parent-snapshot-id': parentId } : {}),
        'sequence-number': seq,
        'timestamp-ms': now,
        'manifest-list': listUri,
        summary,
        'schema-id': schema['schema-id'],
      };
      return { metadata: withSnapshot(m, snapshot, now), value: snapshotId };
    });
    return { snapshotId: result.value!, metadataLocation: result.handle.metadataLocation, handle: result.handle, attempts: result.attempts };
  }

  /**
   * Replaces live data files (compaction): manifests holding a removed file are rewritten with it
   * as DELETED and their other live files as EXISTING; other manifests are carried over; the added
   * files go into a new manifest. Fails with a non-retryable CommitConflictError when a file to
   * remove is no longer live in the latest metadata.
   */
  async replaceFiles(handle: TableHandle, options: ReplaceOptions): Promise<CommitResult> {
    const removeKeys = new Set(options.remove);
    if (removeKeys.size === 0 && options.add.length === 0) throw new IcebergError('invalid_argument', 'replaceFiles needs files to remove or add');
    let snapshotId = newSnapshotId();
    let added: WrittenManifest | undefined;
    let addedFiles: DataFile[] = [];
    // Rewrites depend only on the source manifest (immutable) and the snapshot id, so they are
    // reused across attempts.
    let rewrites = new Map<string, { written: WrittenManifest; removed: DataFile[] }>();
    const result = await this.#commit(handle, async (base, attempt) => {
      const m = base.metadata;
      if (snapshotById(m, snapshotId)) {
        snapshotId = newSnapshotId();
        added = undefined;
        rewrites = new Map();
      }
      const spec = defaultSpec(m);
      const schema = currentSchema(m);
      if (options.add.length > 0 && added?.specId !== spec['spec-id']) {
        addedFiles = options.add.map((f) => toDataFile(this.#blobs, spec, schema, f));
        const entries: ManifestEntry[] = addedFiles.map((dataFile) => ({ status: 1, snapshotId, sequenceNumber: null, fileSequenceNumber: null, dataFile }));
        added = await writeManifest(this.#blobs, m, spec, schema, snapshotId, entries);
      }
      const parent = currentSnapshot(m);
      const seq = m['last-sequence-number'] + 1;
      const manifests = parent ? await this.#reader.manifestList(parent['manifest-list']) : [];
      const next: ManifestFile[] = [];
      const removed: DataFile[] = [];
      const found = new Set<string>();
      for (const mf of carried(manifests)) {
        if (mf.content !== 0 || removeKeys.size === 0) {
          next.push(mf);
          continue;
        }
        const cached = rewrites.get(mf.manifestPath);
        if (cached) {
          next.push(finalizeManifest(cached.written, seq));
          for (const df of cached.removed) found.add(this.#blobs.keyFromUri(df.filePath));
          for (const r of cached.removed) removed.push(r);
          continue;
        }
        const entries = await this.#reader.manifest(mf, m);
        const hits = entries.filter((e) => e.status !== 2 && removeKeys.has(this.#blobs.keyFromUri(e.dataFile.filePath)));
        if (hits.length === 0) {
          next.push(mf);
          continue;
        }
        const out: ManifestEntry[] = [];
        const removedHere: DataFile[] = [];
        for (const e of entries) {
          if (e.status === 2) continue;
          const common = { sequenceNumber: e.sequenceNumber, fileSequenceNumber: e.fileSequenceNumber, dataFile: e.dataFile };
          if (removeKeys.has(this.#blobs.keyFromUri(e.dataFile.filePath))) {
            out.push({ status: 2, snapshotId, ...common });
            removedHere.push(e.dataFile);
          } else {
            out.push({ status: 0, snapshotId: e.snapshotId, ...common });
          }
        }
        const written = await writeManifest(this.#blobs, m, specById(m, mf.partitionSpecId), schema, snapshotId, out);
        rewrites.set(mf.manifestPath, { written, removed: removedHere });
        next.push(finalizeManifest(written, seq));
        for (const df of removedHere) found.add(this.#blobs.keyFromUri(df.filePath));
        for (const r of removedHere) removed.push(r);
      }
      const missing = [...removeKeys].filter((k) => !found.has(k));
      if (missing.length > 0) {
        throw new CommitConflictError(`cannot replace files of ${base.namespace}.${base.name}: no longer live: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ` (+${missing.length - 5})` : ''}`, false);
      }
      const manifestsOut = added ? [finalizeManifest(added, seq), ...next] : next;
      const parentId = parent?.['snapshot-id'] ?? null;
      const listUri = await writeManifestList(this.#blobs, m, manifestsOut, snapshotId, parentId, seq, attempt);
      this.#reader.rememberList(listUri, manifestsOut);
      const now = Math.max(this.#now(), m['last-updated-ms']);
      const summary = snapshotSummary(
        options.operation ?? 'replace',
        parent,
        {
          addedFiles: addedFiles.length,
          addedRecords: addedFiles.reduce((a, f) => a + f.recordCount, 0),
          addedSize: addedFiles.reduce((a, f) => a + f.fileSizeInBytes, 0),
          deletedFiles: removed.length,
          deletedRecords: removed.reduce((a, f) => a + f.recordCount, 0),
          removedSize: removed.reduce((a, f) => a + f.fileSizeInBytes, 0),
          changedPartitions: countPartitions([...addedFiles, ...removed]),
        },
        options.summary,
      );
      const snapshot: Snapshot = {
        'snapshot-id': snapshotId,
        ...(parentId !== null ? { 'parent-snapshot-id': parentId } : {}),
        'sequence-number': seq,
        'timestamp-ms': now,
        'manifest-list': listUri,
        summary,
        'schema-id': schema['schema-id'],
      };
      return { metadata: withSnapshot(m, snapshot, now), value: snapshotId };
    });
    return { snapshotId: result.value!, metadataLocation: result.handle.metadataLocation, handle: result.handle, attempts: result.attempts };
  }

  /**
   * Drops snapshots older than `olderThanMs` beyond the newest `retainLast` of each branch, and
   * returns the blob keys that only the dropped snapshots referenced (nothing is deleted here).
   */
  async expireSnapshots(handle: TableHandle, options: ExpireOptions): Promise<ExpireResult> {
    const result = await this.#commit(handle, async (base) => {
      const m = base.metadata;
      const keep = snapshotsToRetain(m, options);
      const expired = m.snapshots.filter((s) => !keep.has(s['snapshot-id']));
      if (expired.length === 0) return undefined;
      const retained = m.snapshots.filter((s) => keep.has(s['snapshot-id']));
      const files = await unreferencedFiles(this.#reader, m, expired, retained);
      return {
        metadata: withoutSnapshots(m, keep, Math.max(this.#now(), m['last-updated-ms'])),
        value: { expired: expired.map((s) => s['snapshot-id']), files },
      };
    });
    const toKey = (uri: string): string => this.#blobs.keyFromUri(uri);
    return {
      expiredSnapshotIds: result.value?.expired ?? [],
      manifestLists: (result.value?.files.manifestLists ?? []).map(toKey),
      manifests: (result.value?.files.manifests ?? []).map(toKey),
      dataFiles: (result.value?.files.dataFiles ?? []).map(toKey),
      metadataLocation: result.handle.metadataLocation,
      handle: result.handle,
    };
  }

  /**
   * Makes `schema` current (schema evolution). Reuses an identical existing schema, otherwise adds
   * it with the next schema id. Field ids of new columns must be above the table's last-column-id.
   */
  async updateSchema(handle: TableHandle, schema: Omit<Schema, 'schema-id'> & { 'schema-id'?: number }): Promise<TableHandle> {
    const shape = (s: Omit<Schema, 'schema-id'>): string => JSON.stringify([s.fields, s['identifier-field-ids'] ?? []]);
    const result = await this.#commit(handle, async (base) => {
      const m = base.metadata;
      const now = Math.max(this.#now(), m['last-updated-ms']);
      const same = m.schemas.find((s) => shape(s) === shape(schema));
      if (same) {
        if (same['schema-id'] === m['current-schema-id']) return undefined;
        return { metadata: { ...m, 'current-schema-id': same['schema-id'], 'last-updated-ms': now }, value: undefined };
      }
      const id = Math.max(...m.schemas.map((s) => s['schema-id'])) + 1;
      const { 'schema-id': _ignored, ...rest } = schema;
      const added: Schema = { ...rest, type: 'struct', 'schema-id': id };
      return {
        metadata: {
          ...m,
          schemas: [...m.schemas, added],
          'current-schema-id': id,
          'last-column-id': Math.max(m['last-column-id'], maxFieldId(added)),
          'last-updated-ms': now,
        },
        value: undefined,
      };
    });
    return result.handle;
  }

  /**
   * Makes `order` the table's default sort order: an existing order with the same fields is
   * reused, else it is added with the next order id (0 stays the unsorted order). No commit when
   * it already is the default.
   */
  async setDefaultSortOrder(handle: TableHandle, order: Pick<SortOrder, 'fields'>): Promise<TableHandle> {
    const shape = (o: Pick<SortOrder, 'fields'>): string => JSON.stringify(o.fields);
    const result = await this.#commit(handle, async (base) => {
      const m = base.metadata;
      const now = Math.max(this.#now(), m['last-updated-ms']);
      const same = m['sort-orders'].find((o) => shape(o) === shape(order));
      if (same) {
        if (same['order-id'] === m['default-sort-order-id']) return undefined;
        return { metadata: { ...m, 'default-sort-order-id': same['order-id'], 'last-updated-ms': now }, value: undefined };
      }
      const id = order.fields.length === 0 ? 0 : Math.max(0, ...m['sort-orders'].map((o) => o['order-id'])) + 1;
      const added: SortOrder = { 'order-id': id, fields: order.fields };
      return { metadata: { ...m, 'sort-orders': [...m['sort-orders'], added], 'default-sort-order-id': id, 'last-updated-ms': now }, value: undefined };
    });
    return result.handle;
  }

  /** Sets (string) or removes (null) table properties. */
  async setProperties(handle: TableHandle, updates: Record<string, string | null>): Promise<TableHandle> {
    const result = await this.#commit(handle, async (base) => {
      const m = base.metadata;
      const properties = { ...m.properties };
      for (const [k, v] of Object.entries(updates)) {
        if (v === null) delete properties[k];
        else properties[k] = v;
      }
      if (JSON.stringify(properties) === JSON.stringify(m.properties)) return undefined;
      return { metadata: { ...m, properties, 'last-updated-ms': Math.max(this.#now(), m['last-updated-ms']) }, value: undefined };
    });
    return result.handle;
  }

  /**
   * Iceberg's register_table, for a table whose files are in the store but that has no catalog row
   * (the metadata DB restored from a backup older than the table): `from`'s content (read and
   * checked by the caller) becomes a NEW metadata version numbered `version`, written as
   * restoreVersion writes one, and a new row points the table at it. The location written, or
   * undefined, and no row changed, when the table has a row already (created meanwhile): the file
   * written is then referenced by nothing.
   */
  async registerTable(namespace: string, name: string, from: { location: string; metadata: TableMetadata }, version: number): Promise<string | undefined> {
    validateIdentifier(namespace, name);
    const next = withMetadataLog({ ...from.metadata, 'last-updated-ms': Date.now() }, from.metadata, from.location);
    const key = `${tableKeyOf(this.#blobs, from.metadata)}/metadata/${metadataFileName(version)}`;
    const location = this.#blobs.uri(key);
    await this.#blobs.put(key, tableMetadataBytes(next));
    await this.createNamespace(namespace);
    const res = await this.#sql.query(
      `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location, iceberg_type)
       VALUES ($1, $2, $3, $4, NULL, 'TABLE') ON CONFLICT DO NOTHING`,
      [this.#catalogName, namespace, name, location],
    );
    if (res.rowCount !== 1) return undefined;
    this.#remember(namespace, name, location, next);
    return location;
  }
}
