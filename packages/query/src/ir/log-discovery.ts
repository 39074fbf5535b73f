import type { LabelMatch, LogTable, RowFilter, TimeRange } from './logs.ts';

/**
 * Query IR for the discovery endpoints Grafana's Loki data source calls besides queries
 * (reference/api-contracts.md §1.1, §1.4): index statistics for the query-size estimate, detected
 * fields and their values for the field browser, detected labels for Logs Drilldown. Log volume
 * is a metric query (bytes_over_time summed by labels) and needs nothing of its own.
 */

/** Streams, "chunks" (stream-hours: the hour partitions a stream has rows in), entries and line bytes of the selected rows. */
export interface IndexStats {
  kind: 'index_stats';
  table: LogTable;
  range: TimeRange;
  streams: LabelMatch[];
}

/**
 * The record attributes (and trace_id / span_id) of the newest `sampleLimit` matching lines:
 * each key with its inferred type and its distinct-value count in the sample (a lower bound).
 */
export interface DetectedFields {
  kind: 'detected_fields';
  table: LogTable;
  range: TimeRange;
  streams: LabelMatch[];
  filters: RowFilter[];
  sampleLimit: number;
}

/** Distinct values of one field over the newest `sampleLimit` matching lines, at most `limit`. */
export interface DetectedFieldValues {
  kind: 'detected_field_values';
  table: LogTable;
  range: TimeRange;
  streams: LabelMatch[];
  filters: RowFilter[];
  field: string;
  sampleLimit: number;
  limit: number;
}

/** Stream labels (service_name, level, resource attribute keys) of the window with their distinct-value counts. */
export interface DetectedLabels {
  kind: 'detected_labels';
  table: LogTable;
  range: TimeRange;
  streams: LabelMatch[];
}
