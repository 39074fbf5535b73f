import type { Counter, Histogram, SelfTelemetry } from '@floe/telemetry';

/**
 * What an operator watches of the compactor: how its passes end and how long they take
 * (`compaction_pass_duration_seconds`, by outcome ok or failed), and when one last succeeded
 * (`compaction_last_success_timestamp_seconds`, absent until then), so an alert fires on a
 * compactor that keeps failing or has stopped, whose tables then grow file by file.
 */
export interface CompactorMetrics {
  passDuration: Histogram;
  /** Open-hour concatenation passes (compactor.open_hour_interval), by outcome. */
  openHourPasses: Counter;
  /** Files merged away by those passes (flush files and smaller concatenations). */
  filesConcatenated: Counter;
  succeeded(atMs: number): void;
}

export function compactorMetrics(telemetry: SelfTelemetry): CompactorMetrics {
  const m = telemetry.meter;
  let lastSuccessMs: number | undefined;
  m.createObservableGauge('compaction_last_success_timestamp', { description: 'Unix time the last compaction pass of this compactor succeeded', unit: 's' }).addCallback((r) => {
    if (lastSuccessMs !== undefined) r.observe(lastSuccessMs / 1000);
  });
  return {
    passDuration: m.createHistogram('compaction_pass_duration', {
      description: 'Duration of one compaction pass over every table, by outcome (ok, failed)',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600] },
    }),
    openHourPasses: m.createCounter('compaction_open_hour_passes', { description: 'Open-hour concatenation passes between full compaction passes, by outcome (ok, failed)' }),
    filesConcatenated: m.createCounter('compaction_open_hour_files_merged', { description: 'Files of hours still being written (flush files and smaller concatenations) merged away by open-hour passes' }),
    succeeded(atMs) {
      lastSuccessMs = atMs;
    },
  };
}
