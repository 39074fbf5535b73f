// Appendable objects of the fs store (object-store.ts, AppendableObjects).
//
// An open object is the file <root>/.floe-open/<key, URI-encoded>: outside every listing, since
// keys under `.floe-` are reserved. Its writer appends with writev and makes each append durable
// with fdatasync; sealing renames it to <root>/<key>, where get and list see it.
//
// Takeover: recover() renames an idle open file to <name>#claimed-<uuid> before reading it. Its
// writer checks after every append's fdatasync that its path still names its file, and fails
// the append when not, so an append is acknowledged only if it was written before the claim,
// which the claimer reads after it. A writer that seals after a claim finds no file to rename.
// Nothing else is ever created at an open path, so a rename from it is the one publication.
//
// The rename that seals is made durable with a directory fsync, though nothing waits for it:
// were it lost to a power cut, the open file would come back and be recovered under the same
// key, whose records the writer's ledger already knows.

import { randomUUID } from 'node:crypto';
import { closeSync, fdatasync as fdatasyncCallback, fstatSync, ftruncateSync, openSync, readdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { errorCode } from './errors.ts';
import { validateKey } from './keys.ts';
import type { AppendableObject, AppendableObjects } from './object-store.ts';
import { totalBytes, writePartsFd } from './write-parts.ts';

const fdatasync = promisify(fdatasyncCallback);

export const OPEN_DIR = '.floe-open';
const CLAIM_MARK = '#claimed-';

/** What the fs store lends its appendable objects: paths, durable directories and puts. */
export interface AppendableHost {
  readonly root: string;
  localPath(key: string): string;
  /** mkdir -p whose new entries are durable. */
  ensureDir(dir: string): Promise<void>;
  fsyncDir(dir: string): Promise<void>;
  put(key: string, body: Uint8Array): Promise<void>;
}

export class FsAppendables implements AppendableObjects {
  readonly #host: AppendableHost;
  readonly #dir: string;

  constructor(host: AppendableHost) {
    this.#host = host;
    this.#dir = path.join(host.root, OPEN_DIR);
  }

  async open(key: string, first: readonly Uint8Array[]): Promise<AppendableObject> {
    validateKey(key);
    await this.#host.ensureDir(this.#dir);
    const file = path.join(this.#dir, encodeURIComponent(key));
    const fd = openSync(file, 'wx');
    let ok = false;
    try {
      const st = fstatSync(fd);
      await writePartsFd(fd, first);
      // The data and the new directory entry: without the second a crash could lose the file.
      await Promise.all([fdatasync(fd), this.#host.fsyncDir(this.#dir)]);
      ok = true;
      return new FsAppendable(this.#host, key, file, fd, st.ino, st.dev, totalBytes(first));
    } finally {
      if (!ok) {
        closeSync(fd);
        try {
          unlinkSync(file);
        } catch {
          // Left for recover(): it keeps no more than the valid prefix.
        }
      }
    }
  }

  async recover(idleMs: number, keep: (bytes: Uint8Array) => number, mine?: (key: string) => boolean): Promise<string[]> {
    let names: string[];
    try {
      names = readdirSync(this.#dir);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return [];
      throw err;
    }
    const published: string[] = [];
    const cutoff = Date.now() - idleMs;
    for (const name of names) {
      const at = name.indexOf(CLAIM_MARK);
      let key: string;
      try {
        key = validateKey(decodeURIComponent(at < 0 ? name : name.slice(0, at)));
      } catch {
        continue; // not one of ours
      }
      if (mine && !mine(key)) continue; // another writer's share
      const file = path.join(this.#dir, name);
      let claimed = file;
      try {
        if (statSync(file).mtimeMs > cutoff) continue;
        // A claim left by a recovery that died is taken as it is; an open file is claimed first.
        if (at < 0) {
          claimed = `${file}${CLAIM_MARK}${randomUUID()}`;
          renameSync(file, claimed);
        }
      } catch (err) {
        if (errorCode(err) === 'ENOENT') continue; // sealed or claimed meanwhile
        throw err;
      }
      const bytes = await readFile(claimed);
      const n = keep(bytes);
      if (n > 0) {
        await this.#host.put(key, bytes.subarray(0, n));
        published.push(key);
      }
      try {
        unlinkSync(claimed);
      } catch (err) {
        if (errorCode(err) !== 'ENOENT') throw err;
      }
    }
    return published;
  }
}

class FsAppendable implements AppendableObject {
  readonly key: string;
  readonly #host: AppendableHost;
  readonly #file: string;
  readonly #ino: number;
  readonly #dev: number;
  #fd: number | undefined;
  #size: number;
  #failed = false;

  constructor(host: AppendableHost, key: string, file: string, fd: number, ino: number, dev: number, size: number) {
    this.#host = host;
    this.key = key;
    this.#file = file;
    this.#fd = fd;
    this.#ino = ino;
    this.#dev = dev;
    this.#size = size;
  }

  get size(): number {
    return this.#size;
  }

  async append(parts: readonly Uint8Array[]): Promise<void> {
    const fd = this.#fd;
    if (fd === undefined || this.#failed) throw new Error(`${this.key}: appendable object is closed or failed`);
    try {
      await writePartsFd(fd, parts);
      await fdatasync(fd);
    } catch (err) {
      this.#failed = true;
      throw err;
    }
    if (!this.#stillOurs()) {
      this.#failed = true;
      throw new Error(`${this.key}: taken over by recovery while appending`);
    }
    this.#size += totalBytes(parts);
  }

  async seal(): Promise<void> {
    const fd = this.#fd;
    if (fd === undefined) return;
    this.#fd = undefined;
    let publish = this.#stillOurs();
    try {
      if (publish && this.#failed) {
        // Cut back to what was durable, durably; anything less is left to recover().
        try {
          ftruncateSync(fd, this.#size);
          await fdatasync(fd);
        } catch {
          publish = false;
        }
      }
    } finally {
      closeSync(fd);
    }
    if (!publish) return;
    const dest = this.#host.localPath(this.key);
    const dir = path.dirname(dest);
    await this.#host.ensureDir(dir);
    try {
      renameSync(this.#file, dest);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return; // claimed by recover() since the check
      throw err;
    }
    // See the file comment: a lost rename is recovered, so appends need not wait for this.
    void this.#host.fsyncDir(dir).catch(() => undefined);
  }

  /** Whether the open path still names this object's file (not claimed by recover()). */
  #stillOurs(): boolean {
    try {
      const st = statSync(this.#file);
      return st.ino === this.#ino && st.dev === this.#dev;
    } catch {
      return false;
    }
  }
}
