import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the writer says it did, from its admin port: `GET /status` (rounds, WAL segments consumed,
 * the last round) and `GET /metrics` (commit_duration: one observation per Iceberg append, i.e.
 * per table group committed, timed from the append call to the catalog update).
 */
export interface WriterFigures {
  rounds: number;
  segmentsConsumed: number;
  backlogSegments: number;
  /** Iceberg appends (commit_duration's count) and their seconds (its sum), every table. */
  commits: number;
  commitSeconds: number;
  lastRound: { durationMs: number; segments: number; rows: number; files: number; commits: number } | undefined;
}

interface StatusAnswer {
  rounds: number;
  segments_consumed: number;
  backlog: { segments: number };
  last_round: { duration_ms: number; segments: number; rows: number; files: number; commits: number } | null;
}

export async function writerFigures(writerAdminUrl: string): Promise<WriterFigures> {
  const [status, metrics] = await Promise.all([
    fetch(`${writerAdminUrl}/status`).then((r) => r.json() as Promise<StatusAnswer>),
    fetch(`${writerAdminUrl}/metrics`).then((r) => r.text()),
  ]);
  const sum = (name: string) =>
    metrics
      .split('\n')
      .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
      .reduce((acc, l) => acc + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const r = status.last_round;
  return {
    rounds: status.rounds,
    segmentsConsumed: status.segments_consumed,
    backlogSegments: status.backlog.segments,
    commits: sum('commit_duration_seconds_count'),
    commitSeconds: sum('commit_duration_seconds_sum'),
    lastRound: r ? { durationMs: r.duration_ms, segments: r.segments, rows: r.rows, files: r.files, commits: r.commits } : undefined,
  };
}

/** Parquet files under the data directory of a bench Floe (every table's data files, compacted ones too). */
export function parquetFiles(floeDir: string): number {
  const walk = (dir: string): number => {
    let n = 0;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) n += walk(join(dir, e.name));
      else if (e.name.endsWith('.parquet')) n++;
    }
    return n;
  };
  try {
    return walk(join(floeDir, 'data'));
  } catch {
    return 0;
  }
}
