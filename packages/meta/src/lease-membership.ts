import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger, SelfTelemetry } from '@floe/telemetry';
import type { Db } from './db.ts';
import { acquireLease, liveLeaseHolders, releaseLease } from './leases.ts';

/**
 * Processes of one kind that divide work between them: each live member holds a lease
 * `<group>:<id>` in the metadata DB, renewed every third of its ttl, and an item of work (a WAL
 * segment for the writers, a table for the compactors) belongs to the live member that ranks
 * highest for its key (rendezvous hashing): every item has one owner, the members divide the items
 * evenly, and when one joins or leaves only its share moves. A member that stops gives its lease
 * up, so its share moves at once; one that dies keeps it until the lease expires.
 *
 * Two members' views may disagree for a moment (one joining, one dying), so an item may be taken
 * by two or by none for that moment: the work must be safe to do twice (the writers' WAL ledger,
 * the compactors' compare-and-swap commits) and to leave for a round.
 */

export interface MembershipOptions {
  db: Db;
  /** The kind of member, e.g. `writer`: leases are named `<group>:<id>`. */
  group: string;
  /**
   * This member's id: runtime.instance_id, else host and pid (the default). A member restarted
   * under the same id (a StatefulSet's pod, a container restarted in its pod: same hostname, pid
   * 1) renews its predecessor's lease and takes its share back at once, instead of leaving it to
   * wait for the lease to expire.
   */
  id?: string;
  /** How long a member stays one without renewing. */
  ttlMs: number;
  log: Logger;
}

export class LeaseMembership {
  readonly id: string;
  readonly group: string;
  readonly #o: MembershipOptions;
  readonly #lease: string;
  readonly #prefix: string;
  #members: readonly string[];
  #memberHashes: Uint32Array;
  #timer: NodeJS.Timeout | undefined;
  /** Resolves once join()'s second read of the members is done (or the member has left). */
  #settled: Promise<void> = Promise.resolve();
  /** Cancels join()'s second read when the member leaves first. */
  readonly #leaving = new AbortController();
  /** When the last refresh succeeded (performance.now()). */
  #refreshedAt = -Infinity;
  #left = false;
  #refreshing: Promise<readonly string[]> | undefined;

  constructor(opts: MembershipOptions) {
    this.#o = opts;
    this.id = opts.id || `${hostname()}-${process.pid}`;
    this.group = opts.group;
    this.#prefix = `${opts.group}:`;
    this.#lease = this.#prefix + this.id;
    // Alone until the first refresh says otherwise: a member whose database is down still works.
    this.#members = [this.id];
    this.#memberHashes = Uint32Array.of(textHash(this.id));
  }

  /** The live members as last seen, sorted (this one among them). */
  get members(): readonly string[] {
    return this.#members;
  }

  /**
   * Takes this member's lease and reads the members; reads them again `settleMs` later, so that
   * members started together (a fleet, or writers after an outage) see each other within that
   * time rather than at their first renewal (current() waits for it); then renews every third of the ttl, on a timer
   * of its own, since a long round of work must not let the lease lapse. Does not wait for the
   * second read: a member alone starts at once.
   */
  async join(settleMs = Math.min(1000, this.#o.ttlMs / 3)): Promise<void> {
    await this.refresh();
    this.#settled = delay(settleMs, undefined, { ref: false, signal: this.#leaving.signal }).then(
      async () => void (await this.refresh()),
      () => undefined,
    );
    this.#timer = setInterval(() => void this.refresh(), Math.max(10, this.#o.ttlMs / 3));
    this.#timer.unref();
  }

  /**
   * The view to divide a round of work by: after join()'s second read (members started together
   * then see each other before their first round), and read again when the last read is older
   * than `maxAgeMs` (a member that joined since is seen at the next round, not at the next
   * renewal).
   */
  async current(maxAgeMs = 1000): Promise<readonly string[]> {
    await this.#settled;
    return performance.now() - this.#refreshedAt < maxAgeMs ? this.#members : this.refresh();
  }

  /**
   * Renews this member's lease and reads the live members. A failure keeps the last view
   * (logged): the lease then lapses and the others take this member's share as well.
   */
  refresh(): Promise<readonly string[]> {
    // One at a time (the timer, a round and join may ask together): an older answer must not
    // replace a newer one.
    this.#refreshing ??= this.#renewAndRead().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #renewAndRead(): Promise<readonly string[]> {
    if (this.#left) return this.#members;
    try {
      await acquireLease(this.#o.db, this.#lease, this.id, this.#o.ttlMs);
      const live = await liveLeaseHolders(this.#o.db, this.#prefix);
      this.#refreshedAt = performance.now();
      if (this.#left) return this.#members;
      // Its own lease was just renewed; a view without it would give its share to nobody.
      const members = live.includes(this.id) ? live : [...live, this.id].sort();
      if (!sameList(members, this.#members)) {
        this.#o.log.info({ group: this.#o.group, member: this.id, members }, 'members sharing the work changed');
        this.#setMembers(members);
      }
    } catch (err) {
      this.#o.log.warn({ err, group: this.#o.group, member: this.id }, 'membership not renewed; keeping the last view of the members');
    }
    return this.#members;
  }

  /** Whether the item `key` is this member's under the current view. */
  owns(key: string): boolean {
    return this.#members.length === 1 || this.#members[rank(key, this.#memberHashes)] === this.id;
  }

  /** Gives this member's lease up (on stop), so the others take its share at once. */
  async leave(): Promise<void> {
    this.#left = true;
    clearInterval(this.#timer);
    this.#leaving.abort();
    await releaseLease(this.#o.db, this.#lease, this.id).catch((err: unknown) => {
      this.#o.log.warn({ err, group: this.#o.group, member: this.id }, 'membership not given up; the others take its share when it expires');
    });
  }

  #setMembers(members: readonly string[]): void {
    this.#members = members;
    this.#memberHashes = Uint32Array.from(members, textHash);
  }
}

/**
 * The gauge `group_members` (attribute `group`): how many members this process sees in its group,
 * itself included. Members of one group that disagree for long, or a count below the replicas
 * deployed, show a member that cannot reach the metadata DB or has stopped.
 */
export function observeMembership(telemetry: SelfTelemetry, membership: LeaseMembership): void {
  telemetry.meter
    .createObservableGauge('group_members', { description: 'Live members of this process\'s group (writers sharing the WAL, compactors sharing the tables) as it last saw them, itself included' })
    .addCallback((r) => r.observe(membership.members.length, { group: membership.group }));
}

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
