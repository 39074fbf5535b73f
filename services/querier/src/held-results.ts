import type { FloeConfig } from '@floe/config';
import { HeldBytes } from '@floe/limits';
import { observeBytesAndLimit, type SelfTelemetry } from '@floe/telemetry';
import type { Table } from 'apache-arrow';

/** The Arrow buffers of a result (values, offsets, validity; children included), as the sandbox counts them against querier.max_result_mb. */
export function tableBytes(table: Table): number {
  let bytes = 0;
  for (const batch of table.batches) bytes += batch.data.byteLength;
  return bytes;
}

/**
 * The query results a querier holds until their callers have read them (querier.max_held_result_mb):
 * the scheduler bounds the queries that run at once, not the results that wait for a slow or
 * stalled client once their slot is free (HeldBytes says the rest).
 */
export class HeldResults extends HeldBytes {
  constructor(maxBytes: number) {
    super(maxBytes, { noun: 'result', holder: 'querier', setting: 'querier.max_held_result_mb' });
  }
}

/** The querier's held results from querier.max_held_result_mb, with their gauges. */
export function heldResultsFromConfig(config: Readonly<FloeConfig>, telemetry: SelfTelemetry): HeldResults {
  const held = new HeldResults(config.querier.max_held_result_mb * 1024 * 1024);
  observeBytesAndLimit(telemetry.meter, { bytes: 'query_results_held_bytes', limit: 'query_results_held_max_bytes' }, {
    description: 'Bytes of query results this querier holds until their clients have read them',
    setting: 'querier.max_held_result_mb',
    read: () => ({ bytes: held.held, max: held.maxBytes }),
  });
  return held;
}
