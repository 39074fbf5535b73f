import { fromBinary, JfrLabelsSnapshotSchema } from '@floe/proto';

/** A context's labels: name and value pairs, in the order the agent wrote them. */
export type ContextLabels = ReadonlyArray<{ name: string; value: string }>;

export class JfrLabelsError extends Error {}

/** A labels part: each context's labels, and the string table (span names are ids into it too). */
export interface JfrLabels {
  contexts: ReadonlyMap<bigint, ContextLabels>;
  strings: ReadonlyMap<bigint, string>;
}

/**
 * The Pyroscope Java agent's `labels` form part (a LabelsSnapshot, proto/pyroscope/jfr/labels.proto)
 * as labels per context id and its strings: the labels a thread carried (Pyroscope.LabelsWrapper, or the
 * OpenTelemetry extension's span_id and span_name) when async-profiler took a sample with that
 * contextId. A label naming a string the snapshot does not hold, or with an empty name, is left
 * out, as Pyroscope's reader leaves out empty ones.
 */
export function jfrContextLabels(bytes: Uint8Array): JfrLabels {
  let snapshot;
  try {
    snapshot = fromBinary(JfrLabelsSnapshotSchema, bytes);
  } catch (err) {
    throw new JfrLabelsError(`the labels part is not a LabelsSnapshot: ${(err as Error).message}`);
  }
  const strings = new Map(Object.entries(snapshot.strings).map(([id, s]) => [BigInt(id), s]));
  const out = new Map<bigint, ContextLabels>();
  for (const [id, context] of Object.entries(snapshot.contexts)) {
    const labels: Array<{ name: string; value: string }> = [];
    for (const [nameId, valueId] of Object.entries(context.labels)) {
      const name = strings.get(BigInt(nameId));
      const value = strings.get(valueId);
      if (name && value !== undefined) labels.push({ name, value });
    }
    out.set(BigInt(id), labels);
  }
  return { contexts: out, strings };
}
