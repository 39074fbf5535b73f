import { noSelfTelemetry, type Attributes, type Counter, type Histogram, type SelfTelemetry } from '@floe/telemetry';
import type { WriterStatus } from './status.ts';

/**
 * The writer's self-monitoring instruments (spec 2, Events), recorded where the events happen:
 * provisioning in the reconcile pass, commits, deferrals and failures in the committer and its
 * loop, attribute type mismatches after a group's pins are checked.
 */
export interface WriterMetrics {
  /** Tables created or recreated; attributes tenant.id, dataset.id. */
  tablesProvisioned: Counter;
  /** Tables that could not be provisioned; attributes tenant.id, dataset.id. */
  tableProvisioningFailures: Counter;
  /** Seconds one Iceberg append of a table group took; attribute table. */
  commitDuration: Histogram;
  /** Table groups left in the WAL for the next round (segments committed by another writer). */
  groupsDeferred: Counter;
  /** WAL segments left for a later round by max_segments_per_round / max_bytes_per_round. */
  entriesDeferredByBudget: Counter;
  /** kind permanent (data set aside, never retried) or transient (the round is retried). */
  commitFailures: Counter;
  /** Attribute values of another type than the key's pin; reason off_type or pin_conflict. */
  attributeTypeMismatches: Counter;
}

export function writerMetrics(telemetry: SelfTelemetry = noSelfTelemetry): WriterMetrics {
  const m = telemetry.meter;
  return {
    tablesProvisioned: m.createCounter('tables_provisioned', { description: 'Tables created or recreated by the writer' }),
    tableProvisioningFailures: m.createCounter('table_provisioning_failures', { description: 'Tables the writer failed to provision' }),
    commitDuration: m.createHistogram('commit_duration', { description: 'Duration of one Iceberg commit of a table group', unit: 's' }),
    groupsDeferred: m.createCounter('groups_deferred', { description: 'Table groups deferred to the next commit round' }),
    entriesDeferredByBudget: m.createCounter('entries_deferred_by_budget', { description: 'WAL segments deferred by the per-round budget' }),
    commitFailures: m.createCounter('commit_failures', { description: 'Commit failures by kind (permanent, transient)' }),
    attributeTypeMismatches: m.createCounter('attribute_type_mismatches', { description: 'Attribute values off their key\'s pinned type, by reason' }),
  };
}

/** The attributes of the per-dataset instruments. */
export const datasetAttributes = (tenant: string, dataset: string): Attributes => ({ 'tenant.id': tenant, 'dataset.id': dataset });

/**
 * The writer's state as gauges read at each collection: how long the oldest uncommitted WAL
 * segment has waited (`wal_oldest_segment_age_seconds`: data not yet queryable for that long,
 * what an alert on a stuck or slow writer watches), the segments kept apart for tables that cannot
 * be committed (`wal_held_segments`, another alert's) and the rounds failed in a row.
 */
export function observeWriterStatus(telemetry: SelfTelemetry = noSelfTelemetry, status: WriterStatus): void {
  const m = telemetry.meter;
  m.createObservableGauge('wal_oldest_segment_age', { description: 'Age of the oldest WAL segment the writer has not committed yet, as it last listed them', unit: 's' }).addCallback((r) =>
    r.observe(status.oldestSegmentAgeSeconds),
  );
  m.createObservableGauge('wal_held_segments', { description: 'WAL segments the writer keeps only for tables whose commits fail (damaged metadata or files), apart from its backlog, as it last listed them' }).addCallback((r) =>
    r.observe(status.heldSegments),
  );
  m.createObservableGauge('writer_round_failures', { description: 'Commit rounds failed in a row since the last one that succeeded' }).addCallback((r) => r.observe(status.failuresInARow));
}
