import { pprofOfNamedStacks, type PprofProfile } from '@floe/proto';
import type { MergedStack, ProfileTypeRef, TimeRange } from '@floe/query';

/**
 * Merged stacks as one pprof profile (SelectMergeProfile: what Grafana's "export as pprof" and
 * profilecli download), readable by `go tool pprof` and every pprof viewer: the selected sample
 * type, the stacks leaf first, the window as the profile's time and duration. Frames are names
 * only: the stored stacks hold no addresses, files or lines.
 */
export function mergedPprof(stacks: readonly MergedStack[], type: ProfileTypeRef, range: TimeRange): PprofProfile {
  return pprofOfNamedStacks({
    sampleTypes: [{ type: type.sampleType, unit: type.sampleUnit }],
    periodType: type.period,
    timeNanos: range.startNs,
    durationNanos: range.endNs - range.startNs,
    stacks: stacks.filter((s) => s.value !== 0).map((s) => ({ frames: s.stack, values: [BigInt(Math.round(s.value))] })),
  });
}
