import { FloeError } from '@floe/errors';
import { deserializeValue, floeTableDef, IcebergError, type SqlCatalog } from '@floe/iceberg';
import { NS_PER_HOUR, partitionFieldName, tableDef, type TableDef, type TableName } from '@floe/schema';
import { IdBloom, idBloomKey, type CacheLease, type LocalFileCache, type ObjectStore } from '@floe/storage';
import type { Logger } from '@floe/telemetry';
import type { FileOrder } from '@floe/query';
import { SandboxError } from './sandbox/index.ts';
import { UnreadableDataFileError, unfetchable, type DataFile } from './unreadable-files.ts';

/**
 * Resolves a (tenant, dataset, table) to the local paths of the Parquet files a query must read:
 * the live files of the current Iceberg snapshot, minus hour partitions outside the time hint,
 * minus files whose trace-id sidecar filter rules the id out. Files from S3 come through the
 * local cache; filters and manifests are immutable and cached.
 */
export interface FileHints {
  startNs?: bigint;
  endNs?: bigint;
  traceId?: string;
  /** Files listed by their rows' time; files without a known time last. */
  fileOrder?: FileOrder;
}

export interface CandidateFile {
  key: string;
  fileSizeBytes: number;
  /** Where every row's time lies (see timeRangeOf), when the file says. */
  time?: TimeRange;
}

/** Unix nanoseconds, both ends inclusive. */
export interface TimeRange {
  first: bigint;
  last: bigint;
}

export interface ResolvedFiles {
  paths: string[];
  /** The table's own definition (with its materialized label columns), for typing an empty view. */
  def: TableDef;
  /** Live files before the id filter (for logs and benchmarks). */
  considered: number;
  release(): void;
}

/**
 * Where every row's time of a data file lies: its hour partition, narrowed by the file's bounds
 * on the partition's source column (microseconds of the row time, so a row's nanoseconds lie
 * within 999 of them) when they are 8-byte longs inside that hour. Undefined without an hour.
 */
export function timeRangeOf(hour: unknown, lowerUs: Uint8Array | undefined, upperUs: Uint8Array | undefined): TimeRange | undefined {
  if (typeof hour !== 'number' || !Number.isSafeInteger(hour)) return undefined;
  const first = BigInt(hour) * NS_PER_HOUR;
  const last = first + NS_PER_HOUR - 1n;
  const long = (b: Uint8Array | undefined) => (b?.length === 8 ? (deserializeValue('long', b) as bigint) : undefined);
  const lo = long(lowerUs);
  const hi = long(upperUs);
  if (lo === undefined || hi === undefined || lo > hi) return { first, last };
  const a = lo * 1000n;
  const b = hi * 1000n + 999n;
  return a >= first && b <= last ? { first: a, last: b } : { first, last };
}
const MAX_BLOOMS = 50_000;

/** Newest first: by the latest row time, descending; oldest first: by the earliest, ascending. */
function byTime(order: FileOrder): (a: CandidateFile, b: CandidateFile) => number {
  return (a, b) => {
    if (!a.time || !b.time) return a.time ? -1 : b.time ? 1 : 0;
    const [x, y] = order === 'newest_first' ? [b.time.last, a.time.last] : [a.time.first, b.time.first];
    return x < y ? -1 : x > y ? 1 : 0;
  };
}

/**
 * `read`, with a table whose metadata or manifests are missing or damaged refused as unavailable
 * (503, gRPC UNAVAILABLE) naming the table, rather than as an internal error: the caller can
 * retry once an operator has repaired it (floe ops check-tables, rollback-table).
 */
async function readable<T>(tenant: string, dataset: string, table: TableName, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof IcebergError && err.code === 'invalid_metadata') {
      throw new FloeError('unavailable', `table ${table} of dataset ${dataset} cannot be read: ${err.message}; it needs an operator's repair (floe ops check-tables)`, { code: 'FLOE_ERR_TABLE_UNREADABLE', cause: err });
    }
    throw err;
  }
}

export class FileResolver {
  readonly #catalog: SqlCatalog;
  readonly #store: ObjectStore;
  readonly #cache: LocalFileCache;
  readonly #log: Logger;
  readonly #blooms = new Map<string, IdBloom | null>();
  /** The table file each leased path stands for, so a read's failure can name it. */
  readonly #leased = new CountedMap<string, DataFile>();
  #unreadable = 0;

  constructor(catalog: SqlCatalog, store: ObjectStore, cache: LocalFileCache, log: Logger) {
    this.#catalog = catalog;
    this.#store = store;
    this.#cache = cache;
    this.#log = log;
  }

  /** Paths stay valid (not evicted from the cache) until release() is called. */
  async files(tenant: string, dataset: string, table: TableName, hints: FileHints): Promise<ResolvedFiles> {
    const { files, considered, def } = await this.candidates(tenant, dataset, table, hints);
    return { ...(await this.lease(dataset, table, files)), considered, def };
  }

  /** The table's current schema (its default before the first write), without planning its files. */
  async tableDef(tenant: string, dataset: string, table: TableName): Promise<TableDef> {
    const handle = await readable(tenant, dataset, table, () => this.#catalog.loadTable(`${tenant}.${dataset}`, table));
    return handle ? floeTableDef(handle) : tableDef(table);
  }

  /**
   * The live data files of the table's current snapshot that may hold rows for the hints: hour
   * partitions outside the time hint and files whose id filter rules the id out are dropped.
   */
  async candidates(tenant: string, dataset: string, table: TableName, hints: FileHints): Promise<{ files: CandidateFile[]; considered: number; def: TableDef }> {
    const handle = await readable(tenant, dataset, table, () => this.#catalog.loadTable(`${tenant}.${dataset}`, table));
    if (!handle) return { files: [], considered: 0, def: tableDef(table) };
    const hourField = partitionFieldName(tableDef(table));
    const minHour = hints.startNs !== undefined ? Number(hints.startNs / NS_PER_HOUR) : undefined;
    const maxHour = hints.endNs !== undefined ? Number(hints.endNs / NS_PER_HOUR) : undefined;
    const planned = await readable(tenant, dataset, table, () => this.#catalog.planFiles(handle, {
      partitionFilter: (p) => {
        const h = p[hourField];
        if (typeof h !== 'number') return true;
        return (minHour === undefined || h >= minHour) && (maxHour === undefined || h <= maxHour);
      },
    }));
    let selected = planned;
    if (hints.traceId && tableDef(table).idColumn) {
      const keep = await Promise.all(planned.map((f) => this.#mayContain(f.key, hints.traceId!)));
      selected = planned.filter((_f, i) => keep[i]);
    }
    const def = floeTableDef(handle);
    const tsId = def.columns.find((c) => c.name === def.partitionSource)?.id;
    const files = selected.map((f) => {
      const time = timeRangeOf(f.partition[hourField], tsId === undefined ? undefined : f.lowerBounds[tsId], tsId === undefined ? undefined : f.upperBounds[tsId]);
      return { key: f.key, fileSizeBytes: f.fileSizeBytes, ...(time ? { time } : {}) };
    });
    if (hints.fileOrder) files.sort(byTime(hints.fileOrder));
    return { files, considered: planned.length, def };
  }

  /**
   * Local paths of the files of `dataset`'s `table` (from the cache for S3), valid until
   * release(). A file the store no longer holds, or holds shorter than its manifest says, fails
   * the lease as unreadable (UnreadableDataFileError).
   */
  async lease(dataset: string, table: TableName, files: readonly CandidateFile[]): Promise<{ paths: string[]; release(): void }> {
    const settled = await Promise.allSettled(files.map((f) => this.#lease(f.key, f.fileSizeBytes)));
    const leases = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = settled.findIndex((s) => s.status === 'rejected');
    if (failed >= 0) {
      leases.forEach((l) => l.release());
      const err = (settled[failed] as PromiseRejectedResult).reason as unknown;
      const why = unfetchable(err);
      if (!why) throw err;
      throw this.unreadable({ dataset, table, key: files[failed]!.key }, why.missing, err);
    }
    const paths = leases.map((l) => l.path);
    paths.forEach((p, i) => this.#leased.add(p, { dataset, table, key: files[i]!.key }));
    let released = false;
    return {
      paths,
      release: () => {
        if (released) return;
        released = true;
        paths.forEach((p) => this.#leased.delete(p));
        leases.forEach((l) => l.release());
      },
    };
  }

  /** The table file a path handed out by a lease not yet released stands for. */
  fileAt(path: string): DataFile | undefined {
    return this.#leased.get(path);
  }

  /** Queries refused since start because a data file of their table could not be read. */
  get unreadableFileQueries(): number {
    return this.#unreadable;
  }

  /** The refusal of a query over `file`, which cannot be read: logged with its cause (DuckDB's or the store's whole text) and counted. */
  unreadable(file: DataFile, missing: boolean, cause: unknown): UnreadableDataFileError {
    this.#unreadable++;
    this.#log.error({ err: cause instanceof SandboxError && cause.cause !== undefined ? cause.cause : cause, ...file, missing }, 'a data file of the table cannot be read');
    return new UnreadableDataFileError(file, missing, cause);
  }

  async #mayContain(key: string, id: string): Promise<boolean> {
    let bloom = this.#blooms.get(key);
    if (bloom === undefined) {
      try {
        const bytes = await this.#store.get(idBloomKey(key));
        bloom = bytes ? IdBloom.decode(bytes) : null;
      } catch (err) {
        this.#log.warn({ err, key }, 'unreadable id filter; scanning the file');
        bloom = null;
      }
      if (this.#blooms.size >= MAX_BLOOMS) this.#blooms.delete(this.#blooms.keys().next().value!);
      this.#blooms.set(key, bloom);
    }
    return bloom === null || bloom.mayContain(id);
  }

  #lease(key: string, size: number): Promise<CacheLease> {
    const local = this.#store.localPath(key);
    if (local) return Promise.resolve({ path: local, release: () => {} });
    return this.#cache.acquire(this.#store, key, size);
  }
}

/** Values held as often as they were added, gone once deleted as often. */
class CountedMap<K, V> {
  readonly #entries = new Map<K, { value: V; count: number }>();

  add(key: K, value: V): void {
    const e = this.#entries.get(key);
    if (e) e.count++;
    else this.#entries.set(key, { value, count: 1 });
  }

  delete(key: K): void {
    const e = this.#entries.get(key);
    if (e && --e.count === 0) this.#entries.delete(key);
  }

  get(key: K): V | undefined {
    return this.#entries.get(key)?.value;
  }
}
