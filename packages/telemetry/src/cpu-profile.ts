import { OtlpProfileBuilder, pathToRoot, type ProfileRequestMeta, type ProfilesRequestInit, type V8CallFrame } from './otlp-profile.ts';

/**
 * A V8 CPU profile (node:inspector's Profiler.stop) as an OTLP profiles v1development profile,
 * built with the dictionary builder of otlp-profile.ts (shared with heap-profile.ts).
 *
 * V8 records a call tree of nodes and, per sample, the id of the node that was running. A stack
 * is the path from that node up to (not including) V8's "(root)" node; its value is
 * samples × sampling period in CPU nanoseconds (spec 1, Self-profiling). Samples of "(idle)" are
 * dropped: the thread was waiting, not using CPU.
 */

/** The parts of a V8 Profiler.Profile this conversion reads. */
export interface V8CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: V8CallFrame;
    hitCount?: number;
    children?: number[];
  }>;
  /** Microseconds, V8's monotonic clock. */
  startTime: number;
  endTime: number;
  /** The id of the running node per sample (absent: each node's hitCount is used). */
  samples?: number[];
}

export interface CpuProfileMeta extends ProfileRequestMeta {
  /** The sampling period, nanoseconds. */
  periodNs: bigint;
  /** Wall-clock start of the profile. */
  startUnixNano: bigint;
}

export type { ProfilesRequestInit } from './otlp-profile.ts';

const IDLE = '(idle)';

/** A CPU profile as its own request (one profile). */
export function cpuProfileToOtlp(profile: V8CpuProfile, meta: CpuProfileMeta): ProfilesRequestInit {
  const builder = new OtlpProfileBuilder();
  addCpuProfile(builder, profile, meta);
  return builder.request(meta);
}

/** Adds a CPU profile to a request being built (with others sharing its dictionary). */
export function addCpuProfile(builder: OtlpProfileBuilder, profile: V8CpuProfile, meta: Pick<CpuProfileMeta, 'periodNs' | 'startUnixNano'>): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map<number, number>();
  if (profile.samples && profile.samples.length > 0) {
    for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  } else {
    for (const n of profile.nodes) if (n.hitCount) hits.set(n.id, n.hitCount);
  }

  const valueByStack = new Map<number, bigint>();
  for (const [id, count] of hits) {
    const leaf = byId.get(id);
    if (!leaf || leaf.callFrame.functionName === IDLE) continue;
    const stack = builder.stack(pathToRoot(leaf, (n) => byId.get(parent.get(n.id) ?? -1)));
    valueByStack.set(stack, (valueByStack.get(stack) ?? 0n) + BigInt(count) * meta.periodNs);
  }

  builder.addProfile({
    sampleType: ['cpu', 'nanoseconds'],
    periodType: ['cpu', 'nanoseconds'],
    period: meta.periodNs,
    timeUnixNano: meta.startUnixNano,
    durationNano: BigInt(Math.max(0, Math.round((profile.endTime - profile.startTime) * 1000))),
    values: valueByStack,
  });
}
