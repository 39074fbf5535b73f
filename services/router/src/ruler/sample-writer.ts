import { create, PromWriteRequestSchema, toBinary } from '@floe/proto';
import { compress } from 'snappyjs';
import type { OutputSample } from './group-evaluation.ts';

/**
 * Writes the ruler's samples (recording-rule results, ALERTS, staleness markers) the way every
 * other Prometheus sample reaches Floe: a remote-write 1.0 request to an acceptor, which makes
 * them durable before it answers. Like Mimir's and Cortex's rulers, which push to their
 * distributors, rather than a write path of its own. The credential is the internal service key,
 * which an acceptor takes for ingest only.
 */
export interface SampleWriter {
  write(tenant: string, dataset: string, samples: readonly OutputSample[]): Promise<void>;
}

export interface RemoteWriteTarget {
  /** The acceptor's remote-write URL (…/api/v1/write). */
  url: string;
  /** auth.internal_service_key (or the process's own key in `floe all`). */
  key: string;
  timeoutMs: number;
}

/** Samples per request, so that a large rule result stays under the acceptor's body limit. */
const SAMPLES_PER_REQUEST = 5_000;

export function remoteWriteSamples(target: () => RemoteWriteTarget | undefined): SampleWriter {
  return {
    async write(tenant, dataset, samples) {
      if (samples.length === 0) return;
      const t = target();
      if (!t || !t.key) throw new Error('recording needs auth.internal_service_key (shared by the router and the acceptors) and ruler.remote_write_url');
      for (let i = 0; i < samples.length; i += SAMPLES_PER_REQUEST) {
        await post(t, tenant, dataset, samples.slice(i, i + SAMPLES_PER_REQUEST));
      }
    },
  };
}

async function post(t: RemoteWriteTarget, tenant: string, dataset: string, samples: readonly OutputSample[]): Promise<void> {
  const req = create(PromWriteRequestSchema, {
    timeseries: samples.map((s) => ({
      // Sorted by name, as remote write requires.
      labels: Object.keys(s.labels)
        .sort()
        .map((name) => ({ name, value: s.labels[name]! })),
      samples: [{ value: s.v, timestamp: BigInt(s.t) }],
    })),
  });
  const body = compress(toBinary(PromWriteRequestSchema, req));
  const res = await fetch(t.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${t.key}`,
      'x-tenant-id': tenant,
      'x-dataset-id': dataset,
      'content-type': 'application/x-protobuf',
      'content-encoding': 'snappy',
      'x-prometheus-remote-write-version': '0.1.0',
    },
    body,
    signal: AbortSignal.timeout(t.timeoutMs),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`writing rule results failed: ${t.url} answered ${res.status}: ${text.slice(0, 300)}`);
}
