import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync, openSync, closeSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * The embedded metadata DB (PGlite) lives in one process: a second process opening the same
 * directory would neither see nor safely write the first one's data. The process that opens it
 * holds `<data_dir>.lock.json` ({pid, routerUrl, token}); others refuse to open it, and
 * `floe admin bootstrap` reaches the holder's router with the token instead.
 */
export interface LockInfo {
  pid: number;
  routerUrl?: string;
  token?: string;
}

const lockPath = (dataDir: string) => `${resolve(dataDir)}.lock.json`;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export function readLiveLock(dataDir: string): LockInfo | undefined {
  let info: LockInfo;
  try {
    info = JSON.parse(readFileSync(lockPath(dataDir), 'utf8')) as LockInfo;
  } catch {
    return undefined;
  }
  return typeof info.pid === 'number' && info.pid !== process.pid && alive(info.pid) ? info : undefined;
}

export class EmbeddedLock {
  readonly token = randomBytes(24).toString('base64url');
  readonly #path: string;

  private constructor(path: string) {
    this.#path = path;
  }

  /** Takes the lock or throws naming the process that holds it. */
  static acquire(dataDir: string): EmbeddedLock {
    const holder = readLiveLock(dataDir);
    if (holder) {
      throw new Error(`the embedded metadata DB ${dataDir} is in use by process ${holder.pid}; stop it first (or use meta.kind "pg" to run several processes)`);
    }
    const path = lockPath(dataDir);
    mkdirSync(dirname(path), { recursive: true });
    rmSync(path, { force: true }); // a stale lock of a dead process
    const fd = openSync(path, 'wx', 0o600);
    closeSync(fd);
    const lock = new EmbeddedLock(path);
    lock.update({});
    return lock;
  }

  update(extra: { routerUrl?: string }): void {
    const info: LockInfo = { pid: process.pid, token: this.token, ...extra };
    writeFileSync(this.#path, JSON.stringify(info), { mode: 0o600 });
  }

  release(): void {
    rmSync(this.#path, { force: true });
  }
}
