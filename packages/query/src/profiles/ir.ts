import type { LabelMatch, TimeRange } from '../ir/logs.ts';
import type { ProfileTypeRef } from './profile-type.ts';

/**
 * Query IR of the profile API: which stored profiles to read and what to read of them,
 * storage-neutral like the log IR (labels by name, times as unix-nanosecond bigints, ranges
 * half-open). plan.ts prints each as SQL over the caller's `profiles` table.
 */

/** The profiles a request reads: a time range, optionally one profile type, and label matchers. */
export interface ProfileSelection {
  range: TimeRange;
  profileType: ProfileTypeRef | undefined;
  matchers: LabelMatch[];
}

/** Every distinct stack of the selection with the sum of its samples' values (a merged flamegraph). */
export interface ProfileStacks {
  kind: 'profile_stacks';
  selection: ProfileSelection;
  /**
   * Only samples linked to one of these spans (16 lower-case hex digits; Pyroscope's span
   * selector), by each sample's own link, else its `span_id` attribute (the pprof label of
   * Pyroscope's SDKs). Absent: every sample.
   */
  spanIds?: string[];
  /** Only these profiles (their profile_id; Pyroscope's profile id selector). Absent: every one. */
  profileIds?: string[];
  /** Which stacks and how much of each (Pyroscope's stack trace selector). */
  stackFilter?: StackFilter;
}

/**
 * Pyroscope's stack trace selector: `callSite` keeps the stacks whose root end begins with these
 * frames (root first); `keepLeaves` (its Go PGO form, which wins) cuts every stack to that many
 * leaf frames, merging the stacks that then agree.
 */
export interface StackFilter {
  callSite?: string[];
  keepLeaves?: number;
}

/** The selection's total value per `stepNs` slot from the range's start (the render timeline). */
export interface ProfileTimeline {
  kind: 'profile_timeline';
  selection: ProfileSelection;
  stepNs: bigint;
  /** One timeline per value of this label (output column l0; '' where absent). */
  groupBy?: string;
  /** Per slot, the sum of the profiles' totals (default) or their average. */
  aggregation?: 'sum' | 'avg';
}

/** The distinct profile types of the selection. */
export interface ProfileTypes {
  kind: 'profile_types';
  selection: ProfileSelection;
}

/** Label names present on the selection's profiles. */
export interface ProfileLabelNames {
  kind: 'profile_label_names';
  selection: ProfileSelection;
}

/** Distinct non-empty values of one label on the selection's profiles. */
export interface ProfileLabelValues {
  kind: 'profile_label_values';
  selection: ProfileSelection;
  label: string;
}

/**
 * Distinct label sets of the selection (Pyroscope's Series): each profile's values of `labels`,
 * at most `limit` sets.
 */
export interface ProfileSeries {
  kind: 'profile_series';
  selection: ProfileSelection;
  labels: string[];
  limit: number;
}

/**
 * The selection's profile totals per group and step (Pyroscope's SelectSeries): groups are the
 * distinct value tuples of `groupBy`; a profile at time t belongs to step k = ceil((t - start) /
 * stepNs), the step that ends at or after it, as Pyroscope slots them; each step's value is the
 * sum or the average of its profiles' totals.
 */
export interface ProfileSeriesPoints {
  kind: 'profile_series_points';
  selection: ProfileSelection;
  groupBy: string[];
  stepNs: bigint;
  aggregation: 'sum' | 'avg';
  /** Only the value of stacks under this call site (root first): each profile counts its matching samples. */
  callSite?: string[];
  /**
   * Per point, the profile with the largest value as its exemplar: any profile ('individual') or
   * only those linked to a span ('span'). Absent: no exemplars.
   */
  exemplars?: 'individual' | 'span';
}

/** How many profiles the caller has and the times of the oldest and newest, over every partition. */
export interface ProfileStats {
  kind: 'profile_stats';
}

/** The newest `limit` profiles of the selection, as summaries (the native Query IR's `profiles` view). */
export interface ProfileList {
  kind: 'profile_list';
  selection: ProfileSelection;
  limit: number;
}

/** Summaries of the profiles linked to a trace, in time order, at most `limit`. */
export interface ProfilesByTrace {
  kind: 'profiles_by_trace';
  /** 32 lower-case hex digits. */
  traceId: string;
  /** Absent: every partition is searched. */
  range: TimeRange | undefined;
  limit: number;
}
