import { walBacklog, type HeldTable, type ObjectInfo, type WalBacklog } from '@floe/storage';
import type { RoundStats } from './committer.ts';

/** The writers sharing the WAL, as this one sees them (@floe/meta's LeaseMembership). */
export interface MembershipView {
  readonly id: string;
  readonly members: readonly string[];
}

/**
 * What the writer's admin `GET /status` answers: how far behind the WAL it is (segments, bytes,
 * and the age of the oldest segment not yet committed, the data's delay before it is queryable),
 * and what its rounds did. The acceptors refuse ingest beyond acceptor.max_wal_backlog; this is
 * where an operator sees the backlog build up before that. With several writers, the backlog is
 * this writer's share of the WAL, and `writers` names them all.
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

  readonly #held: (() => Array<HeldTable & { segments: number }>) | undefined;

  /** `held`: the tables whose commits fail, each with the WAL segments kept for it (HeldPublisher). */
  constructor(membership?: MembershipView, held?: () => Array<HeldTable & { segments: number }>) {
    this.#membership = membership;
    this.#held = held;
  }

  backlogListed(segments: readonly ObjectInfo[]): void {
    this.#backlog = walBacklog(segments);
    this.#listedAt = Date.now();
  }

  /** Seconds since the oldest segment not yet committed was written (0 with none). */
  get oldestSegmentAgeSeconds(): number {
    return (this.#oldestAgeMs() ?? 0) / 1000;
  }

  #oldestAgeMs(): number | undefined {
    const oldest = this.#backlog.oldestMs;
    return oldest === undefined ? undefined : Math.max(0, Date.now() - oldest);
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
      // Tables this writer cannot commit (their metadata or files are damaged, say), each with the
      // segments it keeps for them: its owners' ingest is refused past acceptor.max_wal_backlog.
      held_for_tables: (this.#held?.() ?? []).map((t) => ({ tenant: t.tenant, dataset: t.dataset, table: t.table, segments: t.segments })),
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
