import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ObjectNotFoundError } from './errors.ts';
import { LocalFileCache } from './file-cache.ts';
import { FsObjectStore } from './fs-store.ts';
import type { ObjectInfo, ObjectStore } from './object-store.ts';
import type { S3ObjectStore } from './s3-store.ts';
import { startS3Server } from './testing/s3-server.ts';
import type { TestS3Server } from './testing/s3-server.ts';
import { openS3, tempDir } from './testing/stores.ts';

/** A real store that also counts the bytes it serves, to see how often the cache downloads. */
class CountingStore implements ObjectStore {
  readonly kind: 'fs' | 's3';
  readonly inner: ObjectStore;
  bytesServed = new Map<string, number>();
  constructor(inner: ObjectStore) {
    this.inner = inner;
    this.kind = inner.kind;
  }
  #count(key: string, bytes: Uint8Array | undefined): void {
    this.bytesServed.set(key, (this.bytesServed.get(key) ?? 0) + (bytes?.byteLength ?? 0));
  }
  put(key: string, body: Uint8Array) { return this.inner.put(key, body); }
  putIfAbsent(key: string, body: Uint8Array) { return this.inner.putIfAbsent(key, body); }
  async get(key: string) {
    const b = await this.inner.get(key);
    this.#count(key, b);
    return b;
  }
  async getRange(key: string, offset: number, length: number) {
    const b = await this.inner.getRange(key, offset, length);
    this.#count(key, b);
    return b;
  }
  head(key: string): Promise<ObjectInfo | undefined> { return this.inner.head(key); }
  list(prefix: string) { return this.inner.list(prefix); }
  listPrefixes(prefix: string) { return this.inner.listPrefixes(prefix); }
  delete(key: string) { return this.inner.delete(key); }
  deleteMany(keys: string[]) { return this.inner.deleteMany(keys); }
  localPath(key: string) { return this.inner.localPath(key); }
  uri(key: string) { return this.inner.uri(key); }
  keyFromUri(uri: string) { return this.inner.keyFromUri(uri); }
  putFile(key: string, file: string) { return this.inner.putFile(key, file); }
  close() { return this.inner.close(); }
}

let s3: TestS3Server;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.stop();
});

describe('LocalFileCache over an S3 store', () => {
  let s3Store: S3ObjectStore;
  let store: CountingStore;
  let dir: string;
  let cacheDir: string;
  beforeEach(async () => {
    s3Store = await openS3(s3);
    store = new CountingStore(s3Store);
    dir = await tempDir('cache');
    cacheDir = path.join(dir, 'cache');
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('downloads an object once, in chunks, to a complete local file', async () => {
    const content = randomBytes(100_000);
    await store.put('data/part-1.parquet', content);
    const cache = new LocalFileCache({ dir: cacheDir, maxBytes: 1_000_000, chunkBytes: 16 * 1024 });
    const first = await cache.localPathFor(store, 'data/part-1.parquet');
    const second = await cache.localPathFor(store, 'data/part-1.parquet', content.byteLength);
    expect(second).toBe(first);
    expect(path.dirname(first)).toBe(cacheDir);
    expect(first.endsWith('.parquet')).toBe(true);
    expect((await readFile(first)).equals(content)).toBe(true);
    expect(store.bytesServed.get('data/part-1.parquet')).toBe(content.byteLength);
    expect(cache.stats()).toMatchObject({ files: 1, bytes: content.byteLength, downloads: 1, hits: 1 });
    expect(await readdir(cacheDir)).toEqual([path.basename(first)]); // no temp files left
    await cache.close();
  });

  it('shares one download between concurrent requests for the same key', async () => {
    const content = randomBytes(200_000);
    await store.put('data/hot.parquet', content);
    const cache = new LocalFileCache({ dir: cacheDir, maxBytes: 10_000_000 });
    const paths = await Promise.all(Array.from({ length: 20 }, () => cache.localPathFor(store, 'data/hot.parquet')));
    expect(new Set(paths).size).toBe(1);
    expect(store.bytesServed.get('data/hot.parquet')).toBe(content.byteLength);
    expect(cache.stats().downloads).toBe(1);
    expect((await readFile(paths[0]!)).equals(content)).toBe(true);
    await cache.close();
  });

  it('evicts the least recently used files above the byte budget', async () => {
    for (const name of ['a', 'b', 'c', 'd']) await store.put(`f/${name}`, new Uint8Array(100).fill(name.charCodeAt(0)));
    const cache = new LocalFileCache({ dir: cacheDir, maxBytes: 250 });
    const pa = await cache.localPathFor(store, 'f/a', 100);
    const pb = await cache.localPathFor(store, 'f/b', 100);
    await cache.localPathFor(store, 'f/a', 100); // a is now more recent than b
    const pc = await cache.localPathFor(store, 'f/c', 100); // 300 bytes > 250: b goes
    await cache.close();
    expect((await readdir(cacheDir)).sort()).toEqual([path.basename(pa), path.basename(pc)].sort());
    expect(cache.stats()).toMatchObject({ files: 2, bytes: 200, evictions: 1 });
    // b comes back on demand, pushing out a (now the least recently used).
    const pb2 = await cache.localPathFor(store, 'f/b', 100);
    await cache.close();
    expect(pb2).toBe(pb);
    expect((await readdir(cacheDir)).sort()).toEqual([path.basename(pb), path.basename(pc)].sort());
    expect(store.bytesServed.get('f/b')).toBe(200);
  });

  it('never evicts a leased file, and evicts it once released', async () => {
    for (const name of ['x', 'y']) await store.put(`g/${name}`, new Uint8Array(100));
    const cache = new LocalFileCache({ dir: cacheDir, maxBytes: 150 });
    const lease = await cache.acquire(store, 'g/x');
    await cache.localPathFor(store, 'g/y'); // over budget, but x is leased: y (unleased) goes
    await cache.close();
    expect(await readdir(cacheDir)).toEqual([path.basename(lease.path)]);
    lease.release();
    lease.release(); // idempotent
    expect(cache.stats()).toMatchObject({ files: 1, bytes: 100 });
  });

  it('re-downloads a cached file that was deleted from disk', async () => {
    await store.put('h/1', new Uint8Array([1, 2, 3]));
    const cache = new LocalFileCache({ dir: cacheDir, maxBytes: 1000 });
    const p = await cache.localPathFor(store, 'h/1');
    await unlink(p);
    expect(await cache.localPathFor(store, 'h/1')).toBe(p);
    expect([...(await readFile(p))]).toEqual([1, 2, 3]);
    expect(store.bytesServed.get('h/1')).toBe(6);
  });

  it('adopts files cached by an earlier process', async () => {
    await store.put('i/1.parquet', new Uint8Array([9, 9, 9]));
    const before = new LocalFileCache({ dir: cacheDir, maxBytes: 1000 });
    const p = await before.localPathFor(store, 'i/1.parquet');
    await before.close();
    await store.delete('i/1.parquet'); // only the cached copy is left
    const after = new LocalFileCache({ dir: cacheDir, maxBytes: 1000 });
    expect(await after.localPathFor(store, 'i/1.parquet')).toBe(p);
    expect(after.stats()).toMatchObject({ files: 1, bytes: 3, downloads: 0, hits: 1 });
  });

  it('fails for a missing or short object and caches nothing', async () => {
    const cache = new LocalFileCache({ dir: cacheDir, maxBytes: 1000 });
    await expect(cache.localPathFor(store, 'nope/x')).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(cache.localPathFor(store, 'nope/x', 10)).rejects.toBeInstanceOf(ObjectNotFoundError);
    await store.put('short/x', new Uint8Array(3));
    await expect(cache.localPathFor(store, 'short/x', 10)).rejects.toThrow('has 3 bytes, expected 10');
    expect(await readdir(cacheDir)).toEqual([]);
    expect(cache.stats().files).toBe(0);
  });
});

describe('LocalFileCache over an fs store', () => {
  it('returns the object path itself without copying', async () => {
    const dir = await tempDir('cache-fs');
    try {
      const store = new FsObjectStore(path.join(dir, 'data'));
      await store.put('t/part.parquet', new Uint8Array([1]));
      const cache = new LocalFileCache({ dir: path.join(dir, 'cache'), maxBytes: 1000 });
      expect(await cache.localPathFor(store, 't/part.parquet')).toBe(store.localPath('t/part.parquet'));
      expect(cache.stats()).toMatchObject({ files: 0, downloads: 0 });
      await expect(readdir(path.join(dir, 'cache'))).rejects.toThrow(/ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
