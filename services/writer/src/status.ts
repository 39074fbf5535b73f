import { walBacklog, type HeldTable, type ObjectInfo, type WalBacklog } from '@floe/storage';
import type { RoundStats } from './committer.ts';

/** The writers sharing the WAL, as this one sees them (@floe/meta's LeaseMembership). */
export interface MembershipView {
  readonly id: string;
  readonly members: readonly string[];
}

/** The segments and tables a writer keeps only for tables whose commits fail (HeldPublisher). */
export interface HeldView {
  holds(segmentKey: string): boolean;
  tables(): Array<HeldTable & { segments: number }>;
}

const ageMs = (oldest: number | undefined): number | undefined => (oldest === undefined ? undefined : Math.max(0, Date.now() - oldest));

/**
 * What the writer's admin `GET /status` answers: how far behind the WAL it is (segments, bytes,
 * and the age of the oldest segment not yet committed, the data's delay before it is queryable),
 * and what its rounds did. The acceptors refuse ingest beyond acceptor.max_wal_backlog; this is
 * where an operator sees the backlog build up before that. With several writers, the backlog is
 * this writer's share of the WAL, and `writers` names them all. Segments kept only for tables
 * whose commits fail are shown apart (`held`): the writer is not behind on them, and counted in
 * the backlog they made a broken table look like a slow writer.
 */
export class WriterStatus {
  readonly #membership: MembershipView | undefined;
  #backlog: WalBacklog = { segments: 0, bytes: 0, oldestMs: undefined };
  #listedAt: number | undefined;
  #rounds = 0;
  /** WAL segments consumed by this writer's rounds since it started (its share, beside others). */
  #segmentsConsumed = 0;
  #failuresInARow = 0;
  #lastRound: { at: number; ms: number; stats: RoundStats } | undefined;
  #lastError: { at: number; message: string } | undefined;

  readonly #held: HeldView | undefined;
  /** The listed segments kept only for tables whose commits fail: not backlog, the writer is not behind on them. */
  #heldBacklog: WalBacklog = { segments: 0, bytes: 0, oldestMs: undefined };

  /** `held`: the tables whose commits fail, each with the WAL segments kept for it (HeldPublisher). */
  constructor(membership?: MembershipView, held?: HeldView) {
    this.#membership = membership;
    this.#held = held;
  }

  backlogListed(segments: readonly ObjectInfo[]): void {
    const held = this.#held;
    this.#backlog = walBacklog(held ? segments.filter((s) => !held.holds(s.key)) : segments);
    this.#heldBacklog = walBacklog(held ? segments.filter((s) => held.holds(s.key)) : []);
    this.#listedAt = Date.now();
  }

  /** WAL segments, of those last listed, kept only for tables whose commits fail (wal_held_segments). */
  get heldSegments(): number {
    return this.#heldBacklog.segments;
  }

  /** Seconds since the oldest segment not yet committed was written (0 with none). */
  get oldestSegmentAgeSeconds(): number {
    return (this.#oldestAgeMs() ?? 0) / 1000;
  }

  #oldestAgeMs(): number | undefined {
    return ageMs(this.#backlog.oldestMs);
  }

  /** Rounds failed since the last one that succeeded (the loop's backoff). */
  get failuresInARow(): number {
    return this.#failuresInARow;
  }

  roundDone(startedAt: number, stats: RoundStats): void {
    this.#rounds++;
    this.#segmentsConsumed += stats.segments;
    this.#failuresInARow = 0;
    this.#lastRound = { at: startedAt, ms: Date.now() - startedAt, stats };
  }

  roundFailed(err: unknown): void {
    this.#failuresInARow++;
    this.#lastError = { at: Date.now(), message: err instanceof Error ? err.message : String(err) };
  }

  toJSON(): unknown {
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
    const r = this.#lastRound;
    const { segments, bytes } = this.#backlog;
    return {
      backlog: {
        segments,
        bytes,
        oldest_segment_age_ms: this.#oldestAgeMs() ?? null,
        listed_at: iso(this.#listedAt),
      },
      // Segments kept for tables this writer cannot commit (their metadata or files are damaged,
      // say), apart from the backlog, and those tables, each with the segments kept for it: their
      // owners' ingest is refused past acceptor.max_wal_backlog.
      held: { segments: this.#heldBacklog.segments, bytes: this.#heldBacklog.bytes, oldest_segment_age_ms: ageMs(this.#heldBacklog.oldestMs) ?? null },
      held_for_tables: (this.#held?.tables() ?? []).map((t) => ({ tenant: t.tenant, dataset: t.dataset, table: t.table, segments: t.segments })),
      ...(this.#membership ? { writer_id: this.#membership.id, writers: this.#membership.members } : {}),
      rounds: this.#rounds,
      segments_consumed: this.#segmentsConsumed,
      failures_in_a_row: this.#failuresInARow,
      last_round: r
        ? {
            started_at: iso(r.at),
            duration_ms: r.ms,
            segments: r.stats.segments,
            records: r.stats.records,
            rows: r.stats.rows,
            files: r.stats.files,
            commits: r.stats.commits,
            skipped_records: r.stats.skippedRecords,
          }
        : null,
      last_error: this.#lastError ? { at: iso(this.#lastError.at), message: this.#lastError.message } : null,
    };
  }
}
