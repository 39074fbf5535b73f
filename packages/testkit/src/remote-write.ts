import { compress } from 'snappyjs';
import { PromMetricMetadata_MetricType, PromWriteRequestSchema, create, toBinary } from '@floe/proto';

/**
 * Prometheus remote write 1.0 as tests and benchmarks send it: the headers of a Prometheus
 * server's remote-write queue, metric metadata, and Prometheus's staleness marker.
 */

/** What a Prometheus 2.42 remote-write queue sends with every 1.0 request (add credentials). */
export const REMOTE_WRITE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/x-protobuf',
  'content-encoding': 'snappy',
  'x-prometheus-remote-write-version': '0.1.0',
  'user-agent': 'Prometheus/2.42.0',
});

/** A metric family's TYPE and HELP: [name, type, help]. */
export type MetricFamily = [name: string, type: PromMetricMetadata_MetricType, help: string];

/** The WriteRequest `metadata` entries of `families`, to send with series or alone. */
export const promMetadata = (families: readonly MetricFamily[]) => families.map(([metricFamilyName, type, help]) => ({ metricFamilyName, type, help, unit: '' }));

/** A metadata-only request body (snappy), as the queue sends one every minute. */
export function remoteWriteMetadataBody(families: readonly MetricFamily[]): Buffer {
  return Buffer.from(compress(toBinary(PromWriteRequestSchema, create(PromWriteRequestSchema, { metadata: promMetadata(families) }))));
}

/**
 * A value to put where a staleness marker belongs, then withStaleMarkers on the encoded request:
 * Prometheus's marker is one particular NaN (0x7ff0000000000002), and JS does not promise to keep
 * a NaN's payload through a Float64 write.
 */
export const STALE_PLACEHOLDER = 1.2345678901234567e-300;

/** The encoded request with every STALE_PLACEHOLDER sample value replaced by the staleness NaN. */
export function withStaleMarkers(bytes: Uint8Array): Buffer {
  const out = Buffer.from(bytes);
  const needle = Buffer.alloc(8);
  needle.writeDoubleLE(STALE_PLACEHOLDER);
  for (let i = out.indexOf(needle); i >= 0; i = out.indexOf(needle, i + 8)) Buffer.from('020000000000f07f', 'hex').copy(out, i);
  return out;
}
