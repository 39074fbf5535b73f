import type { TimeRange } from '../ir/logs.ts';
import { flamegraphLevels, type MergedStack } from './flamegraph.ts';
import { flamegraphMetadata, type ProfileTypeRef } from './profile-type.ts';

/**
 * The render and render-diff answers: Pyroscope's flamebearer JSON document
 * (reference/api-contracts.md §4.2), built from the rows of plan.ts's stacks and timeline plans.
 * A window without profiles gives the same document with an empty tree (spec 1, profile query
 * rule 2): one "total" node of value 0.
 */

/**
 * Nodes below the root a flamegraph shows unless the request asks otherwise, and the most it may
 * ask for: Pyroscope's default, and a ceiling that keeps one answer to a few megabytes of JSON.
 */
export const DEFAULT_MAX_NODES = 8192;
export const MAX_MAX_NODES = 65_536;

const NS_PER_SECOND = 1_000_000_000n;
/** Timeline slots: about this many across the range, none shorter than MIN_STEP_SECONDS. */
const TIMELINE_POINTS = 1500n;
const MIN_STEP_SECONDS = 10n;

export interface Timeline {
  /** Unix seconds of the first slot. */
  startTime: number;
  samples: number[];
  /** Slot width, seconds. */
  durationDelta: number;
  watermarks: null;
}

export interface FlamebearerDocument {
  version: 1;
  flamebearer: { names: string[]; levels: number[][]; numTicks: number; maxSelf: number };
  metadata: { format: 'single' | 'double'; spyName: string; sampleRate: number; units: string; name: string };
  timeline: Timeline | null;
  /** render's groupBy: one timeline per value of the label. */
  groups: Record<string, Timeline> | null;
  heatmap: null;
  leftTicks?: number;
  rightTicks?: number;
}

/** The timeline's slot width for a range: whole seconds, at least 10 s, at most ~1500 slots. */
export function timelineStepNs(range: TimeRange): bigint {
  const seconds = (range.endNs - range.startNs + NS_PER_SECOND - 1n) / NS_PER_SECOND;
  const step = (seconds + TIMELINE_POINTS - 1n) / TIMELINE_POINTS;
  return (step < MIN_STEP_SECONDS ? MIN_STEP_SECONDS : step) * NS_PER_SECOND;
}

/** Slots from the range's start (whole seconds) to its end, each the summed value of the (slot, value) rows. */
export function buildTimeline(rows: ReadonlyArray<{ slot: number; value: number }>, range: TimeRange, stepNs: bigint): Timeline {
  const startSeconds = range.startNs / NS_PER_SECOND;
  const span = range.endNs > range.startNs ? range.endNs - range.startNs : 0n;
  const slots = Number((span + stepNs - 1n) / stepNs);
  const samples = new Array<number>(slots).fill(0);
  for (const r of rows) if (r.slot >= 0 && r.slot < slots) samples[r.slot]! += r.value;
  return { startTime: Number(startSeconds), samples, durationDelta: Number(stepNs / NS_PER_SECOND), watermarks: null };
}

export function singleFlamebearer(stacks: readonly MergedStack[], type: ProfileTypeRef, timeline: Timeline | null, maxNodes: number, groups: Record<string, Timeline> | null = null): FlamebearerDocument {
  const fg = flamegraphLevels([stacks], maxNodes);
  return {
    version: 1,
    flamebearer: { names: fg.names, levels: fg.levels, numTicks: fg.totals[0]!, maxSelf: fg.maxSelf },
    metadata: { format: 'single', spyName: '', ...flamegraphMetadata(type) },
    timeline,
    groups,
    heatmap: null,
  };
}

/** A diff of two windows of one profile type: numTicks is left + right, each side laid out on its own. */
export function diffFlamebearer(left: readonly MergedStack[], right: readonly MergedStack[], type: ProfileTypeRef, maxNodes: number): FlamebearerDocument {
  const fg = flamegraphLevels([left, right], maxNodes);
  const [leftTicks, rightTicks] = fg.totals as [number, number];
  return {
    version: 1,
    flamebearer: { names: fg.names, levels: fg.levels, numTicks: leftTicks + rightTicks, maxSelf: fg.maxSelf },
    metadata: { format: 'double', spyName: '', ...flamegraphMetadata(type) },
    timeline: null,
    groups: null,
    heatmap: null,
    leftTicks,
    rightTicks,
  };
}

/** The stacks plan's rows (stack as JSON text, value) as merged stacks. */
export function mergedStacksOf(rows: ReadonlyArray<Record<string, unknown>>): MergedStack[] {
  return rows.map((r) => ({ stack: JSON.parse(String(r.stack)) as string[], value: Number(r.value) }));
}
