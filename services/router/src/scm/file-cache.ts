/**
 * Source files fetched from the host, and the unavailability their content caused (spec 2,
 * source-context rule 6): keyed by installation, repository, ref and path, kept for a TTL, at most
 * `capacity` entries with least-recently-used eviction. A Map keeps insertion order, so re-inserting
 * on every hit makes its first key the least recently used one.
 */
export type CachedFile = { kind: 'file'; lines: readonly string[]; url: string } | { kind: 'unavailable'; reason: 'not_found' | 'not_a_file' | 'too_large' | 'undecodable' };

export interface FileKey {
  installationId: number;
  repository: string;
  /** undefined: the default branch. */
  ref: string | undefined;
  path: string;
}

// NUL cannot occur in a repository name, a ref or a path, so joined keys cannot collide.
const keyOf = (k: FileKey) => [k.installationId, k.repository.toLowerCase(), k.ref ?? '', k.path].join('\0');

export class FileCache {
  readonly #entries = new Map<string, { value: CachedFile; expiresAt: number; installationId: number }>();

  readonly #ttlMs: number;
  readonly #capacity: number;
  readonly #now: () => number;

  constructor(ttlMs: number, capacity: number, now: () => number = Date.now) {
    this.#ttlMs = ttlMs;
    this.#capacity = capacity;
    this.#now = now;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: FileKey): CachedFile | undefined {
    const k = keyOf(key);
    const entry = this.#entries.get(k);
    if (!entry) return undefined;
    this.#entries.delete(k);
    if (entry.expiresAt <= this.#now()) return undefined;
    this.#entries.set(k, entry);
    return entry.value;
  }

  set(key: FileKey, value: CachedFile): void {
    if (this.#ttlMs <= 0) return;
    const k = keyOf(key);
    this.#entries.delete(k);
    this.#entries.set(k, { value, expiresAt: this.#now() + this.#ttlMs, installationId: key.installationId });
    while (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }

  /** Drops every entry of an installation (its link was removed). */
  evictInstallation(installationId: number): void {
    for (const [k, entry] of this.#entries) if (entry.installationId === installationId) this.#entries.delete(k);
  }
}
