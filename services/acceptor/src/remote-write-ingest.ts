import type { TenantContext } from '@floe/auth';
import { FloeError } from '@floe/errors';
import type { Logger } from '@floe/telemetry';
import type { AcceptedTimes } from './accepted-times.ts';
import type { Ingest } from './ingest.ts';
import {
  RemoteWriteMetadata,
  decodeRemoteWriteV2,
  remoteWriteV1BodyToRows,
  remoteWriteV2ToRows,
  type ConvertedRemoteWrite,
  type RemoteWriteVersion,
} from './remote-write.ts';

export interface RemoteWriteOutcome {
  /** v2's written-count headers (reference §6.1); they count what was stored, also on a 400. */
  headers: Record<string, string>;
  /** The conversion error to answer with (400), after the convertible rest was stored. */
  error: FloeError | undefined;
}

/**
 * POST /api/v1/write after auth and snappy: decode the protocol's message, convert
 * (remote-write.ts), append the metrics and metric_exemplars records in one WAL append, and say
 * what to answer. Histograms OpenTelemetry cannot represent are dropped with a warning (spec 1,
 * Ingest rule 3); series that cannot be converted make the answer 400 without holding back the
 * rest, as Prometheus's own receiver does. A failed append is 503 (Ingest).
 */
export class RemoteWriteIngest {
  readonly #ingest: Ingest;
  readonly #log: Logger;
  readonly #metadata = new RemoteWriteMetadata();

  constructor(ingest: Ingest, log: Logger) {
    this.#ingest = ingest;
    this.#log = log.child({ surface: 'remote-write' });
  }

  /** `times`: the sample times the tenant may write (Admission); samples outside are refused like unconvertible ones. */
  async write(ctx: TenantContext, body: Uint8Array, version: RemoteWriteVersion, times: AcceptedTimes): Promise<RemoteWriteOutcome> {
    const v2 = version === 2 ? decodeRemoteWriteV2(body) : undefined;
    const converted: ConvertedRemoteWrite = await this.#ingest.convertMetrics(ctx, (series) =>
      v2 ? remoteWriteV2ToRows(v2, times, series) : remoteWriteV1BodyToRows(body, this.#metadata, `${ctx.tenant}/${ctx.dataset}`, times, series),
    );
    if (converted.dropped > 0) {
      this.#log.warn(
        { tenant: ctx.tenant, dataset: ctx.dataset, dropped: converted.dropped, first: converted.firstDropped },
        'remote write: dropped native histograms that OpenTelemetry metrics cannot represent, or exemplars without a usable time',
      );
    }
    await this.#ingest.storeMetrics(ctx, converted);
    const headers = {
      'x-prometheus-remote-write-samples-written': String(converted.samplesWritten),
      'x-prometheus-remote-write-histograms-written': String(converted.histogramsWritten),
      'x-prometheus-remote-write-exemplars-written': String(converted.exemplarsWritten),
    };
    const error =
      converted.errors > 0
        ? new FloeError('bad_data', `${converted.errors} samples, histograms or exemplars were refused (the rest was stored); first: ${converted.firstError}`, {
            code: 'FLOE_ERR_REMOTE_WRITE_CONVERT',
          })
        : undefined;
    return { headers, error };
  }
}
