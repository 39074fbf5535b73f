// A local disk cache that gives readers needing file paths (DuckDB) a local copy of objects that
// live in S3. Objects are assumed immutable (Parquet data files, Iceberg metadata files are never
// rewritten under the same key), so a cached copy never goes stale and is keyed by the object's URI.
//
// - Each object is downloaded once: in ranged chunks into a temp file in the cache directory,
//   fsynced, then renamed into place, so a cache file is always complete. Concurrent requests for
//   the same object share that one download.
// - Above `maxBytes`, least-recently-used files are deleted. A file handed out by acquire() is
//   leased and never evicted until released; localPathFor() hands out an unleased path, which is the
//   most recently used entry and so the last to go. (On POSIX an evicted file stays readable through
//   handles that are already open.)
// - For an fs store nothing is copied: the object's own path is returned.
// - Files left in the directory by an earlier process are adopted at start, oldest first.

import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { errorCode, ObjectNotFoundError, ObjectSizeMismatchError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';

export interface LocalFileCacheOptions {
  /** Directory owned by the cache. */
  dir: string;
  /** Byte budget; least-recently-used files above it are evicted. */
  maxBytes: number;
  /** Size of each ranged read while downloading (default 8 MiB). */
  chunkBytes?: number;
}

export interface CacheLease {
  readonly path: string;
  /** Allows the file to be evicted again; idempotent. */
  release(): void;
}

export interface LocalFileCacheStats {
  files: number;
  bytes: number;
  hits: number;
  downloads: number;
  evictions: number;
}

interface Entry {
  name: string;
  path: string;
  size: number;
  leases: number;
}

interface Download {
  promise: Promise<Entry>;
  /** Callers waiting on this download; each gets a lease when it completes. */
  waiters: number;
}

// Temp names cannot collide with cache names, which start with a hex hash.
const TMP_PREFIX = 'tmp-';

export class LocalFileCache {
  readonly dir: string;
  readonly maxBytes: number;
  readonly #chunkBytes: number;
  /** Map iteration order is the LRU order: first = least recently used. */
  readonly #entries = new Map<string, Entry>();
  readonly #downloads = new Map<string, Download>();
  #bytes = 0;
  #hits = 0;
  #downloaded = 0;
  #evictions = 0;
  #init: Promise<void> | undefined;
  /** Pending deletions of evicted files, by cache file name. */
  readonly #unlinks = new Map<string, Promise<void>>();

  constructor(opts: LocalFileCacheOptions) {
    if (!Number.isSafeInteger(opts.maxBytes) || opts.maxBytes < 0) {
      throw new RangeError(`LocalFileCache: maxBytes must be a non-negative integer, got ${opts.maxBytes}`);
    }
    this.dir = path.resolve(opts.dir);
    this.maxBytes = opts.maxBytes;
    this.#chunkBytes = opts.chunkBytes ?? 8 * 1024 * 1024;
    if (!Number.isSafeInteger(this.#chunkBytes) || this.#chunkBytes < 1) {
      throw new RangeError(`LocalFileCache: chunkBytes must be a positive integer, got ${opts.chunkBytes}`);
    }
  }

  /**
   * Local path of the object: the store's own path for an fs store, otherwise a cached copy,
   * downloaded first if needed. `size`, when known (Iceberg manifests record it), saves a HEAD.
   */
  async localPathFor(store: ObjectStore, key: string, size?: number): Promise<string> {
    const lease = await this.acquire(store, key, size);
    lease.release();
    return lease.path;
  }

  /** Like localPathFor, but the file cannot be evicted until the lease is released. */
  async acquire(store: ObjectStore, key: string, size?: number): Promise<CacheLease> {
    const own = store.localPath(key);
    if (own !== undefined) return { path: own, release() {} };
    await this.#initialize();
    const name = cacheFileName(store.uri(key), key);

    const cached = this.#entries.get(name);
    if (cached) {
      cached.leases++;
      if (await fileExists(cached.path)) {
        this.#hits++;
        this.#touch(cached);
        return this.#lease(cached);
      }
      // Deleted behind our back: forget it and download again.
      cached.leases--;
      this.#forget(cached);
    }

    let download = this.#downloads.get(name);
    if (!download) {
      const created: Download = {
        waiters: 0,
        promise: this.#download(store, key, size, name).then(
          (entry) => {
            this.#downloads.delete(name);
            entry.leases += created.waiters; // every waiter owns one lease from here on
            this.#insert(entry);
            this.#evict();
            return entry;
          },
          (err: unknown) => {
            this.#downloads.delete(name);
            throw err;
          },
        ),
      };
      download = created;
      this.#downloads.set(name, download);
    }
    download.waiters++;
    const entry = await download.promise;
    return this.#lease(entry);
  }

  stats(): LocalFileCacheStats {
    return {
      files: this.#entries.size,
      bytes: this.#bytes,
      hits: this.#hits,
      downloads: this.#downloaded,
      evictions: this.#evictions,
    };
  }

  /** Waits for in-flight downloads and deletions. Cached files stay on disk for the next process. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#downloads.values()].map((d) => d.promise));
    await Promise.allSettled([...this.#unlinks.values()]);
  }

  #lease(entry: Entry): CacheLease {
    let released = false;
    return {
      path: entry.path,
      release: () => {
        if (released) return;
        released = true;
        entry.leases--;
        this.#evict();
      },
    };
  }

  #touch(entry: Entry): void {
    if (this.#entries.get(entry.name) !== entry) return;
    this.#entries.delete(entry.name);
    this.#entries.set(entry.name, entry);
  }

  #insert(entry: Entry): void {
    const previous = this.#entries.get(entry.name);
    if (previous) this.#forget(previous);
    this.#entries.set(entry.name, entry);
    this.#bytes += entry.size;
  }

  #forget(entry: Entry): void {
    if (this.#entries.get(entry.name) !== entry) return;
    this.#entries.delete(entry.name);
    this.#bytes -= entry.size;
  }

  #evict(): void {
    if (this.#bytes <= this.maxBytes) return;
    for (const entry of [...this.#entries.values()]) {
      if (this.#bytes <= this.maxBytes) break;
      if (entry.leases > 0) continue;
      this.#forget(entry);
      this.#evictions++;
      const p: Promise<void> = unlink(entry.path)
        .catch(() => {})
        .finally(() => {
          if (this.#unlinks.get(entry.name) === p) this.#unlinks.delete(entry.name);
        });
      this.#unlinks.set(entry.name, p);
    }
  }

  async #download(store: ObjectStore, key: string, size: number | undefined, name: string): Promise<Entry> {
    const expected = size ?? (await store.head(key))?.size;
    if (expected === undefined) throw new ObjectNotFoundError(key);
    const final = path.join(this.dir, name);
    const tmp = path.join(this.dir, `${TMP_PREFIX}${randomUUID()}`);
    const fh = await open(tmp, 'wx');
    try {
      let offset = 0;
      while (offset < expected) {
        const want = Math.min(this.#chunkBytes, expected - offset);
        const chunk = await store.getRange(key, offset, want);
        if (chunk.byteLength > 0) await fh.write(chunk, 0, chunk.byteLength, offset);
        offset += chunk.byteLength;
        if (chunk.byteLength < want) break;
      }
      if (offset !== expected) {
        throw new ObjectSizeMismatchError(key, offset, expected);
      }
      // Synced before the rename so a crash can never leave a short file under the final name,
      // which a later process would adopt as complete.
      await fh.sync();
      await fh.close();
      // An eviction of an earlier copy may still be deleting the final name.
      await this.#unlinks.get(name);
      await rename(tmp, final);
    } catch (err) {
      await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw err;
    }
    this.#downloaded++;
    return { name, path: final, size: expected, leases: 0 };
  }

  #initialize(): Promise<void> {
    this.#init ??= (async () => {
      await mkdir(this.dir, { recursive: true });
      const found: Array<{ entry: Entry; mtimeMs: number }> = [];
      for (const name of await readdir(this.dir)) {
        const file = path.join(this.dir, name);
        if (name.startsWith(TMP_PREFIX)) {
          await unlink(file).catch(() => {}); // an interrupted download
          continue;
        }
        const st = await stat(file).catch(() => undefined);
        if (st?.isFile()) found.push({ entry: { name, path: file, size: st.size, leases: 0 }, mtimeMs: st.mtimeMs });
      }
      found.sort((a, b) => a.mtimeMs - b.mtimeMs);
      for (const { entry } of found) this.#insert(entry);
      this.#evict();
    })();
    return this.#init;
  }
}

/** Stable file name for an object: a hash of its URI, keeping the key's extension for tools. */
function cacheFileName(uri: string, key: string): string {
  const hash = createHash('sha256').update(uri).digest('hex').slice(0, 40);
  const ext = /\.[A-Za-z0-9]{1,16}$/.exec(key.slice(key.lastIndexOf('/') + 1))?.[0] ?? '';
  return hash + ext;
}

async function fileExists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return false;
    throw err;
  }
}
