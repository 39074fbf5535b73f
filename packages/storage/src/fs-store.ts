// Object store on a local directory (embedded mode). An object is the file <root>/<key>.
//
// Durability: put() writes a temp file under <root>/.floe-tmp, fsyncs it, renames it into place and
// fsyncs the destination directory; directories it had to create are fsynced into their parents
// too. Only then does the promise resolve, so an acknowledged object survives a crash or power loss
// and a reader never sees a half-written object. putIfAbsent() hard-links the fsynced temp file to
// the key, which fails atomically when the key exists. Leftover temp files from a crash are swept
// after an hour.
//
// The hot path (put, get) makes its cheap system calls synchronously: open, close, rename, and
// writes and reads of small objects take microseconds, while each asynchronous call is a round
// trip through libuv's thread pool that, on a loaded machine, costs the event loop more than the
// call itself (a WAL group commit was eight of them). The fsyncs, which wait on the disk, and the
// copies of 64 KiB or more (OFF_LOOP_IO_BYTES, write-parts.ts), which cost more than the trip,
// are made on the pool.

import { randomUUID } from 'node:crypto';
import { closeSync, constants as fsConstants, fstatSync, fsync as fsyncCallback, openSync, read, readSync, renameSync } from 'node:fs';
import {
  copyFile,
  link,
  mkdir,
  open,
  opendir,
  readdir,
  stat,
  unlink,
} from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { errorCode, InvalidKeyError, ObjectNotFoundError } from './errors.ts';
import { compareKeys, isReservedKey, validateKey, validatePrefix } from './keys.ts';
import { checkRange } from './object-store.ts';
import type { ObjectBody, ObjectInfo, ObjectStore } from './object-store.ts';
import { OFF_LOOP_IO_BYTES, writeParts, writePartsFd } from './write-parts.ts';
import { eachAtMost } from './each-at-most.ts';
import { FsAppendables } from './fs-appendables.ts';

/** fs.read on libuv's pool, resolving to the bytes read (see OFF_LOOP_IO_BYTES). */
const readAsync = (fd: number, out: Uint8Array, at: number, length: number, position: number) =>
  new Promise<number>((resolve, reject) => read(fd, out, at, length, position, (err, n) => (err ? reject(err) : resolve(n))));

const fsyncFd = promisify(fsyncCallback);

const TMP_DIR = '.floe-tmp';
const STALE_TMP_MS = 60 * 60 * 1000;
const STAT_CONCURRENCY = 64;

function isMissing(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Unlinks in flight at once in deleteMany (libuv's pool has four threads by default). */
const DELETE_CONCURRENCY = 2;

/** fsync a directory so the entries created or renamed in it survive a crash. */
async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await fsyncFd(fd);
  } catch (err) {
    // Some file systems cannot fsync a directory; there is nothing more we can do there.
    if (errorCode(err) !== 'EINVAL' && errorCode(err) !== 'EISDIR') throw err;
  } finally {
    closeSync(fd);
  }
}

/** Whether a file is anywhere under the directory; stops at the first one found. */
async function holdsFile(dir: string): Promise<boolean> {
  let handle;
  try {
    handle = await opendir(dir);
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
  try {
    for await (const entry of handle) {
      if (entry.isFile()) return true;
      if (entry.isDirectory() && (await holdsFile(path.join(dir, entry.name)))) return true;
    }
    return false;
  } finally {
    await handle.close().catch(() => {});
  }
}

export class FsObjectStore implements ObjectStore {
  readonly kind = 'fs' as const;
  readonly root: string;
  readonly #tmpDir: string;
  /** Directories created by an in-flight put whose entry in the parent is not yet fsynced. */
  readonly #pendingDirs = new Map<string, Promise<void>>();
  /**
   * Directories this store made sure of (created or found, entries fsynced): later puts skip
   * their mkdir calls. A directory removed behind the store's back shows as ENOENT on rename,
   * which forgets it and tries once more.
   */
  readonly #knownDirs = new Set<string>();
  #sweep: Promise<void> | undefined;
  readonly appendables: FsAppendables;

  constructor(root: string) {
    this.root = path.resolve(root);
    this.#tmpDir = path.join(this.root, TMP_DIR);
    this.appendables = new FsAppendables({
      root: this.root,
      localPath: (key) => this.localPath(key),
      // Durable mkdir -p: a created root's entry is fsynced into its parent too.
      ensureDir: (dir) => this.#ensureDir(dir),
      fsyncDir,
      put: (key, body) => this.put(key, body),
    });
  }

  localPath(key: string): string {
    validateKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  uri(key: string): string {
    return pathToFileURL(this.localPath(key)).href;
  }

  keyFromUri(uri: string): string {
    if (!uri.startsWith('file:')) throw new InvalidKeyError(uri, 'not a file:// URI');
    const rel = path.relative(this.root, fileURLToPath(uri));
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) {
      throw new InvalidKeyError(uri, `outside the store root ${this.root}`);
    }
    return validateKey(rel.split(path.sep).join('/'));
  }

  async put(key: string, body: ObjectBody): Promise<void> {
    const dest = this.localPath(key);
    const tmp = await this.#writeTemp(body);
    try {
      await this.#renameInto(tmp, dest);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      throw err;
    }
    await fsyncDir(path.dirname(dest));
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const dest = this.localPath(key);
    const tmp = await this.#writeTemp(body);
    try {
      await this.#ensureDir(path.dirname(dest));
      try {
        await link(tmp, dest);
      } catch (err) {
        const code = errorCode(err);
        if (code === 'EEXIST') return false;
        // File systems without hard links: exclusive create, then write in place.
        if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'EXDEV') {
          return await this.#createExclusive(dest, body);
        }
        throw err;
      }
      await fsyncDir(path.dirname(dest));
      return true;
    } finally {
      await unlink(tmp).catch(() => {});
    }
  }

  async get(key: string, alloc: (bytes: number) => Uint8Array = (n) => new Uint8Array(n)): Promise<Uint8Array | undefined> {
    try {
      const fd = openSync(this.localPath(key), 'r');
      try {
        const st = fstatSync(fd);
        if (st.isDirectory()) return undefined;
        const out = alloc(st.size);
        const readAt = out.length < OFF_LOOP_IO_BYTES ? readSync : readAsync;
        // Objects are immutable once put (written whole, then renamed into place): the size holds.
        for (let at = 0; at < out.length; ) {
          const n = await readAt(fd, out, at, out.length - at, at);
          if (n === 0) throw new Error(`${key}: object shorter than its size while read`);
          at += n;
        }
        return out;
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      if (isMissing(err) || errorCode(err) === 'EISDIR') return undefined;
      throw err;
    }
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array> {
    checkRange(offset, length);
    let fh;
    try {
      fh = await open(this.localPath(key), 'r');
    } catch (err) {
      if (isMissing(err)) throw new ObjectNotFoundError(key);
      throw err;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new ObjectNotFoundError(key);
      const size = st.size;
      const n = Math.max(0, Math.min(length, size - offset));
      const out = new Uint8Array(n);
      let done = 0;
      while (done < n) {
        const { bytesRead } = await fh.read(out, done, n - done, offset + done);
        if (bytesRead === 0) break; // truncated underneath us
        done += bytesRead;
      }
      return done === n ? out : out.subarray(0, done);
    } finally {
      await fh.close();
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      const st = await stat(this.localPath(key));
      return st.isFile() ? { key, size: st.size, lastModified: st.mtime } : undefined;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    validatePrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    const base = slash < 0 ? this.root : path.join(this.root, ...prefix.slice(0, slash).split('/'));
    let entries;
    try {
      entries = await readdir(base, { recursive: true, withFileTypes: true });
    } catch (err) {
      if (isMissing(err)) return [];
      throw err;
    }
    const candidates: Array<{ key: string; file: string }> = [];
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      const file = path.join(entry.parentPath, entry.name);
      const key = path.relative(this.root, file).split(path.sep).join('/');
      if (isReservedKey(key) || !key.startsWith(prefix)) continue;
      candidates.push({ key, file });
    }
    const out: ObjectInfo[] = [];
    for (let i = 0; i < candidates.length; i += STAT_CONCURRENCY) {
      const infos = await Promise.all(
        candidates.slice(i, i + STAT_CONCURRENCY).map(async ({ key, file }) => {
          try {
            const st = await stat(file);
            return { key, size: st.size, lastModified: st.mtime };
          } catch (err) {
            if (isMissing(err)) return undefined; // deleted while listing
            throw err;
          }
        }),
      );
      for (const info of infos) if (info) out.push(info);
    }
    return out.sort((a, b) => compareKeys(a.key, b.key));
  }

  async listPrefixes(prefix: string): Promise<string[]> {
    validatePrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    const base = slash < 0 ? this.root : path.join(this.root, ...prefix.slice(0, slash).split('/'));
    let entries;
    try {
      entries = await readdir(base, { withFileTypes: true });
    } catch (err) {
      if (isMissing(err)) return [];
      throw err;
    }
    const out: string[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const key = `${path.relative(this.root, path.join(base, entry.name)).split(path.sep).join('/')}/`;
      if (isReservedKey(key) || !key.startsWith(prefix)) continue;
      // Deletes leave directories behind; S3 names a prefix only while an object is under it.
      if (await holdsFile(path.join(base, entry.name))) out.push(key);
    }
    return out.sort(compareKeys);
  }

  async delete(key: string): Promise<void> {
    await this.deleteMany([key]);
  }

  async deleteMany(keys: string[]): Promise<void> {
    const files = keys.map((key) => this.localPath(key));
    const dirs = new Set<string>();
    // A few unlinks at a time: the thread pool is first come, first served, and a writer round
    // deletes hundreds of segments; all at once, they queued the WAL's fsyncs behind them.
    await eachAtMost(files, DELETE_CONCURRENCY, async (file) => {
      try {
        await unlink(file);
        dirs.add(path.dirname(file));
      } catch (err) {
        if (isMissing(err) || errorCode(err) === 'EISDIR') return;
        throw err;
      }
    });
    // Make the removals durable too, once per directory.
    await Promise.all([...dirs].map((dir) => fsyncDir(dir).catch((err) => {
      if (!isMissing(err)) throw err;
    })));
  }

  async putFile(key: string, localFile: string): Promise<void> {
    const dest = this.localPath(key);
    await this.#ensureTmpDir();
    const tmp = this.#tmpName();
    try {
      // FICLONE makes a copy-on-write clone where the file system supports it, a copy otherwise.
      await copyFile(localFile, tmp, fsConstants.COPYFILE_EXCL | fsConstants.COPYFILE_FICLONE);
      const fh = await open(tmp, 'r+');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await this.#renameInto(tmp, dest);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      throw err;
    }
    await fsyncDir(path.dirname(dest));
  }

  async close(): Promise<void> {
    await this.#sweep;
  }

  #tmpName(): string {
    return path.join(this.#tmpDir, `${process.pid}-${randomUUID()}`);
  }

  async #ensureTmpDir(): Promise<void> {
    // The root is created durably here (not as a side effect of the temp dir) so that objects put
    // directly under it are durable even when the root did not exist before.
    if (this.#knownDirs.has(this.#tmpDir)) return;
    await this.#ensureDir(this.root);
    await mkdir(this.#tmpDir, { recursive: true });
    this.#knownDirs.add(this.#tmpDir);
    this.#sweep ??= this.#sweepStaleTemps();
  }

  async #writeTemp(body: ObjectBody): Promise<string> {
    await this.#ensureTmpDir();
    const tmp = this.#tmpName();
    let fd: number;
    try {
      fd = openSync(tmp, 'wx');
    } catch (err) {
      // The temp directory was removed behind the store's back: make it again, once.
      if (errorCode(err) !== 'ENOENT' || !this.#knownDirs.delete(this.#tmpDir)) throw err;
      this.#knownDirs.delete(this.root);
      await this.#ensureTmpDir();
      fd = openSync(tmp, 'wx');
    }
    try {
      await writePartsFd(fd, body instanceof Uint8Array ? [body] : body);
      await fsyncFd(fd);
    } catch (err) {
      try {
        closeSync(fd);
      } catch {
        // Already failing: the write's error is the one to report.
      }
      await unlink(tmp).catch(() => {});
      throw err;
    }
    closeSync(fd);
    return tmp;
  }

  async #createExclusive(dest: string, body: Uint8Array): Promise<boolean> {
    let fh;
    try {
      fh = await open(dest, 'wx');
    } catch (err) {
      if (errorCode(err) === 'EEXIST') return false;
      throw err;
    }
    try {
      if (body instanceof Uint8Array) await fh.writeFile(body);
      else await writeParts(fh, body);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsyncDir(path.dirname(dest));
    return true;
  }

  /**
   * mkdir -p that is durable: every directory it creates is fsynced into its parent before it
   * returns, and a directory some concurrent call is still making durable is waited for.
   */
  async #ensureDir(dir: string): Promise<void> {
    if (this.#knownDirs.has(dir)) return;
    await this.#makeDir(dir);
    this.#knownDirs.add(dir);
  }

  /** rename(tmp, dest) into a directory made sure of, again once if the directory vanished. */
  async #renameInto(tmp: string, dest: string): Promise<void> {
    const dir = path.dirname(dest);
    await this.#ensureDir(dir);
    try {
      renameSync(tmp, dest);
    } catch (err) {
      if (errorCode(err) !== 'ENOENT' || !this.#knownDirs.delete(dir)) throw err;
      await this.#ensureDir(dir);
      renameSync(tmp, dest);
    }
  }

  async #makeDir(dir: string): Promise<void> {
    const first = await mkdir(dir, { recursive: true });
    if (first === undefined) {
      for (let p = dir; p.length >= this.root.length; p = path.dirname(p)) {
        const pending = this.#pendingDirs.get(p);
        if (pending) await pending;
        if (p === path.dirname(p)) break;
      }
      return;
    }
    const created: string[] = [];
    for (let p = dir; ; p = path.dirname(p)) {
      created.push(p);
      if (p === first || p === path.dirname(p)) break;
    }
    const stop = path.dirname(first);
    const syncing = (async () => {
      // The entry of each created directory lives in its parent: fsync parent(first) … parent(dir).
      for (let p = path.dirname(dir); ; p = path.dirname(p)) {
        await fsyncDir(p);
        if (p === stop || p === path.dirname(p)) break;
      }
    })();
    for (const p of created) this.#pendingDirs.set(p, syncing);
    try {
      await syncing;
    } finally {
      for (const p of created) if (this.#pendingDirs.get(p) === syncing) this.#pendingDirs.delete(p);
    }
  }

  async #sweepStaleTemps(): Promise<void> {
    try {
      const names = await readdir(this.#tmpDir);
      const cutoff = Date.now() - STALE_TMP_MS;
      await Promise.all(
        names.map(async (name) => {
          const file = path.join(this.#tmpDir, name);
          const st = await stat(file);
          if (st.mtimeMs < cutoff) await unlink(file);
        }),
      );
    } catch {
      // Best effort: a failed sweep only leaves garbage behind.
    }
  }
}
