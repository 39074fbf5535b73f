import { FloeError } from '@floe/errors';
import { pprofOfNamedStacks, type PprofProfile } from '@floe/proto';
import type { PprofSeries } from './pprof.ts';
import { inflate, isGzip } from './decode.ts';
import { JfrError } from './jfr/reader.ts';
import { jfrContextLabels, JfrLabelsError, type JfrLabels } from './jfr/labels.ts';
import { jfrStacks, type KindStacks } from './jfr/stacks.ts';

/**
 * Pyroscope's HTTP ingest API, `POST /ingest?name=…&from=…&until=…`, which Pyroscope's SDKs
 * (Python, Ruby, .NET, Rust, Go before push) and pyroscope-cli use: the profile of one
 * application over one window, as folded stacks (`format=folded`, the default: `a;b;c 42` per
 * line), one stack per sample (`format=lines`), pprof (`format=pprof`: the body, or the
 * `profile` part of a multipart form), or a Java Flight Recorder recording (`format=jfr`, what
 * the Pyroscope Java agent sends: the body or the form's `jfr` part, with its dynamic labels in the
 * `labels` part; jfr/). The query's `name` is `<app>.<kind>{label=value,…}`;
 * `<kind>` (cpu, wall, alloc_objects, inuse_space, goroutines, mutex_count, …) names the
 * Pyroscope profile type the samples are stored under, and `<app>` the service. Each window
 * becomes a pprof profile for the push path (pprof.ts), so both store the same rows.
 *
 * Folded samples of CPU and wall time (units `samples`) are counts of ticks at `sampleRate` Hz:
 * stored as nanoseconds (count × 1e9 / sampleRate), the unit a Go CPU profile has, so one query
 * and one flame graph serve services profiled by either; so are JFR execution samples. Not
 * taken: Pyroscope 0.x's internal trie and tree formats, and pprof with `prev_profile` (a
 * cumulative profile to subtract); each is refused naming it.
 */

const bad = (message: string) => new FloeError('bad_data', message, { code: 'FLOE_ERR_INGEST_DECODE' });

/** What the samples of a name's `<kind>` measure, as Pyroscope names its profile types. */
interface Kind {
  /** The profile name (`__name__`): the first part of the profile type id. */
  name: string;
  type: string;
  unit: string;
  periodType: string;
  periodUnit: string;
  /** Folded counts are ticks of the sample rate, stored as nanoseconds. */
  ticks?: true;
}

const cpu: Kind = { name: 'process_cpu', type: 'cpu', unit: 'nanoseconds', periodType: 'cpu', periodUnit: 'nanoseconds', ticks: true };
const memory = (type: string, unit: string): Kind => ({ name: 'memory', type, unit, periodType: 'space', periodUnit: 'bytes' });
const contention = (name: string, type: string, unit: string): Kind => ({ name, type, unit, periodType: 'contentions', periodUnit: 'count' });

const KINDS: Readonly<Record<string, Kind>> = {
  cpu,
  itimer: cpu,
  wall: { name: 'wall', type: 'wall', unit: 'nanoseconds', periodType: 'wall', periodUnit: 'nanoseconds', ticks: true },
  alloc_objects: memory('alloc_objects', 'count'),
  alloc_space: memory('alloc_space', 'bytes'),
  alloc_in_new_tlab_objects: memory('alloc_in_new_tlab_objects', 'count'),
  alloc_in_new_tlab_bytes: memory('alloc_in_new_tlab_bytes', 'bytes'),
  alloc_outside_tlab_objects: memory('alloc_outside_tlab_objects', 'count'),
  alloc_outside_tlab_bytes: memory('alloc_outside_tlab_bytes', 'bytes'),
  inuse_objects: memory('inuse_objects', 'count'),
  inuse_space: memory('inuse_space', 'bytes'),
  goroutines: { name: 'goroutines', type: 'goroutine', unit: 'count', periodType: 'goroutine', periodUnit: 'count' },
  mutex_count: contention('mutex', 'contentions', 'count'),
  mutex_duration: contention('mutex', 'delay', 'nanoseconds'),
  lock_count: contention('mutex', 'contentions', 'count'),
  lock_duration: contention('mutex', 'delay', 'nanoseconds'),
  block_count: contention('block', 'contentions', 'count'),
  block_duration: contention('block', 'delay', 'nanoseconds'),
  exceptions: { name: 'exceptions', type: 'exceptions', unit: 'count', periodType: 'exceptions', periodUnit: 'count' },
};

/** A name without a known `<kind>`: what its `units` say. */
const BY_UNITS: Readonly<Record<string, Kind>> = {
  samples: cpu,
  objects: memory('alloc_objects', 'count'),
  bytes: memory('alloc_space', 'bytes'),
  goroutines: KINDS.goroutines!,
  lock_samples: KINDS.lock_count!,
  lock_nanoseconds: KINDS.lock_duration!,
};

export interface ParsedName {
  service: string;
  kind: Kind;
  labels: Array<{ name: string; value: string }>;
}

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_.]*$/;

/** A table's own entry: an app named `my.app.constructor`, or `units=toString`, names no kind of Object's. */
const own = <T>(table: Readonly<Record<string, T>>, key: string): T | undefined => (Object.hasOwn(table, key) ? table[key] : undefined);

/** `my.app.cpu{env=staging,region=us}` → service `my.app`, kind cpu, the labels. */
export function parseIngestName(text: string | undefined, units: string | undefined): ParsedName {
  if (!text) throw bad('query parameter name is required: the application name, e.g. my.app.cpu{env=staging}');
  const brace = text.indexOf('{');
  const app = (brace < 0 ? text : text.slice(0, brace)).trim();
  const labels: Array<{ name: string; value: string }> = [];
  if (brace >= 0) {
    if (!text.endsWith('}')) throw bad(`name ${JSON.stringify(text)}: labels must end with }`);
    const inner = text.slice(brace + 1, -1).trim();
    for (const pair of inner === '' ? [] : inner.split(',')) {
      const eq = pair.indexOf('=');
      const key = (eq < 0 ? pair : pair.slice(0, eq)).trim();
      if (eq < 0 || !LABEL_NAME.test(key)) throw bad(`name ${JSON.stringify(text)}: ${JSON.stringify(pair)} is not a label=value pair`);
      // The name is the service: a label may not rename it.
      if (key === '__name__' || key === 'service_name') continue;
      labels.push({ name: key, value: pair.slice(eq + 1).trim() });
    }
  }
  const dot = app.lastIndexOf('.');
  const suffix = dot < 0 ? '' : app.slice(dot + 1);
  const known = own(KINDS, suffix);
  const service = known ? app.slice(0, dot) : app;
  if (service === '') throw bad(`name ${JSON.stringify(text)} has no application name`);
  const kind = known ?? own(BY_UNITS, units || 'samples');
  if (!kind) throw bad(`units ${JSON.stringify(units)} is not one of ${Object.keys(BY_UNITS).join(', ')}; or end the name with the profile kind (${Object.keys(KINDS).join(', ')})`);
  return { service, kind, labels };
}

/** A `from`/`until` value: unix seconds (Pyroscope's SDKs), or milliseconds or nanoseconds told apart by size; absent: now. */
export function parseIngestTime(param: string, text: string | undefined, nowNs: bigint): bigint {
  if (text === undefined || text === '') return nowNs;
  if (!/^\d{1,19}$/.test(text)) throw bad(`${param} ${JSON.stringify(text)} is not a unix time in seconds`);
  const v = BigInt(text);
  if (v >= 10n ** 17n) return v;
  if (v >= 10n ** 11n) return v * 1_000_000n;
  return v * 1_000_000_000n;
}

/** Stacks of folded or lines text → their values (counts), stacks root first. */
function parseStacks(text: string, format: 'folded' | 'lines'): Map<string, bigint> {
  const out = new Map<string, bigint>();
  let lineNo = 0;
  for (const raw of text.split('\n')) {
    lineNo++;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') continue;
    let stack = line;
    let count = 1n;
    if (format === 'folded') {
      const space = line.lastIndexOf(' ');
      const value = space < 0 ? '' : line.slice(space + 1);
      if (!/^\d{1,18}$/.test(value)) throw bad(`folded line ${lineNo} does not end in a sample count: ${JSON.stringify(line.slice(0, 120))}`);
      stack = line.slice(0, space);
      count = BigInt(value);
    }
    if (count === 0n || stack === '') continue;
    out.set(stack, (out.get(stack) ?? 0n) + count);
  }
  return out;
}

/** A folded stack (root first), its value and the labels its samples carry. */
interface LabelledStack {
  stack: string;
  count: bigint;
  labels?: ReadonlyArray<{ key: string; value: string }>;
}

/** Folded or lines stacks as a pprof profile of the kind, over the window. */
function stacksToPprof(stacks: Iterable<LabelledStack>, kind: Kind, sampleRate: number, fromNs: bigint, untilNs: bigint): PprofProfile {
  const periodNs = BigInt(Math.round(1e9 / sampleRate));
  return pprofOfNamedStacks({
    sampleTypes: [{ type: kind.type, unit: kind.unit }],
    periodType: { type: kind.periodType, unit: kind.periodUnit },
    period: kind.ticks ? periodNs : 0n,
    timeNanos: fromNs,
    durationNanos: untilNs > fromNs ? untilNs - fromNs : 0n,
    // Folded stacks are root first; pprof's are leaf first.
    stacks: [...stacks].map(({ stack, count, labels }) => ({ frames: stack.split(';').reverse(), values: [kind.ticks ? count * periodNs : count], ...(labels ? { labels } : {}) })),
  });
}

const unlabelled = (stacks: Map<string, bigint>): LabelledStack[] => [...stacks].map(([stack, count]) => ({ stack, count }));

/**
 * Dynamic labels that stay on the samples, as Pyroscope keeps them: they link a sample to a span
 * (span profiles) or a profile id, and as series labels would make a series per request.
 */
const SAMPLE_LABELS = new Set(['span_id', 'profile_id']);

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * A recording's stacks of one kind as series: one per distinct set of dynamic labels its samples
 * carry — their context's labels and their span's name (`span_name`) — beside the name's labels;
 * span and profile ids on the samples. A sample's span (async-profiler's `spanId`) becomes its
 * `span_id` label, 16 hex digits, which Floe's span profiles read (Pyroscope's reader names it
 * profile_id). A dynamic label never replaces one the upload's name gave, nor names a `__…__` label.
 */
function jfrSeries(byCorrelation: KindStacks, labels: JfrLabels, base: ReadonlyArray<{ name: string; value: string }>) {
  const fixed = new Set(base.map((l) => l.name));
  const series = new Map<string, { labels: Array<{ name: string; value: string }>; stacks: LabelledStack[] }>();
  for (const { correlation, stacks } of byCorrelation.values()) {
    const own = [...(labels.contexts.get(correlation.contextId) ?? [])];
    const spanName = correlation.spanName !== 0n ? labels.strings.get(correlation.spanName) : undefined;
    if (spanName) own.push({ name: 'span_name', value: spanName });
    if (correlation.spanId !== 0n) own.push({ name: 'span_id', value: BigInt.asUintN(64, correlation.spanId).toString(16).padStart(16, '0') });
    const usable = own.filter((l) => !fixed.has(l.name) && !(l.name.startsWith('__') && l.name.endsWith('__')));
    const onSamples = usable.filter((l) => SAMPLE_LABELS.has(l.name)).map((l) => ({ key: l.name, value: l.value }));
    const extra = usable.filter((l) => !SAMPLE_LABELS.has(l.name)).sort(byName);
    const key = JSON.stringify(extra);
    let s = series.get(key);
    if (!s) series.set(key, (s = { labels: [...base, ...extra], stacks: [] }));
    for (const [stack, count] of stacks) s.stacks.push(onSamples.length > 0 ? { stack, count, labels: onSamples } : { stack, count });
  }
  return [...series.values()];
}

export type IngestFormat = 'folded' | 'lines' | 'pprof' | 'jfr';

const REFUSED_FORMATS: Readonly<Record<string, string>> = {
  trie: "Pyroscope 0.x's trie format is not taken; send folded, lines or pprof",
  tree: "Pyroscope 0.x's tree format is not taken; send folded, lines or pprof",
  speedscope: 'speedscope files are not taken; send folded, lines or pprof',
};

/** The body's format: the `format` parameter, else pprof for a multipart form or a pprof content type, else folded. */
export function ingestFormat(param: string | undefined, contentType: string | undefined): IngestFormat {
  const format = (param ?? '').toLowerCase();
  if (format === 'folded' || format === 'collapsed' || format === '') {
    if (format === '' && contentType && /^(multipart\/form-data|application\/x-protobuf|application\/vnd\.google\.protobuf)/i.test(contentType)) return 'pprof';
    return 'folded';
  }
  if (format === 'lines' || format === 'pprof' || format === 'jfr') return format;
  const refused = own(REFUSED_FORMATS, format);
  throw new FloeError('unsupported_media_type', refused ?? `format ${JSON.stringify(param)} is not one of folded, lines, pprof, jfr`, { code: 'FLOE_ERR_INGEST_CONTENT_TYPE' });
}

export interface LegacyIngest {
  query: Readonly<Record<string, string | undefined>>;
  contentType: string | undefined;
  /** The body after Content-Encoding. */
  body: Buffer;
  /** The most a gzip-compressed part may inflate to (acceptor.max_decompressed_bytes). */
  maxDecompressedBytes: number;
  /** Told what each gzipped part inflated to (the acceptor counts it in flight); may refuse it by throwing. */
  hold?: (inflatedBytes: number) => void;
}

/**
 * One /ingest request as push series (pprof.ts's input): the service and labels of its name, and
 * its profile(s); a JFR recording gives one series per profile kind it holds and set of dynamic
 * labels its samples carry (jfr/).
 * Async because a multipart form is read with the platform's own parser.
 */
export async function legacyIngestSeries(req: LegacyIngest, nowNs: bigint): Promise<PprofSeries[]> {
  const q = req.query;
  const parsed = parseIngestName(q.name, q.units);
  const format = ingestFormat(q.format, req.contentType);
  const untilNs = parseIngestTime('until', q.until, nowNs);
  const fromNs = parseIngestTime('from', q.from, untilNs);
  if (fromNs > untilNs) throw bad(`from (${q.from}) is after until (${q.until})`);
  const labelsOf = (kind: Kind) => {
    const labels = [{ name: '__name__', value: kind.name }, { name: 'service_name', value: parsed.service }, ...parsed.labels];
    if (q.spyName) labels.push({ name: 'pyroscope_spy', value: q.spyName });
    return labels;
  };
  const window = { timeNs: fromNs, durationNs: untilNs - fromNs };
  const sampleRate = q.sampleRate === undefined || q.sampleRate === '' ? 100 : Number(q.sampleRate);
  // Below a tick per 31 years the period (1e9 / rate ns) no longer fits the int64 it is stored in.
  if (!Number.isFinite(sampleRate) || sampleRate < 1e-9 || sampleRate > 1e9) throw bad(`sampleRate ${JSON.stringify(q.sampleRate)} is not a rate in Hz between 1e-9 and 1e9`);
  switch (format) {
    case 'folded':
    case 'lines': {
      const profile = stacksToPprof(unlabelled(parseStacks(req.body.toString('utf8'), format)), parsed.kind, sampleRate, fromNs, untilNs);
      return [{ labels: labelsOf(parsed.kind), profiles: [profile], window }];
    }
    case 'pprof': {
      const form = await multipartForm(req);
      const prev = form?.get('prev_profile');
      if (prev instanceof Blob && prev.size > 0) {
        throw bad('prev_profile (a cumulative profile to subtract) is not taken; send delta profiles, as current Pyroscope SDKs do');
      }
      return [{ labels: labelsOf(parsed.kind), profiles: [form ? await formFile(form, 'profile') : req.body], window }];
    }
    case 'jfr': {
      // The name's kind does not apply: the recording's events say what each profile is.
      // The Java agent gzips the recording (and its labels) inside the form by default.
      const form = await multipartForm(req);
      const recording = gunzipped(Buffer.from(form ? await formFile(form, 'jfr') : req.body), req);
      let kinds: Map<string, KindStacks>;
      let labels: JfrLabels = { contexts: new Map(), strings: new Map() };
      try {
        kinds = jfrStacks(recording);
        const part = form?.get('labels');
        if (part instanceof Blob && part.size > 0) {
          labels = jfrContextLabels(gunzipped(Buffer.from(await part.arrayBuffer()), req));
        }
      } catch (err) {
        // Whatever a crafted recording trips is the sender's error, never a 5xx the agent would retry.
        if (err instanceof JfrLabelsError) throw bad(err.message);
        throw bad(`the body is not a JFR recording Floe can read: ${err instanceof JfrError ? err.message : 'malformed'}`);
      }
      return [...kinds].flatMap(([name, byCorrelation]) => {
        const kind = KINDS[name]!;
        return jfrSeries(byCorrelation, labels, labelsOf(kind)).map((s) => ({ labels: s.labels, profiles: [stacksToPprof(s.stacks, kind, sampleRate, fromNs, untilNs)], window }));
      });
    }
  }
}

/** A form part as sent, or inflated when the agent gzipped it (it does by default). */
function gunzipped(bytes: Buffer, req: LegacyIngest): Buffer {
  if (!isGzip(bytes)) return bytes;
  const out = inflate(bytes, 'gzip', req.maxDecompressedBytes);
  req.hold?.(out.length);
  return out;
}

/** The request's multipart form (undefined when the body is not one). */
async function multipartForm(req: LegacyIngest): Promise<FormData | undefined> {
  if (!req.contentType || !/^multipart\/form-data/i.test(req.contentType)) return undefined;
  try {
    return await new Response(req.body, { headers: { 'content-type': req.contentType } }).formData();
  } catch (err) {
    throw bad(`the body is not a valid multipart form: ${(err as Error).message}`);
  }
}

/** A form's file part: `profile` for pprof, `jfr` for the Java agent's recordings. */
async function formFile(form: FormData, part: 'profile' | 'jfr'): Promise<Uint8Array> {
  const file = form.get(part);
  if (!(file instanceof Blob)) throw bad(`the multipart form has no ${part} part`);
  return new Uint8Array(await file.arrayBuffer());
}
