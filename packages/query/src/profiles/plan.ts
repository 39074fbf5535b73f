import { FloeError } from '@floe/errors';
import type { TimeRange } from '../ir/logs.ts';
import { hintsOf } from '../sql/logs.ts';
import { SqlBuilder, intLiteral, literal, type PlannerTable, type PrintedSql } from '../sql/printer.ts';
import type { ProfileLabelNames, ProfileLabelValues, ProfileList, ProfileSelection, ProfileSeries, ProfileSeriesPoints, ProfileStacks, ProfileStats, ProfileTimeline, ProfileTypes, ProfilesByTrace } from './ir.ts';
import { NAME_LABEL, PROFILE_ATTRIBUTE_SCOPES, PROFILE_ATTRIBUTE_TYPES, PROFILE_TYPE_LABEL, SERVICE_LABEL, profileAttributeMap, profileLabelText, profileMatchSql } from './labels.ts';
import { profileTypeKey } from './profile-type.ts';

/**
 * Profile IR (ir.ts) → DuckDB SQL over the `profiles` view, which the querier binds to the
 * caller's own `<tenant>.<dataset>.profiles` files (the printer names that one unqualified table,
 * so a plan cannot reach another tenant's rows). Values are `$n` parameters, identifiers come from
 * the table definition the caller passes (@floe/schema's profilesTable), and the only literals are
 * the planner's own constants.
 *
 * Merging happens in DuckDB, not in the router: the stacks plan unnests every selected profile's
 * samples_json, looks each sample's stack up in its own stacktraces_json (services/acceptor
 * profiles-to-rows.ts documents both) and sums values per distinct stack, so only one row per
 * distinct stack crosses the wire however many profiles the window holds.
 */

export interface ProfilePlan extends PrintedSql {
  /** Partition-pruning hints (unix ns as decimal text); they never change the result. */
  hints: { start_ns?: string; end_ns?: string };
}

/** Output columns of the stacks plan: the stack as JSON text (an array of frame names, leaf first) and its summed value. */
export const STACK_COLUMNS = { stack: 'stack', value: 'value' } as const;

/** Output columns of a trace's profile summaries. */
export const TRACE_PROFILE_COLUMNS = [
  'profile_id',
  'profile_type',
  'sample_type',
  'sample_unit',
  'service_name',
  'time_unix_nano',
  'duration_nano',
  'trace_id',
  'span_id',
  'total_value',
] as const;

// What DuckDB's json_transform reads of the two JSON columns; values past 2^53 are stored as
// decimal strings, which the BIGINT transform reads as numbers too.
const STACKS_SHAPE = '[["VARCHAR"]]';
const SAMPLES_SHAPE = '{"stack":"BIGINT","value":"BIGINT"}';
const LINKED_SAMPLES_SHAPE = '{"value":"BIGINT","trace_id":"VARCHAR"}';
/** A sample's span: its OTLP link, or the `span_id` label Pyroscope's SDKs put on pprof samples (their span profiles). */
const SPAN_SAMPLES_SHAPE = '{"stack":"BIGINT","value":"BIGINT","span_id":"VARCHAR","attributes":{"span_id":"VARCHAR"}}';

/** A builder over the profiles table; planning another table's columns would be a router bug. */
function builder(table: PlannerTable): SqlBuilder {
  if (table.name !== 'profiles') throw new FloeError('internal', `profile plan against table ${JSON.stringify(table.name)}`);
  return new SqlBuilder(table);
}

function rangeSql(b: SqlBuilder, range: TimeRange): string[] {
  const t = b.column('time_unix_nano');
  return [`${t} >= ${b.bigint(range.startNs)}`, `${t} < ${b.bigint(range.endNs)}`];
}

/** Time range, profile type (bare column: the table sorts by it first), then label matchers. */
function selectionSql(b: SqlBuilder, sel: ProfileSelection): string {
  const conditions = rangeSql(b, sel.range);
  if (sel.profileType) {
    const key = profileTypeKey(sel.profileType);
    conditions.push('exact' in key ? `${b.column('profile_type')} = ${b.param(key.exact)}` : `starts_with(${b.column('profile_type')}, ${b.param(key.prefix)})`);
  }
  for (const m of sel.matchers) conditions.push(profileMatchSql(b, m));
  return conditions.join('\n    AND ');
}

const planned = (b: SqlBuilder, sql: string[], range: TimeRange | undefined): ProfilePlan => ({ sql: sql.join('\n'), params: b.params, hints: range ? hintsOf(range) : {} });

/** Most frames a call site may name (deeper stacks are rare; the SQL grows with it). */
export const MAX_CALL_SITE_FRAMES = 512;

/** A leaf-first stack expression begins, at its root end, with `callSite` (root first). */
function callSiteSql(b: SqlBuilder, stack: string, callSite: readonly string[]): string {
  if (callSite.length > MAX_CALL_SITE_FRAMES) throw new FloeError('bad_data', `a call site may name at most ${MAX_CALL_SITE_FRAMES} frames, got ${callSite.length}`);
  return `list_reverse(${stack})[1:${intLiteral(callSite.length)}] = [${callSite.map((f) => `CAST(${b.param(f)} AS VARCHAR)`).join(', ')}]`;
}

/** `profile_id IN (...)`, or nothing for no profile id selector. */
function profileIdSql(b: SqlBuilder, ids: readonly string[] | undefined): string[] {
  if (ids === undefined) return [];
  if (ids.length === 0) throw new FloeError('bad_data', 'the profile id selector names no profile');
  return [`${b.column('profile_id')} IN (${ids.map((id) => b.param(id)).join(', ')})`];
}

/** Rows of (stack, value): every distinct stack of the selection, its value summed over every sample of every profile. */
export function planProfileStacks(ir: ProfileStacks, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  const where = [selectionSql(b, ir.selection), ...profileIdSql(b, ir.profileIds)].join('\n    AND ');
  const spans = ir.spanIds;
  if (spans && spans.length === 0) throw new FloeError('bad_data', 'the span selector names no span');
  const bySpan = spans ? ` AND coalesce("s"."span_id", lower("s"."attributes"."span_id")) IN (${spans.map((id) => b.param(id)).join(', ')})` : '';
  const { callSite, keepLeaves } = ir.stackFilter ?? {};
  if (keepLeaves !== undefined && (!Number.isInteger(keepLeaves) || keepLeaves < 1)) throw new FloeError('bad_data', 'keep_locations must be a positive number of frames');
  const kept = keepLeaves !== undefined ? `"stack"[1:${intLiteral(keepLeaves)}]` : '"stack"';
  const underCallSite = keepLeaves === undefined && callSite && callSite.length > 0 ? ` AND ${callSiteSql(b, '"stack"', callSite)}` : '';
  return planned(
    b,
    [
      `SELECT CAST(to_json("kept") AS VARCHAR) AS "${STACK_COLUMNS.stack}", CAST(sum("value") AS BIGINT) AS "${STACK_COLUMNS.value}"`,
      `FROM (`,
      `  SELECT ${kept} AS "kept", "value"`,
      `  FROM (`,
      `    SELECT "stacks"["s"."stack" + 1] AS "stack", "s"."value" AS "value"`,
      `    FROM (`,
      `      SELECT json_transform(${b.column('stacktraces_json')}, ${literal(STACKS_SHAPE)}) AS "stacks",`,
      `        unnest(json_transform(${b.column('samples_json')}, ${literal(`[${spans ? SPAN_SAMPLES_SHAPE : SAMPLES_SHAPE}]`)})) AS "s"`,
      `      FROM ${b.tableName()}`,
      `      WHERE ${where}`,
      `    )`,
      `    WHERE TRUE${bySpan}`,
      `  )`,
      `  WHERE "stack" IS NOT NULL${underCallSite}`,
      `)`,
      `GROUP BY "kept"`,
    ],
    ir.selection.range,
  );
}

/** Rows of (slot, value): the selection's total value per step-wide slot counted from the range's start. */
export function planProfileTimeline(ir: ProfileTimeline, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  const where = selectionSql(b, ir.selection);
  const group = ir.groupBy === undefined ? [] : [`${profileLabelText(b, ir.groupBy)} AS "${labelColumn(0)}"`];
  const keys = [...(ir.groupBy === undefined ? [] : [`"${labelColumn(0)}"`]), '"slot"'].join(', ');
  const total = b.column('total_value');
  const value = ir.aggregation === 'avg' ? `CAST(avg(${total}) AS DOUBLE)` : `CAST(sum(${total}) AS BIGINT)`;
  return planned(
    b,
    [
      `SELECT ${[...group, `CAST((${b.column('time_unix_nano')} - ${b.bigint(ir.selection.range.startNs)}) // ${b.bigint(ir.stepNs)} AS BIGINT) AS "slot"`, `${value} AS "value"`].join(', ')}`,
      `FROM ${b.tableName()}`,
      `WHERE ${where}`,
      `GROUP BY ${keys}`,
      `ORDER BY ${keys}`,
    ],
    ir.selection.range,
  );
}

/** Rows of (id): the distinct five-part profile type ids of the selection. */
export function planProfileTypes(ir: ProfileTypes, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  const type = b.column('profile_type');
  return planned(b, [`SELECT DISTINCT ${type} AS "id"`, `FROM ${b.tableName()}`, `WHERE ${selectionSql(b, ir.selection)}`, `    AND coalesce(${type}, '') <> ''`, `ORDER BY "id"`], ir.selection.range);
}

/**
 * Rows of (name): __name__ and __profile_type__ (every profile has a type), service_name where
 * set, and every profile and resource attribute key. The resource's service.name is left out:
 * service_name names the same value.
 */
export function planProfileLabelNames(ir: ProfileLabelNames, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  const service = b.column('service_name');
  const lists = [
    `[${literal(NAME_LABEL)}, ${literal(PROFILE_TYPE_LABEL)}]`,
    `CASE WHEN coalesce(${service}, '') <> '' THEN [${literal(SERVICE_LABEL)}] ELSE []::VARCHAR[] END`,
    ...PROFILE_ATTRIBUTE_SCOPES.flatMap((scope) => PROFILE_ATTRIBUTE_TYPES.map((type) => `map_keys(${b.column(profileAttributeMap(scope, type))})`)),
  ];
  return planned(
    b,
    [
      `SELECT DISTINCT "name" FROM (`,
      `  SELECT unnest(list_concat(${lists.join(', ')})) AS "name"`,
      `  FROM ${b.tableName()}`,
      `  WHERE ${selectionSql(b, ir.selection)}`,
      `) WHERE "name" <> '' AND "name" <> ${literal('service.name')}`,
      `ORDER BY "name"`,
    ],
    ir.selection.range,
  );
}

/** Rows of (value): the label's distinct non-empty values on the selection, resolved as in matchers. */
export function planProfileLabelValues(ir: ProfileLabelValues, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  const value = profileLabelText(b, ir.label);
  return planned(
    b,
    [`SELECT DISTINCT "value" FROM (`, `  SELECT ${value} AS "value"`, `  FROM ${b.tableName()}`, `  WHERE ${selectionSql(b, ir.selection)}`, `) WHERE "value" <> ''`, `ORDER BY "value"`],
    ir.selection.range,
  );
}

/** Output column of the i-th label of a series or group plan: labels are user text, so never column names. */
export const labelColumn = (i: number) => `l${i}`;

/** Rows of (l0, l1, ...): the distinct value tuples of the labels on the selection ('' where absent), in value order. */
export function planProfileSeries(ir: ProfileSeries, table: PlannerTable): ProfilePlan {
  if (ir.labels.length === 0) throw new FloeError('internal', 'a series plan needs at least one label');
  const b = builder(table);
  const labels = ir.labels.map((label, i) => `${profileLabelText(b, label)} AS "${labelColumn(i)}"`);
  const columns = ir.labels.map((_, i) => `"${labelColumn(i)}"`).join(', ');
  return planned(
    b,
    [`SELECT DISTINCT ${labels.join(', ')}`, `FROM ${b.tableName()}`, `WHERE ${selectionSql(b, ir.selection)}`, `ORDER BY ${columns}`, `LIMIT ${intLiteral(ir.limit)}`],
    ir.selection.range,
  );
}

/** Output columns of planProfileSeriesPoints's exemplar (with IR `exemplars`): the point's largest profile. */
export const EXEMPLAR_COLUMNS = { profileId: 'ex_profile_id', value: 'ex_value', timeNs: 'ex_time', spanId: 'ex_span_id', traceId: 'ex_trace_id' } as const;

/**
 * Rows of (l0, ..., slot, value) per group-by value tuple and step: slot k covers the profiles in
 * (start + (k-1)·step, start + k·step], so it is stamped with its end as Pyroscope does; value is
 * the sum or the average of the profiles' values, as DOUBLE (the point type of the answer). A
 * profile's value is its total_value, or with a call site the sum of its samples under it (a
 * profile with none does not count). With exemplars, EXEMPLAR_COLUMNS name the largest profile
 * of the point that has an id (and is linked to a span, for 'span'; NULL when there is none).
 */
export function planProfileSeriesPoints(ir: ProfileSeriesPoints, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  const groups = ir.groupBy.map((label, i) => `${profileLabelText(b, label)} AS "${labelColumn(i)}"`);
  const groupColumns = ir.groupBy.map((_, i) => `"${labelColumn(i)}"`);
  const step = b.bigint(ir.stepNs);
  const slot = `CAST((${b.column('time_unix_nano')} - ${b.bigint(ir.selection.range.startNs)} + ${step} - 1) // ${step} AS BIGINT) AS "slot"`;
  const identity = [`${b.column('profile_id')} AS "pid"`, `${b.column('time_unix_nano')} AS "t"`, `${b.column('span_id')} AS "sid"`, `${b.column('trace_id')} AS "tid"`];
  const where = selectionSql(b, ir.selection);
  const callSite = ir.callSite && ir.callSite.length > 0 ? ir.callSite : undefined;
  // One row per profile: its group, slot, identity and value.
  const perProfile = callSite
    ? [
        `SELECT * EXCLUDE ("stacks", "s"), CAST(sum(CASE WHEN ${callSiteSql(b, '"stacks"["s"."stack" + 1]', callSite)} THEN "s"."value" ELSE 0 END) AS BIGINT) AS "pv"`,
        `FROM (`,
        `  SELECT ${[...groups, slot, ...identity].join(', ')}, json_transform(${b.column('stacktraces_json')}, ${literal(STACKS_SHAPE)}) AS "stacks",`,
        `    unnest(json_transform(${b.column('samples_json')}, ${literal(`[${SAMPLES_SHAPE}]`)})) AS "s"`,
        `  FROM ${b.tableName()}`,
        `  WHERE ${where}`,
        `)`,
        `GROUP BY ALL`,
        `HAVING "pv" <> 0`,
      ]
    : [`SELECT ${[...groups, slot, ...identity].join(', ')}, ${b.column('total_value')} AS "pv"`, `FROM ${b.tableName()}`, `WHERE ${where}`];
  const value = `CAST(${ir.aggregation === 'avg' ? 'avg("pv")' : 'sum("pv")'} AS DOUBLE) AS "value"`;
  const X = EXEMPLAR_COLUMNS;
  // An exemplar is there to be opened: only profiles with an id (and a span, for 'span') qualify.
  const onlyLinked = ` FILTER (WHERE "pid" IS NOT NULL${ir.exemplars === 'span' ? ` AND coalesce("sid", '') <> ''` : ''})`;
  // One arg_max over the whole identity, so every column comes from the same profile even on ties.
  const exemplar = ir.exemplars ? [`arg_max_null({'pid': "pid", 't': "t", 'sid': "sid", 'tid': "tid"}, "pv")${onlyLinked} AS "ex"`, `max("pv")${onlyLinked} AS "${X.value}"`] : [];
  const exemplarColumns = ir.exemplars
    ? [`"ex"."pid" AS "${X.profileId}"`, `"${X.value}"`, `"ex"."t" AS "${X.timeNs}"`, `"ex"."sid" AS "${X.spanId}"`, `"ex"."tid" AS "${X.traceId}"`]
    : [];
  const order = [...groupColumns, '"slot"'].join(', ');
  return planned(
    b,
    [
      `SELECT ${[...groupColumns, '"slot"', '"value"', ...exemplarColumns].join(', ')}`,
      `FROM (`,
      `  SELECT ${[...groupColumns, '"slot"', value, ...exemplar].join(', ')}`,
      `  FROM (`,
      ...perProfile.map((l) => `    ${l}`),
      `  )`,
      `  GROUP BY ${order}`,
      `)`,
      `ORDER BY ${order}`,
    ],
    ir.selection.range,
  );
}

/** One row of (profiles, oldest_ns, newest_ns) over every partition; the times are NULL without profiles. */
export function planProfileStats(_ir: ProfileStats, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  const t = b.column('time_unix_nano');
  return planned(b, [`SELECT CAST(count(*) AS BIGINT) AS "profiles", min(${t}) AS "oldest_ns", max(${t}) AS "newest_ns"`, `FROM ${b.tableName()}`], undefined);
}

/** Summaries (TRACE_PROFILE_COLUMNS) of the selection's newest `limit` profiles, newest first. */
export function planProfileList(ir: ProfileList, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  return planned(
    b,
    [
      `SELECT ${TRACE_PROFILE_COLUMNS.map((c) => b.column(c)).join(', ')}`,
      `FROM ${b.tableName()}`,
      `WHERE ${selectionSql(b, ir.selection)}`,
      `ORDER BY ${b.column('time_unix_nano')} DESC, ${b.column('profile_id')}`,
      `LIMIT ${intLiteral(ir.limit)}`,
    ],
    ir.selection.range,
  );
}

/**
 * Summaries (TRACE_PROFILE_COLUMNS plus linked_value) of the profiles linked to a trace. A row's
 * trace_id is only the span carrying the largest share of its samples; the others stay on the
 * samples in samples_json (profiles-to-rows.ts), so a profile whose samples name the trace at all
 * is found through the exact `"trace_id":"<hex>"` text JSON.stringify wrote there. linked_value is
 * the sum of the values of the samples linked to this trace.
 */
export function planProfilesByTrace(ir: ProfilesByTrace, table: PlannerTable): ProfilePlan {
  const b = builder(table);
  const traceId = b.param(ir.traceId);
  const samples = b.column('samples_json');
  const conditions = [`(${b.column('trace_id')} = ${traceId} OR contains(${samples}, ${b.param(`"trace_id":${JSON.stringify(ir.traceId)}`)}))`];
  if (ir.range) conditions.push(...rangeSql(b, ir.range));
  const linked = `list_sum(list_transform(list_filter(json_transform(${samples}, ${literal(`[${LINKED_SAMPLES_SHAPE}]`)}), lambda s: s.trace_id = ${traceId}), lambda s: s.value))`;
  return planned(
    b,
    [
      `SELECT ${TRACE_PROFILE_COLUMNS.map((c) => b.column(c)).join(', ')}, CAST(coalesce(${linked}, 0) AS BIGINT) AS "linked_value"`,
      `FROM ${b.tableName()}`,
      `WHERE ${conditions.join('\n  AND ')}`,
      `ORDER BY ${b.column('time_unix_nano')}, ${b.column('profile_id')}`,
      `LIMIT ${intLiteral(ir.limit)}`,
    ],
    ir.range,
  );
}
