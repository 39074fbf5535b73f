import { hostname } from 'node:os';
import { acquireLease, liveLeaseHolders, releaseLease, type Db } from '@floe/meta';
import type { Logger } from '@floe/telemetry';

/**
 * Several writers share one WAL. Each live writer holds a lease `writer:<id>` in the metadata DB,
 * renewed every third of `writer.member_ttl`, and a segment belongs to the live writer that
 * ranks highest for its key (rendezvous hashing): every segment has one owner, the writers divide
 * the WAL evenly, and when one joins or leaves only its share moves. A writer that stops gives
 * its lease up, so its share moves at once; one that dies keeps it until the lease expires.
 *
 * Two writers' views of the membership may disagree for a moment (one joining, one dying). A
 * segment that both take then is still committed once per table: the committer re-checks the
 * WAL ledger of the table's snapshots on every commit attempt (committer.ts). A segment that
 * neither takes waits a round.
 */

/** Lease names of the writers' membership: `writer:<id>`. */
export const MEMBER_LEASE_PREFIX = 'writer:';

export interface MembershipOptions {
  db: Db;
  /**
   * This writer's id: runtime.instance_id, else host and pid (the default). A writer restarted
   * under the same id (a StatefulSet's pod, a container restarted in its pod: same hostname, pid
   * 1) renews its predecessor's lease and takes its share back at once, instead of leaving it to
   * wait for the lease to expire.
   */
  id?: string;
  /** How long a writer stays a member without renewing (writer.member_ttl). */
  ttlMs: number;
  log: Logger;
}

export class WriterMembership {
  readonly id: string;
  readonly #o: MembershipOptions;
  #members: readonly string[];
  #memberHashes: Uint32Array;
  #timer: NodeJS.Timeout | undefined;
  #left = false;
  /** Ownership of the keys asked since the members last changed (a backlog is listed again and again). */
  #owned = new Map<string, boolean>();

  constructor(opts: MembershipOptions) {
    this.#o = opts;
    this.id = opts.id || `${hostname()}-${process.pid}`;
    // Alone until the first refresh says otherwise: a writer whose database is down still commits.
    this.#members = [this.id];
    this.#memberHashes = Uint32Array.of(textHash(this.id));
  }

  /** The live writers as last seen, sorted (this one among them). */
  get members(): readonly string[] {
    return this.#members;
  }

  /**
   * Takes this writer's lease and reads the members (before the first round, so a writer joining
   * others does not take the whole WAL for a start), then renews every third of the ttl, on a
   * timer of its own: a long round must not let the lease lapse.
   */
  async join(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => void this.refresh(), Math.max(10, this.#o.ttlMs / 3));
    this.#timer.unref();
  }

  /**
   * Renews this writer's lease and reads the live members. A failure keeps the last view
   * (logged): the lease then lapses and the others take this writer's share, which the ledger
   * makes safe.
   */
  async refresh(): Promise<readonly string[]> {
    if (this.#left) return this.#members;
    try {
      await acquireLease(this.#o.db, MEMBER_LEASE_PREFIX + this.id, this.id, this.#o.ttlMs);
      const live = await liveLeaseHolders(this.#o.db, MEMBER_LEASE_PREFIX);
      if (this.#left) return this.#members;
      // Its own lease was just renewed; a view without it would give its share to nobody.
      const members = live.includes(this.id) ? live : [...live, this.id].sort();
      if (!sameList(members, this.#members)) {
        this.#o.log.info({ writer: this.id, members }, 'writers sharing the WAL changed');
        this.#setMembers(members);
      }
    } catch (err) {
      this.#o.log.warn({ err, writer: this.id }, 'writer membership not renewed; keeping the last view of the writers');
    }
    return this.#members;
  }

  /** Whether this writer commits the WAL segment `key` under the current view. */
  owns(key: string): boolean {
    if (this.#members.length === 1) return true;
    let owned = this.#owned.get(key);
    if (owned === undefined) {
      owned = this.#members[rank(key, this.#memberHashes)] === this.id;
      if (this.#owned.size >= MAX_REMEMBERED) this.#owned.clear();
      this.#owned.set(key, owned);
    }
    return owned;
  }

  /** Gives this writer's lease up (on stop), so the others take its share at once. */
  async leave(): Promise<void> {
    this.#left = true;
    clearInterval(this.#timer);
    await releaseLease(this.#o.db, MEMBER_LEASE_PREFIX + this.id, this.id).catch((err: unknown) => {
      this.#o.log.warn({ err, writer: this.id }, 'writer membership not given up; the others take its share when it expires');
    });
  }

  #setMembers(members: readonly string[]): void {
    this.#members = members;
    this.#memberHashes = Uint32Array.from(members, textHash);
    this.#owned = new Map();
  }
}

/** Keys whose ownership is remembered at most (a listing of a long backlog holds that many). */
const MAX_REMEMBERED = 200_000;

/** The member (of `members`, sorted) that owns `key`: rendezvous hashing. Undefined with no members. */
export function ownerOf(key: string, members: readonly string[]): string | undefined {
  return members.length === 0 ? undefined : members[rank(key, Uint32Array.from(members, textHash))];
}

/** Index of the member with the highest score for the key (the first of equals). */
function rank(key: string, memberHashes: Uint32Array): number {
  const k = textHash(key);
  let best = 0;
  let bestScore = -1;
  for (let i = 0; i < memberHashes.length; i++) {
    const s = mix(memberHashes[i]! ^ k);
    if (s > bestScore) {
      best = i;
      bestScore = s;
    }
  }
  return best;
}

/** FNV-1a over the UTF-16 code units, finished by mix(). */
function textHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return mix(h);
}

/** A 32-bit finaliser (every input bit moves every output bit), unsigned. */
function mix(x: number): number {
  let h = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
