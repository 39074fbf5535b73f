import { FloeError } from '@floe/errors';
import {
  PromWriteRequestSchema,
  RwV2RequestSchema,
  fromBinary,
  type PromHistogram,
  type PromWriteRequest,
  type RwV2Histogram,
  type RwV2Request,
} from '@floe/proto';
import { emptyTyped, type TypedAttributes } from './attributes.ts';
import { FLAG_NO_RECORDED_VALUE, jsonFloat, jsonInt64, type ConvertedMetrics } from './metrics-to-rows.ts';
import { BytesLru, ColumnBatchBuilder, viewOf, type BytesHit, type Leaf, type RowTemplate } from '@floe/storage';
import { readPlainWriteRequest, WireDecodeError, type WireSeries, type WireWriteRequest } from './remote-write-wire.ts';
import { MAX_INT64, RowCollector, type RefusalKind } from './rows.ts';
import { AcceptedTimes } from './accepted-times.ts';
import { seriesId, seriesPrefix, seriesResource } from './series-id.ts';
import type { SeriesGate } from './series-limit.ts';
import { REMOTE_WRITE_SCOPE, isStaleNaN } from '@floe/query';
import { tableDef } from '@floe/schema';

/**
 * Prometheus remote write (protocol 1.0 and 2.0, reference/api-contracts.md §6) converted to
 * OpenTelemetry metrics in the `metrics` and `metric_exemplars` tables (spec 1, Ingest rules
 * 2-3). The conversion keeps every Prometheus series recoverable exactly, because PromQL over
 * remote-written data has to agree with Prometheus (issue 6):
 *
 * - Rows carry `scope_name` = REMOTE_WRITE_SCOPE. That marks them as Prometheus series: their
 *   `metric_name` is the `__name__` label as sent, and `point_attr_str` holds every other label
 *   verbatim (job and instance included; labels with an empty value are dropped, as Prometheus
 *   treats them as absent). So the Prometheus series is `{__name__=metric_name} ∪ point_attr_str`,
 *   with none of the OTLP→Prometheus name translation (suffixes, dots) that OTLP metrics need.
 * - The resource follows OpenTelemetry's Prometheus compatibility rules for the target:
 *   `service.name` = job, `service.instance.id` = instance (so `service_name` is the job), both
 *   the label values unchanged; translating them back gives the same job and instance labels.
 * - Plain samples are `gauge`, or a `sum` (monotonic, cumulative) when the metric is a counter:
 *   its metadata says COUNTER (v1: the request's metadata, or metadata an earlier request of the
 *   same tenant and dataset sent, since Prometheus sends v1 metadata in requests of their own;
 *   v2: the series' own metadata), or the parts of a classic histogram or summary (`_bucket`,
 *   `_count`, `_sum` of a HISTOGRAM or SUMMARY family). Without metadata a `_total` name, or a
 *   `_bucket` series with an `le` label, is a counter. The family's Prometheus type, when known,
 *   is kept as the scope attribute `prometheus.type`, its HELP and UNIT as description and unit.
 * - Native histograms become `exponential_histogram` rows: schema → scale (Prometheus bucket
 *   index i covers (base^(i-1), base^i], OTLP's index k covers (base^k, base^(k+1)], so k = i - 1),
 *   spans and deltas (integer histograms) or absolute counts (float histograms) → offset and dense
 *   bucket counts, zero bucket as is, reset hint GAUGE → temporality `unspecified` (otherwise
 *   `cumulative`). Custom-bucket histograms (schema -53), and float histograms whose counts are
 *   not whole numbers, have no OpenTelemetry form: they are dropped with a warning and the rest
 *   of the request is stored. So are exemplars without a usable timestamp (Prometheus's own
 *   receiver never fails a request over an exemplar either).
 * - The staleness marker (the NaN with bits 0x7ff0000000000002; in a native histogram's sum) is
 *   stored with `flags` = 1, OTLP's no-recorded-value, and the value NaN.
 * - v2 start timestamps (per sample or histogram; the older per-series created_timestamp, field
 *   6, for senders up to Prometheus 3.8) → `start_unix_nano`.
 * - Exemplars → `metric_exemplars`: their labels verbatim as `filtered_attr_str`, and a
 *   `trace_id` / `span_id` label holding a valid hex id also fills the column of that name.
 *
 * A series that cannot be stored (no `__name__`, empty or repeated label names, a sample time
 * outside the int64 nanosecond range, broken histogram buckets) is a conversion error: the rest
 * of the request is stored and the request answered 400, as Prometheus's own receiver does.
 */


export type RemoteWriteVersion = 1 | 2;

const V1_PROTO = 'prometheus.WriteRequest';
const V2_PROTO = 'io.prometheus.write.v2.Request';

/** The protocol version a Content-Type names (reference §6.1); anything else is 415. */
export function remoteWriteVersion(contentType: string | undefined): RemoteWriteVersion {
  // Prometheus's receiver reads a request without Content-Type as protocol 1.0.
  if (contentType === undefined || contentType.trim() === '') return 1;
  const [type, ...params] = contentType.split(';');
  if (type!.trim().toLowerCase() !== 'application/x-protobuf') {
    throw new FloeError('unsupported_media_type', `unsupported Content-Type ${JSON.stringify(contentType)}: remote write takes application/x-protobuf`, {
      code: 'FLOE_ERR_INGEST_CONTENT_TYPE',
    });
  }
  let proto = V1_PROTO;
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq < 0) continue;
    if (p.slice(0, eq).trim().toLowerCase() === 'proto') proto = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
  }
  if (proto === V1_PROTO) return 1;
  if (proto === V2_PROTO) return 2;
  throw new FloeError('unsupported_media_type', `unsupported remote write proto ${JSON.stringify(proto)}: use ${V1_PROTO} or ${V2_PROTO}`, {
    code: 'FLOE_ERR_INGEST_CONTENT_TYPE',
  });
}

/** Remote write bodies are snappy block-compressed; no Content-Encoding means the same. */
export function checkRemoteWriteEncoding(contentEncoding: string | undefined): void {
  const enc = (contentEncoding ?? '').trim().toLowerCase();
  if (enc !== '' && enc !== 'snappy') {
    throw new FloeError('unsupported_media_type', `unsupported Content-Encoding ${JSON.stringify(contentEncoding)}: remote write bodies are snappy-compressed`, {
      code: 'FLOE_ERR_INGEST_ENCODING',
    });
  }
}

const decodeError = (typeName: string, why: string) =>
  new FloeError('bad_data', `body is not a valid ${typeName} protobuf message: ${why}`, { code: 'FLOE_ERR_INGEST_DECODE' });

export function decodeRemoteWriteV1(body: Uint8Array): PromWriteRequest {
  try {
    return fromBinary(PromWriteRequestSchema, body);
  } catch (err) {
    throw decodeError(V1_PROTO, (err as Error).message);
  }
}

export function decodeRemoteWriteV2(body: Uint8Array): RwV2Request {
  let req: RwV2Request;
  try {
    req = fromBinary(RwV2RequestSchema, body);
  } catch (err) {
    throw decodeError(V2_PROTO, (err as Error).message);
  }
  // Structural rules of the 2.0 spec: every reference must resolve, or nothing is trustworthy.
  const n = req.symbols.length;
  if (n > 0 && req.symbols[0] !== '') throw decodeError(V2_PROTO, 'symbols[0] must be the empty string');
  const check = (refs: readonly number[], what: string) => {
    if (refs.length % 2 !== 0) throw decodeError(V2_PROTO, `${what} has an odd number of label references`);
    for (const r of refs) if (r >= n) throw decodeError(V2_PROTO, `${what} references symbol ${r} of ${n}`);
  };
  for (const ts of req.timeseries) {
    check(ts.labelsRefs, 'a series');
    for (const e of ts.exemplars) check(e.labelsRefs, 'an exemplar');
    const m = ts.metadata;
    if (m && (m.helpRef >= n || m.unitRef >= n)) throw decodeError(V2_PROTO, `series metadata references a symbol beyond ${n}`);
  }
  return req;
}

// ── metadata ────────────────────────────────────────────────────────────────────────────────

/** Prometheus metric types, indexed by the wire enum (v1 MetricMetadata.MetricType = v2 Metadata.MetricType). */
const PROM_TYPES = ['unknown', 'counter', 'gauge', 'histogram', 'gaugehistogram', 'summary', 'info', 'stateset'] as const;
export type PromType = (typeof PROM_TYPES)[number];
const promType = (wire: number): PromType => PROM_TYPES[wire] ?? 'unknown';

export interface PromMetadata {
  type: PromType;
  help: string;
  unit: string;
}

/**
 * Family metadata seen in earlier v1 requests, per tenant and dataset: Prometheus sends v1
 * metadata in requests of their own (every `metadata_config.send_interval`), so a sample's
 * family type is often known only from an earlier request. Bounded in entries and in bytes (the
 * help text has no limit of its own: entries of megabytes each held gigabytes across requests);
 * the oldest entries go first. Best effort by nature (per process, empty after a restart), which
 * only affects how a series is typed, never its name, labels or values.
 */
export class RemoteWriteMetadata {
  readonly #entries = new Map<string, { meta: PromMetadata; bytes: number }>();
  readonly #max: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxEntries = 100_000, maxBytes = 32 * 1024 * 1024) {
    this.#max = maxEntries;
    this.#maxBytes = maxBytes;
  }

  get(scope: string, family: string): PromMetadata | undefined {
    return this.#entries.get(`${scope}\u0000${family}`)?.meta;
  }

  set(scope: string, family: string, meta: PromMetadata): void {
    const key = `${scope}\u0000${family}`;
    const bytes = 2 * (key.length + meta.help.length + meta.unit.length);
    this.#drop(key);
    // An entry larger than the whole cache would only empty it.
    if (bytes > this.#maxBytes) return;
    this.#entries.set(key, { meta, bytes });
    this.#bytes += bytes;
    while (this.#entries.size > this.#max || this.#bytes > this.#maxBytes) this.#drop(this.#entries.keys().next().value!);
  }

  #drop(key: string): void {
    const old = this.#entries.get(key);
    if (!old) return;
    this.#entries.delete(key);
    this.#bytes -= old.bytes;
  }

  get size(): number {
    return this.#entries.size;
  }
}

const FAMILY_SUFFIXES = ['_total', '_bucket', '_count', '_sum', '_created', '_gcount', '_gsum', '_info'];

/** The family a series name belongs to, in `lookup`: the name itself, or without a known suffix. */
function familyMetadata(name: string, lookup: (family: string) => PromMetadata | undefined): PromMetadata | undefined {
  const exact = lookup(name);
  if (exact) return exact;
  for (const s of FAMILY_SUFFIXES) if (name.endsWith(s)) return lookup(name.slice(0, -s.length));
  return undefined;
}

interface SampleKind {
  type: 'gauge' | 'sum';
  temporality: string | null;
  isMonotonic: boolean | null;
}

const GAUGE: SampleKind = { type: 'gauge', temporality: null, isMonotonic: null };
const COUNTER: SampleKind = { type: 'sum', temporality: 'cumulative', isMonotonic: true };

/** How a series of plain samples is typed (the module comment has the rules). */
export function sampleKind(name: string, labels: Readonly<Record<string, string>>, meta: PromMetadata | undefined): SampleKind {
  const part = name.endsWith('_bucket') || name.endsWith('_count') || name.endsWith('_sum');
  switch (meta?.type) {
    case 'counter':
      return COUNTER;
    case 'histogram':
    case 'summary':
      return part ? COUNTER : GAUGE;
    case 'gauge':
    case 'gaugehistogram':
    case 'info':
    case 'stateset':
      return GAUGE;
    default:
      return name.endsWith('_total') || (name.endsWith('_bucket') && 'le' in labels) ? COUNTER : GAUGE;
  }
}

// ── conversion ──────────────────────────────────────────────────────────────────────────────

export interface ConvertedRemoteWrite extends ConvertedMetrics {
  /** Float samples, native histograms and exemplars stored (v2's X-Prometheus-Remote-Write-*-Written). */
  samplesWritten: number;
  histogramsWritten: number;
  exemplarsWritten: number;
  /** Samples, histograms and exemplars that could not be converted or lie outside the accepted times: the request is answered 400. */
  errors: number;
  firstError: string | undefined;
  /** Native histograms OpenTelemetry cannot represent, and exemplars without a usable time: dropped with a warning, not an error. */
  dropped: number;
  firstDropped: string | undefined;
}

type NativeHistogram = PromHistogram | RwV2Histogram;

/** One series of either protocol, labels resolved. */
interface SeriesIn {
  labels: ReadonlyArray<readonly [string, string]>;
  samples: ReadonlyArray<{ value: number; timestamp: bigint; startTimestamp?: bigint }>;
  histograms: readonly NativeHistogram[];
  exemplars: ReadonlyArray<{ labels: ReadonlyArray<readonly [string, string]>; value: number; timestamp: bigint }>;
  meta: PromMetadata | undefined;
  /** v2's per-series created_timestamp (ms), 0n when unset. */
  created: bigint;
  /** The series as read from the wire, when it was: its label bytes are the cheaper cache key. */
  wire?: WireSeries;
  /** With `wire`: the metadata of a metric name in this request. */
  metaFor?: (name: string) => PromMetadata | undefined;
}

const NS_PER_MS = 1_000_000n;
const MAX_MS = MAX_INT64 / NS_PER_MS;

/** Densest bucket layout one native histogram may expand to (spans may leave gaps; this bounds them). */
const MAX_DENSE_BUCKETS = 1 << 16;

/**
 * Column templates of recently seen series of plain samples: every column of a sample's row but
 * its own start, time, value and flags. A remote-write sender repeats the same series in every
 * request, and building the row (labels, resource, series id: a SHA-256 of the canonical labels)
 * was most of the CPU a sample cost; a sample is now its series' template appended to the hour's
 * column batch and four values. Keyed by everything a template depends on: the labels as sent, in
 * order, and the metadata; bounded by size (16 MB of key text and template bytes), least
 * recently used out first.
 */
interface CachedHead {
  template: RowTemplate;
  /** The series' series_id (its template holds it too), for limits.max_active_series. */
  sid: string;
  /** The series' metric name and its metadata's key prefix (KeyPrefixes.w), for wire-keyed entries. */
  name: string;
  metaPrefix: string;
}
const SERIES_HEADS = new BytesLru<CachedHead>(16 * 1024 * 1024, (c) => c.template.size + 2 * (c.name.length + c.metaPrefix.length));
/**
 * The key prefix of series read from the wire: their label bytes alone, so that a hit reads none
 * of them. The metadata is checked on the entry instead (it follows from the name, which follows
 * from the bytes). Decoded labels' prefixes end in `l` and carry their metadata.
 */
const WIRE_PREFIX = 'w';
/** The columns each sample writes itself; the rest come from its series' template. */
const SAMPLE_COLUMNS: ReadonlySet<string> = new Set(['start_unix_nano', 'time_unix_nano', 'value', 'flags']);
let templateMaker: ColumnBatchBuilder | undefined;

/** The leaves a sample writes, per hour batch. */
interface SampleLeaves {
  start: Leaf;
  time: Leaf;
  value: Leaf;
  flags: Leaf;
}
const sampleLeaves = new WeakMap<ColumnBatchBuilder, SampleLeaves>();
function leavesOf(b: ColumnBatchBuilder): SampleLeaves {
  let l = sampleLeaves.get(b);
  if (!l) {
    const leaf = (name: string) => {
      const c = b.column(name);
      if (c.kind !== 'primitive') throw new TypeError(`metrics column ${name} is not a primitive`);
      return c.leaf;
    };
    sampleLeaves.set(b, (l = { start: leaf('start_unix_nano'), time: leaf('time_unix_nano'), value: leaf('value'), flags: leaf('flags') }));
  }
  return l;
}

/**
 * A series' key in SERIES_HEADS, as the prefix and byte range it takes: either WIRE_PREFIX and
 * the labels' wire bytes (the entry then says which metadata it was made with), or the
 * metadata, length-prefixed so no separator can be forged, `l` and the labels themselves,
 * length-prefixed. The same labels may be cached under both forms; that costs a template.
 */
interface SeriesKey {
  prefix: string;
  data: Buffer;
  view: DataView;
  from: number;
  to: number;
}

/** Per metadata: the key prefix of its decoded labels (`l`), and its mark on wire-keyed entries (`w`). */
interface KeyPrefixes {
  w: string;
  l: string;
}
const NO_META_PREFIXES: KeyPrefixes = { w: '-|w', l: '-|l' };
/** Made once per metadata object (a family's, per request), not per series. */
const META_PREFIXES = new WeakMap<PromMetadata, KeyPrefixes>();
function keyPrefixes(meta: PromMetadata | undefined): KeyPrefixes {
  if (!meta) return NO_META_PREFIXES;
  let p = META_PREFIXES.get(meta);
  if (p === undefined) {
    const m = `${meta.type}|${meta.help.length}:${meta.help}|${meta.unit.length}:${meta.unit}|`;
    META_PREFIXES.set(meta, (p = { w: `${m}w`, l: `${m}l` }));
  }
  return p;
}

function seriesKey(s: SeriesIn): SeriesKey {
  const w = s.wire;
  if (w !== undefined) return { prefix: WIRE_PREFIX, data: w.labelData, view: w.labelView, from: w.labelFrom, to: w.labelTo };
  const prefixes = keyPrefixes(s.meta);
  let text = '';
  for (const [k, v] of s.labels) text += `${k.length}:${k}${v.length}:${v}`;
  const data = Buffer.from(text);
  return { prefix: prefixes.l, data, view: viewOf(data), from: 0, to: data.length };
}

class Converter {
  // Plain samples are written as columns from cached series templates (samples()).
  readonly points = new RowCollector({ table: 'metrics' });
  readonly exemplars = new RowCollector();
  samplesWritten = 0;
  histogramsWritten = 0;
  exemplarsWritten = 0;
  errors = 0;
  firstError: string | undefined;
  dropped = 0;
  firstDropped: string | undefined;
  /** The cache entry of the request's last cached series: senders keep their series' order, so it tells the next one (BytesLru). */
  #lastHead: BytesHit<CachedHead> | undefined;
  readonly #times: AcceptedTimes;
  readonly #series: SeriesGate | undefined;

  constructor(times: AcceptedTimes, series: SeriesGate | undefined) {
    this.#times = times;
    this.#series = series;
  }

  /** Whether the series (`sid`) may take its `items`; if not, they are refused. */
  #admitsSeries(sid: string, s: SeriesIn, items: number): boolean {
    if (this.#series === undefined || this.#series.admits(sid)) return true;
    this.error(items, `${this.#series.refusal} (${describe(s.labels)})`, 'series_limit');
    return false;
  }

  /** Why a sample (`what`) at `ms` is outside the tenant's accepted times, and which bound, if it is. */
  #outside(ms: bigint, what: string): { reason: string; kind: RefusalKind } | undefined {
    const ns = Number(ms) * 1e6;
    return this.#times.admits(ns) ? undefined : { reason: this.#times.refusal(what, ns), kind: this.#times.kindOf(ns) };
  }

  /** Why a sample, histogram or exemplar at `ms` (starting at `start`, 0: none) is refused, if it is. */
  #timeRefusal(ms: bigint, start: bigint, what: string): { reason: string; kind: RefusalKind } | undefined {
    const invalid = timeInvalid(ms) ?? startInvalid(start);
    return invalid !== undefined ? { reason: invalid, kind: 'invalid' } : this.#outside(ms, what);
  }

  error(n: number, reason: string, kind: RefusalKind = 'invalid'): void {
    this.errors += n;
    this.firstError ??= reason;
    this.points.countRefused(kind, n);
  }

  drop(reason: string): void {
    this.dropped++;
    this.firstDropped ??= reason;
    this.points.countRefused('unsupported', 1);
  }

  series(s: SeriesIn): void {
    // The common case, a series of plain samples: its constant part comes from the cache.
    if (s.histograms.length === 0 && s.exemplars.length === 0 && s.samples.length > 0) {
      const key = seriesKey(s);
      const hit = SERIES_HEADS.get(key.prefix, key.data, key.view, key.from, key.to, this.#lastHead);
      const cached = hit?.value;
      // A wire-keyed entry was made with the metadata its name had then: it serves while the
      // name has the same metadata in this request.
      if (cached !== undefined && (s.metaFor === undefined || cached.metaPrefix === keyPrefixes(s.metaFor(cached.name)).w)) {
        this.#lastHead = hit;
        if (this.#admitsSeries(cached.sid, s, s.samples.length)) this.samples(s, cached.template);
        return;
      }
      this.seriesSlow(s, key);
      return;
    }
    this.seriesSlow(s, undefined);
  }

  /** Plain samples of a series whose other columns are `head`. */
  private samples(s: SeriesIn, head: RowTemplate): void {
    for (const sample of s.samples) {
      const refused = this.#timeRefusal(sample.timestamp, sample.startTimestamp ?? 0n, 'sample timestamp');
      if (refused) {
        this.error(1, `${refused.reason} (${describe(s.labels)})`, refused.kind);
        continue;
      }
      const start = startMs(sample.startTimestamp ?? 0n, s.created);
      const time = sample.timestamp * NS_PER_MS;
      const v = sample.value;
      const b = this.points.columns(time);
      const leaves = leavesOf(b);
      b.appendRef(head);
      if (start > 0n) leaves.start.bigint(start * NS_PER_MS);
      else leaves.start.nil(0);
      leaves.time.bigint(time);
      // Any NaN (a staleness marker included) is stored as the one NaN the JSON rows stored.
      leaves.value.f64(Number.isNaN(v) ? Number.NaN : v);
      leaves.flags.long(isStaleNaN(v) ? FLAG_NO_RECORDED_VALUE : 0);
      b.endRow();
      this.samplesWritten++;
    }
  }

  /** `cacheAs`: the series' SERIES_HEADS key, when its row head may be cached. */
  private seriesSlow(s: SeriesIn, cacheAs: SeriesKey | undefined): void {
    let name = '';
    // No prototype: `__proto__` is a valid Prometheus label name and must stay a plain key.
    const labels: Record<string, string> = Object.create(null) as Record<string, string>;
    let bad: string | undefined;
    const seen = new Set<string>();
    for (const [k, v] of s.labels) {
      if (k === '') bad ??= 'series has a label with an empty name';
      else if (seen.has(k)) bad ??= `series has the label ${JSON.stringify(k)} more than once`;
      seen.add(k);
      if (k === '__name__') name = v;
      else if (v !== '') labels[k] = v;
    }
    if (!bad && name === '') bad = 'series has no __name__ label';
    const items = s.samples.length + s.histograms.length + s.exemplars.length;
    if (bad) {
      this.error(items, `${bad} (${describe(s.labels)})`);
      return;
    }

    const resource = emptyTyped();
    if (labels.job !== undefined) resource.str['service.name'] = labels.job;
    if (labels.instance !== undefined) resource.str['service.instance.id'] = labels.instance;
    const point: TypedAttributes = { str: labels, int: {}, double: {}, bool: {} };
    const sid = seriesId(seriesPrefix(name, seriesResource(resource), REMOTE_WRITE_SCOPE, ''), point);
    if (!this.#admitsSeries(sid, s, items)) return;
    const scopeAttrs: Record<string, string> = s.meta && s.meta.type !== 'unknown' ? { 'prometheus.type': s.meta.type } : {};
    const base = {
      metric_name: name,
      description: s.meta?.help ?? '',
      unit: s.meta?.unit ?? '',
      series_id: sid,
      service_name: labels.job ?? 'unknown_service',
      scope_name: REMOTE_WRITE_SCOPE,
      scope_version: '',
      point_attr_str: labels,
      point_attr_int: {},
      point_attr_double: {},
      point_attr_bool: {},
      resource_attr_str: resource.str,
      resource_attr_int: {},
      resource_attr_double: {},
      resource_attr_bool: {},
      scope_attr_str: scopeAttrs,
      scope_attr_int: {},
      scope_attr_double: {},
      scope_attr_bool: {},
    };

    let seriesType: string = 'gauge';
    if (s.samples.length > 0) {
      const kind = sampleKind(name, labels, s.meta);
      seriesType = kind.type;
      templateMaker ??= ColumnBatchBuilder.forTable(tableDef('metrics'));
      const head = templateMaker.template({ ...base, metric_type: kind.type, temporality: kind.temporality, is_monotonic: kind.isMonotonic }, SAMPLE_COLUMNS);
      if (cacheAs !== undefined) this.#lastHead = SERIES_HEADS.set(cacheAs.prefix, cacheAs.data, cacheAs.view, cacheAs.from, cacheAs.to, { template: head, sid, name, metaPrefix: keyPrefixes(s.meta).w }, this.#lastHead);
      this.samples(s, head);
    }
    if (s.histograms.length > 0) {
      seriesType = 'exponential_histogram';
      const gauge = s.meta?.type === 'gaugehistogram';
      for (const h of s.histograms) {
        const hstart = 'startTimestamp' in h ? h.startTimestamp : 0n;
        const refused = this.#timeRefusal(h.timestamp, hstart, 'histogram timestamp');
        if (refused) {
          this.error(1, `${refused.reason} (${describe(s.labels)})`, refused.kind);
          continue;
        }
        const converted = nativeHistogram(h);
        if ('drop' in converted) {
          this.drop(`${converted.drop} (${describe(s.labels)})`);
          continue;
        }
        if ('error' in converted) {
          this.error(1, `${converted.error} (${describe(s.labels)})`);
          continue;
        }
        const time = h.timestamp * NS_PER_MS;
        this.points.add(time, {
          ...base,
          metric_type: 'exponential_histogram',
          temporality: gauge || h.resetHint === 3 /* GAUGE */ ? 'unspecified' : 'cumulative',
          is_monotonic: null,
          start_unix_nano: startNs(hstart, s.created),
          time_unix_nano: time.toString(),
          ...converted.columns,
          flags: isStaleNaN(h.sum) ? FLAG_NO_RECORDED_VALUE : 0,
        });
        this.histogramsWritten++;
      }
    }
    for (const e of s.exemplars) {
      if (timeInvalid(e.timestamp)) {
        // As in Prometheus's receiver, a bad exemplar never fails its request: dropped, logged.
        this.drop(`exemplar without a timestamp in the int64 range of unix nanoseconds (${describe(s.labels)})`);
        continue;
      }
      const outside = this.#outside(e.timestamp, 'exemplar timestamp');
      if (outside !== undefined) {
        this.drop(`${outside.reason} (${describe(s.labels)})`);
        continue;
      }
      const filtered: Record<string, string> = Object.create(null) as Record<string, string>;
      for (const [k, v] of e.labels) filtered[k] = v;
      const time = e.timestamp * NS_PER_MS;
      this.exemplars.add(time, {
        metric_name: name,
        metric_type: seriesType,
        series_id: sid,
        service_name: base.service_name,
        time_unix_nano: time.toString(),
        value: jsonFloat(e.value),
        value_int: null,
        trace_id: hexLabel(filtered.trace_id, 32),
        span_id: hexLabel(filtered.span_id, 16),
        filtered_attr_str: filtered,
        filtered_attr_int: {},
        filtered_attr_double: {},
        filtered_attr_bool: {},
        point_attr_str: labels,
        point_attr_int: {},
        point_attr_double: {},
        point_attr_bool: {},
        resource_attr_str: resource.str,
        resource_attr_int: {},
        resource_attr_double: {},
        resource_attr_bool: {},
      });
      this.exemplarsWritten++;
    }
  }

  result(): ConvertedRemoteWrite {
    return {
      points: this.points.result(),
      exemplars: this.exemplars.result(),
      samplesWritten: this.samplesWritten,
      histogramsWritten: this.histogramsWritten,
      exemplarsWritten: this.exemplarsWritten,
      errors: this.errors,
      firstError: this.firstError,
      dropped: this.dropped,
      firstDropped: this.firstDropped,
    };
  }
}

/** The series as Prometheus prints it, for error messages (shortened). */
function describe(labels: ReadonlyArray<readonly [string, string]>): string {
  const name = labels.find(([k]) => k === '__name__')?.[1] ?? '';
  const rest = labels.filter(([k]) => k !== '__name__').map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  const text = `${name}{${rest.join(', ')}}`;
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

const HEX = /^[0-9a-fA-F]+$/;
const hexLabel = (v: string | undefined, len: number): string | null =>
  v !== undefined && v.length === len && HEX.test(v) && !/^0+$/.test(v) ? v.toLowerCase() : null;

function timeInvalid(ms: bigint): string | undefined {
  if (ms <= 0n) return 'sample has no timestamp after the unix epoch';
  if (ms > MAX_MS) return 'sample has a timestamp beyond the int64 range of unix nanoseconds';
  return undefined;
}

function startInvalid(ms: bigint): string | undefined {
  return ms < 0n || ms > MAX_MS ? 'sample has a start timestamp outside the int64 range of unix nanoseconds' : undefined;
}

/** A point's start in ms: the sample's own (v2), else the series' created timestamp (v2), else 0 (none). */
function startMs(sampleStart: bigint, created: bigint): bigint {
  return sampleStart > 0n ? sampleStart : created > 0n && created <= MAX_MS ? created : 0n;
}

/** A point's start (startMs) in ns as text, or null. */
function startNs(sampleStart: bigint, created: bigint): string | null {
  const ms = startMs(sampleStart, created);
  return ms > 0n ? (ms * NS_PER_MS).toString() : null;
}

type HistogramOutcome = { columns: Record<string, unknown> } | { drop: string } | { error: string };

/** A whole, non-negative count that fits int64, from a float histogram's double. */
function floatCount(v: number): bigint | 'fraction' | 'invalid' {
  if (!Number.isFinite(v) || v < 0) return 'invalid';
  if (!Number.isInteger(v)) return 'fraction';
  if (v >= 2 ** 63) return 'invalid';
  return BigInt(v);
}

/**
 * One side's buckets → OTLP offset and dense counts. Prometheus: the first span's offset is the
 * absolute index of its first bucket, each later span's offset the gap after the previous span;
 * integer histograms send each count as the delta to the previous bucket's.
 */
function buckets(spans: ReadonlyArray<{ offset: number; length: number }>, deltas: readonly bigint[], counts: readonly number[], isFloat: boolean): { offset: number; counts: bigint[] } | { drop: string } | { error: string } {
  const values: bigint[] = [];
  if (isFloat) {
    for (const c of counts) {
      const v = floatCount(c);
      if (v === 'fraction') return { drop: 'float native histogram with fractional bucket counts cannot be stored as an OpenTelemetry exponential histogram' };
      if (v === 'invalid') return { error: 'native histogram has a negative, non-finite or too large bucket count' };
      values.push(v);
    }
  } else {
    let acc = 0n;
    for (const d of deltas) {
      acc += d;
      if (acc < 0n || acc > MAX_INT64) return { error: 'native histogram bucket deltas give a negative or too large count' };
      values.push(acc);
    }
  }
  let spanTotal = 0;
  for (const s of spans) spanTotal += s.length;
  if (spanTotal !== values.length) return { error: `native histogram spans cover ${spanTotal} buckets but ${values.length} counts were sent` };
  if (values.length === 0) return { offset: 0, counts: [] };
  const dense: bigint[] = [];
  let v = 0;
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i]!;
    const gap = i > 0 ? span.offset : 0;
    if (gap < 0) return { error: 'native histogram span has a negative gap' };
    if (dense.length + gap + span.length > MAX_DENSE_BUCKETS) return { error: `native histogram spans more than ${MAX_DENSE_BUCKETS} buckets` };
    for (let g = 0; g < gap; g++) dense.push(0n);
    for (let l = 0; l < span.length; l++) dense.push(values[v++]!);
  }
  const first = spans[0]!.offset;
  // Prometheus index i is OTLP index i - 1 (reference §6.5), which the int column must hold.
  if (first - 1 < -(2 ** 31)) return { error: 'native histogram has a first bucket index below the int32 range' };
  return { offset: first - 1, counts: dense };
}

function nativeHistogram(h: NativeHistogram): HistogramOutcome {
  if (h.schema === -53) return { drop: 'custom-bucket native histogram (schema -53) cannot be stored as an OpenTelemetry exponential histogram' };
  if (h.schema < -4 || h.schema > 8) return { error: `native histogram has an unsupported schema ${h.schema} (exponential schemas are -4 to 8)` };
  const isFloat = h.count.case === 'countFloat';
  let count: bigint;
  let zero: bigint;
  if (isFloat) {
    const c = floatCount(h.count.value as number);
    const zc = h.zeroCount.case === 'zeroCountFloat' ? floatCount(h.zeroCount.value) : h.zeroCount.case === 'zeroCountInt' ? h.zeroCount.value : 0n;
    if (c === 'fraction' || zc === 'fraction') return { drop: 'float native histogram with a fractional count cannot be stored as an OpenTelemetry exponential histogram' };
    if (c === 'invalid' || zc === 'invalid') return { error: 'native histogram has a negative, non-finite or too large count' };
    count = c;
    zero = zc;
  } else {
    count = h.count.case === 'countInt' ? h.count.value : 0n;
    // An integer histogram with a float zero count: truncated, unless it is no count at all (NaN, ±Inf).
    const zc = h.zeroCount.case === 'zeroCountInt' ? h.zeroCount.value : h.zeroCount.case === 'zeroCountFloat' ? floatCount(Math.trunc(h.zeroCount.value)) : 0n;
    if (typeof zc !== 'bigint') return { error: 'native histogram has a negative, non-finite or too large count' };
    zero = zc;
  }
  if (count > MAX_INT64 || zero > MAX_INT64 || zero < 0n) return { error: 'native histogram has a count beyond the int64 range' };
  const pos = buckets(h.positiveSpans, h.positiveDeltas, h.positiveCounts, isFloat);
  if (!('counts' in pos)) return pos;
  const neg = buckets(h.negativeSpans, h.negativeDeltas, h.negativeCounts, isFloat);
  if (!('counts' in neg)) return neg;
  return {
    columns: {
      count: jsonInt64(count),
      sum: jsonFloat(h.sum),
      min: null,
      max: null,
      exp_scale: h.schema,
      exp_zero_count: jsonInt64(zero),
      exp_zero_threshold: jsonFloat(h.zeroThreshold),
      exp_positive_offset: pos.offset,
      exp_positive_bucket_counts: pos.counts.map(jsonInt64),
      exp_negative_offset: neg.offset,
      exp_negative_bucket_counts: neg.counts.map(jsonInt64),
    },
  };
}

/** Shared by the wire path's series, which never have histograms or exemplars. */
const NONE: readonly never[] = [];

/**
 * A protocol 1.0 request → rows. Its metadata types the request's own series, and is remembered
 * in `cache` (when given, under `scope`: tenant and dataset) for later requests.
 */
export function remoteWriteV1ToRows(
  req: PromWriteRequest,
  cache?: RemoteWriteMetadata,
  scope = '',
  times: AcceptedTimes = AcceptedTimes.ANY,
  series?: SeriesGate,
): ConvertedRemoteWrite {
  const { metaOf, remember } = v1Metadata(req.metadata, cache, scope);
  remember();
  const out = new Converter(times, series);
  for (const ts of req.timeseries) {
    const labels = ts.labels.map((l) => [l.name, l.value] as const);
    out.series({
      labels,
      samples: ts.samples,
      histograms: ts.histograms,
      exemplars: ts.exemplars.map((e) => ({ labels: e.labels.map((l) => [l.name, l.value] as const), value: e.value, timestamp: e.timestamp })),
      meta: metaOf(metricNameOf(labels)),
      created: 0n,
    });
  }
  return out.result();
}

/**
 * A protocol 1.0 body → rows: plain-sample requests straight from the wire
 * (remote-write-wire.ts), anything else (exemplars, native histograms, bytes the wire reader
 * refuses) through protobuf-es, whose decoding and errors are the reference.
 */
export function remoteWriteV1BodyToRows(
  body: Uint8Array,
  cache?: RemoteWriteMetadata,
  scope = '',
  times: AcceptedTimes = AcceptedTimes.ANY,
  series?: SeriesGate,
): ConvertedRemoteWrite {
  let plain: WireWriteRequest | undefined;
  try {
    plain = readPlainWriteRequest(body);
  } catch (err) {
    // Only bad bytes go to the reference decoder (which answers them); a fault here must surface.
    if (!(err instanceof WireDecodeError)) throw err;
    plain = undefined;
  }
  if (!plain) return remoteWriteV1ToRows(decodeRemoteWriteV1(body), cache, scope, times, series);
  const { metaOf, remember } = v1Metadata(plain.metadata, cache, scope);
  const out = new Converter(times, series);
  try {
    for (const ts of plain.timeseries) out.series(new WireSeriesIn(ts, metaOf));
  } catch (err) {
    // A series' labels are read only when its row head is not cached (WireSeries): bad bytes
    // found then go to the reference decoder like any other, and nothing of the request is kept.
    if (!(err instanceof WireDecodeError)) throw err;
    return remoteWriteV1ToRows(decodeRemoteWriteV1(body), cache, scope, times, series);
  }
  remember();
  return out.result();
}

/** The value of the `__name__` label (the last one, as the wire reader takes it), '' without one. */
function metricNameOf(labels: ReadonlyArray<readonly [string, string]>): string {
  let name = '';
  for (const [k, v] of labels) if (k === '__name__') name = v;
  return name;
}

/**
 * A series read from the wire, its labels read only when asked for (a cache miss, an error);
 * its metadata is its name's, looked up then.
 */
class WireSeriesIn implements SeriesIn {
  readonly samples: WireSeries['samples'];
  readonly wire: WireSeries;
  readonly metaFor: (name: string) => PromMetadata | undefined;
  readonly histograms = NONE;
  readonly exemplars = NONE;
  readonly created = 0n;

  constructor(wire: WireSeries, metaFor: (name: string) => PromMetadata | undefined) {
    this.samples = wire.samples;
    this.wire = wire;
    this.metaFor = metaFor;
  }

  get meta(): PromMetadata | undefined {
    return this.metaFor(this.wire.name);
  }

  get labels(): ReadonlyArray<readonly [string, string]> {
    return this.wire.labels;
  }
}

/**
 * A v1 request's metadata as a lookup of a series' family metadata (the request's own first,
 * then what earlier requests sent), and `remember` to keep the request's own in `cache` under
 * `scope` for later requests, once its bytes are known to be valid.
 */
function v1Metadata(
  metadata: ReadonlyArray<{ type: number; metricFamilyName: string; help: string; unit: string }>,
  cache: RemoteWriteMetadata | undefined,
  scope: string,
): { metaOf: (name: string) => PromMetadata | undefined; remember: () => void } {
  const local = new Map<string, PromMetadata>();
  for (const m of metadata) {
    if (m.metricFamilyName === '') continue;
    local.set(m.metricFamilyName, { type: promType(m.type), help: m.help, unit: m.unit });
  }
  const lookup = (family: string) => local.get(family) ?? cache?.get(scope, family);
  // A request's series share a few names (a family's _bucket, _sum, _count…): each is looked up once.
  const byName = new Map<string, PromMetadata | undefined>();
  return {
    metaOf: (name) => {
      if (!name) return undefined;
      if (byName.has(name)) return byName.get(name);
      const meta = familyMetadata(name, lookup);
      byName.set(name, meta);
      return meta;
    },
    remember: () => {
      for (const [family, meta] of local) cache?.set(scope, family, meta);
    },
  };
}

/**
 * Most bytes of label names and values a 2.0 request's series and exemplars may resolve to. A
 * symbol is sent once and named by any number of series, each of which then holds it whole (its
 * row, its cache entry): a 270 KB request of 5,000 series naming one 100 KB value resolved to
 * 500 MB, and a full body ran the acceptor out of memory. Series past it are refused (400 after
 * the rest is stored), as the profiles' dictionary is bounded (profiles-to-rows.ts).
 */
export const MAX_V2_RESOLVED_LABEL_BYTES = 256 * 1024 * 1024;

/** A protocol 2.0 request (references already checked by decodeRemoteWriteV2) → rows. */
export function remoteWriteV2ToRows(req: RwV2Request, times: AcceptedTimes = AcceptedTimes.ANY, series?: SeriesGate, maxLabelBytes = MAX_V2_RESOLVED_LABEL_BYTES): ConvertedRemoteWrite {
  const sym = req.symbols;
  let labelBytesLeft = maxLabelBytes;
  const pairs = (refs: readonly number[]) => {
    const out: Array<readonly [string, string]> = [];
    for (let i = 0; i + 1 < refs.length; i += 2) {
      const k = sym[refs[i]!] ?? '';
      const v = sym[refs[i + 1]!] ?? '';
      labelBytesLeft -= k.length + v.length;
      out.push([k, v] as const);
    }
    return out;
  };
  const out = new Converter(times, series);
  for (const ts of req.timeseries) {
    // Resolving only counts (the pairs name the symbols' strings); nothing is built before this check.
    const labels = pairs(ts.labelsRefs);
    const exemplars = ts.exemplars.map((e) => ({ labels: pairs(e.labelsRefs), value: e.value, timestamp: e.timestamp }));
    if (labelBytesLeft < 0) {
      out.error(ts.samples.length + ts.histograms.length + ts.exemplars.length, `request resolves to more than ${maxLabelBytes} bytes of labels; send fewer series per request`);
      continue;
    }
    const m = ts.metadata;
    const meta: PromMetadata | undefined =
      m && (m.type !== 0 || m.helpRef !== 0 || m.unitRef !== 0) ? { type: promType(m.type), help: sym[m.helpRef] ?? '', unit: sym[m.unitRef] ?? '' } : undefined;
    out.series({ labels, samples: ts.samples, histograms: ts.histograms, exemplars, meta, created: ts.createdTimestamp });
  }
  return out.result();
}
