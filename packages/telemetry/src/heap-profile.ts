import { OtlpProfileBuilder, pathToRoot, type ProfileRequestMeta, type ProfilesRequestInit, type V8CallFrame } from './otlp-profile.ts';

/**
 * A V8 sampling heap profile (node:inspector's HeapProfiler.getSamplingProfile) as an OTLP
 * profiles v1development profile of sample type inuse_space/bytes and period type space/bytes,
 * built with the dictionary builder of otlp-profile.ts (shared with cpu-profile.ts).
 *
 * V8 samples allocations on its heap about once per sampling interval of allocated bytes (a
 * Poisson process) and forgets a sample when the GC frees its object, so the profile holds the
 * sampled allocations still alive: a call tree of allocation sites, and per sample the node that
 * allocated it and its size, already scaled by V8 to the bytes the sample stands for. A stack is
 * the path from that node up to (not including) V8's "(root)"; its value is the sum of the sizes
 * of its samples, the estimated live bytes it allocated (Go's inuse_space). Without a samples list
 * (older protocol versions) each node's selfSize, the same sum made by V8, is used. Allocation
 * sites V8 reports with pseudo-frames ("(V8 API)", "(BYTECODE_COMPILER)", …) are kept as frames.
 *
 * No inuse_objects profile: the protocol gives each sample's scaled size only, not how many
 * objects it stands for, so a count could only be reverse-engineered from V8's scaling formula.
 *
 * The profile is a snapshot: its time is when it was taken and its duration is 0, like Go's
 * heap profile. Only V8's heap is seen: ArrayBuffer and Buffer contents live outside it.
 */

/** The parts of a V8 HeapProfiler.SamplingHeapProfile this conversion reads. */
export interface V8SamplingHeapProfile {
  head: V8SamplingHeapNode;
  /** The live sampled allocations: size (bytes, scaled) and the id of the allocating node. */
  samples?: Array<{ size: number; nodeId: number; ordinal?: number }>;
}

export interface V8SamplingHeapNode {
  id: number;
  callFrame: V8CallFrame;
  /** Bytes of this node's live samples, excluding children. */
  selfSize: number;
  children?: V8SamplingHeapNode[];
}

export interface HeapProfileMeta extends ProfileRequestMeta {
  /** The sampling interval, bytes (the profile's period). */
  samplingIntervalBytes: number;
  /** When the profile was taken. */
  timeUnixNano: bigint;
}

/** A heap profile as its own request (one profile). */
export function heapProfileToOtlp(profile: V8SamplingHeapProfile, meta: HeapProfileMeta): ProfilesRequestInit {
  const builder = new OtlpProfileBuilder();
  addHeapProfile(builder, profile, meta);
  return builder.request(meta);
}

/** Adds a heap profile to a request being built (with others sharing its dictionary). */
export function addHeapProfile(builder: OtlpProfileBuilder, profile: V8SamplingHeapProfile, meta: Pick<HeapProfileMeta, 'samplingIntervalBytes' | 'timeUnixNano'>): void {
  // The tree, flattened without recursion: it may be as deep as the deepest allocating call.
  const byId = new Map<number, V8SamplingHeapNode>();
  const parent = new Map<number, V8SamplingHeapNode>();
  for (const todo = [profile.head]; todo.length > 0; ) {
    const node = todo.pop()!;
    byId.set(node.id, node);
    for (const child of node.children ?? []) {
      parent.set(child.id, node);
      todo.push(child);
    }
  }
  const bytes = new Map<number, number>();
  if (profile.samples) {
    for (const s of profile.samples) bytes.set(s.nodeId, (bytes.get(s.nodeId) ?? 0) + s.size);
  } else {
    for (const [id, n] of byId) if (n.selfSize > 0) bytes.set(id, n.selfSize);
  }

  const valueByStack = new Map<number, bigint>();
  for (const [id, size] of bytes) {
    const leaf = byId.get(id);
    if (!leaf || !(size > 0)) continue;
    const stack = builder.stack(pathToRoot(leaf, (n) => parent.get(n.id)));
    valueByStack.set(stack, (valueByStack.get(stack) ?? 0n) + BigInt(Math.round(size)));
  }

  builder.addProfile({
    sampleType: ['inuse_space', 'bytes'],
    periodType: ['space', 'bytes'],
    period: BigInt(meta.samplingIntervalBytes),
    timeUnixNano: meta.timeUnixNano,
    durationNano: 0n,
    values: valueByStack,
  });
}
