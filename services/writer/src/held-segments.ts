import { encodeWalHeld, walHeldKey, walHeldPrefix, WAL_HELD_REFRESH_MS, type HeldTable, type ObjectStore } from '@floe/storage';
import type { Logger } from '@floe/telemetry';
import type { HeldView } from './status.ts';

/** A crashed writer's object (its name is its process's) is removed by another writer after this. */
const ABANDONED_MS = 60 * 60_000;

/**
 * Publishes the WAL segments this writer keeps only for tables it cannot commit (storage's
 * wal-held.ts), so that the acceptors refuse the tenants owning those tables rather than count
 * the segments against every tenant's acceptor.max_wal_backlog. Written when the set changes,
 * and every WAL_HELD_REFRESH_MS while it is not empty (the acceptors stop believing an object not
 * rewritten for a while: its writer may have stopped); removed once nothing is held.
 */
export class HeldPublisher implements HeldView {
  readonly #store: ObjectStore;
  readonly #writer: string;
  readonly #key: string;
  readonly #prefix: string;
  readonly #log: Logger;
  /** What is held now, as last given (the writer's /status shows it). */
  #current: ReadonlyMap<string, readonly HeldTable[]> = new Map();
  /** What was last written ('' : nothing, the object is absent). */
  #published = '';
  #writtenAt = 0;
  #failing = false;

  constructor(store: ObjectStore, writer: string, log: Logger, walPrefix?: string) {
    this.#store = store;
    this.#writer = writer;
    this.#key = walHeldKey(writer, walPrefix);
    this.#prefix = walHeldPrefix(walPrefix);
    this.#log = log;
  }

  /**
   * Never throws: an object that could not be written is written next time, and meanwhile the
   * acceptors count the segments as ordinary backlog (the limit errs towards the disk).
   */
  async publish(held: ReadonlyMap<string, readonly HeldTable[]>, now = Date.now()): Promise<void> {
    this.#current = held;
    const text = signature(held);
    if (text === this.#published && (text === '' || now - this.#writtenAt < WAL_HELD_REFRESH_MS)) return;
    try {
      if (text === '') await this.#store.delete(this.#key);
      else {
        await this.#store.put(this.#key, encodeWalHeld(this.#writer, now, held));
        await this.#removeAbandoned(now);
      }
      this.#published = text;
      this.#writtenAt = now;
      if (this.#failing) this.#log.info('the list of WAL segments held for failing tables is published again');
      this.#failing = false;
    } catch (err) {
      if (!this.#failing) this.#log.warn({ err, key: this.#key }, 'could not publish the WAL segments held for failing tables; acceptors count them as backlog meanwhile');
      this.#failing = true;
    }
  }

  /** Whether the segment `key` is kept only for failing tables, as last given. */
  holds(key: string): boolean {
    return this.#current.has(key);
  }

  /** The tables segments are held for, each with how many segments it holds. */
  tables(): Array<HeldTable & { segments: number }> {
    const count = new Map<string, HeldTable & { segments: number }>();
    for (const tables of this.#current.values()) {
      for (const t of tables) {
        const key = `${t.tenant}\u0000${t.dataset}\u0000${t.table}`;
        const entry = count.get(key) ?? { ...t, segments: 0 };
        entry.segments++;
        count.set(key, entry);
      }
    }
    return [...count.values()];
  }

  async #removeAbandoned(now: number): Promise<void> {
    const old = (await this.#store.list(this.#prefix)).filter((o) => o.key !== this.#key && o.lastModified !== undefined && now - o.lastModified.getTime() > ABANDONED_MS);
    if (old.length > 0) await this.#store.deleteMany(old.map((o) => o.key));
  }
}

function signature(held: ReadonlyMap<string, readonly HeldTable[]>): string {
  if (held.size === 0) return '';
  return JSON.stringify([...held].map(([k, ts]) => [k, ts.map((t) => `${t.tenant}/${t.dataset}/${t.table}`).sort()]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1)));
}
