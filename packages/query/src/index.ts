/**
 * @floe/query: Floe's query languages, in four stages that never do I/O (STYLE habit 4).
 *
 * 1. parse: LogQL text → a typed AST with source positions, through the official
 *    `@grafana/lezer-logql` grammar (logql/parse.ts). Dotted label names are masked before
 *    parsing and read back by position. Syntax errors are FloeError bad_data whose message says
 *    `parse error at line L, col C: <reason>` and whose `position` carries the same.
 * 2. lower: AST → Query IR (logql/lower.ts). Constructs that parse but cannot run yet are
 *    FloeError not_implemented (501) with their position.
 * 3. plan + print: IR → DuckDB SQL over the caller's `logs` view (sql/), with every value a `$n`
 *    parameter, identifiers quoted and checked against the table definition the caller passes
 *    (@floe/schema's logsTable: a same-layer package this one does not import), and label
 *    resolution exactly as spec 1 "Log label resolution" states it (sql/log-labels.ts).
 *
 * The Query IR (ir/) is storage-neutral: labels by name, times as unix-nanosecond bigints, ranges
 * half-open. The querier runs the SQL; this package never talks to DuckDB or Parquet.
 */
export type {
  BinaryExpr,
  BinaryOp,
  CompareOp,
  Expr,
  Grouping,
  LabelExtraction,
  LabelFilterExpr,
  LabelMatcher,
  LabelReplace,
  LineFilter,
  LineFilterOp,
  LogExpr,
  MatchOp,
  MetricExpr,
  NumberLiteral,
  ParserKind,
  RangeAggregation,
  RangeOp,
  Selector,
  Span,
  Stage,
  Unwrap,
  VectorAggregation,
  VectorLiteral,
  VectorMatching,
  VectorOp,
} from './logql/ast.ts';
export { isLogExpr } from './logql/ast.ts';
export { parseLogQL, MAX_QUERY_LENGTH } from './logql/parse.ts';
export { formatLogQL } from './logql/format.ts';
export { LogPatternMiner, PATTERN_WILDCARD } from './logql/patterns.ts';
export type { LogPattern, PatternOptions } from './logql/patterns.ts';
export { logDeletionOfRequest, lowerLogDeletion, lowerLogQuery, lowerStreamSelector, retentionStreamProblems } from './logql/lower.ts';
export type { LogQueryOptions } from './logql/lower.ts';
export { parseDuration } from './logql/durations.ts';
export { anchoredRe2, cachedAnchoredRe2, cachedRe2Search, re2RegExp, re2Search, re2Source, type Re2Matcher, type Re2Options, type Re2Searcher } from './re2.ts';
export type {
  Direction,
  LabelMatch,
  LabelMatchOp,
  LabelNames,
  LabelPredicate,
  LabelValues,
  LinePredicate,
  LogDeletion,
  LogIR,
  LogSelect,
  LogTable,
  NumericOp,
  RowFilter,
  SeriesSelect,
  TimeRange,
} from './ir/logs.ts';
export { planLogDeletion, planLogSelect, planPatternLines, planLabelNames, planLabelValues, planSeries, LOG_COLUMNS } from './sql/logs.ts';
export type { FileOrder, LogSelectOptions, PlannedQuery } from './sql/logs.ts';
export { LABEL_COLUMNS, STREAM_LABELS, ATTRIBUTE_SCOPES, ATTRIBUTE_TYPES, attributeMap } from './sql/log-labels.ts';
export type { PlannerTable, PrintedSql, SqlParam } from './sql/printer.ts';
export { filterDemand } from './sql/query-demand.ts';
export type {
  AggregateNode,
  AggregateOp,
  BinaryNode,
  LabelReplaceNode,
  LogSample,
  MetricNode,
  MetricQuery,
  RangeFn,
  RangeNode,
  SampleWindows,
  StepGrid,
} from './ir/log-metrics.ts';
export { gridSteps, sampleWindows } from './ir/log-metrics.ts';
export { lowerMetricQuery, volumeQuery } from './logql/lower-metric.ts';
export { evaluateMetricQuery } from './logql/evaluate.ts';
export type { MetricResult } from './logql/evaluate.ts';
export { planLogSample } from './sql/log-metrics.ts';
// Trace search and tag discovery (spec 1, "Trace query API"): the TraceQL subset → IR → SQL over `traces`.
export type { FoundTrace, SpanCondition, SpanField, SpanValue, TraceSearch, TraceTagNames, TraceTagValues } from './ir/traces.ts';
export { ROOT_NOT_RECEIVED, TRACE_SEARCH_DEFAULTS } from './ir/traces.ts';
export { parseTraceQL, KIND_KEYWORDS, STATUS_KEYWORDS, MAX_TRACEQL_LENGTH } from './traceql/parse.ts';
export { legacyTagConditions } from './traceql/legacy-tags.ts';
export { tempoSearchOf, tempoSearchResponse } from './traceql/tempo-search.ts';
export { planTraceSearch, planTraceTagNames, planTraceTagValues, traceSearchResults } from './sql/traces.ts';
// PromQL (issue 6): parse → evaluate over fetched series (promql/), metric reads planned as SQL (sql/metrics.ts).
export type {
  Expr as PromExpr,
  VectorSelector as PromVectorSelector,
  LabelMatcher as PromLabelMatcher,
} from './promql/ast.ts';
export { PROM_MAX_TIME_MS, PROM_MIN_TIME_MS, parsePromQL, parsePromDuration, vectorSelectors as promSelectors } from './promql/parse.ts';
export { evalInstant, evalRange, selectorWindows } from './promql/eval.ts';
export { checkRangeQueryType, checkRangeSteps, checkSubquerySteps as checkPromSubquerySteps, evalTimedOut as promEvalTimedOut, leastSubquerySteps as promSubquerySteps, rangeStepCount as promRangeStepCount, tooManySamples } from './promql/query-limits.ts';
export { FreshSampleIndex, withFreshSamples, type FreshLayers, type FreshSample } from './promql/fresh-samples.ts';
export { STALE_NAN, isStaleNaN } from './promql/staleness.ts';
export { Annotations as PromAnnotations, type AnnotationSnapshot as PromAnnotationSnapshot } from './promql/annotations.ts';
export type { EvalOptions, InstantResult, RangeResult, RawSeries, SeriesPoints, SeriesSource, SelectorWindow } from './promql/eval.ts';
export { formatFloat as formatPromFloat } from './promql/labels.ts';
export { labelsKey as promLabelsKey, makeLabels as makePromLabels, omitLabels as omitPromLabels, type Labels as PromLabels } from './labels.ts';
export { formatPromQL } from './promql/format.ts';
export {
  buildPlainSeries,
  plainSeriesLabels,
  buildPromSeries,
  buildTargetInfo,
  TARGET_INFO,
  mapEntries,
  matchLabels,
  promFamily,
  selectsTargetInfo,
  selectorDemand,
  seriesLabelSets,
  storedNamesFor,
  type CatalogEntry,
  type PointRow,
  type SeriesPointsRow,
  type PointLists,
  type TargetInfoRow,
  type PromFamily,
  type PromType,
  type SeriesRow,
} from './promql/series.ts';
export type { MetricCatalog, MetricExemplars, MetricIR, MetricLabelMatch, MetricPoints, MetricSelect, MetricSeriesIds, MetricSeriesLabels, MetricSeriesList, MetricSeriesPoints, MetricTargetInfo, MetricWindow } from './ir/metrics.ts';
export {
  planMetricCatalog,
  planMetricExemplars,
  planMetricPoints,
  planMetricSeries,
  planMetricSeriesIds,
  planMetricSeriesLabels,
  planMetricSeriesPoints,
  PER_FILE_COLUMN,
  PER_FILE_HOUR_NS,
  planMetricTargetInfo,
  planSeriesDeletion,
  REMOTE_WRITE_SCOPE,
  seriesIdFromHalves,
} from './sql/metrics.ts';
export type { SeriesDeletion } from './sql/metrics.ts';
export type { DetectedFieldValues, DetectedFields, DetectedLabels, IndexStats } from './ir/log-discovery.ts';
export { planDetectedFieldValues, planDetectedFields, planDetectedLabels, planIndexStats, detectedFieldsOf } from './sql/log-discovery.ts';
export type { FieldType } from './sql/log-discovery.ts';
// Profiles (spec 1, "Profile query API"): Pyroscope-style selectors → profile IR → SQL over the
// `profiles` view (profiles/plan.ts, stacks merged in DuckDB) → flamebearer documents built from
// the rows (profiles/flamebearer.ts), plus the trace → profile summaries.
export { parseOptionalProfileSelector, parseProfileSelector, parseTypedProfileSelector, type ProfileSelector } from './profiles/selector.ts';
export { parseProfileTypeRef, profileTypeInfo, sameProfileType, type ProfileTypeInfo, type ProfileTypeRef } from './profiles/profile-type.ts';
export type { ProfileLabelNames, ProfileLabelValues, ProfileList, ProfileSelection, ProfileSeries, ProfileSeriesPoints, ProfileStacks, ProfileStats, ProfileTimeline, ProfileTypes, ProfilesByTrace, StackFilter } from './profiles/ir.ts';
export {
  planProfileLabelNames,
  planProfileLabelValues,
  planProfileList,
  planProfileSeries,
  planProfileSeriesPoints,
  planProfileStacks,
  planProfileStats,
  planProfileTimeline,
  planProfileTypes,
  planProfilesByTrace,
  type ProfilePlan,
} from './profiles/plan.ts';
export { DEFAULT_SERIES_LABELS, labelSetsOf, seriesOf, type LabelPair as ProfileLabelPair, type ProfileSeriesData, type SeriesExemplar as ProfileSeriesExemplar, type SeriesPoint as ProfileSeriesPoint } from './profiles/series.ts';
export { DEFAULT_MAX_NODES, MAX_MAX_NODES, buildTimeline, diffFlamebearer, mergedStacksOf, singleFlamebearer, timelineStepNs, type FlamebearerDocument, type Timeline } from './profiles/flamebearer.ts';
export { truncateStacks, type MergedStack } from './profiles/flamegraph.ts';
export { dotGraph } from './profiles/dot.ts';
export { listedProfileSummaryOf, profileSummaryOf, type ListedProfileSummary, type ProfileSummary } from './profiles/summary.ts';

// The ruler's rule files (Prometheus and Loki rule groups) and alert templates.
export {
  MAX_RULE_TEXT_BYTES,
  MAX_RULES_PER_GROUP,
  parseRuleFile,
  parseRuleGroup,
  ruleGroupFromJson,
  ruleGroupToJson,
  ruleGroupToYaml,
  ruleNamespacesToYaml,
  type AlertingRule,
  type RecordingRule,
  type Rule,
  type RuleCheckOptions,
  type RuleGroup,
  type RuleGroupJson,
  type RuleLanguage as RuleFileLanguage,
} from './rules/rule-groups.ts';
export { expandAlertTemplate, parseAlertTemplate, MAX_TEMPLATE_QUERIES, type AlertTemplate, type AlertTemplateData, type TemplateQuery, type TemplateSample } from './promql/alert-template.ts';
