import { FloeError } from '@floe/errors';
import { PyroExemplarType, PyroProfileFormat, PyroTimeSeriesAggregationType, type MessageInitShape, type MessageShape, type PyroQuerierService, type PyroSelectMergeStacktracesRequest, type PyroStackTraceSelector } from '@floe/proto';
import {
  DEFAULT_SERIES_LABELS,
  diffFlamebearer,
  labelSetsOf,
  mergedStacksOf,
  parseOptionalProfileSelector,
  parseProfileTypeRef,
  planProfileLabelNames,
  planProfileLabelValues,
  planProfileSeries,
  planProfileSeriesPoints,
  planProfileStacks,
  planProfileStats,
  planProfileTypes,
  profileTypeInfo,
  sameProfileType,
  seriesOf,
  singleFlamebearer,
  truncateStacks,
  type FlamebearerDocument,
  type StackFilter,
  type PlannerTable,
  type ProfilePlan,
  type ProfileSelection,
  type ProfileTypeRef,
  type TimeRange,
} from '@floe/query';
import type { Row } from '../logquery/results.ts';
import { MAX_TIME_NS, NS_PER_MS, clampTimeNs, maxNodesOf, nowNs } from './params.ts';
import { mergedPprof } from './pprof-export.ts';

/**
 * Pyroscope's querier.v1.QuerierService over Floe's profile plans (reference/api-contracts.md
 * §4.4): the same selectors, plans and flamegraph code as the legacy routes in plugin.ts, with
 * Connect's messages in and out. Times are unix milliseconds; a window is [start, end) as in
 * render, and an end of 0 (unset) is now.
 *
 * Decisions worth knowing: Series lists the values of DEFAULT_SERIES_LABELS (or the requested
 * label_names), not every attribute of a profile; SelectSeries's exemplars are one per point,
 * its largest profile (of those linked to a span, for EXEMPLAR_TYPE_SPAN), without labels; a
 * stack trace selector's Go PGO form cuts stacks in the merges and changes no series value;
 * SelectMergeStacktraces answers without a flamegraph when nothing matched, which Grafana shows
 * as "no data".
 */

export interface CallContext {
  /** Runs a plan on the caller's querier with what is left of the call's deadline. */
  run(plan: ProfilePlan): Promise<Row[]>;
  /** The caller's profiles table as the planner sees it (materialized label columns included). */
  table: PlannerTable;
}

type Methods = (typeof PyroQuerierService)['method'];
type Handler<M extends Methods[keyof Methods]> = (req: MessageShape<M['input']>, ctx: CallContext) => Promise<MessageInitShape<M['output']>>;
export type QuerierServiceImpl = { [K in keyof Methods]: Handler<Methods[K]> };

/** Methods of the service Floe does not serve: they answer Connect's unimplemented, naming why. */
export const UNIMPLEMENTED_METHODS: Readonly<Record<string, string>> = {
  SelectHeatmap: 'heatmaps are not available: use SelectSeries',
  AnalyzeQuery: 'query analysis is not available',
};

// Bounds of one request, so a single call cannot fan out into unbounded querier work.
const MAX_MATCHERS = 32;
const MAX_LABELS = 16;
const MAX_LABEL_SETS = 10_000;
/** Span ids of one SelectMergeSpanProfile (Grafana sends a span and its descendants). */
const MAX_SPANS = 1000;
/** Prometheus's ceiling on points per series; a finer step is widened to fit. */
const MAX_POINTS_PER_SERIES = 11_000n;
/** Profile ids of one profile id selector. */
const MAX_PROFILE_IDS = 1000;

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_PROFILE_PARAM' });

/** A stack trace selector as the plans take it; none when it selects everything. */
function stackFilterOf(selector: PyroStackTraceSelector | undefined): StackFilter | undefined {
  if (!selector) return undefined;
  if (selector.goPgo) return selector.goPgo.keepLocations > 0 ? { keepLeaves: selector.goPgo.keepLocations } : undefined;
  const callSite = selector.callSite.map((l) => l.name);
  return callSite.length > 0 ? { callSite } : undefined;
}

/**
 * A profile id selector: none when empty (a repeated field cannot say "absent"). Floe keeps ids
 * as 32 hex digits; Pyroscope's clients may write them as UUIDs, dashed and in capitals.
 */
function profileIdsOf(ids: readonly string[]): string[] | undefined {
  if (ids.length === 0) return undefined;
  if (ids.length > MAX_PROFILE_IDS) throw bad(`at most ${MAX_PROFILE_IDS} profile ids per request, got ${ids.length}`);
  return ids.map((id) => id.replace(/-/g, '').toLowerCase());
}

const EXEMPLARS: Partial<Record<PyroExemplarType, 'individual' | 'span'>> = { [PyroExemplarType.INDIVIDUAL]: 'individual', [PyroExemplarType.SPAN]: 'span' };

function rangeOf(start: bigint, end: bigint): TimeRange {
  const range = { startNs: clampTimeNs(start * NS_PER_MS), endNs: end === 0n ? nowNs() : clampTimeNs(end * NS_PER_MS) };
  if (range.endNs < range.startNs) throw bad('invalid time range: end must not be before start');
  return range;
}

/** One selection per matcher (a union, as Pyroscope reads them); none selects every profile. */
function selectionsOf(matchers: readonly string[], range: TimeRange): ProfileSelection[] {
  if (matchers.length > MAX_MATCHERS) throw bad(`at most ${MAX_MATCHERS} matchers per request, got ${matchers.length}`);
  if (matchers.length === 0) return [{ range, profileType: undefined, matchers: [] }];
  return matchers.map((m) => ({ range, ...parseOptionalProfileSelector(m) }));
}

function labelList(what: string, labels: readonly string[]): string[] {
  if (labels.length > MAX_LABELS) throw bad(`at most ${MAX_LABELS} ${what} per request, got ${labels.length}`);
  if (labels.some((l) => l === '')) throw bad(`${what} must not contain an empty label name`);
  return [...labels];
}

/** profile_typeID plus label_selector; a type in the selector too must be the same one. */
function typedSelection(profileTypeId: string, labelSelector: string, range: TimeRange): ProfileSelection & { profileType: ProfileTypeRef } {
  const profileType = parseProfileTypeRef(profileTypeId);
  const selector = parseOptionalProfileSelector(labelSelector);
  if (selector.profileType && !sameProfileType(selector.profileType, profileType)) throw bad('label_selector names a profile type other than profile_typeID');
  return { range, profileType, matchers: selector.matchers };
}

/** The union of a column over one plan per selection, sorted. */
async function unionOf(ctx: CallContext, selections: readonly ProfileSelection[], plan: (s: ProfileSelection) => ProfilePlan, column: string): Promise<string[]> {
  const results = await Promise.all(selections.map((s) => ctx.run(plan(s))));
  return [...new Set(results.flat().map((r) => String(r[column])))].sort();
}

/** The flamegraph formats this service answers; the tree, DOT and pprof encodings are not produced. */
function checkFormat(format: PyroProfileFormat): void {
  if (format !== PyroProfileFormat.UNSPECIFIED && format !== PyroProfileFormat.FLAMEGRAPH) {
    throw new FloeError('not_implemented', `format PROFILE_FORMAT_${PyroProfileFormat[format] ?? format} is not available: only PROFILE_FORMAT_FLAMEGRAPH`, { code: 'FLOE_ERR_PROFILE_PARAM' });
  }
}

function maxNodesOfRequest(maxNodes: bigint | undefined): number {
  if (maxNodes !== undefined && maxNodes < 0n) throw bad('max_nodes must not be negative');
  return maxNodesOf(maxNodes === undefined ? undefined : Number(maxNodes));
}

const levelsOf = (fb: FlamebearerDocument['flamebearer']) => fb.levels.map((values) => ({ values: values.map((v) => BigInt(v)) }));

/** A merged flamegraph as SelectMergeStacktraces and SelectMergeSpanProfile answer it; none when nothing matched. */
function flamegraphAnswer(stacks: ReturnType<typeof mergedStacksOf>, profileType: ProfileTypeRef, maxNodes: bigint | undefined) {
  if (stacks.length === 0) return {};
  const fb = singleFlamebearer(stacks, profileType, null, maxNodesOfRequest(maxNodes)).flamebearer;
  return { flamegraph: { names: fb.names, levels: levelsOf(fb), total: BigInt(fb.numTicks), maxSelf: BigInt(fb.maxSelf) } };
}

/** The merged stacks of one side of SelectMergeStacktraces or Diff. */
async function stacksOf(ctx: CallContext, req: PyroSelectMergeStacktracesRequest) {
  checkFormat(req.format);
  const selection = typedSelection(req.profileTypeID, req.labelSelector, rangeOf(req.start, req.end));
  const plan = planProfileStacks({ kind: 'profile_stacks', selection, profileIds: profileIdsOf(req.profileIdSelector), stackFilter: stackFilterOf(req.stackTraceSelector) }, ctx.table);
  const stacks = mergedStacksOf(await ctx.run(plan));
  return { stacks, profileType: selection.profileType };
}

/**
 * SelectSeries's step (seconds, a double) in nanoseconds, widened so no series exceeds
 * MAX_POINTS_PER_SERIES. A step longer than the window gives the same one point (at the window's
 * end), so it is held to the window, and to the room above it: a slot's end is an offset in the
 * window plus a step, which must stay an int64.
 */
function stepNsOf(stepSeconds: number, range: TimeRange): bigint {
  if (!Number.isFinite(stepSeconds) || stepSeconds <= 0) throw bad('step must be a positive number of seconds');
  const span = range.endNs - range.startNs;
  const room = MAX_TIME_NS - span;
  const longest = span < room ? span : room;
  const askedNs = stepSeconds * 1e9;
  const step = askedNs >= Number(longest) ? longest : BigInt(Math.round(askedNs));
  const least = (span + MAX_POINTS_PER_SERIES - 1n) / MAX_POINTS_PER_SERIES;
  const floor = least > 1n ? least : 1n;
  return step < floor ? floor : step;
}

export const querierService: QuerierServiceImpl = {
  async profileTypes(req, ctx) {
    const rows = await ctx.run(planProfileTypes({ kind: 'profile_types', selection: { range: rangeOf(req.start, req.end), profileType: undefined, matchers: [] } }, ctx.table));
    return { profileTypes: rows.map((r) => profileTypeInfo(String(r.id))) };
  },

  async labelNames(req, ctx) {
    const selections = selectionsOf(req.matchers, rangeOf(req.start, req.end));
    return { names: await unionOf(ctx, selections, (selection) => planProfileLabelNames({ kind: 'profile_label_names', selection }, ctx.table), 'name') };
  },

  async labelValues(req, ctx) {
    if (req.name === '') throw bad('missing name: LabelValues needs a non-empty label name');
    const selections = selectionsOf(req.matchers, rangeOf(req.start, req.end));
    return { names: await unionOf(ctx, selections, (selection) => planProfileLabelValues({ kind: 'profile_label_values', selection, label: req.name }, ctx.table), 'value') };
  },

  async series(req, ctx) {
    const labels = req.labelNames.length > 0 ? labelList('label_names', req.labelNames) : [...DEFAULT_SERIES_LABELS];
    const selections = selectionsOf(req.matchers, rangeOf(req.start, req.end));
    const results = await Promise.all(selections.map((selection) => ctx.run(planProfileSeries({ kind: 'profile_series', selection, labels, limit: MAX_LABEL_SETS }, ctx.table))));
    return { labelsSet: labelSetsOf(results.flat(), labels).map((set) => ({ labels: set })) };
  },

  async selectMergeStacktraces(req, ctx) {
    const { stacks, profileType } = await stacksOf(ctx, req);
    return flamegraphAnswer(stacks, profileType, req.maxNodes);
  },

  // Grafana's Tempo data source: the profile of a span (and its children, when it sends their ids).
  async selectMergeSpanProfile(req, ctx) {
    checkFormat(req.format);
    if (req.spanSelector.length > MAX_SPANS) throw bad(`at most ${MAX_SPANS} span ids per request, got ${req.spanSelector.length}`);
    const spanIds = req.spanSelector.map((id) => {
      const hex = id.toLowerCase();
      if (!/^[0-9a-f]{16}$/.test(hex)) throw bad(`invalid span id ${JSON.stringify(id.slice(0, 40))}: 16 hex digits expected`);
      return hex;
    });
    if (spanIds.length === 0) return {};
    const selection = typedSelection(req.profileTypeID, req.labelSelector, rangeOf(req.start, req.end));
    const stacks = mergedStacksOf(await ctx.run(planProfileStacks({ kind: 'profile_stacks', selection, spanIds }, ctx.table)));
    return flamegraphAnswer(stacks, selection.profileType, req.maxNodes);
  },

  // Grafana's "export as pprof" and profilecli: the merge as a pprof profile (pprof-export.ts).
  // Absent or 0, max_nodes leaves the download whole; otherwise its lightest subtrees become
  // "other" frames, as in the flamegraph.
  async selectMergeProfile(req, ctx) {
    const selection = typedSelection(req.profileTypeID, req.labelSelector, rangeOf(req.start, req.end));
    if (req.maxNodes !== undefined && req.maxNodes < 0n) throw bad('max_nodes must not be negative');
    const plan = planProfileStacks({ kind: 'profile_stacks', selection, profileIds: profileIdsOf(req.profileIdSelector), stackFilter: stackFilterOf(req.stackTraceSelector) }, ctx.table);
    const stacks = mergedStacksOf(await ctx.run(plan));
    const maxNodes = Number(req.maxNodes ?? 0n);
    return mergedPprof(maxNodes > 0 ? truncateStacks(stacks, maxNodes) : stacks, selection.profileType, selection.range);
  },

  async selectSeries(req, ctx) {
    const range = rangeOf(req.start, req.end);
    const selection = typedSelection(req.profileTypeID, req.labelSelector, range);
    const groupBy = labelList('group_by labels', req.groupBy);
    const stepNs = stepNsOf(req.step, range);
    if (req.limit !== undefined && req.limit < 0n) throw bad('limit must not be negative');
    const aggregation = req.aggregation === PyroTimeSeriesAggregationType.AVERAGE ? 'avg' : 'sum';
    // Go PGO's leaf cut merges stacks but keeps every sample, so only a call site changes a value.
    const callSite = stackFilterOf(req.stackTraceSelector)?.callSite;
    const exemplars = EXEMPLARS[req.exemplarType];
    const rows = await ctx.run(planProfileSeriesPoints({ kind: 'profile_series_points', selection, groupBy, stepNs, aggregation, callSite, exemplars }, ctx.table));
    const series = seriesOf(rows, groupBy, range, stepNs, req.limit === undefined ? undefined : Number(req.limit));
    return {
      series: series.map((s) => ({
        labels: s.labels,
        points: s.points.map((p) => ({
          value: p.value,
          timestamp: BigInt(p.timestampMs),
          exemplars: p.exemplar ? [{ timestamp: BigInt(p.exemplar.timestampMs), profileId: p.exemplar.profileId, spanId: p.exemplar.spanId, traceId: p.exemplar.traceId, value: p.exemplar.value, labels: [] }] : [],
        })),
      })),
    };
  },

  async diff(req, ctx) {
    if (!req.left || !req.right) throw bad('Diff needs both left and right');
    const [left, right] = await Promise.all([stacksOf(ctx, req.left), stacksOf(ctx, req.right)]);
    if (!sameProfileType(left.profileType, right.profileType)) throw bad('left and right must select the same profile type');
    const doc = diffFlamebearer(left.stacks, right.stacks, left.profileType, maxNodesOfRequest(req.left.maxNodes ?? req.right.maxNodes));
    const fb = doc.flamebearer;
    return {
      flamegraph: { names: fb.names, levels: levelsOf(fb), total: BigInt(fb.numTicks), maxSelf: BigInt(fb.maxSelf), leftTicks: BigInt(doc.leftTicks ?? 0), rightTicks: BigInt(doc.rightTicks ?? 0) },
    };
  },

  async getProfileStats(_req, ctx) {
    const [row] = await ctx.run(planProfileStats({ kind: 'profile_stats' }, ctx.table));
    const ms = (ns: unknown) => (ns === null || ns === undefined ? 0n : BigInt(ns as bigint) / NS_PER_MS);
    return { dataIngested: Number(row?.profiles ?? 0) > 0, oldestProfileTime: ms(row?.oldest_ns), newestProfileTime: ms(row?.newest_ns) };
  },
};
