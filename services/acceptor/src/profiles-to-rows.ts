import {
  KeyValueSchema,
  ProfilesDictionarySchema,
  create,
  type AnyValue,
  type ExportProfilesServiceRequest,
  type KeyValue,
  type Profile,
  type ProfileLocation,
  type ProfilesDictionary,
} from '@floe/proto';
import { emptyTyped, entryCount, serviceName, splitAttributes, type TypedAttributes } from './attributes.ts';
import { MAX_INT64, RESOURCE_ENTRIES_BUDGET, RowCollector, hex, isZero, type ConvertedRows } from './rows.ts';

export const PROFILE_RESOURCE_OVER_BUDGET = `profile's resource attributes, once per profile, pass the request's ${RESOURCE_ENTRIES_BUDGET} entries; send fewer profiles per resource or fewer resource attributes`;
import { AcceptedTimes } from './accepted-times.ts';

/**
 * Converts an OTLP profiles export (v1development, v1.10/v1.11 wire layout) into rows of the
 * profiles table (@floe/schema profiles.ts): one row per Profile, which in this layout has exactly
 * one sample type. The request-wide ProfilesDictionary is resolved here, so every row is
 * self-contained: frames are function names, attributes are keys and values, links are hex ids.
 *
 * `stacktraces_json` — the distinct stacks the profile's samples use, in order of first use, each
 * an array of frame names, LEAF FIRST (index 0 is the sampled frame, the last one the root, the
 * order of OTLP's Stack.location_indices). A flamegraph builder walks a stack from its end
 * (root) towards index 0 (leaf) and adds the sample's `value` to every node on the way; the leaf's
 * self value is the sample's value.
 *
 *     [["runtime.memmove", "bytes.Compare", "main.sort", "main.main"], ["main.main"], []]
 *
 * A frame is one line of a location: a location with inlined functions (several lines, callee
 * first) gives several frames, innermost first. A line's name is its function's name, else the
 * function's system name; a location with no named line (unsymbolized, e.g. native code seen by
 * an eBPF profiler) gives one frame named after its mapping's file name (as sent, e.g.
 * "/usr/lib/libc.so.6"), else its address as "0x…" hex, else "unknown". Stack index 0 (the zero
 * stack) is the empty stack `[]`. Stacks are deduplicated by their names.
 *
 * `samples_json` — the profile's samples in the order sent, each:
 *
 *     {
 *       "stack": 0,                        // index into stacktraces_json
 *       "value": 30,                       // the sample's weight: sum of values, or the number of
 *                                          //   timestamps when it has no values (each counts 1)
 *       "values": [10, 20],                // as sent, in sample_unit (may be [])
 *       "timestamps": ["1700000000000000000", …],  // when sent: unix ns as decimal strings
 *       "attributes": {"thread.name": "main", "cpu": 3},  // when sent: from the attribute_table
 *       "trace_id": "…32 hex…", "span_id": "…16 hex…"      // when the sample is linked to a span
 *     }
 *
 * Integers are JSON numbers while they fit 2^53, decimal strings beyond (int64 is exact either
 * way); attribute values are plain JSON (string, number, boolean, base64 for bytes, arrays and
 * objects for array and key-value list values, "NaN"/"Infinity" as strings). Attribute units
 * (KeyValueAndUnit.unit_strindex) are not kept.
 *
 * Columns: total_value is the sum of every sample's `value`. trace_id/span_id is the profile's
 * linked span: OTLP links per sample, so when samples link several spans the row names the one
 * carrying the largest share of the total (the first sent on a tie) and every sample keeps its
 * own link in samples_json. profile_type is Pyroscope's id
 * `<name>:<sample_type>:<sample_unit>:<period_type>:<period_unit>` built from the stored columns
 * (see profileName; values are not rescaled, so the id's type and unit are the row's). The profile's
 * attributes (attribute_indices) go to the profile_attr_* maps, the resource's to
 * resource_attr_*; service_name is the resource's service.name. A time_unix_nano of 0 becomes the
 * receive time.
 *
 * A profile that references a dictionary entry out of range (or a negative index), has malformed
 * ids, a time beyond int64, samples whose values and timestamps differ in length, or that resolves
 * to more than a row may hold (MAX_PROFILE_ROW_BYTES) is rejected (OTLP partial success,
 * rejected_profiles); the others of the request are stored.
 *
 * Resolving is where a small request becomes a large one (a 60 KB dictionary of stacks that
 * repeat a location of a thousand inlined lines resolved to 8 GB and ran the acceptor out of
 * memory), so the request's budget counts the work as it is done, not only the rows kept: every
 * distinct stack's names once, every row's JSON, also of a profile rejected half way. Past it,
 * the request's remaining profiles are rejected without being resolved.
 */

type KeyValueAndUnit = ProfilesDictionary['attributeTable'][number];

/**
 * Most bytes of stacktraces_json + samples_json and the profile's attribute values one row may
 * resolve to. Resolving the dictionary multiplies sizes (a stack of 2-byte indexes becomes a list
 * of names, an attribute sent once is held by every profile naming it), and the writer reads a row
 * only up to 64 MiB (read_json maximum_object_size): a bigger row would fail every commit it is
 * in, so such a profile is rejected here instead (partial success). A request may resolve to
 * at most MAX_REQUEST_RESOLVED_BYTES in all; later profiles beyond it are rejected.
 */
export const MAX_PROFILE_ROW_BYTES = 32 * 1024 * 1024;
export const MAX_REQUEST_RESOLVED_BYTES = 256 * 1024 * 1024;

class Rejected extends Error {}

/** Integers as JSON: numbers while exact, decimal strings beyond 2^53. */
const jsonInt = (v: bigint): number | string => (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString());

/** An attribute value as plain JSON (see the module comment). */
function jsonValue(v: AnyValue | undefined): unknown {
  const c = v?.value;
  if (!c || c.case === undefined) return null;
  switch (c.case) {
    case 'stringValue':
    case 'boolValue':
      return c.value;
    case 'intValue':
      return jsonInt(c.value);
    case 'doubleValue':
      return Number.isFinite(c.value) ? c.value : String(c.value);
    case 'bytesValue':
      return Buffer.from(c.value).toString('base64');
    case 'arrayValue':
      return c.value.values.map(jsonValue);
    case 'kvlistValue':
      return Object.fromEntries(c.value.values.map((kv) => [kv.key, jsonValue(kv.value)]));
    default:
      return null;
  }
}

/** A profile attribute as its typed map (profile_attr_*) takes it, and the bytes it adds to a row. */
interface ProfileAttribute {
  map: keyof TypedAttributes;
  key: string;
  value: string | number | boolean;
  bytes: number;
}

/** A stack's frame names as JSON text (an element of stacktraces_json) and its UTF-8 bytes. */
interface ResolvedStack {
  json: string;
  bytes: number;
}

/**
 * The request-wide dictionary with checked lookups: index 0 is always allowed (the zero value,
 * even when a table is empty); any other index must be inside its table, or the profile that
 * uses it is rejected. Resolved locations, stacks (or why a stack was rejected) and sample
 * attribute values are cached for the whole request, so a profile that uses one again costs
 * nothing more to resolve.
 */
class Dictionary {
  private readonly d: ProfilesDictionary;
  private readonly budget: Budget;
  private readonly locations = new Map<number, string[]>();
  private readonly stacks = new Map<number, ResolvedStack | Rejected>();
  private readonly sampleAttributes = new Map<number, readonly [string, unknown] | undefined>();
  private readonly profileAttributes = new Map<number, ProfileAttribute | undefined>();

  constructor(d: ProfilesDictionary | undefined, budget: Budget) {
    this.d = d ?? create(ProfilesDictionarySchema);
    this.budget = budget;
  }

  private entry<T>(table: readonly T[], index: number, tableName: string, field: string): T | undefined {
    if (index === 0) return table[0];
    if (!Number.isInteger(index) || index < 0 || index >= table.length) {
      throw new Rejected(`profile references ${field} ${index}, out of range of the ${tableName} (${table.length} entries)`);
    }
    return table[index];
  }

  string(index: number, field: string): string {
    return this.entry(this.d.stringTable, index, 'string_table', field) ?? '';
  }

  /** Frame names of a stack, leaf first, as JSON. */
  stack(index: number): ResolvedStack {
    const cached = this.stacks.get(index);
    if (cached instanceof Rejected) throw cached;
    if (cached) return cached;
    try {
      const resolved = this.resolveStack(index);
      this.stacks.set(index, resolved);
      return resolved;
    } catch (err) {
      if (err instanceof Rejected) this.stacks.set(index, err);
      throw err;
    }
  }

  private resolveStack(index: number): ResolvedStack {
    const stack = this.entry(this.d.stackTable, index, 'stack_table', 'stack_index');
    const budget = this.budget;
    const frames: string[] = [];
    let bytes = 0;
    try {
      for (const loc of stack?.locationIndices ?? []) {
        for (const name of this.location(loc)) {
          bytes += name.length + 3;
          if (bytes > budget.rowMax) throw new Rejected(`profile references stack ${index}, which resolves to more than ${budget.rowMax} bytes of frame names`);
          if (bytes > budget.stacksLeft) throw requestTooLarge(budget);
          frames.push(name);
        }
      }
    } finally {
      // Charged whether or not the stack fits: the work was done.
      budget.stacksLeft -= bytes;
    }
    const json = JSON.stringify(frames);
    return { json, bytes: Buffer.byteLength(json) };
  }

  /** Frame names of a location: one per named line (callee first), else its mapping or address. */
  private location(index: number): string[] {
    const cached = this.locations.get(index);
    if (cached) return cached;
    const loc = this.entry(this.d.locationTable, index, 'location_table', 'location_index');
    const frames: string[] = [];
    for (const line of loc?.lines ?? []) {
      const fn = this.entry(this.d.functionTable, line.functionIndex, 'function_table', 'function_index');
      if (!fn) continue;
      const name = this.string(fn.nameStrindex, 'function name_strindex');
      const systemName = this.string(fn.systemNameStrindex, 'function system_name_strindex');
      if (name || systemName) frames.push(name || systemName);
    }
    if (frames.length === 0) frames.push(this.unsymbolized(loc));
    this.locations.set(index, frames);
    return frames;
  }

  private unsymbolized(loc: ProfileLocation | undefined): string {
    const mapping = loc && loc.mappingIndex !== 0 ? this.entry(this.d.mappingTable, loc.mappingIndex, 'mapping_table', 'mapping_index') : undefined;
    const file = mapping ? this.string(mapping.filenameStrindex, 'mapping filename_strindex') : '';
    if (file) return file;
    if (loc && loc.address !== 0n) return `0x${loc.address.toString(16)}`;
    return 'unknown';
  }

  /** The linked span of a link index as hex ids, or undefined for index 0 and all-zero links. */
  link(index: number): { trace_id: string; span_id: string } | undefined {
    if (index === 0) return undefined;
    const link = this.entry(this.d.linkTable, index, 'link_table', 'link_index');
    if (!link || (isZero(link.traceId) && isZero(link.spanId))) return undefined;
    if (link.traceId.length !== 16 || isZero(link.traceId)) throw new Rejected(`profile references link ${index} with an invalid trace_id (must be 16 non-zero bytes)`);
    if (link.spanId.length !== 8 || isZero(link.spanId)) throw new Rejected(`profile references link ${index} with an invalid span_id (must be 8 non-zero bytes)`);
    return { trace_id: hex(link.traceId), span_id: hex(link.spanId) };
  }

  /** A profile attribute by index, or undefined when it has none. */
  profileAttribute(index: number): ProfileAttribute | undefined {
    if (this.profileAttributes.has(index)) return this.profileAttributes.get(index);
    const kv = this.attributes([index], 'attribute_indices')[0];
    let entry: ProfileAttribute | undefined;
    if (kv) {
      const typed = splitAttributes([kv]);
      for (const map of ['str', 'int', 'double', 'bool'] as const) {
        const value = typed[map][kv.key];
        if (value !== undefined) entry = { map, key: kv.key, value, bytes: Buffer.byteLength(kv.key) + Buffer.byteLength(String(value)) };
      }
    }
    this.profileAttributes.set(index, entry);
    return entry;
  }

  /** A sample attribute by index as its key and plain JSON value (jsonValue), or undefined when it has none. */
  sampleAttribute(index: number): readonly [string, unknown] | undefined {
    if (this.sampleAttributes.has(index)) return this.sampleAttributes.get(index);
    const kv = this.attributes([index], 'sample attribute_indices')[0];
    const entry = kv ? ([kv.key, jsonValue(kv.value)] as const) : undefined;
    this.sampleAttributes.set(index, entry);
    return entry;
  }

  /** Attributes by index as OTLP key-values (for the typed maps). */
  attributes(indices: readonly number[], field: string): KeyValue[] {
    const out: KeyValue[] = [];
    for (const i of indices) {
      const a: KeyValueAndUnit | undefined = this.entry(this.d.attributeTable, i, 'attribute_table', field);
      if (!a) continue;
      const key = this.string(a.keyStrindex, 'attribute key_strindex');
      this.string(a.unitStrindex, 'attribute unit_strindex');
      if (key === '' || !a.value || a.value.value.case === undefined) continue;
      out.push(create(KeyValueSchema, { key, value: a.value }));
    }
    return out;
  }
}

/**
 * The name part of a Pyroscope profile type id (reference: api-contracts.md §4.3): the names
 * Grafana's profile-metrics.json knows for the usual pprof types, else the period type, else the
 * sample type, else process_cpu (Pyroscope's fallback).
 */
export function profileName(sampleType: string, periodType: string): string {
  if (sampleType === 'off_cpu') return 'off_cpu';
  if (periodType === 'cpu' || sampleType === 'cpu') return 'process_cpu';
  if (periodType === 'space' || /^(alloc|inuse)_(objects|space)$/.test(sampleType)) return 'memory';
  if (periodType === 'wall' || sampleType === 'wall') return 'wall';
  if (periodType === 'goroutine' || sampleType === 'goroutine' || sampleType === 'goroutines') return 'goroutine';
  return periodType || sampleType || 'process_cpu';
}

/** Pyroscope's 5-part id; ':' inside a part would make it unparseable, so it becomes '_'. */
export function profileTypeId(sampleType: string, sampleUnit: string, periodType: string, periodUnit: string, name = profileName(sampleType, periodType)): string {
  return [name, sampleType, sampleUnit, periodType, periodUnit].map((p) => p.replaceAll(':', '_')).join(':');
}

interface SampleJson {
  stack: number;
  value: number | string;
  values: Array<number | string>;
  timestamps?: string[];
  attributes?: Record<string, unknown>;
  trace_id?: string;
  span_id?: string;
}

interface Budget {
  /** Bytes of rows' JSON the request may still resolve, of requestMax, counting rows rejected half way. */
  requestLeft: number;
  /** Bytes of distinct stacks' frame names the request may still resolve, of requestMax (a stack used by many profiles counts once). */
  stacksLeft: number;
  requestMax: number;
  /** Per-row cap (tests lower it), also of one stack's names. */
  rowMax: number;
}

const requestTooLarge = (budget: Budget) => new Rejected(`request resolves to more than ${budget.requestMax} bytes of stacks and samples; send fewer profiles per request`);

function profileRow(p: Profile, dict: Dictionary, receivedNs: bigint, budget: Budget, name: string | undefined) {
  if (budget.requestLeft <= 0) throw requestTooLarge(budget);
  if (p.profileId.length !== 0 && p.profileId.length !== 16) throw new Rejected('profile has an invalid profile_id (must be empty or 16 bytes)');
  if (p.timeUnixNano > MAX_INT64 || p.durationNano > MAX_INT64) throw new Rejected('profile has a time or duration beyond the int64 range of nanoseconds');
  const sampleType = dict.string(p.sampleType?.typeStrindex ?? 0, 'sample_type type_strindex');
  const sampleUnit = dict.string(p.sampleType?.unitStrindex ?? 0, 'sample_type unit_strindex');
  const periodType = dict.string(p.periodType?.typeStrindex ?? 0, 'period_type type_strindex');
  const periodUnit = dict.string(p.periodType?.unitStrindex ?? 0, 'period_type unit_strindex');

  /** Each distinct stack's JSON, in order of first use. */
  const stacks: string[] = [];
  const stackIds = new Map<string, number>();
  const stackOfIndex = new Map<number, number>();
  const samples: SampleJson[] = [];
  const linkWeight = new Map<string, { link: { trace_id: string; span_id: string }; weight: bigint }>();
  let total = 0n;
  let bytes = 0;
  const spend = (n: number) => {
    bytes += n;
    budget.requestLeft -= n;
    if (bytes > budget.rowMax) throw new Rejected(`profile resolves to more than ${budget.rowMax} bytes of stacks and samples; send it as several smaller profiles`);
    if (budget.requestLeft < 0) throw requestTooLarge(budget);
  };
  for (const s of p.samples) {
    if (s.values.length > 0 && s.timestampsUnixNano.length > 0 && s.values.length !== s.timestampsUnixNano.length) {
      throw new Rejected(`profile has a sample with ${s.values.length} values and ${s.timestampsUnixNano.length} timestamps (must be equal when both are sent)`);
    }
    // Resolved once per stack index: samples sharing a deep stack once cost its depth each, and
    // a request of many such samples held the event loop for seconds.
    let stack = stackOfIndex.get(s.stackIndex);
    if (stack === undefined) {
      const resolved = dict.stack(s.stackIndex);
      stack = stackIds.get(resolved.json);
      if (stack === undefined) {
        spend(resolved.bytes + 1);
        stack = stacks.push(resolved.json) - 1;
        stackIds.set(resolved.json, stack);
      }
      stackOfIndex.set(s.stackIndex, stack);
    }
    const value = s.values.length > 0 ? s.values.reduce((a, b) => a + b, 0n) : BigInt(s.timestampsUnixNano.length);
    total += value;
    const sample: SampleJson = { stack, value: jsonInt(value), values: s.values.map(jsonInt) };
    if (s.timestampsUnixNano.length > 0) sample.timestamps = s.timestampsUnixNano.map((t) => t.toString());
    if (s.attributeIndices.length > 0) {
      const entries: Array<readonly [string, unknown]> = [];
      for (const i of s.attributeIndices) {
        const entry = dict.sampleAttribute(i);
        if (entry) entries.push(entry);
      }
      if (entries.length > 0) sample.attributes = Object.fromEntries(entries);
    }
    const link = dict.link(s.linkIndex);
    if (link) {
      sample.trace_id = link.trace_id;
      sample.span_id = link.span_id;
      const k = link.trace_id + link.span_id;
      const w = linkWeight.get(k);
      if (w) w.weight += value;
      else linkWeight.set(k, { link, weight: value });
    }
    spend(Buffer.byteLength(JSON.stringify(sample)) + 1);
    samples.push(sample);
  }
  // Each profile's row holds its attributes' values whole: an attribute of the dictionary is sent
  // once however many profiles name it.
  const attrs = emptyTyped();
  for (const i of p.attributeIndices) {
    const a = dict.profileAttribute(i);
    if (!a) continue;
    spend(a.bytes);
    (attrs[a.map] as Record<string, unknown>)[a.key] = a.value;
  }
  // total_value is an Iceberg long: one row beyond it would fail its whole commit, for every tenant.
  if (total > MAX_INT64 || total < -MAX_INT64 - 1n) throw new Rejected('profile has a total sample value beyond the int64 range');
  // The span carrying the largest share; Map order makes the first sent win a tie.
  let linked: { link: { trace_id: string; span_id: string }; weight: bigint } | undefined;
  for (const w of linkWeight.values()) if (!linked || w.weight > linked.weight) linked = w;

  const time = profileTime(p, receivedNs);
  return {
    time,
    row: {
      time_unix_nano: time.toString(),
      profile_id: p.profileId.length === 0 || isZero(p.profileId) ? null : hex(p.profileId),
      profile_type: profileTypeId(sampleType, sampleUnit, periodType, periodUnit, name),
      sample_type: sampleType,
      sample_unit: sampleUnit,
      period_type: periodType,
      period_unit: periodUnit,
      period: jsonInt(p.period),
      duration_nano: jsonInt(p.durationNano),
      trace_id: linked?.link.trace_id ?? null,
      span_id: linked?.link.span_id ?? null,
      total_value: jsonInt(total),
      samples_json: JSON.stringify(samples),
      stacktraces_json: `[${stacks.join(',')}]`,
      profile_attr_str: attrs.str,
      profile_attr_int: attrs.int,
      profile_attr_double: attrs.double,
      profile_attr_bool: attrs.bool,
    },
  };
}

/** A profile's partition time: its own, else when it was received. */
const profileTime = (p: Profile, receivedNs: bigint): bigint => (p.timeUnixNano > 0n ? p.timeUnixNano : receivedNs);

export function profilesToRows(
  req: ExportProfilesServiceRequest,
  receivedNs: bigint = BigInt(Date.now()) * 1_000_000n,
  limits: { rowMax?: number; requestMax?: number } = {},
  times: AcceptedTimes = AcceptedTimes.ANY,
  /** Per resource, the profile name its sender gave (Pyroscope's `__name__`), over the one profileName derives; empty: derived. */
  names: readonly string[] = [],
): ConvertedRows {
  const out = new RowCollector({ times });
  const requestMax = limits.requestMax ?? MAX_REQUEST_RESOLVED_BYTES;
  const budget: Budget = { rowMax: limits.rowMax ?? MAX_PROFILE_ROW_BYTES, requestLeft: requestMax, stacksLeft: requestMax, requestMax };
  const dict = new Dictionary(req.dictionary, budget);
  // Each row holds its resource's maps (rows.ts RESOURCE_ENTRIES_BUDGET).
  let entriesLeft = RESOURCE_ENTRIES_BUDGET;
  for (const [r, rp] of req.resourceProfiles.entries()) {
    const name = names[r] || undefined;
    const resourceAttrs = rp.resource?.attributes ?? [];
    const res: TypedAttributes = splitAttributes(resourceAttrs);
    const entries = entryCount(res);
    const service = serviceName(resourceAttrs);
    for (const sp of rp.scopeProfiles) {
      const scopeName = sp.scope?.name ?? '';
      const scopeVersion = sp.scope?.version ?? '';
      for (const p of sp.profiles) {
        if (!out.admits(profileTime(p, receivedNs), 'profile time')) continue;
        if (entries > entriesLeft) {
          out.reject(PROFILE_RESOURCE_OVER_BUDGET);
          continue;
        }
        entriesLeft -= entries;
        let converted: ReturnType<typeof profileRow>;
        try {
          converted = profileRow(p, dict, receivedNs, budget, name);
        } catch (err) {
          if (!(err instanceof Rejected)) throw err;
          out.reject(err.message);
          continue;
        }
        out.add(converted.time, {
          ...converted.row,
          service_name: service,
          scope_name: scopeName,
          scope_version: scopeVersion,
          resource_attr_str: res.str,
          resource_attr_int: res.int,
          resource_attr_double: res.double,
          resource_attr_bool: res.bool,
        });
      }
    }
  }
  return out.result();
}
